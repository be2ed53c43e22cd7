"""The three ways a plugin gets in, what happens when one breaks or collides, and template overrides."""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib
import importlib.metadata
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from defaults import settings
from files import write
from reports import report_at

import solarserv
from solarserv import config, hookspecs, plugin_manager
from solarserv.cli import main
from solarserv.formatting import hms
from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import SolarQuery
from solarserv.narration import LONGEST_TEXT, Narrator, TemplateLoadError
from solarserv.pipeline import Pipeline
from solarserv.plugin_manager import BUILTIN_PLUGINS, PluginConflict
from solarserv.timefmt import shown_true_solar

EXTRA_CHECK = '''
from solarserv.hookspecs import Check, hookimpl


@hookimpl
def solarserv_validation_checks(report):
    return [Check(False, f"extra check saw {report.civil.zone}")]
'''

BROKEN_CHECK = '''
from solarserv.hookspecs import hookimpl


@hookimpl
def solarserv_validation_checks(report):
    raise RuntimeError("this plugin is broken")
'''


@pytest.fixture(scope="module")
def report():
    return report_at("Paris", "2026-07-14", "14:30")


@pytest.fixture(scope="module")
def builtin_texts(report):
    return Narrator.build(config.load(environ={}), third_party=False).narrate(report)


def build(**environ: str) -> Narrator:
    """A narrator on settings from ``environ``: installed plugins left out unless it sets SOLARSERV_PLUGINS."""
    return Narrator.build(settings(**environ))


def build_with_installed_plugins(**environ: str) -> Narrator:
    """A narrator loading every installed plugin, as with SOLARSERV_PLUGINS unset: for the tests of
    ``installed_plugin``, which installs the only one."""
    return Narrator.build(config.load(environ=environ))


def test_a_file_in_plugins_dir_adds_a_check_without_core_changes(tmp_path, report, builtin_texts):
    write(tmp_path, "extra_check.py", EXTRA_CHECK)
    texts = build(PLUGINS_DIR=str(tmp_path)).narrate(report)
    assert "✗ extra check saw Europe/Paris" in texts.validation.splitlines()
    assert texts.validation.startswith(builtin_texts.validation.split("\nConfidence")[0])
    assert texts.summary == builtin_texts.summary


def test_a_raising_plugin_loses_only_its_own_contribution(tmp_path, report, builtin_texts, caplog):
    write(tmp_path, "broken.py", BROKEN_CHECK)
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path)).narrate(report)
    assert (texts.summary, texts.historical_context, texts.solar_context, texts.share_text) == (
        builtin_texts.summary, builtin_texts.historical_context, builtin_texts.solar_context,
        builtin_texts.share_text)
    assert texts.validation.startswith(builtin_texts.validation)  # every built-in check is still there
    assert texts.validation.splitlines()[-1] == \
        "✗ plugin broken (validation_checks) failed; its text was left out."
    assert "plugin broken failed in solarserv_validation_checks" in caplog.text
    assert "this plugin is broken" in caplog.text  # the traceback is logged for the operator


@pytest.mark.parametrize(("body", "failed"), [
    ("@hookimpl\ndef solarserv_validation_checks(report):\n    sys.exit('nothing to check')\n", "validation_checks"),
    ("sys.exit('nothing to load')\n", "loading"),
], ids=["in a hook", "at import"])
def test_a_plugin_that_calls_sys_exit_only_fails(tmp_path, report, builtin_texts, body, failed):
    # SystemExit is no Exception: from a hook it went up through the request and stopped the server, and
    # from an import it stopped start-up.
    write(tmp_path, "quitter.py", "import sys\n\nfrom solarserv.hookspecs import hookimpl\n\n" + body)
    texts = asyncio.run(build(PLUGINS_DIR=str(tmp_path)).narrate_in_time(report))
    assert texts.validation == builtin_texts.validation + \
        f"\n✗ plugin quitter ({failed}) failed; its text was left out."


def test_a_plugin_that_forces_its_way_into_the_report_changes_no_number_of_the_answer(tmp_path, services):
    write(tmp_path, "tamper.py", '''
        from solarserv.hookspecs import hookimpl

        @hookimpl
        def solarserv_validation_checks(report):
            # Past the frozen dataclasses, as code in the server's process can always go.
            object.__setattr__(report.sun, "elevation", -45.0)
            object.__setattr__(report, "longitude_correction_minutes", 0.0)
            report.__dict__["true_solar"] = report.civil.local
    ''')
    honest = services.pipeline
    tampered = Pipeline(honest.geocoder, honest.timezones, honest.engine, build(PLUGINS_DIR=str(tmp_path)))
    query = SolarQuery(dt.date(2026, 7, 14), dt.time(14, 30), latitude=48.8566, longitude=2.3522)
    assert asyncio.run(tampered.run(query)) == asyncio.run(honest.run(query))


@pytest.mark.parametrize("returned", [
    "Check(True, 'a single check, not a list')",
    "['a string, not a Check']",
    "[Check(1, 'passed must be a bool: a number, or a numpy bool, cannot be read as ✓ or ✗')]",
    "[Check(True, None)]",
    # One line each: a second could pass for a line of the core's (a check, the confidence, a failed plugin).
    r"[Check(True, 'checked\nConfidence HIGH, because:')]",
    r"[Check(True, 'checked\u2028✓ and more')]",
])
def test_a_plugin_returning_the_wrong_type_loses_only_its_own_checks(tmp_path, report, builtin_texts, returned):
    write(tmp_path, "sloppy.py", f'''
        from solarserv.hookspecs import Check, hookimpl

        @hookimpl
        def solarserv_validation_checks(report):
            return {returned}
    ''')
    texts = build(PLUGINS_DIR=str(tmp_path)).narrate(report)
    assert texts.validation.startswith(builtin_texts.validation)
    assert texts.validation.splitlines()[-1] == "✗ plugin sloppy (validation_checks) failed; its text was left out."


@pytest.mark.parametrize(("hook", "returned", "promised"), [
    ("solarserv_share_text", "'a sentence, not a Narrative'", "a Narrative"),
    # A forgotten return: the block was an empty string, with no log line and no failure in the validation text.
    ("solarserv_solar_context", "None", "a Narrative"),
    ("solarserv_summary", "HistoricalContext(Narrative('plain.txt.j2'), found=True)", "a Narrative"),
    ("solarserv_historical_context", "Narrative('plain.txt.j2')", "a HistoricalContext(Narrative, bool)"),
    ("solarserv_historical_context", "HistoricalContext(Narrative('plain.txt.j2'), found='yes')",
     "a HistoricalContext(Narrative, bool)"),
], ids=["a string", "None", "a summary's HistoricalContext", "a history's bare Narrative",
        "a history's found not a bool"])
