"""`solarserv calc` prints what the API answers; `solarserv plugins` lists what is loaded; `solarserv serve`
prints where to open the console."""

from __future__ import annotations

import dataclasses
import gc
import http.client
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from counters import unused_port
from files import write
from permissions import bound_by_file_modes
from servers import start_solarserv, stop_solarserv

from solarserv import cli, config
from solarserv.cli import main
from solarserv.geo import gazetteer
from solarserv.narration import Narrator
from solarserv.serving import _console_line, _worker_sockets
from solarserv.stdout import discard_stdout
from solarserv.web.console import ConsoleSecrets

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


def test_serve_refuses_an_admin_token_under_20_characters_without_showing_it(capsys, data_dir, monkeypatch):
    monkeypatch.setenv("ADMIN_TOKEN", "s3cret-short-token!")  # 19 characters
    status, _, err = run(capsys, data_dir, "serve", "--port", "0")
    assert status == 2 and "ADMIN_TOKEN=(hidden): must be at least 20 characters, or set CONSOLE=off" in err
    assert "s3cret" not in err
    # Only a console uses the token: the other commands, and a server without one, take it.
    assert run(capsys, data_dir, *PARIS_ARGS)[0] == 0
    assert run(capsys, data_dir, "keys", "list")[0] == 0
    assert serve_reaches_binding(capsys, data_dir, monkeypatch, "--console", "off")


def serve_reaches_binding(capsys, data_dir, monkeypatch, *flags: str) -> bool:
    """Whether ``serve`` with ``flags`` gets past its checks to binding its port (where it is stopped)."""
    def reached_binding(settings):
        raise SystemExit(7)

    monkeypatch.setattr("solarserv.serving._bind", reached_binding)
    with pytest.raises(SystemExit) as stopped:
        run(capsys, data_dir, "serve", "--port", "0", *flags)
    return stopped.value.code == 7


@pytest.mark.parametrize("token", ["s3cret-admin-token-0123\r", " s3cret-admin-token-0123", "s3cret-admin\ttoken-0123"],
                         ids=["windows-line-end", "leading-space", "tab"])
def test_serve_refuses_an_admin_token_no_one_can_type_into_the_login_form(capsys, data_dir, monkeypatch, token):
    # Taken as it was, "That is not the admin token." answered every login with the token the operator set.
    monkeypatch.setenv("ADMIN_TOKEN", token)
    monkeypatch.setattr("solarserv.serving._bind", lambda settings: pytest.fail("serve went on to bind its port"))
    status, _, err = run(capsys, data_dir, "serve", "--port", "0")
    assert status == 2 and err.splitlines() == [
        "solarserv: error: ADMIN_TOKEN=(hidden): begins or ends with a space or holds a control character "
        "(a carriage return from a file with Windows line ends?), which the login form cannot be given"]


def test_serve_refuses_an_empty_cookie_secret_in_one_line_before_it_binds(capsys, tmp_path, monkeypatch):
    # Emptied (`: > cookie_secret`, to end every session, or a disk that filled as it was made), it was taken: the
    # server started, and every console page was a 500 ("You must define the 'cookie_secret' setting").
    (tmp_path / "cookie_secret").write_text("\n")
    monkeypatch.setattr("solarserv.serving._bind", lambda settings: pytest.fail("serve went on to bind its port"))
    status, _, err = run(capsys, tmp_path, "serve", "--port", "0")
    assert status == 2 and err.splitlines() == [
        f"solarserv: error: {tmp_path / 'cookie_secret'} is empty: delete it, and a new secret is made at "
        "the next start (ending every console session)"]


def test_serve_refuses_a_cookie_secret_that_is_not_text_in_one_line_before_it_binds(capsys, tmp_path, monkeypatch):
    # Bytes written in its place (`head -c 32 /dev/urandom > cookie_secret`) stopped serve with a UnicodeDecodeError
    # traceback.
    (tmp_path / "cookie_secret").write_bytes(b"\xde\xad\xbe\xef" * 8)
    monkeypatch.setattr("solarserv.serving._bind", lambda settings: pytest.fail("serve went on to bind its port"))
    status, _, err = run(capsys, tmp_path, "serve", "--port", "0")
    assert status == 2 and err.splitlines() == [
        f"solarserv: error: {tmp_path / 'cookie_secret'} is not text (UTF-8): delete it, and a new secret is "
        "made at the next start (ending every console session)"]


@pytest.mark.parametrize("unusable", [lambda path: path.write_text(""), Path.mkdir], ids=["empty", "unreadable"])
def test_a_server_without_a_console_does_not_read_the_cookie_secret(capsys, new_data_dir, monkeypatch, unusable):
    # As the admin token's checks do, the secret's apply to a console that is on: CONSOLE=off signs no cookie.
    unusable(new_data_dir / "cookie_secret")
    assert serve_reaches_binding(capsys, new_data_dir, monkeypatch, "--console", "off")


