"""The README documents what the code does: the configuration table is the SETTINGS table, and each API
example shows what the service answers to its request."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import solarserv
from solarserv import config

REPO = Path(__file__).resolve().parent.parent
README = (REPO / "README.md").read_text()


def readme_settings_rows() -> dict[str, list[str]]:
    section = README.split("<!-- section:configuration -->")[1].split("<!-- section:")[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 5:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_every_setting_is_in_the_readme_table_with_its_flag_default_commands_and_meaning():
    rows = readme_settings_rows()
    assert set(rows) == {setting.env for setting in config.SETTINGS}
    for setting in config.SETTINGS:
        flag, default, commands, meaning = rows[setting.env]
        assert flag == (f"`{setting.flag}`" if setting.flag else "—"), setting.env
        assert default == config.shown_default(setting), setting.env
        assert commands == ", ".join(f"`{command}`" for command in setting.commands), setting.env
        assert meaning == setting.help, f"{setting.env}: README and `solarserv serve --help` say different things"


def test_the_two_commands_are_given():
    assert re.search(r"^scripts/serve\b", README, re.M) and re.search(r"^scripts/test\b", README, re.M)


# --- the README's API examples are what the service answers --------------------------------------------

ELIDED = "__elided__"  # stands for the README's "…" inside an example answer


def readme_api_examples() -> list[tuple[str, str, str | None, str]]:
    """(method, path with query, body, expected answer text) of every curl example followed by its answer."""
    examples = []
    for command, answer in re.findall(r"```sh\n(curl [^`]*?)```\s*```json\n(.*?)```", README, re.S):
        url = re.search(r"'?http://127\.0\.0\.1:8000(/[^' ]*)'?", command).group(1)
        body = re.search(r"-d '([^']*)'", command)
        method = "POST" if "-X POST" in command else "GET"
        examples.append((method, url, body.group(1) if body else None, answer))
    return examples


def parse_elided(text: str) -> object:
    """An example answer as JSON, each "…" (a list item, or a line of its own) as ELIDED."""
    text = text.replace('"…"', f'"{ELIDED}"')
    return json.loads(re.sub(r"^(\s*)…$", rf'\1"{ELIDED}",', text, flags=re.M))


def assert_matches(expected: object, actual: object, where: str = "answer") -> None:
    """Equal, except that a list's ELIDED item stands for any number of items between those shown."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and expected.keys() == actual.keys(), where
        for name, value in expected.items():
            assert_matches(value, actual[name], f"{where}.{name}")
    elif isinstance(expected, list) and ELIDED in expected:
        cut = expected.index(ELIDED)
        head, tail = expected[:cut], expected[cut + 1:]
        assert isinstance(actual, list) and len(actual) >= len(head) + len(tail), where
        assert_matches(head, actual[:len(head)], where)
        assert_matches(tail, actual[len(actual) - len(tail):], where)
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(expected) == len(actual), where
        for index, (item, answered) in enumerate(zip(expected, actual, strict=True)):
            assert_matches(item, answered, f"{where}[{index}]")
    else:
        assert expected == actual, f"{where}: the README shows {expected!r}, the service answers {actual!r}"


def test_the_readme_shows_four_api_examples():
    assert [(method, url.split("?")[0]) for method, url, _, _ in readme_api_examples()] == [
        ("POST", "/api/v1/solar-time"), ("GET", "/api/v1/solar-time"), ("GET", "/api/v1/solar-time"),
        ("GET", "/api/v1/equation-of-time")]


@pytest.mark.parametrize("method,url,body,answer", readme_api_examples(), ids=lambda value: str(value)[:40])
async def test_each_readme_api_example_is_the_services_answer(api, method, url, body, answer):
    reply = await api(url, method=method, body=body,
                      headers={"Content-Type": "application/json"} if body else None)
    assert_matches(parse_elided(answer), reply.json())


# The figures' invariant, with the answer the README gives of its last decimal: "at LAT, LON on DATE at TIME:
# EOT + CORRECTION − DST = SUM, while `total_difference_minutes` is TOTAL".
FIGURES_EXAMPLE = re.compile(r"at\s+(\S+),\s+(\S+)\s+on\s+(\S+)\s+at\s+(\S+):\s+(\S+)\s+\+\s+(\S+)\s+−\s+(\S+)\s+=\s+"
                             r"(\S+),\s+while\s+`total_difference_minutes`\s+is\s+(\S+?)\)")


async def test_the_readmes_invariant_of_the_figures_is_what_the_service_answers(api):
    """Each figure is the exact value rounded on its own, so the figures can miss their sum by 0.0001: the README
    says so, with an answer where they do (one in five of a phone's six-decimal points did, the README said they
    added up)."""
    invariants = README.split("Invariants:")[1].split("\n\n")[0]
    example = FIGURES_EXAMPLE.search(invariants)
    assert "0.0001" in invariants and example, "the README's invariants name the figures' last decimal"
    latitude, longitude, date, local_time, *figures = example.groups()
    eot, correction, dst, total_shown, total = map(float, figures)
    reply = await api(f"/api/v1/solar-time?date={date}&local_time={local_time}&latitude={latitude}"
                      f"&longitude={longitude}")
    calculation = reply.json()["calculation"]
    assert (calculation["equation_of_time_minutes"], calculation["longitude_correction_minutes"],
            calculation["dst_minutes"], calculation["total_difference_minutes"]) == (eot, correction, dst, total)
    assert round(eot + correction - dst, 4) == total_shown and abs(total_shown - total) == pytest.approx(0.0001)


CODE_MAP = README.split("<!-- section:code -->")[1].split("<!-- section:")[0]


def test_the_code_map_names_every_module():
    section = CODE_MAP
    package = Path(solarserv.__file__).parent
    modules = {path.relative_to(package).as_posix() for path in package.rglob("*.py")
               if path.name not in {"__init__.py", "__main__.py"}}
    unnamed = {module for module in modules
               if f"`{module}`" not in section and f"`{module.rpartition('/')[2]}`" not in section}
    assert not unnamed, f"README 'Reading the code' does not name {sorted(unnamed)}"


def test_the_code_map_names_every_file_outside_the_package():
    """plugins/, narratives/ and scripts/ file by file; of tests/, the helpers beside the test_*.py files, which
    `test_<module>.py` stands for."""
    files = {path.name for folder in ("plugins", "narratives", "scripts", "tests") for path in (REPO / folder).iterdir()
             if path.is_file() and path.name != "__init__.py" and not path.name.startswith("test_")
             and path.suffix != ".pyc"}
    unnamed = {name for name in files if f"`{name}`" not in CODE_MAP}
    assert not unnamed, f"README 'Reading the code' does not name {sorted(unnamed)}"


def test_the_code_map_names_no_file_that_is_gone():
    files = {path.name for folder in ("solarserv", "plugins", "narratives", "scripts", "tests")
             for path in (REPO / folder).rglob("*") if path.is_file()}
    named = {name.rpartition("/")[2] for name in re.findall(r"`([\w/]+\.(?:py|txt\.j2))`", CODE_MAP)}
    gone = named - files
    assert not gone, f"README 'Reading the code' names files that are not there: {sorted(gone)}"