def test_a_block_plugin_returning_the_wrong_type_is_refused_in_one_line(tmp_path, report, caplog, hook, returned,
                                                                        promised):
    write(tmp_path / "templates", "plain.txt.j2", "Plain text.\n")
    write(tmp_path / "plugins", "mistyped.py", f'''
        from solarserv.hookspecs import HistoricalContext, Narrative, hookimpl

        @hookimpl
        def {hook}(report):
            return {returned}
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path / "plugins"), NARRATIVES_DIR=str(tmp_path / "templates")).narrate(report)
    # The reason, without a traceback through solarserv's own code.
    assert [(record.getMessage(), record.exc_info) for record in caplog.records] == [
        (f"plugin mistyped: {hook} must return {promised}, got {eval(returned, vars(hookspecs))!r}", None)]
    assert texts.validation.splitlines()[-1] == \
        f"✗ plugin mistyped ({hookspecs.EXCLUSIVE_BLOCKS[hook]}) failed; its text was left out."


def test_a_plugin_that_fails_to_import_is_left_out_listed_and_noted(tmp_path, report, builtin_texts, caplog):
    write(tmp_path, "typo.py", "import no_such_module_anywhere\n")
    write(tmp_path, "works.py", EXTRA_CHECK)
    with caplog.at_level(logging.ERROR, logger="solarserv.plugin_manager"):
        narrator = build(PLUGINS_DIR=str(tmp_path))
    assert "typo.py failed to import" in caplog.text and "no_such_module_anywhere" in caplog.text
    assert {"name": "typo", "source": "file", "version": None, "hooks": [],
            "not_loaded": "failed to import"} in narrator.plugins.listing()
    lines = narrator.narrate(report).validation.splitlines()
    assert "✗ extra check saw Europe/Paris" in lines  # the other plugin still works
    assert lines[-1] == "✗ plugin typo (loading) failed; its text was left out."


def test_a_plugin_file_with_a_syntax_error_is_named_with_its_line_in_one_log_line(tmp_path, report, caplog):
    # Its traceback held nothing but importlib's frames.
    path = write(tmp_path, "unfinished.py", "from solarserv.hookspecs import hookimpl\n\n\n"
                                            "@hookimpl\ndef solarserv_validation_checks(report)\n    return []\n")
    with caplog.at_level(logging.ERROR, logger="solarserv.plugin_manager"):
        narrator = build(PLUGINS_DIR=str(tmp_path))
    assert [(record.getMessage(), record.exc_info) for record in caplog.records] == [
        (f"plugin file {path} failed to import; left out: SyntaxError in {path}, line 5: expected ':'", None)]
    assert narrator.plugins.not_loaded == {"unfinished": "failed to import"}


@pytest.mark.parametrize(("source", "logged"), [
    # It said the name was no hook, not which one was meant.
    ("@hookimpl\ndef solarserv_validation_check(report):\n    return []\n",
     "plugin mismatched left out: solarserv_validation_check is no solarserv hook; did you mean "
     "solarserv_validation_checks?"),
    # Two misspellings of one hook: it was named twice, "did you mean solarserv_summary and solarserv_summary?".
    ("@hookimpl\ndef solarserv_sumary(report):\n    return None\n\n@hookimpl\ndef solarserv_summery(report):\n"
     "    return None\n",
     "plugin mismatched left out: solarserv_sumary, solarserv_summery are no solarserv hooks; did you mean "
     "solarserv_summary?"),
    ("@hookimpl\ndef solarserv_footer(report):\n    return []\n",
     "plugin mismatched left out: solarserv_footer is no solarserv hook; the hooks are solarserv_historical_context, "
     "solarserv_share_text, solarserv_solar_context, solarserv_summary, solarserv_template_dirs and "
     "solarserv_validation_checks"),
    # One line saying what to pass, not pluggy's three about the "hookimpl" and the "hookspec".
    ("@hookimpl\ndef solarserv_validation_checks(result):\n    return []\n",
     "plugin mismatched left out: solarserv_validation_checks takes result, which solarserv does not pass: the hook "
     "gets report"),
    ("@hookimpl\ndef solarserv_template_dirs(report, settings):\n    return []\n",
     "plugin mismatched left out: solarserv_template_dirs takes report and settings, which solarserv does not pass: "
     "the hook gets no parameter"),
    # Called as a plain hook (narration._call), a wrapper's generator was refused on every answer.
    ("@hookimpl(hookwrapper=True)\ndef solarserv_validation_checks(report):\n    yield\n",
     "solarserv_validation_checks is a hook wrapper, which solarserv does not call as one"),
    ("@hookimpl(wrapper=True)\ndef solarserv_validation_checks(report):\n    return (yield)\n",
     "solarserv_validation_checks is a hook wrapper, which solarserv does not call as one"),
    # Its coroutine, never awaited, was refused on every answer.
    ("@hookimpl\nasync def solarserv_validation_checks(report):\n    return []\n",
     "solarserv_validation_checks is async, and solarserv calls hooks as plain functions"),
])
def test_a_plugin_whose_hooks_do_not_match_the_specs_is_left_out(tmp_path, report, caplog, source, logged):
    # A misspelled hook would never be called; a parameter the spec does not have could never be passed.
    write(tmp_path, "mismatched.py", "from solarserv.hookspecs import hookimpl\n\n" + source)
    with caplog.at_level(logging.ERROR, logger="solarserv.plugin_manager"):
        narrator = build(PLUGINS_DIR=str(tmp_path))
    assert [record.getMessage() for record in caplog.records if "\n" not in record.getMessage()
            and logged in record.getMessage()], caplog.text
    assert "mismatched" not in {name for name, _ in narrator.plugins.manager.list_name_plugin()}
    assert narrator.plugins.not_loaded == {"mismatched": "hooks do not match solarserv's"}
    assert narrator.narrate(report).validation.splitlines()[-1] == \
        "✗ plugin mismatched (loading) failed; its text was left out."


def test_a_hook_function_without_hookimpl_is_named(tmp_path, report, caplog):
    # pluggy passes over a function not marked @hookimpl: the plugin loaded, listed with no hooks, and did nothing.
    write(tmp_path / "unmarked", "forgot.py", '''
        from solarserv.hookspecs import Check

        def solarserv_validation_checks(report):
            return [Check(True, "never seen")]
    ''')
    with caplog.at_level(logging.WARNING, logger="solarserv.plugin_manager"):
        narrator = build(PLUGINS_DIR=str(tmp_path / "unmarked"))
    assert caplog.messages == ["plugin forgot left out: it implements no hook (not marked @hookimpl: "
                               "solarserv_validation_checks)"]
    assert narrator.plugins.not_loaded == {"forgot": "no hooks"}
    assert narrator.narrate(report).validation.splitlines()[-1] == \
        "✗ plugin forgot (loading) failed; its text was left out."
    caplog.clear()
    write(tmp_path / "half", "half_marked.py", '''
        from solarserv.hookspecs import Check, Narrative, hookimpl

        def solarserv_summary(report):
            return Narrative("never_rendered.txt.j2")

        @hookimpl
        def solarserv_validation_checks(report):
            return [Check(True, "the marked hook")]
    ''')
    with caplog.at_level(logging.WARNING, logger="solarserv.plugin_manager"):
        narrator = build(PLUGINS_DIR=str(tmp_path / "half"))
    assert caplog.messages == ["plugin half_marked: never called, as not marked @hookimpl: solarserv_summary"]
    assert "✓ the marked hook" in narrator.narrate(report).validation.splitlines()


def test_tryfirst_and_trylast_are_named_as_having_no_effect(tmp_path, report, caplog):
    write(tmp_path, "eager.py", '''
        from solarserv.hookspecs import Check, hookimpl

        @hookimpl(tryfirst=True)
        def solarserv_validation_checks(report):
            return [Check(True, "eager check")]
    ''')
    narrator = build(PLUGINS_DIR=str(tmp_path))
    assert "plugin eager: tryfirst and trylast have no effect (on solarserv_validation_checks): solarserv calls " \
        "the hooks in loading order, the built-ins first" in caplog.messages
    assert narrator.narrate(report).validation.split("\nConfidence")[0].endswith("\n✓ eager check")


def test_a_hook_may_leave_out_the_report_parameter(tmp_path, report):
    write(tmp_path, "constant.py", '''
        from solarserv.hookspecs import Check, hookimpl

        @hookimpl
        def solarserv_validation_checks():
            return [Check(True, "a check that needs no report")]
    ''')
    assert "✓ a check that needs no report" in build(PLUGINS_DIR=str(tmp_path)).narrate(report).validation


def test_a_plugin_file_can_hold_dataclasses_with_postponed_annotations(tmp_path, report):
    # dataclasses looks the module up in sys.modules: a file run without being registered there failed.
    write(tmp_path, "typed.py", '''
        from __future__ import annotations

        from dataclasses import dataclass

        from solarserv.hookspecs import Check, hookimpl


        @dataclass(frozen=True)
        class Limit:
            degrees: float


        @hookimpl
        def solarserv_validation_checks(report):
            return [Check(report.sun.elevation > Limit(5.0).degrees, "above 5°")]
    ''')
    assert "✓ above 5°" in build(PLUGINS_DIR=str(tmp_path)).narrate(report).validation.splitlines()


@pytest.mark.parametrize("returned", ["Path('templates')", "1 / 0"])
def test_a_plugin_whose_template_dirs_cannot_be_read_is_left_out(tmp_path, report, builtin_texts, returned):
    write(tmp_path, "dirs.py", f'''
        from pathlib import Path
        from solarserv.hookspecs import Check, Narrative, hookimpl

        @hookimpl
        def solarserv_template_dirs():
            return {returned}

        @hookimpl
        def solarserv_validation_checks(report):
            return [Check(True, "a check of a plugin left out")]

        @hookimpl
        def solarserv_summary(report):
            return Narrative("its_own_summary.txt.j2")
    ''')
    narrator = build(PLUGINS_DIR=str(tmp_path))
    assert narrator.plugins.not_loaded == {"dirs": "template directories could not be read"}
    # Left out whole: none of its hooks is called, the built-in keeps the block it claimed, and it is listed once.
    assert [plugin["name"] for plugin in narrator.plugins.listing() if plugin["source"] != "entry point"] == \
        [*BUILTIN_PLUGINS, "dirs"]
    texts = narrator.narrate(report)
    assert texts.summary == builtin_texts.summary
    assert texts.validation == builtin_texts.validation + "\n✗ plugin dirs (loading) failed; its text was left out."


def test_a_plugin_whose_template_directory_is_missing_is_left_out_at_start_up(tmp_path, report, builtin_texts,
                                                                              caplog):
    # As an installed plugin is when its pyproject.toml does not install its templates: it loaded quietly,
    # and every answer then logged a TemplateNotFound traceback and left the block empty.
    write(tmp_path, "uninstalled_templates.py", '''
        from pathlib import Path
        from solarserv.hookspecs import Narrative, hookimpl

        @hookimpl
        def solarserv_summary(report):
            return Narrative("uninstalled_summary.txt.j2")

        @hookimpl
        def solarserv_template_dirs():
            return [Path(__file__).parent / "templates"]
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.plugin_manager"):
        narrator = build(PLUGINS_DIR=str(tmp_path))
    missing = tmp_path / "templates"
    assert narrator.plugins.not_loaded == {"uninstalled_templates": f"no template directory {missing}"}
    assert caplog.messages == [f"plugin uninstalled_templates left out: solarserv_template_dirs names {missing}, "
                               "which is not a directory (are its templates installed with it?)"]
    texts = narrator.narrate(report)
    assert texts.summary == builtin_texts.summary
    assert texts.validation.splitlines()[-1] == \
        "✗ plugin uninstalled_templates (loading) failed; its text was left out."


@pytest.mark.parametrize("where", ["site-packages", "prefix lib"])
def test_a_plugin_whose_template_directory_holds_pythons_packages_is_left_out(tmp_path, report, builtin_texts, caplog,
                                                                              where):
    # An installed single-module plugin's Path(__file__).parent is site-packages: start-up searched all of it and
    # compiled other packages' .j2 files, stopping on one that is no solarserv template.
    site_packages = tmp_path / "lib" / "site-packages"
    write(site_packages / "other_package", "config.j2", "{% if %}not a solarserv template\n")
    directory = site_packages if where == "site-packages" else Path(sys.prefix) / "lib"
    write(tmp_path / "plugins", "wide.py", f'''
        from pathlib import Path
        from solarserv.hookspecs import Narrative, hookimpl

        @hookimpl
        def solarserv_summary(report):
            return Narrative("wide_summary.txt.j2")

        @hookimpl
        def solarserv_template_dirs():
            return [Path({str(directory)!r})]
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.plugin_manager"):
        narrator = build(PLUGINS_DIR=str(tmp_path / "plugins"))
    assert narrator.plugins.not_loaded == {"wide": f"template directory {directory} holds Python's packages"}
    [message] = caplog.messages
    assert message.startswith(f"plugin wide left out: solarserv_template_dirs names {directory}, which ")
    assert message.endswith(" (ship templates in a directory of the plugin's package)")
    assert narrator.narrate(report).summary == builtin_texts.summary


def test_a_block_plugin_that_raises_or_cannot_render_leaves_the_other_texts(tmp_path, report, builtin_texts):
    write(tmp_path, "unrenderable_summary.py", '''
        from solarserv.hookspecs import Narrative, hookimpl

        @hookimpl
        def solarserv_summary(report):
            return Narrative("summary.txt.j2", {})  # the template needs true_solar: StrictUndefined fails
    ''')
    write(tmp_path, "raising_share.py", '''
        from solarserv.hookspecs import hookimpl

        @hookimpl
        def solarserv_share_text(report):
            raise ValueError("nothing to share")
    ''')
    texts = build(PLUGINS_DIR=str(tmp_path)).narrate(report)
    assert texts.summary == "" and texts.share_text == ""
    assert texts.solar_context == builtin_texts.solar_context
    assert texts.historical_context == builtin_texts.historical_context
    # Each block is named the same way whether its plugin raised or its text failed to render.
    assert texts.validation.splitlines()[-2:] == [
        "✗ plugin unrenderable_summary (summary) failed; its text was left out.",
        "✗ plugin raising_share (share.text) failed; its text was left out.",
    ]


# A directory named with "..", as `Path(__file__).parent / ".." / "templates"` names it, is the one Jinja's file
# names of its templates leave out: the line said only that rendering failed.
@pytest.mark.parametrize("templates", ["templates", "plugins/../templates"])
def test_a_template_failing_to_render_is_named_with_its_line_in_the_first_log_line(tmp_path, report, caplog,
                                                                                   templates):
    # The line said only that rendering failed; the template and what failed there came at the end of a traceback
    # through Jinja's code.
    template = write(tmp_path / "templates", "misspelt.txt.j2", "A sundial reads\n{{ word|upper }} {{ wrod }}.\n")
    write(tmp_path / "plugins", "misspelt.py", '''
        from solarserv.hookspecs import Narrative, hookimpl

        @hookimpl
        def solarserv_summary(report):
            return Narrative("misspelt.txt.j2", {"word": "noon"})
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path / "plugins"), NARRATIVES_DIR=str(tmp_path / templates)).narrate(report)
    [record] = caplog.records
    assert record.getMessage() == (f"plugin misspelt: rendering solarserv_summary failed: template {template}, line 2: "
                                   "'wrod' is undefined")
    assert record.exc_info  # and the traceback, for an error in a filter or a value's code
    assert texts.summary == ""