def test_calc_prints_readable_text(capsys, data_dir):
    status, out, _ = run(capsys, data_dir, *PARIS_ARGS)
    assert status == 0
    assert out.startswith("True solar time   12:3")
    assert "Europe/Paris" in out and "Equation of time" in out and "✓" in out


def test_calc_prints_the_utc_date_a_day_away_from_the_local_one(capsys, data_dir):
    # Read as on the local date, Honolulu's last second of 2050 was 09:59:59 UTC on 2050-12-31, not 2051-01-01.
    status, out, _ = run(capsys, data_dir, "calc", "--lat", "21.3", "--lon", "-157.85", "--date", "2050-12-31",
                         "--time", "23:59:59")
    assert status == 0 and "UTC               09:59:59  2051-01-01" in out.splitlines()


def test_calc_error_is_the_envelope_message_and_a_failing_status(capsys, data_dir):
    status, out, err = run(capsys, data_dir, "calc", "--lat", "95", "--lon", "0", "--date", "2026-07-14",
                           "--time", "12:00")
    assert status == 1 and "INVALID_REQUEST" in err and "--lat" in err
    status, out, _ = run(capsys, data_dir, "calc", "--lat", "95", "--lon", "0", "--date", "2026-07-14",
                         "--time", "12:00", "--json")
    assert status == 1 and json.loads(out)["error"]["code"] == "INVALID_REQUEST"


def test_calc_that_cannot_answer_now_exits_with_its_own_status(capsys, tmp_path):
    # A question refused and one the geocoder could not answer (ask again, or give coordinates) both exited with 1.
    (tmp_path / "a-file").write_text("")  # where no gazetteer index can be built
    status, _, err = run(capsys, tmp_path / "a-file", "calc", "--place", "Paris, FR", "--date", "2026-07-14",
                         "--time", "12:00")
    assert status == 3 and err.splitlines()[-1].startswith("error GEOCODER_UNAVAILABLE: ")
    with pytest.raises(SystemExit):
        main(["calc", "--help"])
    assert capsys.readouterr().out.split("\n\n")[-1].split() == cli.CALC_STATUSES.split()


def test_calc_refuses_a_flag_of_the_question_given_twice_as_the_api_does(capsys, data_dir):
    # The last one was used without a word: Paris's latitude with --lat 49 after it.
    status, _, err = run(capsys, data_dir, *PARIS_ARGS, "--lat", "49")
    assert status == 1 and err.strip() == "error INVALID_REQUEST: --lat is given 2 times; give it once."


@pytest.mark.parametrize(("flags", "message"), [
    (["--lat", " 48", "--lon", "2"], "--lat must be a number of decimal degrees, got ' 48'."),
    ([], "Give either --place, or --lat and --lon."),
    (["--lat", "48"], "--lat and --lon must be given together; --lon is missing."),
    (["--place", " "], "--place must not be empty."),
    (["--place", "", "--lat", "48", "--lon", "2"], "--place is empty while --lat and --lon are given: leave it out "
     "to use the coordinates (give either --place or --lat and --lon, not both)."),
    (["--place", "Paris", "--lat", "48", "--lon", "2"], "Give either --place or --lat and --lon, not both."),
    (["--lat", "48", "--lon", "180.5"], "--lon must be between -180 and 180 degrees, got 180.5."),
    (["--lat", "48", "--lon", "2", "--time", "2pm"], "--time must be HH:MM or HH:MM:SS (24-hour), got '2pm'."),
    (["--lat", "48", "--lon", "2", "--time", "24:00"],
     "--time 24:00 is not a time of day (hours 00-23, minutes and seconds 00-59)."),
    (["--lat", "48", "--lon", "2", "--date", "14/07/2026"], "--date must be YYYY-MM-DD, got '14/07/2026'."),
    (["--lat", "48", "--lon", "2", "--date", "2026-02-30"], "--date 2026-02-30 is not a real calendar date."),
], ids=["not-a-number", "neither", "one-coordinate", "empty-place", "empty-place-and-coordinates", "both",
        "out-of-range", "not-a-time", "not-a-time-of-day", "not-a-date", "not-a-calendar-date"])
def test_calc_refusals_name_the_flags_given(capsys, data_dir, flags, message):
    # They named the API's fields ("Give either place_name, or latitude and longitude.") and told a shell's " 48"
    # that a + in a query string reads as a space.
    question = {"--date": "2026-07-14", "--time": "12:00"}
    question.update(zip(flags[::2], flags[1::2], strict=True))
    status, _, err = run(capsys, data_dir, "calc", *(part for flag in question.items() for part in flag))
    assert status == 1 and err.splitlines() == [f"error INVALID_REQUEST: {message}"]


def test_an_ambiguous_place_lists_its_candidates_as_the_flags_that_choose_one(capsys, data_dir):
    springfield = ["calc", "--place", "Springfield", "--date", "2026-07-14", "--time", "12:00"]
    _, out, _ = run(capsys, data_dir, *springfield, "--json")
    candidates = json.loads(out)["error"]["candidates"]
    # "Resend with the latitude and longitude of one of the candidates" named none without --json.
    status, _, err = run(capsys, data_dir, *springfield)
    assert status == 1 and err.splitlines()[0].startswith("error AMBIGUOUS_LOCATION: 'Springfield' matches places")
    assert err.splitlines()[1:] == [
        f"  --lat {candidate['latitude']} --lon {candidate['longitude']}  {candidate['display_name']}"
        + ("  (recommended)" if candidate["recommended"] else "") for candidate in candidates]


