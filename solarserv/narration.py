"""The text of an answer: the plugins' blocks, rendered through one Jinja environment per application.

``Narrator.build(settings)`` loads the plugins (solarserv.plugin_manager) and builds the environment, its
templates searched in ``NARRATIVES_DIR``, then the plugins' template directories, then the built-in
``narratives/``.

``Narrator.narrate(report)`` asks the plugins for their blocks and renders them. A plugin that cannot be
loaded, raises, or returns what its hook does not promise loses only its own contribution, which is
logged and noted in the validation text; ``narrate_in_time`` also gives third-party plugins a time limit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import queue
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from solarserv import config, formatting, hookspecs, narratives, plugin_manager
from solarserv.hookspecs import Check, HistoricalContext, Narrative
from solarserv.models import Report
from solarserv.plugin_manager import BUILTIN_PLUGINS, LoadedPlugins
from solarserv.text import TARGET_SHOWN, escaped, has_hidden_characters, hidden_characters, shortened

log = logging.getLogger(__name__)

# The most characters a plugin's text may have, a block's, or its checks' together: every built-in block has fewer
# than 1,100 in every zone, and a plugin's 8 MB summary went out whole in every answer.
LONGEST_TEXT = 10_000

# Distinct shared texts kept (hookspecs.Narrative): the built-ins need one per time zone (~600).
SHARED_TEXTS = 4096


class TemplateLoadError(RuntimeError):
    """A template cannot be compiled; start-up stops naming it."""


@dataclass(frozen=True)
class Texts:
    summary: str
    historical_context: str
    historical_context_found: bool
    solar_context: str
    validation: str
    share_text: str


class Narrator:
    def __init__(self, plugins: LoadedPlugins, templates: jinja2.Environment, *,
                 plugin_timeout: float | None = None) -> None:
        self.plugins = plugins
        self.templates = templates
        # Implementations looked up once, and called by hand (``_call``): see there.
        hooks = (*hookspecs.EXCLUSIVE_BLOCKS, "solarserv_validation_checks")
        self._impls = {name: tuple(getattr(plugins.manager.hook, name).get_hookimpls()) for name in hooks}
        self._builtin_impls = {name: tuple(impl for impl in impls if impl.plugin_name in BUILTIN_PLUGINS)
                               for name, impls in self._impls.items()}
        self._third_party = self._impls != self._builtin_impls
        self._plugin_timeout = plugin_timeout
        self._plugin_thread = _DaemonWorker()
        self._late: concurrent.futures.Future[Texts] | None = None  # a narration that overran the limit
        self._late_running: list[str] = []  # the plugins it has called, the last one still running
        # Texts of shared Narratives by (template, values); bounded, as a plugin's values may vary freely.
        self._shared_text = functools.lru_cache(maxsize=SHARED_TEXTS)(self._render_shared)

    @classmethod
    def build(cls, settings: Any, *, third_party: bool = True) -> Narrator:
        """The application's narrator. ``third_party=False`` loads the built-in plugins only (tests)."""
        plugins = plugin_manager.load(settings, third_party=third_party)
        template_dirs = ([config.existing_directory(settings.narratives_dir, "NARRATIVES_DIR")]
                         if settings.narratives_dir else [])
        template_dirs += [*plugins.template_dirs, Path(narratives.__file__).parent]
        return cls(plugins, _environment(template_dirs), plugin_timeout=settings.plugin_timeout)

    async def narrate_in_time(self, report: Report) -> Texts:
        """``narrate``, with third-party plugins given ``plugin_timeout`` seconds in a worker thread.

        Plugin code runs synchronously: one that hangs (a network call without a timeout) would stop the
        event loop, and every request with it. Past the limit the answer carries the built-in texts and
        a note naming the plugin that was running; until that narration finishes, later requests get
        the built-in texts at once rather than each waiting for the limit.
        """
        if not self._third_party:
            return self.narrate(report)
        if self._late is not None and not self._late.done():
            return self.narrate(report, third_party=False, left_out=[self._still_busy()])
        running: list[str] = []
        narration = self._plugin_thread.submit(self.narrate, report, running=running)
        done, _ = await asyncio.wait([asyncio.wrap_future(narration)], timeout=self._plugin_timeout)
        if done:
            return narration.result()
        if narration.cancel():  # never started: queued behind one that overran
            return self.narrate(report, third_party=False, left_out=[self._still_busy()])
        self._late, self._late_running = narration, running
        culprit = running[-1] if running else "third-party plugins"  # none called yet: the thread was starved
        log.error("plugin %s did not answer within %g s; answering with the built-in texts",
                  culprit, self._plugin_timeout)
        return self.narrate(report, third_party=False, left_out=[
            f"{culprit} (no answer within {self._plugin_timeout:g} s, so no third-party plugin's text is used)"])

    def _still_busy(self) -> str:
        """Why an answer has only the built-in texts while a narration that overran its limit still runs, naming
        the plugin it runs: the one that overran, or a later one that hangs too."""
        culprit = self._late_running[-1] if self._late_running else "third-party plugins"
        return f"{culprit} (still busy with an earlier request, so no third-party plugin ran)"

    def narrate(self, report: Report, *, third_party: bool = True, left_out: Sequence[str] = (),
                running: list[str] | None = None) -> Texts:
        """The texts for ``report``. ``third_party=False``: the built-in plugins' only, ``left_out`` naming
        why; ``running`` collects the name of each plugin as it is called (``narrate_in_time``)."""
        impls = self._impls if third_party else self._builtin_impls
        failures = [f"{name} (loading)" for name in self.plugins.not_loaded] + list(left_out)
        call = functools.partial(self._call, impls=impls, report=report, failures=failures, running=running)
        blocks = {hook: self._block(hook, call(hook), report, failures) for hook in hookspecs.EXCLUSIVE_BLOCKS}
        historical = blocks["solarserv_historical_context"]
        checks: list[Check] = []
        for plugin, value in call("solarserv_validation_checks"):
            if value is None:  # no checks; a block's writer may not answer None (_block)
                continue
            contributed = list(value) if isinstance(value, (list, tuple)) else None
            if contributed is None or not all(_is_check(check) for check in contributed):
                log.error("plugin %s: solarserv_validation_checks must return a list of Check(bool, str), each text "
                          "one line of visible characters, at most %s of them, got %s", plugin,
                          f"{LONGEST_TEXT:,}", shortened(repr(value), longest=TARGET_SHOWN))
                failures.append(f"{plugin} (validation_checks)")
                continue
            if (length := sum(len(check.text) for check in contributed)) > LONGEST_TEXT:
                # Each within the limit, a thousand of them still made 10 MB of every answer.
                log.error("plugin %s: solarserv_validation_checks returned checks of %s characters in all, more "
                          "than the %s a plugin's checks may hold together", plugin, f"{length:,}",
                          f"{LONGEST_TEXT:,}")
                failures.append(f"{plugin} (validation_checks)")
                continue
            checks.extend(contributed)
        return Texts(
            summary=blocks["solarserv_summary"][0],
            historical_context=historical[0],
            historical_context_found=bool(historical[1]),
            solar_context=blocks["solarserv_solar_context"][0],
            validation=self._validation(checks, failures, report),
            share_text=blocks["solarserv_share_text"][0],
        )

    def _validation(self, checks: list[Check], failures: list[str], report: Report) -> str:
        """The validation text; from the built-in template when an operator's or plugin's version fails."""
        values = {"checks": checks, "failures": failures}
        try:
            return self._render(Narrative("validation.txt.j2", values), report)
        except Exception:
            log.exception("template validation.txt.j2 failed; the built-in one is used")
            values["failures"] = [*failures, "validation.txt.j2 (its override)"]
            return self._builtin_templates.get_template("validation.txt.j2").render(report=report, **values).strip()

    @functools.cached_property
    def _builtin_templates(self) -> jinja2.Environment:
        return _environment([Path(narratives.__file__).parent])

    def _block(self, hook: str, contributions: Iterable[tuple[str, Any]], report: Report,
               failures: list[str]) -> tuple[str, bool | None]:
        """Render the one plugin's answer for a text block: ("", None) when it failed or is missing; a
        historical context keeps its status when only its text failed."""
        history = hook == "solarserv_historical_context"
        for plugin, value in contributions:
            failed = f"{plugin} ({hookspecs.EXCLUSIVE_BLOCKS[hook]})"
            if not (_is_history(value) if history else isinstance(value, Narrative)):
                log.error("plugin %s: %s must return %s, got %s", plugin, hook,
                          "a HistoricalContext(Narrative, bool)" if history else "a Narrative",
                          shortened(repr(value), longest=TARGET_SHOWN))
                failures.append(failed)
                return "", None
            narrative, found = (value.narrative, value.found) if history else (value, None)
            try:
                text = self._render(narrative, report)
            except jinja2.TemplateNotFound as error:  # its traceback holds only Jinja's loader
                log.error("plugin %s: rendering %s failed: %s", plugin, hook, error)
            except Exception as error:
                log.exception("plugin %s: rendering %s failed%s", plugin, hook, self._where(error))
            else:
                if not (unfit := _unfit(text)):
                    return text, found
                log.error("plugin %s: %s rendered %s into a text %s", plugin, hook, narrative.template,
                          unfit)
            failures.append(failed)
            return "", found
        return "", None

    def _where(self, error: Exception) -> str:
        """Where in a template ``error`` arose, and what it is, for the first line of its log: the template and
        its line come last in a traceback through Jinja's code, and the error after them."""
        # Normalised as Jinja's file names of templates are: a directory named with ".." is no prefix of them.
        searched = [os.path.join(os.path.normpath(directory), "")
                    for directory in getattr(self.templates.loader, "searchpath", [])]
        in_templates = [frame for frame in traceback.extract_tb(error.__traceback__)
                        if frame.filename.startswith(tuple(searched))]
        if not in_templates:
            return ""
        return f": template {in_templates[-1].filename}, line {in_templates[-1].lineno}: {error}"

    def _call(self, hook: str, *, impls: Mapping[str, tuple[Any, ...]], report: Report, failures: list[str],
              running: list[str] | None) -> Iterable[tuple[str, Any]]:
        """The answers of ``hook``'s implementations as (plugin name, answer) pairs, each called by hand rather than
        through pluggy's caller (``manager.hook.NAME(report=…)``), which stops at the first exception (here one
        that raises loses only its own answer) and costs 3 to 6 µs more a call (measured; five hooks an answer).

        Kept from pluggy: an implementation gets only the parameters it declares. Not kept: None as no answer
        (a block's one writer answering None, a forgotten return, has failed; validation checks skip it), and
        pluggy calls the last registered first and honours tryfirst/trylast; here the order is the loading
        order, the built-ins first (README, "The hooks"). A hook wrapper is not called as one: its generator
        is refused as an answer of the wrong type."""
        for impl in impls[hook]:
            if running is not None:
                running.append(impl.plugin_name)
            try:
                value = impl.function(report) if impl.argnames else impl.function()
            except plugin_manager.PLUGIN_FAILURES:
                log.exception("plugin %s failed in %s", impl.plugin_name, hook)
                # Named like a rendering failure of the same block ("share.text"), so one block reads
                # the same in the validation text whichever way its plugin failed.
                what = hookspecs.EXCLUSIVE_BLOCKS.get(hook, hook.removeprefix("solarserv_"))
                failures.append(f"{impl.plugin_name} ({what})")
                continue
            yield impl.plugin_name, value

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


