"""Loading the plugins: one pluggy manager per application, built by ``load(settings)``.

It registers, in order: the built-in plugins (ordinary plugin modules in the ``solarserv.plugins`` package, the
repository's ``plugins/``), installed plugins from the ``solarserv`` entry-point group (filtered by the
``SOLARSERV_PLUGINS`` allow-list when set), and loose ``.py`` files in ``PLUGINS_DIR``. A third-party plugin that
writes a text block takes it over from the built-in one; two that claim one block stop start-up
(``PluginConflict``). A third-party plugin that cannot be loaded is left out, logged, and named in
``LoadedPlugins.not_loaded``, which the validation text of every answer reports.

Calling the hooks and rendering what they return is solarserv.narration's. This module is not called
``solarserv.plugins``: that name is the package of the built-in plugins (the repository's ``plugins/``,
installed inside solarserv).
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.metadata
import importlib.util
import inspect
import logging
import site
import sys
import sysconfig
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pluggy

from solarserv import config, hookspecs
from solarserv.text import in_words

log = logging.getLogger(__name__)

BUILTIN_PLUGINS = (
    "solarserv.plugins.summary",
    "solarserv.plugins.historical",
    "solarserv.plugins.solar_context",
    "solarserv.plugins.validation",
    "solarserv.plugins.share",
)


# What a third-party plugin's code may raise and lose only its own part. SystemExit is no Exception: a
# plugin calling sys.exit() stopped start-up from its import, or the whole server from a hook.
PLUGIN_FAILURES = (Exception, SystemExit)

# How long a third-party plugin's import, or its answer of template directories, may take before a warning
# names it (both take milliseconds).
SLOW_PLUGIN_SECONDS = 5.0


class PluginConflict(RuntimeError):
    """Two third-party plugins claim the same text block, the same name, or templates of the same name."""


@dataclass(frozen=True)
class LoadedPlugins:
    """What ``load`` registered, and what it left out."""

    manager: pluggy.PluginManager
    versions: dict[str, str]  # plugin name → distribution version, for entry-point plugins
    # Third-party plugins left out (name → why), noted in every validation text.
    not_loaded: dict[str, str]
    template_dirs: list[Path]  # the plugins' own template directories (hook solarserv_template_dirs)
    not_allowed: list[str]  # installed plugins the SOLARSERV_PLUGINS allow-list kept out: listed, never a failure

    def listing(self) -> list[dict[str, Any]]:
        """What is loaded: each plugin's name, where it came from, its version and its hooks."""
        listing = []
        for name, plugin in self.manager.list_name_plugin():
            source = "builtin" if name in BUILTIN_PLUGINS else (
                "entry point" if name in self.versions else "file")
            listing.append({
                "name": name,
                "source": source,
                "version": self.versions.get(name),
                "hooks": sorted(hook.name for hook in self.manager.get_hookcallers(plugin) or ()),
            })
        for name, reason in self.not_loaded.items():
            listing.append({"name": name, "source": "entry point" if name in self.versions else "file",
                            "version": self.versions.get(name), "hooks": [], "not_loaded": reason})
        for name in self.not_allowed:
            listing.append({"name": name, "source": "entry point", "version": self.versions.get(name), "hooks": [],
                            "not_loaded": "not in SOLARSERV_PLUGINS"})
        return listing


def load(settings: Any, *, third_party: bool = True) -> LoadedPlugins:
    """The application's plugins. ``third_party=False`` loads the built-ins only (tests)."""
    manager = pluggy.PluginManager("solarserv")
    manager.add_hookspecs(hookspecs)
    for name in BUILTIN_PLUGINS:
        manager.register(importlib.import_module(name), name=name)
    versions: dict[str, str] = {}
    not_loaded: dict[str, str] = {}
    not_allowed: list[str] = []
    if third_party:
        versions = _load_entry_points(manager, settings.plugins_allow, not_loaded, not_allowed)
        if settings.plugins_dir:
            _load_directory(manager, Path(settings.plugins_dir), not_loaded)
    template_dirs = _plugin_template_dirs(manager, not_loaded)  # first: a plugin left out claims no block
    _settle_exclusive_blocks(manager)
    return LoadedPlugins(manager, versions, not_loaded, template_dirs, not_allowed)