@pytest.mark.parametrize("latitude,longitude", [("1e400", "2"), ("0.5", "180.0000000000000001"), ("95", "2"),
                                                ("forty", "2"), ("1e999999999999999999999", "2")])
def test_calc_reads_coordinates_as_the_api_does(live_server, capsys, data_dir, latitude, longitude):
    # As text, exactly: a float would read 180.0000000000000001 as 180 and 1e400 as infinity.
    status, out, _ = run(capsys, data_dir, "calc", "--lat", latitude, "--lon", longitude, "--date", "2026-07-14",
                         "--time", "12:00", "--json")
    query = urllib.parse.urlencode({"date": "2026-07-14", "local_time": "12:00", "latitude": latitude,
                                    "longitude": longitude})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{live_server}/api/v1/solar-time?{query}")
    # In the command line's words: what follows the name is the API's.
    api_error, calc_error = json.load(refused.value)["error"], json.loads(out)["error"]
    assert status == 1 and calc_error["code"] == api_error["code"]
    assert calc_error["message"].startswith(("--lat ", "--lon "))
    assert calc_error["message"].partition(" must be ")[2] == api_error["message"].partition(" must be ")[2]


def test_calc_refuses_an_argument_that_is_not_utf8_as_the_api_does(capsys, data_dir):
    # sys.argv holds such a byte as a surrogate (os.fsdecode), which str.encode() refused with a traceback.
    status, _, err = run(capsys, data_dir, "calc", "--lat", os.fsdecode(b"\xff"), "--lon", "2", "--date",
                         "2026-07-14", "--time", "12:00")
    assert status == 1 and err.strip() == "error INVALID_REQUEST: --lat is not valid UTF-8."