def test_a_narrative_with_a_value_named_report_is_refused_naming_the_plugin(tmp_path, report, builtin_texts, caplog):
    # It failed on every answer with Jinja's "render() got multiple values for keyword argument 'report'".
    write(tmp_path, "report_value.py", '''
        from solarserv.hookspecs import Narrative, hookimpl

        @hookimpl
        def solarserv_summary(report):
            return Narrative("summary.txt.j2", {"report": "mine"})
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path)).narrate(report)
    [record] = caplog.records
    assert record.getMessage() == "plugin report_value failed in solarserv_summary"
    assert str(record.exc_info[1]) == ("Narrative 'summary.txt.j2' has a value named report, the name under which "
                                       "its template sees the report: rename the value")
    assert (texts.summary, texts.validation) == (
        "", builtin_texts.validation + "\n✗ plugin report_value (summary) failed; its text was left out.")


def test_a_shared_narrative_may_have_a_value_named_report(tmp_path, monkeypatch, report):
    write(tmp_path, "summary.txt.j2", "{{ shared }}")
    write(tmp_path, "shared.txt.j2", "{{ report }}")

    @hookimpl
    def solarserv_summary(report):
        return Narrative("summary.txt.j2", {"shared": Narrative("shared.txt.j2", {"report": "its own"}, shared=True)})

    assert narrator_with_summary(monkeypatch, tmp_path, solarserv_summary).narrate(report).summary == "its own"


def test_a_narrative_naming_no_template_is_logged_in_one_line(tmp_path, report, builtin_texts, caplog):
    # Its traceback held only Jinja's loader.
    write(tmp_path, "misnamed.py", '''
        from solarserv.hookspecs import Narrative, hookimpl

        @hookimpl
        def solarserv_share_text(report):
            return Narrative("shares.txt.j2")
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path)).narrate(report)
    [record] = caplog.records
    assert record.getMessage() == ("plugin misnamed: rendering solarserv_share_text failed: 'shares.txt.j2' not "
                                   f"found in search path: '{Path(solarserv.narratives.__file__).parent}'")
    assert record.exc_info is None
    assert (texts.share_text, texts.validation) == (
        "", builtin_texts.validation + "\n✗ plugin misnamed (share.text) failed; its text was left out.")


