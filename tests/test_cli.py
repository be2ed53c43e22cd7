"""`solarserv calc` prints what the API answers; `solarserv plugins` lists what is loaded."""

from __future__ import annotations

import json
import urllib.request

from solarserv.cli import main

PARIS_ARGS = ["calc", "--lat", "48.8566", "--lon", "2.3522", "--date", "2026-07-14", "--time", "14:30"]


def run(capsys, data_dir, *args: str) -> tuple[int, str, str]:
    status = main([*args, "--data-dir", str(data_dir)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_calc_json_is_the_api_result(live_server, capsys, data_dir):
    status, out, _ = run(capsys, data_dir, *PARIS_ARGS, "--json")
    assert status == 0
    query = "date=2026-07-14&local_time=14:30&latitude=48.8566&longitude=2.3522"
    with urllib.request.urlopen(f"{live_server}/api/v1/solar-time?{query}") as response:
        assert json.loads(out) == json.load(response)


def test_calc_prints_readable_text(capsys, data_dir):
    status, out, _ = run(capsys, data_dir, *PARIS_ARGS)
    assert status == 0
    assert out.startswith("True solar time   12:3")
    assert "Europe/Paris" in out and "Equation of time" in out and "✓" in out


def test_calc_error_is_the_envelope_message_and_a_failing_status(capsys, data_dir):
    status, out, err = run(capsys, data_dir, "calc", "--lat", "95", "--lon", "0", "--date", "2026-07-14",
                           "--time", "12:00")
    assert status == 1 and "INVALID_REQUEST" in err and "latitude" in err
    status, out, _ = run(capsys, data_dir, "calc", "--lat", "95", "--lon", "0", "--date", "2026-07-14",
                         "--time", "12:00", "--json")
    assert status == 1 and json.loads(out)["error"]["code"] == "INVALID_REQUEST"


def test_plugins_lists_the_builtins_and_their_hooks(capsys, data_dir):
    status, out, _ = run(capsys, data_dir, "plugins", "--json")
    assert status == 0
    listing = {plugin["name"]: plugin for plugin in json.loads(out)}
    assert listing["plugins.summary"]["hooks"] == ["solarserv_summary"]
    assert listing["plugins.validation"]["source"] == "builtin"


def test_a_plugin_conflict_is_one_line_and_a_failing_status(capsys, data_dir, tmp_path):
    (tmp_path / "rival.py").write_text(
        "from solarserv.hookspecs import Narrative, hookimpl\n\n"
        "@hookimpl\ndef solarserv_summary(report):\n    return Narrative('summary.txt.j2')\n")
    status, _, err = run(capsys, data_dir, "plugins", "--plugins-dir", str(tmp_path))
    assert status == 2
    assert "PluginConflict" in err and "rival" in err and "Traceback" not in err