def test_a_reader_that_goes_away_stops_a_command_quietly(data_dir):
    command = subprocess.Popen([sys.executable, "-m", "solarserv", "plugins", "--data-dir", str(data_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    command.stdout.close()  # before the command writes: as `solarserv plugins | head -0`
    _, err = command.communicate(timeout=60)
    assert command.returncode == 1 and b"Traceback" not in err and b"BrokenPipe" not in err, err


def test_calc_on_a_stdout_that_is_not_utf8_writes_what_it_cannot_encode_as_escapes(data_dir):
    # In a Latin-1 locale, ✓ (and “ in `keys create`, once the key was stored) ended the command with a traceback.
    def calc_in_latin1(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "solarserv", *PARIS_ARGS, *flags, "--data-dir", str(data_dir)],
                              capture_output=True, env={**os.environ, "PYTHONIOENCODING": "latin-1"}, timeout=120)

    readable = calc_in_latin1()
    assert readable.returncode == 0 and b"Traceback" not in readable.stderr, readable.stderr
    assert "\\u2713 equation of time" in readable.stdout.decode("latin-1")
    assert "Île-de-France" in readable.stdout.decode("latin-1")  # what Latin-1 has, written in it
    as_json = calc_in_latin1("--json")
    assert as_json.returncode == 0 and as_json.stdout.isascii()
    assert json.loads(as_json.stdout)["validation"].startswith("✓ local time 14:30:00")


@pytest.mark.parametrize("args", [PARIS_ARGS, [*PARIS_ARGS, "--json"], ["plugins"]],
                         ids=["calc", "calc-json", "plugins"])
@pytest.mark.parametrize(("under", "stdout", "refusal"), [
    ([], "/dev/full", "cannot write to stdout (No space left on device)"),
    (["sh", "-c", 'exec "$@" >&-', "sh"], os.devnull, "cannot write to stdout: it is closed"),
], ids=["full-disk", "closed"])
def test_output_that_cannot_be_written_is_one_line_and_a_failing_status(data_dir, under, stdout, refusal, args):
    # A full disk ended the command with a traceback; with stdout closed, it printed nothing and exited with 0.
    with open(stdout, "w") as output:
        command = subprocess.run([*under, sys.executable, "-m", "solarserv", *args, "--data-dir", str(data_dir)],
                                 stdout=output, stderr=subprocess.PIPE, text=True, timeout=120)
    assert command.returncode == 1 and command.stderr.splitlines() == [f"solarserv: error: {refusal}"]


def test_what_a_plugin_prints_goes_to_stderr_leaving_stdout_to_the_json(capsys, data_dir, tmp_path):
    write(tmp_path / "plugins", "chatty.py", "from solarserv.hookspecs import hookimpl\n\nprint('imported')\n\n\n"
          "@hookimpl\ndef solarserv_validation_checks(report):\n    print('checks asked')\n    return []\n")
    flags = ["--plugins-dir", str(tmp_path / "plugins"), "--json"]
    status, out, err = run(capsys, data_dir, *PARIS_ARGS, *flags)
    assert status == 0 and json.loads(out)["true_solar_time"].startswith("12:3")
    assert "imported\n" in err and "checks asked\n" in err
    status, out, err = run(capsys, data_dir, "plugins", *flags)
    assert status == 0 and "chatty" in {plugin["name"] for plugin in json.loads(out)}
    assert "imported\n" in err


def test_help_on_a_stdout_that_is_not_utf8_writes_what_it_cannot_encode_as_escapes():
    # Written before the commands' own output was: the → of `solarserv --help` and the … of `keys deactivate --help`
    # ended them with a traceback in a Latin-1 locale.
    for command, escape in (([], "\\u2192"), (["keys", "deactivate"], "\\u2026")):
        shown = subprocess.run([sys.executable, "-m", "solarserv", *command, "--help"], capture_output=True,
                               env={**os.environ, "PYTHONIOENCODING": "latin-1"}, timeout=120)
        assert shown.returncode == 0 and shown.stderr == b"", shown.stderr
        assert escape in shown.stdout.decode("latin-1")


def test_plugins_lists_the_builtins_and_their_hooks(capsys, data_dir):
    status, out, _ = run(capsys, data_dir, "plugins", "--json")
    assert status == 0
    listing = {plugin["name"]: plugin for plugin in json.loads(out)}
    assert listing["solarserv.plugins.summary"]["hooks"] == ["solarserv_summary"]
    assert listing["solarserv.plugins.validation"]["source"] == "builtin"


def test_a_plugin_conflict_is_one_line_and_a_failing_status(capsys, data_dir, tmp_path):
    for name in ("rival", "other_rival"):
        (tmp_path / f"{name}.py").write_text(
            "from solarserv.hookspecs import Narrative, hookimpl\n\n"
            "@hookimpl\ndef solarserv_summary(report):\n    return Narrative('summary.txt.j2')\n")
    status, _, err = run(capsys, data_dir, "plugins", "--plugins-dir", str(tmp_path))
    assert status == 2
    assert err.splitlines()[-1] == ("solarserv: error: plugins other_rival and rival both write the summary block; "
                                    "keep only one of them")


def test_a_template_syntax_error_is_one_line_naming_the_file_and_line(capsys, data_dir, tmp_path):
    (tmp_path / "summary.txt.j2").write_text("{% if x %}unclosed\n")
    status, _, err = run(capsys, data_dir, "plugins", "--narratives-dir", str(tmp_path))
    assert status == 2 and "Traceback" not in err
    assert f"solarserv: error: template {tmp_path / 'summary.txt.j2'}, line 1: Unexpected end of template" in err


@pytest.mark.parametrize("flag", ["--plugins-dir", "--narratives-dir"])
def test_a_directory_setting_that_is_no_directory_is_one_line_and_a_failing_status(capsys, data_dir, tmp_path, flag):
    status, _, err = run(capsys, data_dir, "plugins", flag, str(tmp_path / "nowhere"))
    setting = flag.removeprefix("--").replace("-", "_").upper()
    assert status == 2
    assert err.splitlines() == [f"solarserv: error: {setting} {tmp_path / 'nowhere'} is not a directory"]


def test_a_file_missing_elsewhere_is_a_fault_with_its_traceback_not_an_operator_mistake(monkeypatch, data_dir):
    def missing_file(settings, *, third_party=True):
        raise FileNotFoundError("a file the code expected")

    monkeypatch.setattr(Narrator, "build", missing_file)
    with pytest.raises(FileNotFoundError, match="a file the code expected"):
        main(["plugins", "--data-dir", str(data_dir)])


def test_a_plugin_left_out_is_listed_with_why(capsys, data_dir, tmp_path):
    (tmp_path / "broken.py").write_text("import no_such_module_anywhere\n")
    status, out, _ = run(capsys, data_dir, "plugins", "--plugins-dir", str(tmp_path))
    assert status == 0 and "broken (file): not loaded, failed to import (see the log)" in out.splitlines()


# `solarserv serve`: the console line printed at start.


@pytest.mark.parametrize(("host", "link_host", "elsewhere"), [
    ("127.0.0.1", "127.0.0.1", False),
    ("localhost", "localhost", False),
    ("192.0.2.7", "192.0.2.7", False),
    ("::1", "[::1]", False),
    ("0.0.0.0", "127.0.0.1", True),
    ("::", "[::1]", True),
    ("", "127.0.0.1", True),  # Tornado binds every interface
])
def test_the_console_line_names_a_host_a_browser_can_open(host, link_host, elsewhere):
    generated = ConsoleSecrets(admin_token="generated-token", token_generated=True, cookie_secret="unused")
    line = _console_line(generated, host, 8123, "any")
    assert f" http://{link_host}:8123/console/login?token=generated-token" in line
    assert (f"put this machine's name or address in place of {link_host}" in line) == elsewhere
    configured = dataclasses.replace(generated, token_generated=False)
    assert f"Console: http://{link_host}:8123/console (log in with ADMIN_TOKEN)" in _console_line(configured,
                                                                                                  host, 8123, "any")
    # CONSOLE=local (the default): another machine cannot open it, so the line says so instead, where the
    # server listens beyond loopback.
    local = _console_line(generated, host, 8123, "local")
    assert f" http://{link_host}:8123/console/login?token=generated-token" in local
    assert "in place of" not in local
    assert local.endswith(" (CONSOLE=local: from this machine only)") == (host not in ("127.0.0.1", "localhost", "::1"))


@pytest.mark.slow
def test_serving_on_every_interface_prints_a_login_link_that_opens_the_console(data_dir, tmp_path):
    server = start_solarserv(["--host", "0.0.0.0", "--port", "0", "--data-dir", str(data_dir)],
                             tmp_path / "server.log")
    try:
        ready, console_line = server.stdout.readline(), server.stdout.readline()
        port = ready.strip().rstrip("/").rsplit(":", 1)[1]
        assert ready.startswith("solarserv ") and f" ready at http://0.0.0.0:{port}/" in ready
        link = re.search(r"http://\S+", console_line).group()
        assert link.startswith(f"http://127.0.0.1:{port}/console/login?token=")
        connection = http.client.HTTPConnection(f"127.0.0.1:{port}", timeout=30)
        try:
            connection.request("GET", link.removeprefix(f"http://127.0.0.1:{port}"))
            opened = connection.getresponse()
        finally:
            connection.close()
        assert opened.status == 303 and opened.getheader("Location") == "/console"
        assert "solarserv_console=" in opened.getheader("Set-Cookie")
    finally:
        server.terminate()
        server.wait(timeout=30)
        server.stdout.close()


@pytest.mark.slow
def test_a_malformed_redis_url_stops_serve_with_one_line_before_any_worker_starts(data_dir, tmp_path):
    log_path = tmp_path / "server.log"
    # Parsed first in each worker, it used to crash them all, a hundred restarts each, then the parent.
    assert refused_at_start(["--processes", "2", "--port", "0", "--data-dir", str(data_dir),
                             "--redis-url", "redis://127.0.0.1:notaport/0"], log_path) == (2, [
        "solarserv: error: --redis-url='redis://127.0.0.1:notaport/0': the port must be a number from 1 to 65535"])


def refused_at_start(arguments: list[str], log_path: Path) -> tuple[int, list[str]]:
    """The exit status and the lines of ``solarserv serve ARGUMENTS``, which must print nothing on stdout."""
    server = start_solarserv(arguments, log_path)
    try:
        printed, _ = server.communicate(timeout=60)
    finally:
        stop_solarserv(server)
    assert printed == ""
    return server.returncode, log_path.read_text().splitlines()


TAKEN_OVER_TCP = "?username=, ?password=, ?client_name="
TAKEN_OVER_TLS = (f"{TAKEN_OVER_TCP}, ?ssl_cert_reqs=, ?ssl_ca_certs=, ?ssl_ca_path=, ?ssl_certfile=, ?ssl_keyfile=, "
                  "?ssl_check_hostname=, ?ssl_min_version=")
RETRY = "one immediate retry replaces a connection a Redis restart dropped, and none follows a timeout"


# Each was taken, against a Redis that answers: the first four stopped serve with a traceback (?encoding=,
# ?event_dispatcher=) or failed every request (?credential_provider=, ?redis_connect_func=), and those solarserv sets
# itself overrode its bounds. A password in the query is never shown.
@pytest.mark.redis
@pytest.mark.parametrize(("query", "problem"), [
    ("encoding=bogus", "solarserv takes no option ?encoding= in a {scheme}:// URL; it takes {taken}"),
    ("event_dispatcher=x", "solarserv takes no option ?event_dispatcher= in a {scheme}:// URL; it takes {taken}"),
    ("credential_provider=x", "solarserv takes no option ?credential_provider= in a {scheme}:// URL; it takes {taken}"),
    ("redis_connect_func=x", "solarserv takes no option ?redis_connect_func= in a {scheme}:// URL; it takes {taken}"),
    ("s3cret_option=s3cret", "solarserv takes no option ?s3cret_option= in a {scheme}:// URL; it takes {taken}"),
    ("protocol=3", "solarserv takes no option ?protocol= in a {scheme}:// URL; it takes {taken}"),
    ("socket_timeout=60", "solarserv sets ?socket_timeout= itself: 0.5 s bounds each request's exchange with Redis; "
     "see README"),
    ("socket_timeout=x", "solarserv sets ?socket_timeout= itself: 0.5 s bounds each request's exchange with Redis; "
     "see README"),
    ("socket_connect_timeout=60", "solarserv sets ?socket_connect_timeout= itself: 0.25 s bounds each connect to "
     "Redis; see README"),
    ("timeout=60", "solarserv sets ?timeout= itself: the wait for a pooled connection is within the 0.5 s that "
     "bounds each request's exchange with Redis; see README"),
    ("max_connections=1000", "solarserv sets ?max_connections= itself: each process keeps at most 10 connections to "
     "Redis; see README"),
    ("retry=3", f"solarserv sets ?retry= itself: {RETRY}; see README"),
    ("retry_on_timeout=true", f"solarserv sets ?retry_on_timeout= itself: {RETRY}; see README"),
    ("retry_on_error=x", f"solarserv sets ?retry_on_error= itself: {RETRY}; see README"),
    ("health_check_interval=30", "solarserv sets ?health_check_interval= itself: a pooled connection that died is "
     "replaced by its one retry, not looked for by a PING before each command; see README"),
    ("client_name=solar%20serv", "?client_name= must be printable ASCII without spaces, as Redis takes a client name"),
])
@pytest.mark.parametrize("scheme", ["redis", "rediss"])
def test_a_redis_url_option_solarserv_does_not_take_stops_serve_in_one_line_naming_it(redis_url, data_dir, tmp_path,
                                                                                       query, problem, scheme):
    where = urlsplit(redis_url)
    problem = problem.format(scheme=scheme, taken=TAKEN_OVER_TLS if scheme == "rediss" else TAKEN_OVER_TCP)
    log_path = tmp_path / "server.log"
    assert refused_at_start(["--port", "0", "--data-dir", str(data_dir), "--redis-url",
                             f"{scheme}://:s3cret@{where.netloc}/0?password=s3cret&{query}"], log_path) == (2, [
        f"solarserv: error: --redis-url='{scheme}://{where.netloc}/0': {problem}"])


@pytest.mark.parametrize(("scheme", "query", "problem"), [
    ("redis", "ssl_cert_reqs=none", "solarserv takes ?ssl_cert_reqs= only in a rediss:// URL"),  # not TLS
    ("rediss", "ssl_cert_reqs=bogus", "?ssl_cert_reqs= must be none, optional or required"),
    # redis-py reads every word but 0, f, false, n and no as true.
    ("rediss", "ssl_check_hostname=off", "?ssl_check_hostname= must be true or false"),
    ("rediss", "ssl_ca_certs=missing.pem", "?ssl_ca_certs= must be a file solarserv can read"),
    ("rediss", "ssl_certfile=.", "?ssl_certfile= must be a file solarserv can read"),
    ("rediss", "ssl_keyfile=missing.key", "?ssl_keyfile= must be a file solarserv can read"),
    ("rediss", "ssl_ca_path=missing", "?ssl_ca_path= must be a directory"),
    ("rediss", "ssl_min_version=770", "?ssl_min_version= must be 771 (TLS 1.2) or 772 (TLS 1.3), as Python's "
     "ssl.TLSVersion numbers them"),
])
def test_a_tls_option_out_of_place_or_with_a_value_it_cannot_have_stops_serve_in_one_line(data_dir, tmp_path, scheme,
                                                                                          query, problem):
    log_path = tmp_path / "server.log"
    assert refused_at_start(["--port", "0", "--data-dir", str(data_dir), "--redis-url",
                             f"{scheme}://127.0.0.1:6379/0?{query}"], log_path) == (2, [
        f"solarserv: error: --redis-url='{scheme}://127.0.0.1:6379/0': {problem}"])


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.parametrize("answering", [True, False], ids=["redis-answers", "nothing-listens"])
def test_serve_logs_at_start_whether_redis_answers(redis_url, data_dir, tmp_path, answering):
    url = redis_url if answering else f"redis://127.0.0.1:{unused_port()}/0"
    log_path = tmp_path / "server.log"
    server = start_solarserv(["--port", "0", "--data-dir", str(data_dir), "--redis-url", url], log_path)
    try:
        assert " ready at " in server.stdout.readline()
    finally:
        server.terminate()
        server.wait(timeout=30)
        server.stdout.close()
    said = [line.split(": ", 1)[1] for line in log_path.read_text().splitlines() if "solarserv.ratelimit" in line]
    if answering:
        assert said == [f"Redis at {url} answers: rate-limit counts are shared with every process using it."]
    else:
        assert len(said) == 1 and said[0].startswith(f"Redis at {url} is unreachable (")


@pytest.mark.slow
@pytest.mark.redis
def test_serve_will_not_start_on_a_redis_that_refuses_the_url(redis_url, data_dir, tmp_path):
    url = urlsplit(redis_url)._replace(path="/99").geturl()  # Redis has 16 databases unless told otherwise
    log_path = tmp_path / "server.log"
    server = start_solarserv(["--processes", "2", "--port", "0", "--data-dir", str(data_dir), "--redis-url", url],
                             log_path)
    try:
        assert server.stdout.readline() == ""  # no worker printed a ready line: it stopped without serving
        assert server.wait(timeout=60) == 2
    finally:
        stop_solarserv(server)
    assert log_path.read_text().splitlines() == [
        f"solarserv: error: Redis at {url} refuses solarserv (DB index is out of range): fix the password, "
        "user or database in REDIS_URL, or Redis's access rules"]


def test_serving_does_not_import_pandas_where_it_is_installed():
    # sqlite_utils would import it (0.35 s and 33 MB a process); solarserv.sqlite hides it. pvlib, a test
    # dependency, brings pandas, so this runs where the import would happen.
    assert importlib.util.find_spec("pandas") is not None
    probe = ("import sys, solarserv.cli, solarserv.serving, solarserv.web.app, solarserv.geo.offline; "
             "import sqlite_utils; print('pandas' in sys.modules, sqlite_utils.db.pd)")
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.split() == ["False", "None"]


# `solarserv serve`: what stops it before it binds, as one line.


# Tornado's bind_sockets leaves the socket it failed to bind to the collector, which warns.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_port_in_use_is_one_line_naming_host_and_port(capsys, data_dir):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, _, err = run(capsys, data_dir, "serve", "--host", "127.0.0.1", "--port", str(port))
    gc.collect()  # here, where its warning is ignored, not in a later test
    assert status == 2 and "Traceback" not in err
    assert err.strip() == \
        f"solarserv: error: cannot listen on HOST='127.0.0.1' PORT={port}: Address already in use"


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_a_worker_that_cannot_listen_on_its_address_any_more_says_so_in_one_line():
    # A worker started again after the address was removed from the machine ended in a traceback, at each of its
    # six starts before the parent gave up.
    with socket.socket() as inherited:  # the parent's socket, as a worker after the first receives it
        inherited.bind(("127.0.0.1", 0))
        inherited.listen()
        port = inherited.getsockname()[1]
        with pytest.raises(config.SettingsError) as refused:
            _worker_sockets([inherited], "192.0.2.1")  # TEST-NET-1: no address of this machine
    refusal = str(refused.value)
    del refused  # its traceback holds the socket that failed to bind
    gc.collect()  # here, where its warning is ignored, not in a later test
    assert refusal == f"cannot listen on HOST='192.0.2.1' PORT={port}: Cannot assign requested address"


def test_ctrl_c_while_serve_loads_stops_it_without_a_traceback(data_dir, tmp_path):
    # Ctrl-C in the second or two serve takes to load the code, before it serves, ended in a KeyboardInterrupt
    # traceback.
    loading = tmp_path / "loading"
    plugins = write(tmp_path / "plugins", "slow_to_load.py",
                    f"import pathlib, time\n\npathlib.Path({str(loading)!r}).touch()\ntime.sleep(600)\n").parent
    process = start_solarserv(["--port", "0", "--data-dir", str(data_dir), "--plugins-dir", str(plugins)],
                              tmp_path / "server.log")
    try:
        while not loading.exists() and process.poll() is None:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)  # as Ctrl-C does
        assert process.wait(timeout=60) == 130
    finally:
        stop_solarserv(process)
    assert (tmp_path / "server.log").read_text() == ""


def test_ctrl_c_while_the_commands_code_is_imported_stops_it_without_a_traceback(data_dir, tmp_path):
    # The second solarserv.cli takes to import on a busy machine was outside its handling of Ctrl-C: a traceback.
    importing = tmp_path / "importing"
    # sqlite_utils, which solarserv.cli imports (through the key store), in its place: it says so, then waits.
    slow = write(tmp_path / "slow", "sqlite_utils.py",
                 f"import pathlib, time\n\npathlib.Path({str(importing)!r}).touch()\ntime.sleep(600)\n").parent
    process = subprocess.Popen([sys.executable, "-m", "solarserv", "plugins", "--data-dir", str(data_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(slow)})
    try:
        while not importing.exists() and process.poll() is None:
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)  # as Ctrl-C does
        assert process.communicate(timeout=60) == ("", "") and process.returncode == 130
    finally:
        stop_solarserv(process)


def test_a_data_dir_that_cannot_be_made_stops_serve_before_it_binds(capsys, tmp_path):
    (tmp_path / "a-file").write_text("")
    status = main(["serve", "--port", "0", "--data-dir", str(tmp_path / "a-file" / "var")])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert "SOLARSERV_DATA_DIR=" in err and "a-file/var': cannot be created (Not a directory)" in err
    status = main(["serve", "--port", "0", "--data-dir", str(tmp_path / "a-file")])
    assert status == 2
    assert capsys.readouterr().err.strip().endswith(f"SOLARSERV_DATA_DIR='{tmp_path / 'a-file'}': is a file, not a "
                                                    "directory")


@pytest.fixture
def new_data_dir(data_dir, tmp_path):
    """A data dir of this test's holding the session's gazetteer index (linked: nothing to build)."""
    directory = tmp_path / "var"
    directory.mkdir()
    os.link(gazetteer.index_path(data_dir), gazetteer.index_path(directory))
    return directory


@pytest.mark.slow
def test_a_key_store_that_is_not_a_database_stops_serve_in_one_line_before_any_worker_starts(new_data_dir, tmp_path):
    (new_data_dir / "keys.db").write_bytes(b"Not a database: a file copied over it.\n" * 100)
    log_path = tmp_path / "server.log"
    # Opened in each worker only, it crashed them all, a hundred restarts each: 5,000 lines of tracebacks.
    assert refused_at_start(["--processes", "2", "--port", "0", "--data-dir", str(new_data_dir)], log_path) == (1, [
        f"solarserv: error: The key store {new_data_dir / 'keys.db'} cannot be used: file is not a database."])


@pytest.mark.slow
def test_a_key_store_serve_cannot_write_stops_it_before_it_binds(new_data_dir):
    # It used to serve, and fail at the first console login (500) or key created in the console.
    assert main(["keys", "create", "--label", "Acme", "--tier", "free", "--data-dir", str(new_data_dir)]) == 0
    (new_data_dir / "keys.db").chmod(0o444)
    done = subprocess.run(bound_by_file_modes([sys.executable, "-m", "solarserv", "serve", "--port", "0",
                                               "--data-dir", str(new_data_dir)]),
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"solarserv: error: The key store {new_data_dir / 'keys.db'} cannot be used: "
                           "attempt to write a readonly database.\n")


def test_a_cookie_secret_serve_cannot_read_stops_it_in_one_line(new_data_dir):
    # As one left by a `sudo solarserv serve` for the service's user: a traceback of PermissionError.
    (new_data_dir / "cookie_secret").write_text("a-secret-of-another-user\n")
    (new_data_dir / "cookie_secret").chmod(0o000)
    done = subprocess.run(bound_by_file_modes([sys.executable, "-m", "solarserv", "serve", "--port", "0",
                                               "--data-dir", str(new_data_dir)]),
                          capture_output=True, text=True, timeout=60, env=config.without_settings(os.environ))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"solarserv: error: {new_data_dir / 'cookie_secret'} cannot be read: Permission "
                           "denied\n")


