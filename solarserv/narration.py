"""Plugins and the text they produce: one plugin manager and one Jinja environment per application.

``Narrator.build(settings)`` loads, in order: the built-in plugins (ordinary plugin modules in the
``plugins`` package), installed plugins from the ``solarserv`` entry-point group (filtered by the
``SOLARSERV_PLUGINS`` allow-list when set), and loose ``.py`` files in ``PLUGINS_DIR``.
``Narrator.narrate(report)`` asks the plugins for their blocks and renders them; a plugin that raises
loses only its own contribution, which is logged and noted in the validation text.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import logging
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import jinja2
import pluggy

import narratives
from solarserv import hookspecs
from solarserv.hookspecs import Check, HistoricalContext, Narrative
from solarserv.models import Report

log = logging.getLogger(__name__)

BUILTIN_PLUGINS = (
    "plugins.summary",
    "plugins.historical",
    "plugins.solar_context",
    "plugins.validation",
    "plugins.share",
)


# Distinct shared texts kept (hookspecs.Narrative): the built-ins need one per time zone (~600).
SHARED_TEXTS = 4096


class PluginConflict(RuntimeError):
    """Two plugins claim the same text block."""


class PluginLoadError(RuntimeError):
    """A plugin could not be imported; start-up stops naming it."""


@dataclass(frozen=True)
class Texts:
    summary: str
    historical_context: str
    historical_context_found: bool
    solar_context: str
    validation: str
    share_text: str


@dataclass(frozen=True)
class _Contribution:
    plugin: str
    value: Any


class Narrator:
    def __init__(self, manager: pluggy.PluginManager, templates: jinja2.Environment,
                 versions: dict[str, str] | None = None) -> None:
        self.manager = manager
        self.templates = templates
        self.versions = versions or {}  # plugin name → distribution version, for entry-point plugins
        # Implementations looked up once: the hot path does not walk pluggy's registry per request.
        self._impls = {name: tuple(getattr(manager.hook, name).get_hookimpls())
                       for name in (*hookspecs.EXCLUSIVE_BLOCKS, "solarserv_validation_checks")}
        # Texts of shared Narratives by (template, values); bounded, as a plugin's values may vary freely.
        self._shared_text = functools.lru_cache(maxsize=SHARED_TEXTS)(self._render_shared)

    @classmethod
    def build(cls, settings: Any, *, third_party: bool = True) -> Narrator:
        """The application's narrator. ``third_party=False`` loads the built-ins only (tests)."""
        manager = pluggy.PluginManager("solarserv")
        manager.add_hookspecs(hookspecs)
        for name in BUILTIN_PLUGINS:
            manager.register(importlib.import_module(name), name=name)
        versions: dict[str, str] = {}
        if third_party:
            versions = _load_entry_points(manager, settings.plugins_allow)
            if settings.plugins_dir:
                _load_directory(manager, Path(settings.plugins_dir))
        _check_exclusive_blocks(manager)
        template_dirs = [Path(settings.narratives_dir)] if settings.narratives_dir else []
        for dirs in manager.hook.solarserv_template_dirs():
            template_dirs.extend(Path(d) for d in dirs)
        template_dirs.append(Path(narratives.__file__).parent)
        return cls(manager, _environment(template_dirs), versions)

    def plugins(self) -> list[dict[str, Any]]:
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
        return listing

    def narrate(self, report: Report) -> Texts:
        failures: list[str] = []
        blocks = {hook: self._block(hook, report, failures) for hook in hookspecs.EXCLUSIVE_BLOCKS}
        historical = blocks["solarserv_historical_context"]
        checks: list[Check] = []
        for contribution in self._call("solarserv_validation_checks", report, failures):
            contributed = list(contribution.value) if isinstance(contribution.value, (list, tuple)) else None
            if contributed is None or not all(isinstance(check, Check) for check in contributed):
                log.error("plugin %s: solarserv_validation_checks must return a list of Check, got %r",
                          contribution.plugin, contribution.value)
                failures.append(f"{contribution.plugin} (validation_checks)")
                continue
            checks.extend(contributed)
        validation = self._render(Narrative("validation.txt.j2", {"checks": checks, "failures": failures}),
                                  report)
        return Texts(
            summary=blocks["solarserv_summary"][0],
            historical_context=historical[0],
            historical_context_found=bool(historical[1]),
            solar_context=blocks["solarserv_solar_context"][0],
            validation=validation,
            share_text=blocks["solarserv_share_text"][0],
        )

    def _block(self, hook: str, report: Report, failures: list[str]) -> tuple[str, bool | None]:
        """Render the one plugin's answer for a text block; ("", None) when it failed or is missing."""
        for contribution in self._call(hook, report, failures):
            value = contribution.value
            narrative = value.narrative if isinstance(value, HistoricalContext) else value
            found = value.found if isinstance(value, HistoricalContext) else None
            try:
                return self._render(narrative, report), found
            except Exception:
                log.exception("plugin %s: rendering %s failed", contribution.plugin, hook)
                failures.append(f"{contribution.plugin} ({hookspecs.EXCLUSIVE_BLOCKS[hook]})")
        return "", None

    def _call(self, hook: str, report: Report, failures: list[str]) -> Iterable[_Contribution]:
        for impl in self._impls[hook]:
            try:
                value = impl.function(report=report)
            except Exception:
                log.exception("plugin %s failed in %s", impl.plugin_name, hook)
                # Named like a rendering failure of the same block ("share.text"), so one block reads
                # the same in the validation text whichever way its plugin failed.
                what = hookspecs.EXCLUSIVE_BLOCKS.get(hook, hook.removeprefix("solarserv_"))
                failures.append(f"{impl.plugin_name} ({what})")
                continue
            if value is not None:
                yield _Contribution(impl.plugin_name, value)

    def _render(self, narrative: Narrative, report: Report | None) -> str:
        if narrative.shared or report is None:  # inside a shared text, everything follows from the values
            # Nested Narratives as their text (a Narrative holds a dict: it cannot be a key), and each value
            # with its type: 1, True and 1.0 are equal keys but print differently.
            key = tuple([(name, type(value), self._render(value, None) if isinstance(value, Narrative) else value)
                         for name, value in narrative.values.items()])
            return self._shared_text(narrative.template, key)
        template = self.templates.get_template(narrative.template)
        return template.render(report=report, **self._resolved(narrative.values, report)).strip()

    def _render_shared(self, template: str, key: tuple[tuple[str, type, Any], ...]) -> str:
        return self.templates.get_template(template).render({name: value for name, _, value in key}).strip()

    def _resolved(self, values: Mapping[str, Any], report: Report) -> dict[str, Any]:
        """The values with each nested Narrative replaced by its text."""
        return {name: self._render(value, report) if isinstance(value, Narrative) else value
                for name, value in values.items()}