def _settle_exclusive_blocks(manager: pluggy.PluginManager) -> None:
    """One plugin per text block: a third-party one takes the block over from the built-in."""
    for hook, block in hookspecs.EXCLUSIVE_BLOCKS.items():
        claimants = [impl.plugin_name for impl in getattr(manager.hook, hook).get_hookimpls()]
        third_party = [name for name in claimants if name not in BUILTIN_PLUGINS]
        if len(third_party) > 1:
            raise PluginConflict(f"plugins {_each_of(third_party)} write the {block} block; keep only one of them")
        if not third_party:
            continue
        for builtin in (name for name in claimants if name in BUILTIN_PLUGINS):
            # Each built-in plugin writes one block and nothing else (tests hold that), so it can go.
            manager.unregister(name=builtin)
            log.info("plugin %s writes the %s block in place of the built-in %s", third_party[0], block, builtin)


def _load_entry_points(manager: pluggy.PluginManager, allow: str | None, not_loaded: dict[str, str],
                       not_allowed: list[str]) -> dict[str, str]:
    """Register installed plugins; returns their distribution versions by plugin name (of those the allow-list
    keeps out too, which go into ``not_allowed``)."""
    allowed = None if allow is None else {name.strip() for name in allow.split(",") if name.strip()}
    versions = {}
    entry_points = importlib.metadata.entry_points(group="solarserv")
    for missing in sorted((allowed or set()) - set(entry_points.names)):
        # Often the distribution's name, which is installed: say which names the list takes.
        log.warning("SOLARSERV_PLUGINS names %s, but no installed plugin has that name (it takes the names of entry "
                    "points in the group solarserv; installed: %s)", missing, ", ".join(sorted(entry_points.names))
                    or "none")
    _refuse_shared_names(entry_points, allowed)
    for entry_point in entry_points:
        if manager.get_plugin(entry_point.name) is not None or entry_point.name in versions:
            continue  # a built-in's name, or a second distribution's plugin of a name the allow-list keeps out
        versions[entry_point.name] = entry_point.dist.version if entry_point.dist else "unknown"
        if allowed is not None and entry_point.name not in allowed:
            log.info("plugin %s not in SOLARSERV_PLUGINS; skipped", entry_point.name)
            not_allowed.append(entry_point.name)
            continue
        plugin_named = f"plugin {entry_point.name} ({entry_point.value})"
        try:
            with _named_when_slow(f"{plugin_named} is still importing"):
                plugin = entry_point.load()
        except PLUGIN_FAILURES as error:
            _log_import_failure(plugin_named, error)
            not_loaded[entry_point.name] = "failed to import"
            continue
        _register(manager, plugin, entry_point.name, not_loaded)
    return versions


def _refuse_shared_names(entry_points: importlib.metadata.EntryPoints, allowed: set[str] | None) -> None:
    """Two distributions may not install plugins of one name: which of them loaded went by sys.path's order, and
    the other was dropped without a word."""
    owners: dict[str, list[str]] = {}
    for entry_point in entry_points:
        if allowed is None or entry_point.name in allowed:
            dist = entry_point.dist
            owners.setdefault(entry_point.name, []).append(f"{dist.name} {dist.version}" if dist else entry_point.value)
    for name, dists in owners.items():
        if len(dists) > 1:
            raise PluginConflict(f"distributions {_each_of(sorted(dists))} install a plugin named {name}; keep only "
                                 "one of them")


def _each_of(names: list[str]) -> str:
    """The parties to a conflict, as its message names them: "a and b both", "a, b and c all"."""
    return f"{in_words(names)} {'both' if len(names) == 2 else 'all'}"


def _load_directory(manager: pluggy.PluginManager, directory: Path, not_loaded: dict[str, str]) -> None:
    for path in sorted(config.existing_directory(directory, "PLUGINS_DIR").glob("*.py")):
        if manager.get_plugin(path.stem) is not None or path.stem in not_loaded:
            raise PluginConflict(f"plugin file {path} has the name of an installed plugin, {path.stem}; "
                                 "rename the file (or uninstall the plugin)")
        module = _import_file(path)
        if module is None:
            not_loaded[path.stem] = "failed to import"
        else:
            _register(manager, module, path.stem, not_loaded)