def test_a_data_dir_serve_cannot_write_stops_it_in_one_line(new_data_dir):
    new_data_dir.chmod(0o555)
    done = subprocess.run(bound_by_file_modes([sys.executable, "-m", "solarserv", "serve", "--port", "0",
                                               "--data-dir", str(new_data_dir)]),
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"solarserv: error: SOLARSERV_DATA_DIR={str(new_data_dir)!r}: this user cannot write to it\n"


def test_no_command_shows_the_help_listing_the_commands_and_fails(capsys):
    assert main([]) == 2
    shown = capsys.readouterr()
    assert shown.err == "" and shown.out.startswith("usage: solarserv ")
    for command in ("serve", "calc", "plugins", "keys"):
        assert re.search(rf"^ +{command} ", shown.out, re.MULTILINE), command


def test_serve_help_lists_the_settings_that_have_no_flag(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    help_text = capsys.readouterr().out
    for setting in config.SETTINGS:
        assert (setting.flag or setting.env) in help_text


@pytest.mark.parametrize("command", [config.CALC, config.PLUGINS, "keys list"])
def test_a_commands_help_tells_the_flags_it_ignores_apart_from_its_own(capsys, command):
    # Among calc's own flags, its help offered --port as the TCP port to listen on.
    with pytest.raises(SystemExit):
        main([*command.split(), "--help"])
    own, _, ignored = capsys.readouterr().out.partition(f"flags {command.split()[0]} accepts and ignores")
    for setting in config.SETTINGS:
        if setting.flag:
            read = command.split()[0] in setting.commands
            assert (f"  {setting.flag} " in own, f"  {setting.flag} " in ignored) == (read, not read), setting.flag


def test_stdout_discarded_sends_its_writes_nowhere_and_keeps_no_second_descriptor(tmp_path, monkeypatch):
    # It left the descriptor of /dev/null it had opened next to stdout's, open for the process's life.
    with open(tmp_path / "stdout.txt", "w") as stdout:
        monkeypatch.setattr(sys, "stdout", stdout)
        open_before = len(os.listdir("/proc/self/fd"))
        discard_stdout()
        assert len(os.listdir("/proc/self/fd")) == open_before
        stdout.write("gone\n")
        stdout.flush()
    assert (tmp_path / "stdout.txt").read_text() == ""


@pytest.mark.parametrize(("given", "threads"), [(None, 1), ("2", 2)])
def test_the_command_loads_numpy_with_one_blas_thread_unless_the_operator_sets_it(given, threads):
    # OpenBLAS's second thread spun a core while a year of the chart was computed, and shortened nothing (README).
    environment = {name: value for name, value in os.environ.items() if name != "OPENBLAS_NUM_THREADS"}
    if given:
        environment["OPENBLAS_NUM_THREADS"] = given
    # The command's entry point, then numpy as the commands load it; the process's threads counted by Linux.
    script = ("import contextlib, os, sys\n"
              "sys.argv = ['solarserv', '--version']\n"
              "import solarserv.__main__\n"
              "with contextlib.redirect_stdout(None), contextlib.suppress(SystemExit):\n"
              "    solarserv.__main__.main()\n"
              "import numpy\n"
              "print(len(os.listdir('/proc/self/task')))\n")
    ran = subprocess.run([sys.executable, "-c", script], env=environment, capture_output=True, text=True, timeout=60)
    assert (ran.returncode, ran.stdout) == (0, f"{threads}\n"), ran.stderr
