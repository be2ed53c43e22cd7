"""The README documents what the code does: the configuration table is the SETTINGS table."""

from __future__ import annotations

import re
from pathlib import Path

from solarserv import config

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def readme_settings_rows() -> dict[str, list[str]]:
    section = README.split("<!-- section:configuration -->")[1].split("<!-- section:")[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def test_every_setting_is_in_the_readme_table_with_its_flag_and_default():
    rows = readme_settings_rows()
    assert set(rows) == {setting.env for setting in config.SETTINGS}
    for setting in config.SETTINGS:
        flag, default, _ = rows[setting.env]
        assert flag == (f"`{setting.flag}`" if setting.flag else "—"), setting.env
        assert default == config.shown_default(setting), setting.env


def test_the_two_commands_are_given():
    assert re.search(r"^scripts/serve\b", README, re.M) and re.search(r"^scripts/test\b", README, re.M)