class _DaemonWorker:
    """One daemon thread running submitted calls in turn. Unlike a ThreadPoolExecutor's threads, which
    the interpreter joins at exit, a plugin hanging here cannot keep a stopped server from exiting."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[concurrent.futures.Future[Any], Callable[[], Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="plugins", daemon=True)
            self._thread.start()
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._calls.put((future, functools.partial(function, *args, **kwargs)))
        return future

    def _run(self) -> None:
        while True:
            future, call = self._calls.get()
            if not future.set_running_or_notify_cancel():
                continue  # cancelled while it waited
            try:
                future.set_result(call())
            except BaseException as exc:  # handed to whoever waits, as an executor would
                future.set_exception(exc)


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
        # Every template kept in a plain dict: all are compiled below, and Jinja's bounded cache locks and
        # reorders its queue at each of an answer's six look-ups.
        cache_size=-1,
    )
    env.filters.update(formatting.FILTERS)
    # Compile every template now: a syntax error in an operator's override stops start-up with the
    # template's name instead of failing each request, and no request pays for compiling.
    for name in env.list_templates(extensions=["j2"]):
        try:
            env.get_template(name)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateLoadError(f"template {exc.filename or name}, line {exc.lineno}: {exc.message}") from None
        except UnicodeDecodeError as exc:  # raised before Jinja knows the file: the first directory holding it
            path = next(directory / name for directory in template_dirs if (directory / name).is_file())
            raise TemplateLoadError(f"template {path} is not UTF-8 text: {exc}") from None
    return env


def _unfit(block: str) -> str | None:
    """Why a block's rendered text is left out of the answer, for the log; None when it is fit."""
    if len(block) > LONGEST_TEXT:
        return f"of {len(block):,} characters, more than the {LONGEST_TEXT:,} a text may hold"
    if block.isprintable():  # most blocks, decided in C without a copy
        return None
    # As for a check's text, but for line breaks: a block is the JSON's, the page's and the terminal's (`solarserv
    # calc`), and a terminal obeys control characters.
    if hidden := hidden_characters(block.replace("\n", "")):
        return (f"holding {escaped(hidden)}, which is no visible character: a text holds visible characters, spaces "
                "and line breaks")
    return None


def _is_history(value: Any) -> bool:
    # As for a check: a found that is not a bool cannot be read as found or not_found without a guess.
    return isinstance(value, HistoricalContext) and isinstance(value.narrative, Narrative) and \
        isinstance(value.found, bool)


def _is_check(value: Any) -> bool:
    # A numpy bool or a text of None would print as ✓ / "None": the line must say what it means. A text of two
    # lines would make its second pass for one of the core's (a check, the confidence, a failed plugin).
    return isinstance(value, Check) and isinstance(value.passed, bool) and isinstance(value.text, str) and \
        len(value.text) <= LONGEST_TEXT and not has_hidden_characters(value.text)