def test_a_block_whose_text_holds_hidden_characters_is_refused_naming_them(tmp_path, report, builtin_texts, caplog):
    # They went into the JSON, and from `solarserv calc` onto the terminal, which obeyed them.
    write(tmp_path / "templates", "coloured.txt.j2", "Sundial time:\n{{ colour }}12:33:30{{ plain }}\n")
    write(tmp_path / "templates", "two_lines.txt.j2", "A first line,\nand a second.\n")
    write(tmp_path / "plugins", "coloured.py", '''
        from solarserv.hookspecs import Narrative, hookimpl

        @hookimpl
        def solarserv_summary(report):
            return Narrative("coloured.txt.j2", {"colour": "\\x1b[31m", "plain": "\\x1b[0m\\x07"})

        @hookimpl
        def solarserv_solar_context(report):
            return Narrative("two_lines.txt.j2")
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path / "plugins"), NARRATIVES_DIR=str(tmp_path / "templates")).narrate(report)
    assert [(record.getMessage(), record.exc_info) for record in caplog.records] == [
        ("plugin coloured: solarserv_summary rendered coloured.txt.j2 into a text holding \\x1b\\x07, which is no "
         "visible character: a text holds visible characters, spaces and line breaks", None)]
    assert (texts.summary, texts.validation) == (
        "", builtin_texts.validation + "\n✗ plugin coloured (summary) failed; its text was left out.")
    assert texts.solar_context == "A first line,\nand a second."


def test_a_text_longer_than_a_text_may_be_is_refused_in_a_short_log_line(tmp_path, report, builtin_texts, caplog):
    # A plugin's 8 MB summary went out in every answer, and a check's 5 MB text, refused, was logged whole.
    write(tmp_path / "templates", "long.txt.j2", "{{ words }}\n")
    write(tmp_path / "plugins", "verbose.py", '''
        from solarserv.hookspecs import Check, Narrative, hookimpl

        @hookimpl
        def solarserv_summary(report):
            return Narrative("long.txt.j2", {"words": "sun " * 2_501})

        @hookimpl
        def solarserv_validation_checks(report):
            return [Check(True, "sun" * 5_000_000)]
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path / "plugins"), NARRATIVES_DIR=str(tmp_path / "templates")).narrate(report)
    assert [record.getMessage() for record in caplog.records] == [
        "plugin verbose: solarserv_summary rendered long.txt.j2 into a text of 10,003 characters, more than the "
        f"{LONGEST_TEXT:,} a text may hold",
        "plugin verbose: solarserv_validation_checks must return a list of Check(bool, str), each text one line of "
        f"visible characters, at most {LONGEST_TEXT:,} of them, got [Check(passed=True, text='" + "sun" * 58
        + "… (15000029 characters)",
    ]
    assert (texts.summary, texts.validation) == ("", builtin_texts.validation + "\n✗ plugin verbose (summary) failed; "
                                                 "its text was left out.\n✗ plugin verbose (validation_checks) failed; "
                                                 "its text was left out.")