class _NarrativeEnvironment(jinja2.Environment):
    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        """A template's globals as one plain dict, not Jinja's ChainMap over the environment's: every
        render copies them into its context twice, and iterating a ChainMap there cost about 5 µs a render.
        Equivalent here, as no global changes once the templates are loaded."""
        return {**self.globals, **(d or {})}


def _environment(template_dirs: list[Path]) -> jinja2.Environment:
    env = _NarrativeEnvironment(
        loader=jinja2.FileSystemLoader([str(d) for d in template_dirs]),
        autoescape=False,  # plain-text narratives inside JSON, never HTML
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,  # compiled once; templates do not change under a running server
    )
    env.filters.update(narratives.FILTERS)
    # Compile every template now: a syntax error in an operator's override stops start-up with the
    # template's name instead of failing each request, and no request pays for compiling.
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)
    return env


def _check_exclusive_blocks(manager: pluggy.PluginManager) -> None:
    for hook, block in hookspecs.EXCLUSIVE_BLOCKS.items():
        claimants = [impl.plugin_name for impl in getattr(manager.hook, hook).get_hookimpls()]
        if len(claimants) > 1:
            raise PluginConflict(f"plugins {' and '.join(claimants)} both write the {block} block; "
                                 "remove one of them")


def _load_entry_points(manager: pluggy.PluginManager, allow: str | None) -> dict[str, str]:
    """Register installed plugins; returns their distribution versions by plugin name."""
    allowed = {name.strip() for name in allow.split(",")} if allow else None
    versions = {}
    for entry_point in importlib.metadata.entry_points(group="solarserv"):
        if allowed is not None and entry_point.name not in allowed:
            log.info("plugin %s not in SOLARSERV_PLUGINS; skipped", entry_point.name)
            continue
        if manager.get_plugin(entry_point.name) is None:
            try:
                plugin = entry_point.load()
            except Exception as exc:
                raise PluginLoadError(f"plugin {entry_point.name} ({entry_point.value}) failed to import: "
                                      f"{exc!r}") from exc
            manager.register(plugin, name=entry_point.name)
            versions[entry_point.name] = entry_point.dist.version if entry_point.dist else "unknown"
    return versions


def _load_directory(manager: pluggy.PluginManager, directory: Path) -> None:
    if not directory.is_dir():
        raise FileNotFoundError(f"PLUGINS_DIR {directory} is not a directory")
    for path in sorted(directory.glob("*.py")):
        manager.register(_import_file(path), name=path.stem)


def _import_file(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"solarserv_plugin_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise PluginLoadError(f"plugin file {path} failed to import: {exc!r}") from exc
    return module