def _register(manager: pluggy.PluginManager, plugin: object, name: str, not_loaded: dict[str, str]) -> None:
    """Register a third-party plugin, or leave it out (logged) when its hooks do not fit the specs."""
    try:
        manager.register(plugin, name=name)
    except pluggy.PluginValidationError as exc:
        log.error("plugin %s left out: %s", name, _parameters_not_passed(manager, plugin) or " ".join(str(exc).split()))
        not_loaded[name] = "hooks do not match solarserv's"
        return
    callers = sorted(manager.get_hookcallers(plugin) or (), key=lambda caller: caller.name)
    # pluggy passes over a function not marked @hookimpl: a plugin of such functions loaded and did nothing.
    unmarked = [hook for hook in sorted(dir(plugin)) if hook.startswith("solarserv_") and hasattr(manager.hook, hook)
                and hook not in {caller.name for caller in callers}]
    if not callers:
        manager.unregister(plugin)
        log.error("plugin %s left out: it implements no hook%s", name,
                  f" (not marked @hookimpl: {', '.join(unmarked)})" if unmarked else "")
        not_loaded[name] = "no hooks"
        return
    if unmarked:
        log.warning("plugin %s: never called, as not marked @hookimpl: %s", name, ", ".join(unmarked))
    # A misspelled hook name would otherwise register quietly and never be called; a wrapper or an async hook
    # would be called as a plain function (narration._call), its generator or coroutine refused on every answer.
    unknown = [caller.name for caller in callers if caller.spec is None]
    own = [(caller.name, impl) for caller in callers for impl in caller.get_hookimpls() if impl.plugin is plugin]
    wrappers = [hook for hook, impl in own if impl.hookwrapper or impl.wrapper]
    asynchronous = [hook for hook, impl in own if inspect.iscoroutinefunction(impl.function)]
    wrong = ((unknown, _no_hook(unknown) if unknown else ""),
             (wrappers, "a hook wrapper, which solarserv does not call as one"),
             (asynchronous, "async, and solarserv calls hooks as plain functions"))
    for hooks, why in wrong:
        if hooks:
            manager.unregister(plugin)
            log.error("plugin %s left out: %s %s %s", name, ", ".join(hooks), "is" if len(hooks) == 1 else "are", why)
            not_loaded[name] = "hooks do not match solarserv's"
            return
    ordered = [hook for hook, impl in own if impl.tryfirst or impl.trylast]
    if ordered:
        log.warning("plugin %s: tryfirst and trylast have no effect (on %s): solarserv calls the hooks in loading "
                    "order, the built-ins first", name, ", ".join(ordered))


def _parameters_not_passed(manager: pluggy.PluginManager, plugin: object) -> str | None:
    """The plugin's hooks that take parameters solarserv does not pass, and what each hook gets, in one line; pluggy
    says it in three, of the "hookimpl" and the "hookspec"."""
    wrong = []
    for name in sorted(dir(plugin)):
        caller = getattr(manager.hook, name, None) if name.startswith("solarserv_") else None
        if caller is None or caller.spec is None or manager.parse_hookimpl_opts(plugin, name) is None:
            continue
        required = [parameter.name for parameter in inspect.signature(getattr(plugin, name)).parameters.values()
                    if parameter.default is parameter.empty
                    and parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)]
        if extra := [parameter for parameter in required if parameter not in caller.spec.argnames]:
            gets = in_words(list(caller.spec.argnames)) if caller.spec.argnames else "no parameter"
            wrong.append(f"{name} takes {in_words(extra)}, which solarserv does not pass: the hook gets {gets}")
    return "; ".join(wrong) or None


def _no_hook(names: list[str]) -> str:
    """Why ``names`` are refused: the hooks they were likely meant to be, else the hooks there are."""
    hooks = sorted(name for name, value in vars(hookspecs).items() if hasattr(value, "solarserv_spec"))
    # Compared without the prefix they all share, which made any name look close to some hook.
    words = {hook.removeprefix("solarserv_"): hook for hook in hooks}
    meant = [words[match] for name in names
             for match in difflib.get_close_matches(name.removeprefix("solarserv_"), words, n=1)]
    refused = "no solarserv hook" if len(names) == 1 else "no solarserv hooks"
    if len(meant) == len(names):  # two misspellings of one hook name it once
        return f"{refused}; did you mean {in_words(list(dict.fromkeys(meant)))}?"
    return f"{refused}; the hooks are {in_words(hooks)}"