def test_checks_longer_together_than_a_text_may_be_are_refused(tmp_path, report, builtin_texts, caplog):
    # Each check within the limit, a thousand of them made 10 MB of every answer's validation text.
    write(tmp_path / "plugins", "chatty.py", '''
        from solarserv.hookspecs import Check, hookimpl

        @hookimpl
        def solarserv_validation_checks(report):
            return [Check(True, "sun" * 3_000)] * 1_000
    ''')
    with caplog.at_level(logging.ERROR, logger="solarserv.narration"):
        texts = build(PLUGINS_DIR=str(tmp_path / "plugins")).narrate(report)
    assert [record.getMessage() for record in caplog.records] == [
        "plugin chatty: solarserv_validation_checks returned checks of 9,000,000 characters in all, more than the "
        f"{LONGEST_TEXT:,} a plugin's checks may hold together"]
    assert texts.validation == builtin_texts.validation + "\n✗ plugin chatty (validation_checks) failed; its text " \
                                                          "was left out."


def test_a_third_party_block_plugin_takes_the_block_over_from_the_built_in(tmp_path, report, builtin_texts):
    write(tmp_path / "templates", "short_summary.txt.j2", "Sundial {{ true_solar|hms }}.\n")
    write(tmp_path / "plugins", "short_summary.py", f'''
        from pathlib import Path

        from solarserv.hookspecs import Narrative, hookimpl
        from solarserv.timefmt import shown_true_solar

        @hookimpl
        def solarserv_summary(report):
            return Narrative("short_summary.txt.j2", {{"true_solar": shown_true_solar(report)}})

        @hookimpl
        def solarserv_template_dirs():
            return [Path({str(tmp_path / "templates")!r})]
    ''')
    narrator = build(PLUGINS_DIR=str(tmp_path / "plugins"))
    texts = narrator.narrate(report)
    assert texts.summary == f"Sundial {hms(shown_true_solar(report))}."
    assert (texts.solar_context, texts.validation) == (builtin_texts.solar_context, builtin_texts.validation)
    assert "solarserv.plugins.summary" not in {plugin["name"] for plugin in narrator.plugins.listing()}
    # Each built-in writes one block and nothing else, so setting one aside loses nothing more.
    builtins = Narrator.build(config.load(environ={}), third_party=False).plugins.manager
    assert all(len(builtins.get_hookcallers(plugin)) == 1 for _, plugin in builtins.list_name_plugin())


def test_two_third_party_plugins_claiming_one_block_stop_start_up_naming_them(tmp_path):
    for name in ("my_summary", "other_summary", "third_summary"):
        write(tmp_path, f"{name}.py", '''
            from solarserv.hookspecs import Narrative, hookimpl

            @hookimpl
            def solarserv_summary(report):
                return Narrative("summary.txt.j2")
        ''')
    with pytest.raises(PluginConflict) as raised:
        build(PLUGINS_DIR=str(tmp_path))
    assert str(raised.value) == ("plugins my_summary, other_summary and third_summary all write the summary "
                                 "block; keep only one of them")


def test_two_plugins_shipping_a_template_of_one_name_stop_start_up_naming_them(tmp_path, report):
    # Jinja finds the first: the second plugin's block was rendered from the first one's template, without a word.
    for name, hook in (("dial_summary", "solarserv_summary"), ("dial_share", "solarserv_share_text")):
        write(tmp_path / "plugins" / f"{name}_templates", "sundial.txt.j2", f"{name}'s text\n")
        write(tmp_path / "plugins", f"{name}.py", f'''
            from pathlib import Path

            from solarserv.hookspecs import Narrative, hookimpl

            @hookimpl
            def {hook}(report):
                return Narrative("sundial.txt.j2")

            @hookimpl
            def solarserv_template_dirs():
                return [Path(__file__).parent / "{name}_templates"]
        ''')
    with pytest.raises(PluginConflict) as raised:
        build(PLUGINS_DIR=str(tmp_path / "plugins"))
    assert str(raised.value) == ("plugins dial_share and dial_summary both ship a template named sundial.txt.j2, "
                                 "and only one of them can be found: rename one of them")
    # Two plugins sharing one directory share its templates: files of one PLUGINS_DIR beside their templates.
    (tmp_path / "plugins" / "dial_share_templates" / "sundial.txt.j2").unlink()
    for name in ("dial_summary", "dial_share"):
        plugin = tmp_path / "plugins" / f"{name}.py"
        plugin.write_text(plugin.read_text().replace(f'/ "{name}_templates"', '/ "dial_summary_templates"'))
    texts = build(PLUGINS_DIR=str(tmp_path / "plugins")).narrate(report)
    assert texts.summary == texts.share_text == "dial_summary's text"


def test_a_template_in_narratives_dir_overrides_the_built_in(tmp_path, report, builtin_texts):
    write(tmp_path, "share.txt.j2", "Sundial: {{ true_solar|hms }} ({{ report.civil.zone }})\n")
    texts = build(NARRATIVES_DIR=str(tmp_path)).narrate(report)
    assert texts.share_text == f"Sundial: {hms(shown_true_solar(report))} (Europe/Paris)"
    assert texts.summary == builtin_texts.summary


def test_an_override_can_use_jinjas_globals(tmp_path, report):
    # The environment flattens each template's globals into a plain dict (solarserv.narration); Jinja's
    # own globals must still be there, for the built-in templates and for every override alike.
    write(tmp_path, "share.txt.j2", "{% set seen = namespace(n=0) %}{% for _ in range(3) %}"
                                    "{% set seen.n = seen.n + 1 %}{% endfor %}{{ seen.n }} {{ dict(a=1) }}\n")
    assert build(NARRATIVES_DIR=str(tmp_path)).narrate(report).share_text == "3 {'a': 1}"


