"""The plugin documentation cannot rot: every hook is documented with its exact signature, and the README's
complete example plugin is extracted, loaded the way an operator would load it, and run."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from defaults import settings
from reports import report_at

from solarserv import config, hookspecs
from solarserv.narration import Narrator
from solarserv.plugin_manager import BUILTIN_PLUGINS
from solarserv.timefmt import format_hms, shown_true_solar

README = Path(__file__).resolve().parent.parent / "README.md"
EXAMPLE = re.compile(r"<!-- example-plugin: (?P<name>[\w.]+) -->\s*```python\n(?P<code>.*?)```", re.DOTALL)
EXAMPLE_TEST = re.compile(r"<!-- example-test: (?P<name>[\w.]+) -->\s*```python\n(?P<code>.*?)```", re.DOTALL)
EXAMPLE_DISTRIBUTION = re.compile(r"<!-- example-distribution: (?P<name>[\w.]+) -->\s*```toml\n(?P<code>.*?)```",
                                  re.DOTALL)
EXAMPLE_TEMPLATE = re.compile(r"<!-- example-template: (?P<name>[\w.]+) -->\s*```jinja\n(?P<code>.*?)```", re.DOTALL)


def plugins_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("<!-- section:plugins -->")
    following = text.find("<!-- section:", start + 1)
    return text[start:following if following != -1 else None]


def hook_specs() -> list:
    specs = [function for name, function in inspect.getmembers(hookspecs, inspect.isfunction)
             if hasattr(function, "solarserv_spec")]
    assert len(specs) >= 6
    return specs


def signature(function) -> str:
    """The signature as written in hookspecs.py (annotations are strings under `from __future__`)."""
    annotations = dict(function.__annotations__)
    returns = annotations.pop("return")
    parameters = ", ".join(f"{name}: {annotation}" for name, annotation in annotations.items())
    return f"def {function.__name__}({parameters}) -> {returns}"


@pytest.mark.parametrize("spec", hook_specs(), ids=lambda spec: spec.__name__)
def test_every_hook_is_documented_with_its_exact_signature_and_an_example(spec):
    section = plugins_section()
    assert spec.__doc__ and spec.__doc__.strip(), f"{spec.__name__} has no docstring"
    assert signature(spec) in section, f"README plugins section lacks `{signature(spec)}`"
    examples = re.findall(r"```python\n(.*?)```", section, re.DOTALL)
    assert any(f"def {spec.__name__}(" in example for example in examples), \
        f"README plugins section has no example implementing {spec.__name__}"


def test_documented_signatures_are_the_real_ones():
    """The test above reads annotations; make sure they name the parameters pluggy passes."""
    for spec in hook_specs():
        assert list(inspect.signature(spec).parameters) == list(
            name for name in spec.__annotations__ if name != "return")


def test_the_readme_example_plugin_loads_from_plugins_dir_and_runs(tmp_path):
    match = EXAMPLE.search(plugins_section())
    assert match, "README plugins section has no <!-- example-plugin: NAME.py --> code block"
    (tmp_path / match["name"]).write_text(match["code"], encoding="utf-8")
    name = match["name"].removesuffix(".py")

    plain = Narrator.build(config.load(environ={}), third_party=False)
    narrator = Narrator.build(settings(PLUGINS_DIR=str(tmp_path)))
    listed = {plugin["name"]: plugin for plugin in narrator.plugins.listing()}
    assert listed[name]["source"] == "file"
    assert listed[name]["hooks"] == ["solarserv_validation_checks"]

    for report in (report_at("Paris", "2026-07-14", "14:30"), report_at("Paris", "2026-07-14", "23:30")):
        with_example = narrator.narrate(report).validation.splitlines()
        without = plain.narrate(report).validation.splitlines()
        added = [line for line in with_example if line not in without]
        assert len(added) == 1 and added[0][:2] in ("✓ ", "✗ "), added
    # The example's check answers differently by day and by night: it is computed, not constant.
    day = narrator.narrate(report_at("Paris", "2026-07-14", "14:30")).validation
    night = narrator.narrate(report_at("Paris", "2026-07-14", "23:30")).validation
    assert "✗" not in day and "✗" in night


def test_the_readme_example_test_passes_on_the_example_plugin(tmp_path, data_dir):
    # A contributor was told how to load a plugin and see it run, not how to test it.
    section = plugins_section()
    plugin, test = EXAMPLE.search(section), EXAMPLE_TEST.search(section)
    assert test, "README plugins section has no <!-- example-test: NAME.py --> code block"
    for directory, block in (("my-plugins", plugin), ("tests", test)):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / block["name"]).write_text(block["code"], encoding="utf-8")
    # As a contributor runs it, in a directory of their own; the index already built, in the session's data dir.
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": "my-plugins", "SOLARSERV_DATA_DIR": str(data_dir)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_the_readme_example_distribution_builds_a_wheel_of_the_example_with_its_entry_point(tmp_path):
    # README gave the entry-point table alone, and a contributor the rest of a pyproject.toml to find out.
    section = plugins_section()
    plugin, distribution = EXAMPLE.search(section), EXAMPLE_DISTRIBUTION.search(section)
    assert distribution, "README plugins section has no <!-- example-distribution: pyproject.toml --> code block"
    source = tmp_path / "source"
    source.mkdir()
    for block in (plugin, distribution):
        (source / block["name"]).write_text(block["code"], encoding="utf-8")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path / "dist"), str(source)], check=True, timeout=300)
    [wheel] = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        [entry_points] = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
        assert archive.read(entry_points).decode().split() == ["[solarserv]", "readable_sundial", "=",
                                                               "readable_sundial"]
        assert archive.read("readable_sundial.py").decode() == plugin["code"]


def test_the_readme_example_of_a_block_taken_over_runs_with_its_template(tmp_path):
    section = plugins_section()
    for block in (*EXAMPLE.finditer(section), *EXAMPLE_TEMPLATE.finditer(section)):
        (tmp_path / block["name"]).write_text(block["code"], encoding="utf-8")
    assert (tmp_path / "short_summary.py").exists() and (tmp_path / "short_summary.txt.j2").exists()
    narrator = Narrator.build(settings(PLUGINS_DIR=str(tmp_path)))
    assert "solarserv.plugins.summary" not in {plugin["name"] for plugin in narrator.plugins.listing()}
    report = report_at("Paris", "2026-07-14", "14:30")
    reading = format_hms(shown_true_solar(report))
    assert narrator.narrate(report).summary == \
        f"A sundial at {report.location.display_name} reads {reading} when clocks show 14:30."


def test_the_readme_shows_the_built_in_hook_implementations_as_they_are():
    """A snippet implementing a hook that a built-in plugin implements is that built-in's code, comments
    aside: copied into a plugin, it runs."""
    section = EXAMPLE.sub("", plugins_section())  # the example plugin is a plugin of its own
    built_in = {name: function for module in BUILTIN_PLUGINS
                for name, function in inspect.getmembers(importlib.import_module(module), inspect.isfunction)
                if name.startswith("solarserv_")}
    shown = 0
    for snippet in re.findall(r"```python\n(.*?)```", section, re.DOTALL):
        hook = re.search(r"^def (solarserv_\w+)\(", snippet, re.MULTILINE)
        if hook and hook[1] in built_in:
            source = inspect.getsource(built_in[hook[1]])
            code = "\n".join(line for line in source.splitlines() if not line.strip().startswith("#"))
            assert snippet.strip() == code.strip(), f"the README's {hook[1]} is not plugins' code"
            shown += 1
    assert shown >= 4