def _plugin_template_dirs(manager: pluggy.PluginManager, not_loaded: dict[str, str]) -> list[Path]:
    """Each plugin's template directories; a plugin whose hook fails or answers wrongly is left out whole."""
    found: list[tuple[str, Path]] = []
    for impl in manager.hook.solarserv_template_dirs.get_hookimpls():
        reason = "template directories could not be read"
        try:
            with _named_when_slow(f"plugin {impl.plugin_name} is still in solarserv_template_dirs"):
                dirs = impl.function()
        except PLUGIN_FAILURES:
            log.exception("plugin %s left out: solarserv_template_dirs failed", impl.plugin_name)
        else:
            if not isinstance(dirs, (list, tuple)) or not all(isinstance(d, (str, Path)) for d in dirs):
                log.error("plugin %s left out: solarserv_template_dirs must return a list of paths, got %r",
                          impl.plugin_name, dirs)
            elif missing := ", ".join(str(d) for d in dirs if not Path(d).is_dir()):
                # Jinja would skip it quietly, and every answer fail on the plugin's first template.
                log.error("plugin %s left out: solarserv_template_dirs names %s, which is not a directory "
                          "(are its templates installed with it?)", impl.plugin_name, missing)
                reason = f"no template directory {missing}"
            elif library := _python_library_in(dirs):
                # A single-module plugin's Path(__file__).parent, installed: start-up would search all of
                # site-packages and compile every other package's .j2 files.
                directory, held = library
                log.error("plugin %s left out: solarserv_template_dirs names %s, which %s %s (ship templates in a "
                          "directory of the plugin's package)", impl.plugin_name, directory,
                          "is" if directory.resolve() == held else "holds", held)
                reason = f"template directory {directory} holds Python's packages"
            else:
                found.extend((impl.plugin_name, Path(d)) for d in dirs)
                continue
        manager.unregister(name=impl.plugin_name)
        not_loaded[impl.plugin_name] = reason
    _refuse_shared_template_names(found)
    return [directory for _, directory in found]


def _refuse_shared_template_names(dirs: list[tuple[str, Path]]) -> None:
    """Two plugins' directories may not hold templates of one name: Jinja finds the first, and the other plugin's
    text was rendered from it without a word. Plugins naming one directory (files of one PLUGINS_DIR beside their
    templates) share its templates."""
    shippers: dict[str, list[str]] = {}
    searched: set[Path] = set()
    for plugin, directory in dirs:
        if directory.resolve() in searched:
            continue
        searched.add(directory.resolve())
        for template in sorted(directory.rglob("*.j2")):
            shippers.setdefault(template.relative_to(directory).as_posix(), []).append(plugin)
    for template, plugins in shippers.items():
        if len(set(plugins)) > 1:
            raise PluginConflict(f"plugins {_each_of(list(dict.fromkeys(plugins)))} ship a template named {template}, "
                                 "and only one of them can be found: rename one of them")


def _python_library_in(dirs: list[str | Path]) -> tuple[Path, Path] | None:
    """The first of ``dirs`` that is or holds a directory of Python's packages (site-packages, dist-packages,
    the user's or the standard library), and that directory."""
    libraries = {Path(path).resolve() for path in (*site.getsitepackages(), site.getusersitepackages(),
                                                   sysconfig.get_path("stdlib"))}
    for directory in map(Path, dirs):
        resolved = directory.resolve()
        if resolved.name in ("site-packages", "dist-packages"):
            return directory, resolved
        for library in sorted(libraries):
            if library == resolved or resolved in library.parents:
                return directory, library
    return None


def _import_file(path: Path) -> ModuleType | None:
    """The module in a plugin file, or None (logged) when it fails to import."""
    name = f"solarserv_plugin_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    # Registered before it runs, as an import would be: dataclasses and pickling look a module up there.
    sys.modules[name] = module
    try:
        with _named_when_slow(f"plugin file {path} is still importing"):
            spec.loader.exec_module(module)
    except PLUGIN_FAILURES as error:
        del sys.modules[name]
        _log_import_failure(f"plugin file {path}", error)
        return None
    return module


@contextlib.contextmanager
def _named_when_slow(still_busy: str) -> Iterator[None]:
    """One warning, ``still_busy`` naming the plugin and what it does, if the block outlasts SLOW_PLUGIN_SECONDS:
    a plugin that hangs (a connection without a timeout) stalled start-up without a line saying which it was."""
    timer = threading.Timer(SLOW_PLUGIN_SECONDS, log.warning, ("%s after %g s; start-up waits for it", still_busy,
                                                               SLOW_PLUGIN_SECONDS))
    timer.daemon = True  # a plugin that never returns must not keep the interpreter from exiting either
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()  # gone before serve forks its workers


def _log_import_failure(plugin: str, error: BaseException) -> None:
    """Logged with its traceback, but a syntax error: its traceback holds nothing but importlib's frames."""
    if isinstance(error, SyntaxError):
        log.error("%s failed to import; left out: SyntaxError in %s, line %s: %s", plugin, error.filename,
                  error.lineno, error.msg)
    else:
        log.exception("%s failed to import; left out", plugin)