def test_a_plugin_can_ship_templates_that_narratives_dir_still_overrides(tmp_path, report):
    templates = tmp_path / "plugin_templates"
    write(templates, "summary.txt.j2", "Summary from the plugin's templates.\n")
    write(tmp_path / "plugins", "templated.py", f'''
        from pathlib import Path
        from solarserv.hookspecs import hookimpl

        @hookimpl
        def solarserv_template_dirs():
            return [Path({str(templates)!r})]
    ''')
    assert build(PLUGINS_DIR=str(tmp_path / "plugins")).narrate(report).summary == \
        "Summary from the plugin's templates."
    write(tmp_path / "operator", "summary.txt.j2", "The operator's summary.\n")
    narrator = build(PLUGINS_DIR=str(tmp_path / "plugins"), NARRATIVES_DIR=str(tmp_path / "operator"))
    assert narrator.narrate(report).summary == "The operator's summary."


def test_an_override_of_the_zone_record_changes_the_historical_context(tmp_path, report, builtin_texts):
    write(tmp_path, "zone_record.txt.j2", "Record of {{ history.record_of }}.\n")
    history = build(NARRATIVES_DIR=str(tmp_path)).narrate(report).historical_context
    assert history.startswith("Record of Europe/Paris. On 14 July 2026 the clocks showed summer time (CEST)")
    assert history.endswith(builtin_texts.historical_context.split(" On 14 July 2026 ")[1])


def narrator_with_summary(monkeypatch, templates: Path, solarserv_summary) -> Narrator:
    """The built-ins with `solarserv_summary` in place of the built-in summary (a block has one writer),
    registered from the module as usual, and templates from `templates` first."""
    monkeypatch.setattr(importlib.import_module("solarserv.plugins.summary"), "solarserv_summary", solarserv_summary)
    return Narrator.build(config.load(environ={"NARRATIVES_DIR": str(templates)}), third_party=False)


def test_a_shared_narrative_sees_only_its_values_and_renders_once_per_values(tmp_path, monkeypatch):
    write(tmp_path, "counted.txt.j2", "{{ word }}: report {{ 'seen' if report is defined else 'unseen' }}")
    write(tmp_path, "summary.txt.j2", "{{ shared }} / {{ report.civil.zone }}")

    @hookimpl
    def solarserv_summary(report):
        shared = Narrative("counted.txt.j2", {"word": report.civil.zone.split("/")[0]}, shared=True)
        return Narrative("summary.txt.j2", {"shared": shared})

    narrator = narrator_with_summary(monkeypatch, tmp_path, solarserv_summary)
    rendered = []
    original = narrator.templates.get_template
    monkeypatch.setattr(narrator.templates, "get_template",
                        lambda name: rendered.append(name) or original(name))
    summaries = [narrator.narrate(report_at(*where)).summary for where in (
        ("Paris", "2026-07-14", "14:30"), ("Madrid", "2026-01-02", "09:00"), ("Kashgar", "2026-07-14", "14:30"))]
    assert summaries == ["Europe: report unseen / Europe/Paris", "Europe: report unseen / Europe/Madrid",
                         "Asia: report unseen / Asia/Shanghai"]
    assert rendered.count("counted.txt.j2") == 2  # "Europe" once, "Asia" once
    assert rendered.count("summary.txt.j2") == 3


def test_a_shared_narrative_can_hold_a_nested_narrative(tmp_path, monkeypatch, report):
    write(tmp_path, "summary.txt.j2", "{{ shared }}")
    write(tmp_path, "record.txt.j2", "record of {{ zone }}: {{ detail }}")
    write(tmp_path, "detail.txt.j2", "{{ zone|length }} letters")

    @hookimpl
    def solarserv_summary(report):
        zone = report.civil.zone
        detail = Narrative("detail.txt.j2", {"zone": zone})
        return Narrative("summary.txt.j2", {"shared": Narrative("record.txt.j2", {"zone": zone, "detail": detail},
                                                                  shared=True)})

    narrator = narrator_with_summary(monkeypatch, tmp_path, solarserv_summary)
    texts = [narrator.narrate(report) for _ in range(2)]  # rendered, then from the cache
    assert [text.summary for text in texts] == ["record of Europe/Paris: 12 letters"] * 2
    assert "failed" not in texts[0].validation


def test_equal_values_of_different_types_are_different_shared_texts(tmp_path, monkeypatch, report):
    write(tmp_path, "summary.txt.j2", "{{ shared }}")
    write(tmp_path, "value.txt.j2", "{{ value }}")
    values = iter([1, True, 1.0, 1, True])

    @hookimpl
    def solarserv_summary(report):
        return Narrative("summary.txt.j2", {"shared": Narrative("value.txt.j2", {"value": next(values)},
                                                                  shared=True)})

    narrator = narrator_with_summary(monkeypatch, tmp_path, solarserv_summary)
    assert [narrator.narrate(report).summary for _ in range(5)] == ["1", "True", "1.0", "1", "True"]


def test_a_broken_override_template_stops_start_up_naming_it(tmp_path):
    write(tmp_path / "sub", "notes.j2", "fine\n")
    write(tmp_path, "summary.txt.j2", "line one\n{% if %}\n")
    with pytest.raises(TemplateLoadError) as raised:
        build(NARRATIVES_DIR=str(tmp_path))
    assert str(raised.value).startswith(f"template {tmp_path / 'summary.txt.j2'}, line 2: ")


def test_an_override_template_not_in_utf8_stops_start_up_naming_it(tmp_path):
    (tmp_path / "summary.txt.j2").write_bytes("Été à {{ report.location.display_name }}\n".encode("latin-1"))
    with pytest.raises(TemplateLoadError) as raised:
        build(NARRATIVES_DIR=str(tmp_path))
    # Named by its path, as a syntax error is: a bare name did not say which of the template dirs holds it.
    assert str(raised.value).startswith(f"template {tmp_path / 'summary.txt.j2'} is not UTF-8 text: 'utf-8' codec "
                                        "can't decode byte 0xc9 in position 0")


@pytest.mark.parametrize("setting", ["PLUGINS_DIR", "NARRATIVES_DIR"])
def test_a_missing_directory_is_an_error_at_start(tmp_path, setting):
    with pytest.raises(config.SettingsError, match=f"{setting} .*nowhere is not a directory"):
        build(**{setting: str(tmp_path / "nowhere")})


def test_a_broken_validation_override_falls_back_to_the_built_in_template(tmp_path, report, builtin_texts):
    write(tmp_path, "validation.txt.j2", "Validation: {{ bogus }}\n")
    validation = build(NARRATIVES_DIR=str(tmp_path)).narrate(report).validation
    assert validation == builtin_texts.validation + \
        "\n✗ plugin validation.txt.j2 (its override) failed; its text was left out."


def test_a_history_whose_text_fails_keeps_its_status(tmp_path, report):
    write(tmp_path, "historical_context.txt.j2", "{{ nope }}\n")
    texts = build(NARRATIVES_DIR=str(tmp_path)).narrate(report)
    assert (texts.historical_context, texts.historical_context_found) == ("", True)
    assert texts.validation.splitlines()[-1] == \
        "✗ plugin solarserv.plugins.historical (historical_context) failed; its text was left out."


SLOW_CHECK = '''
import time
from pathlib import Path

from solarserv.hookspecs import Check, hookimpl

RELEASE = Path({release!r})


@hookimpl
def solarserv_validation_checks(report):
    deadline = time.monotonic() + 60
    while not RELEASE.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return [Check(True, "the slow check answered")]
'''


def test_a_plugin_that_hangs_does_not_hold_up_the_answer(tmp_path, report, builtin_texts):
    release = tmp_path / "release"
    write(tmp_path / "plugins", "slow_check.py", SLOW_CHECK.format(release=str(release)))
    write(tmp_path / "plugins", "quick_check.py", EXTRA_CHECK)
    narrator = build(PLUGINS_DIR=str(tmp_path / "plugins"), PLUGIN_TIMEOUT="0.2")
    # The first answer comes while the plugin still waits for its release: built-in texts and a note. quick_check
    # ran before it (files load in name order), but its check is not used either.
    first = asyncio.run(narrator.narrate_in_time(report))
    assert not release.exists()
    assert first.validation == builtin_texts.validation + "\n✗ plugin slow_check (no answer within 0.2 s, so no " \
        "third-party plugin's text is used) failed; its text was left out."
    # While it still hangs, the next answer does not wait for the limit again.
    second = asyncio.run(narrator.narrate_in_time(report))
    assert second.validation.splitlines()[-1] == \
        "✗ plugin slow_check (still busy with an earlier request, so no third-party plugin ran) failed; its text was " \
        "left out."
    release.touch()
    deadline = time.monotonic() + 60
    while not narrator._late.done() and time.monotonic() < deadline:
        time.sleep(0.01)
    lines = asyncio.run(narrator.narrate_in_time(report)).validation.splitlines()
    assert "✓ the slow check answered" in lines and "✗ extra check saw Europe/Paris" in lines


HANGING_IMPORT = '''
import time
from pathlib import Path

from solarserv.hookspecs import Check, hookimpl

deadline = time.monotonic() + 60
while not Path({release!r}).exists() and time.monotonic() < deadline:
    time.sleep(0.01)


@hookimpl
def solarserv_validation_checks(report):
    return [Check(True, "imported at last")]
'''


HANGING_TEMPLATE_DIRS = '''
import time
from pathlib import Path

from solarserv import plugin_manager
from solarserv.hookspecs import Check, hookimpl

# The test's 0.01 s from here on: the import of this file alone can take longer on a busy machine.
plugin_manager.SLOW_PLUGIN_SECONDS = 0.01


@hookimpl
def solarserv_template_dirs():
    deadline = time.monotonic() + 60
    while not Path({release!r}).exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return [Path(__file__).parent]


@hookimpl
def solarserv_validation_checks(report):
    return [Check(True, "imported at last")]
'''


@pytest.mark.parametrize("source,still_busy,seconds_before_it_hangs", [
    (HANGING_IMPORT, "plugin file {path} is still importing", 0.01),
    # 0.01 s once imported, as the file sets it: a plugin's import slower than that would be named first.
    (HANGING_TEMPLATE_DIRS, "plugin {name} is still in solarserv_template_dirs", 60),
])
def test_a_plugin_that_hangs_is_named_while_start_up_waits_for_it(tmp_path, monkeypatch, caplog, report, source,
                                                                  still_busy, seconds_before_it_hangs):
    # Start-up stalled without a line saying which plugin it waited for.
    release = tmp_path / "release"
    plugin = write(tmp_path / "plugins", "stuck.py", source.format(release=str(release)))
    monkeypatch.setattr(plugin_manager, "SLOW_PLUGIN_SECONDS", seconds_before_it_hangs)
    narrators = []
    with caplog.at_level(logging.WARNING, logger="solarserv.plugin_manager"):
        loading = threading.Thread(target=lambda: narrators.append(build(PLUGINS_DIR=str(tmp_path / "plugins"))))
        loading.start()
        deadline = time.monotonic() + 60
        while not caplog.messages and time.monotonic() < deadline:
            time.sleep(0.01)
        named_while_waiting = list(caplog.messages)
        release.touch()
        loading.join()
    busy = still_busy.format(path=plugin, name="stuck")
    assert named_while_waiting == [f"{busy} after 0.01 s; start-up waits for it"]
    assert caplog.messages == named_while_waiting
    assert "✓ imported at last" in narrators[0].narrate(report).validation.splitlines()


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """A distribution 'sundial-extra' 1.2.3 with an entry point in group `solarserv`, on a sys.path without the
    directories of the venv's distributions (nor conftest's tripwire): the only plugin installed."""
    site = tmp_path / "site"
    write(site, "sundial_extra.py", EXTRA_CHECK)
    metadata = site / "sundial_extra-1.2.3.dist-info"
    write(metadata, "METADATA", "Metadata-Version: 2.1\nName: sundial-extra\nVersion: 1.2.3\n")
    write(metadata, "entry_points.txt", "[solarserv]\nsundial_extra = sundial_extra\n")
    monkeypatch.syspath_prepend(str(site))  # which saves sys.path whole, and puts it back after the test
    sys.path[:] = [path for path in sys.path if path == str(site) or not any(Path(path).glob("*.dist-info"))]
    yield "sundial_extra"
    sys.modules.pop("sundial_extra", None)


def test_two_distributions_with_one_plugin_name_stop_start_up_naming_both(installed_plugin, tmp_path, monkeypatch):
    # A distribution renamed and installed again beside its old self, say: the one found second was dropped quietly.
    site = tmp_path / "renamed"
    write(site, "sundial_extra_renamed.py", EXTRA_CHECK)
    write(site / "sundial_extra_renamed-2.0.0.dist-info", "METADATA",
          "Metadata-Version: 2.1\nName: sundial-extra-renamed\nVersion: 2.0.0\n")
    write(site / "sundial_extra_renamed-2.0.0.dist-info", "entry_points.txt",
          "[solarserv]\nsundial_extra = sundial_extra_renamed\n")
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(PluginConflict) as raised:
        build_with_installed_plugins()
    assert str(raised.value) == ("distributions sundial-extra 1.2.3 and sundial-extra-renamed 2.0.0 both install a "
                                 "plugin named sundial_extra; keep only one of them")
    # Not when the allow-list keeps that name out.
    assert installed_plugin not in loaded(build(SOLARSERV_PLUGINS=""))


def test_an_entry_point_plugin_is_loaded_and_listed(installed_plugin, report):
    narrator = build_with_installed_plugins()
    listing = {plugin["name"]: plugin for plugin in narrator.plugins.listing()}
    assert listing[installed_plugin] == {"name": "sundial_extra", "source": "entry point", "version": "1.2.3",
                                        "hooks": ["solarserv_validation_checks"]}
    assert "✗ extra check saw Europe/Paris" in narrator.narrate(report).validation


def test_an_entry_point_plugin_that_fails_to_import_is_left_out_and_logged(installed_plugin, tmp_path, report, caplog):
    write(tmp_path / "site", "sundial_extra.py", "import no_such_module_anywhere\n")
    narrator = build_with_installed_plugins()
    listing = {plugin["name"]: plugin for plugin in narrator.plugins.listing()}
    assert listing[installed_plugin] == {"name": "sundial_extra", "source": "entry point", "version": "1.2.3",
                                        "hooks": [], "not_loaded": "failed to import"}
    assert "plugin sundial_extra (sundial_extra) failed to import; left out" in caplog.text
    assert "no_such_module_anywhere" in caplog.text
    assert "✓ equation of time" in narrator.narrate(report).validation  # the built-in plugins still write


def loaded(narrator: Narrator) -> set[str]:
    return {plugin["name"] for plugin in narrator.plugins.listing() if "not_loaded" not in plugin}


def test_the_allow_list_filters_entry_point_plugins(installed_plugin, caplog):
    blocked = build(SOLARSERV_PLUGINS="some_other_plugin")
    assert installed_plugin not in loaded(blocked)
    assert "SOLARSERV_PLUGINS names some_other_plugin, but no installed plugin has that name (it takes the names " \
        "of entry points in the group solarserv; installed: sundial_extra)" in caplog.text
    # Set but empty allows none (an allow-list fails closed), as does a list of blanks.
    for nothing in ("", " , "):
        assert installed_plugin not in loaded(build(SOLARSERV_PLUGINS=nothing))
    allowed = build(SOLARSERV_PLUGINS=f"some_other_plugin, {installed_plugin}")
    assert installed_plugin in loaded(allowed)


def test_plugins_the_allow_list_keeps_out_are_listed_as_not_loaded_but_no_failure(installed_plugin, report,
                                                                                  builtin_texts, capsys, data_dir):
    # They were in the log alone, at INFO: `solarserv plugins` did not show what the allow-list left out.
    narrator = build(SOLARSERV_PLUGINS="some_other_plugin")
    assert {"name": installed_plugin, "source": "entry point", "version": "1.2.3", "hooks": [],
            "not_loaded": "not in SOLARSERV_PLUGINS"} in narrator.plugins.listing()
    assert narrator.plugins.not_loaded == {}
    assert narrator.narrate(report).validation == builtin_texts.validation
    assert main(["plugins", "--data-dir", str(data_dir)]) == 0
    assert "sundial_extra 1.2.3 (entry point): not loaded, not in SOLARSERV_PLUGINS (see the log)" in \
        capsys.readouterr().out.splitlines()


def test_an_allow_list_naming_the_distribution_says_which_names_it_takes(installed_plugin, caplog):
    # "sundial-extra" is installed, as a distribution: a warning that no distribution provided it misled.
    build(SOLARSERV_PLUGINS="sundial-extra")
    assert "SOLARSERV_PLUGINS names sundial-extra, but no installed plugin has that name (it takes the names of " \
        "entry points in the group solarserv; installed: sundial_extra)" in caplog.messages


def test_a_plugin_that_never_returns_does_not_keep_the_command_from_exiting(tmp_path, data_dir):
    write(tmp_path, "stuck.py", SLOW_CHECK.format(release=str(tmp_path / "never")))
    done = subprocess.run(
        [sys.executable, "-m", "solarserv", "calc", "--lat", "48.8566", "--lon", "2.3522", "--date", "2026-07-14",
         "--time", "14:30", "--plugins-dir", str(tmp_path), "--data-dir", str(data_dir)],
        env={**os.environ, "PLUGIN_TIMEOUT": "0.2"}, capture_output=True, text=True,
        timeout=50)  # the plugin waits 60 s: an interpreter that joined its thread would still be waiting
    assert done.returncode == 0, done.stderr
    assert "✗ plugin stuck (no answer within 0.2 s, so no third-party plugin's text is used) failed" in done.stdout


def test_a_plugin_file_named_like_an_installed_plugin_stops_start_up(installed_plugin, tmp_path):
    write(tmp_path, f"{installed_plugin}.py", EXTRA_CHECK)
    with pytest.raises(PluginConflict, match=f"has the name of an installed plugin, {installed_plugin}"):
        build_with_installed_plugins(PLUGINS_DIR=str(tmp_path))


def test_third_party_false_loads_only_the_built_ins(installed_plugin):
    narrator = Narrator.build(config.load(environ={}), third_party=False)
    assert [plugin["name"] for plugin in narrator.plugins.listing()] == list(BUILTIN_PLUGINS)


def test_the_built_in_plugins_and_templates_are_those_of_the_solarserv_in_use():
    """pyproject.toml maps plugins/ and narratives/ into solarserv: inside the package once installed, beside
    it in a checkout. A checkout put on PYTHONPATH over another checkout's editable install gets that one's."""
    package = Path(solarserv.__file__).parent
    for name in ("plugins", "narratives"):
        module = importlib.import_module(f"solarserv.{name}")
        assert Path(module.__file__).parent in (package / name, package.parent / name), module.__file__


def test_plugins_lists_name_source_version_and_hooks(tmp_path):
    write(tmp_path, "extra_check.py", EXTRA_CHECK)
    listing = build(PLUGINS_DIR=str(tmp_path)).plugins.listing()
    assert {"name": "solarserv.plugins.historical", "source": "builtin", "version": None,
            "hooks": ["solarserv_historical_context"]} in listing
    assert {"name": "extra_check", "source": "file", "version": None,
            "hooks": ["solarserv_validation_checks"]} in listing
    hooks = {hook for plugin in listing if plugin["source"] == "builtin" for hook in plugin["hooks"]}
    assert hooks == {"solarserv_summary", "solarserv_historical_context", "solarserv_solar_context",
                     "solarserv_share_text", "solarserv_validation_checks"}


def test_the_suite_runs_without_the_shells_settings_and_with_a_tripwire_plugin_installed(base_settings):
    """conftest's hermetic_environment, which keeps a contributor's installed plugin and shell out of every test."""
    assert base_settings.plugins_allow == ""
    assert {name: os.environ[name] for name in set(os.environ) - set(config.without_settings(os.environ))} == \
        {"SOLARSERV_PLUGINS": ""}
    assert "solarserv_tripwire" in importlib.metadata.entry_points(group="solarserv").names
    with pytest.raises(pytest.fail.Exception, match="an installed plugin was loaded"):
        build_with_installed_plugins()
