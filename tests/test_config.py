"""Settings are parsed and checked when they are loaded: a wrong value is one line naming the variable or
flag, before `solarserv serve` binds its port or forks."""

from __future__ import annotations

import os

import pytest

from solarserv import cli, config


def refusal(environ: dict[str, str]) -> str:
    """The message of the SettingsError that loading the settings from ``environ`` raises."""
    with pytest.raises(config.SettingsError) as refused:
        config.load(environ=environ)
    return str(refused.value)


@pytest.mark.parametrize("environ,said", [
    ({"GEOCODER": "google"}, "GEOCODER='google': must be one of offline, nominatim, photon, got 'google'"),
    ({"GEOCODER_SCHEME": "ftp"}, "GEOCODER_SCHEME='ftp': must be one of http, https, got 'ftp'"),
    ({"GEOCODER_DOMAIN": "http://127.0.0.1:18141/nominatim"},
     "GEOCODER_DOMAIN='http://127.0.0.1:18141/nominatim': must be host[:port][/path] without a scheme "
     "(GEOCODER_SCHEME=http for plain HTTP)"),
    ({"GEOCODER_DOMAIN": "nominatim.example.org:80a"}, "GEOCODER_DOMAIN='nominatim.example.org:80a': must be"),
    ({"GEOCODER_DOMAIN": "nominatim.example.org/search?q=x"}, "GEOCODER_DOMAIN="),
    ({"GEOCODER_DOMAIN": "my host"}, "GEOCODER_DOMAIN="),
], ids=["geocoder", "scheme", "domain-a-url", "domain-port", "domain-query", "domain-space"])
def test_a_wrong_geocoder_setting_is_refused_naming_it(environ, said):
    assert refusal(environ).startswith(said)


@pytest.mark.parametrize("environ,said", [
    ({"PORT": "abc"}, "PORT='abc': must be a whole number, got 'abc'"),
    ({"SOLARSERV_PROCESSES": "two"}, "SOLARSERV_PROCESSES='two': must be a whole number, got 'two'"),
    ({"ANON_RPM": "1.5"}, "ANON_RPM='1.5': must be a whole number, got '1.5'"),
    ({"GEOCODER_TIMEOUT": "soon"}, "GEOCODER_TIMEOUT='soon': must be a number, got 'soon'"),
    ({"GEOCODER_TIMEOUT": "nan"}, "GEOCODER_TIMEOUT='nan': must be a finite number, got 'nan'"),
    ({"PLUGIN_TIMEOUT": "0"}, "PLUGIN_TIMEOUT='0': must be greater than 0, got 0.0"),
    ({"GEOCODER_INTERVAL": "-1"}, "GEOCODER_INTERVAL='-1': must be 0 or more, got -1.0"),
    ({"GEOCODER_INTERVAL": "inf"}, "GEOCODER_INTERVAL='inf': must be a finite number, got 'inf'"),
])
def test_a_number_that_is_not_one_is_refused_in_plain_words(environ, said):
    # Not Python's own: "invalid literal for int() with base 10: 'abc'".
    assert refusal(environ) == said


def test_geocoder_settings_that_load():
    settings = config.load(environ={"GEOCODER": "Nominatim", "GEOCODER_SCHEME": "HTTP",
                                    "GEOCODER_DOMAIN": "127.0.0.1:8080/nominatim"})
    assert (settings.geocoder, settings.geocoder_scheme, settings.geocoder_domain) == (
        "nominatim", "http", "127.0.0.1:8080/nominatim")
    user_agent = "Sundials/1.0 (+https://sundials.example; ops@sundials.example)"
    assert config.load(environ={"GEOCODER_USER_AGENT": user_agent}).geocoder_user_agent == user_agent
    for domain in ("nominatim.example.org", "[::1]:2322", "photon.example.org/photon/"):
        assert config.load(environ={"GEOCODER_DOMAIN": domain}).geocoder_domain == domain


@pytest.mark.parametrize("arguments", [["--geocoder", "google"], ["--geocoder-domain", "https://photon.komoot.io"]])
def test_serve_with_a_wrong_geocoder_setting_stops_in_one_line(capsys, monkeypatch, tmp_path, arguments):
    # Were the setting let through, the test fails here rather than serving (and forking) inside pytest.
    monkeypatch.setattr(cli, "serve", lambda settings, args: pytest.fail("serve ran with a wrong setting"))
    assert cli.main(["serve", "--processes", "2", "--data-dir", str(tmp_path), *arguments]) == 2
    error = capsys.readouterr().err
    assert error.splitlines()[-1].startswith(f"solarserv: error: {arguments[0]}=")
    assert "Traceback" not in error


@pytest.mark.parametrize("text,meaning", [
    ("true", True), ("TRUE", True), ("1", True), ("yes", True), ("on", True), (" On ", True),
    ("false", False), ("0", False), ("no", False), ("off", False), (" ", False),
])
def test_a_true_or_false_setting_reads_the_usual_words(text, meaning):
    assert config.load(environ={"TRUST_PROXY": text}).trust_proxy is meaning


def test_a_true_or_false_setting_refuses_another_word():
    assert refusal({"API_KEY_REQUIRED": "maybe"}) == "API_KEY_REQUIRED='maybe': expected true or false, got 'maybe'"


@pytest.mark.parametrize("environ,said", [
    ({"SOLARSERV_PROCESSES": "0"}, "SOLARSERV_PROCESSES='0': must be at least 1, got 0"),
    ({"ANON_RPM": "0"}, "ANON_RPM='0': must be at least 1, got 0"),
    ({"PORT": "65536"}, "PORT='65536': must be 0..65535, got 65536"),
    ({"PORT": "-1"}, "PORT='-1': must be 0..65535, got -1"),
    ({"REDIS_URL": "unix://"}, "REDIS_URL='unix://': must name the socket, e.g. unix:///run/redis/redis.sock?db=0"),
    ({"GEOCODER_DOMAIN": "nominatim.example.org:808080"}, "GEOCODER_DOMAIN='nominatim.example.org:808080': must be "
     "host[:port][/path], e.g. nominatim.example.org or localhost:8080/nominatim"),
    # Taken at start, every place-name request was a 503 "gave an error", connection refused.
    ({"GEOCODER_DOMAIN": "localhost:99999"}, "GEOCODER_DOMAIN='localhost:99999': its port must be 1..65535, got 99999"),
    ({"GEOCODER_DOMAIN": "localhost:0/nominatim"}, "GEOCODER_DOMAIN='localhost:0/nominatim': its port must be "
     "1..65535, got 0"),
    # Taken at start, it failed every place-name request with 503 "try again later" (http.client: "Invalid header").
    ({"GEOCODER_USER_AGENT": "sundials.example\n"}, "GEOCODER_USER_AGENT='sundials.example\\n': must be printable "
     "ASCII, as an HTTP header carries it"),
    ({"GEOCODER_USER_AGENT": "Sonnenuhr/1 ☀"}, "GEOCODER_USER_AGENT='Sonnenuhr/1 ☀': must be printable ASCII, as an "
     "HTTP header carries it"),
])
def test_a_value_out_of_its_range_or_form_is_refused_saying_which(environ, said):
    assert refusal(environ) == said


def test_more_processes_than_four_a_core_are_refused():
    # Unbounded, a typo (99999999999) forked workers until the machine ran out of memory.
    most = config.most_processes()
    assert most == config.PROCESSES_PER_CORE * len(os.sched_getaffinity(0))
    assert config.load(environ={"SOLARSERV_PROCESSES": str(most)}).processes == most
    for too_many in (most + 1, 99999999999):
        assert refusal({"SOLARSERV_PROCESSES": str(too_many)}) == (
            f"SOLARSERV_PROCESSES='{too_many}': must be at most {most}, 4 for each of the {most // 4} cores here, "
            f"got {too_many}")


def test_the_edges_of_each_range_are_accepted():
    settings = config.load(environ={"SOLARSERV_PROCESSES": "1", "ANON_RPM": "1", "PORT": "65535",
                                    "GEOCODER_INTERVAL": "0", "GEOCODER_TIMEOUT": "0.001"})
    assert (settings.processes, settings.anon_rpm, settings.port, settings.geocoder_interval,
            settings.geocoder_timeout) == (1, 1, 65535, 0.0, 0.001)
    assert config.load(environ={"PORT": "0"}).port == 0


def test_an_empty_variable_is_unset_except_the_plugin_allow_list_where_it_allows_none():
    settings = config.load(environ={"PORT": "", "GEOCODER": "", "SOLARSERV_PLUGINS": ""})
    assert (settings.port, settings.geocoder, settings.plugins_allow) == (8000, "offline", "")
    assert config.load(environ={}).plugins_allow is None


def test_a_flag_wins_over_the_environment():
    settings = config.load(environ={"PORT": "9000", "LOG_LEVEL": " debug "}, flags={"port": "9001"})
    assert (settings.port, settings.log_level) == (9001, "DEBUG")


def test_a_geocoder_domain_is_read_in_any_case():
    assert config.load(environ={"GEOCODER_DOMAIN": "Nominatim.Example.ORG"}).geocoder_domain == "Nominatim.Example.ORG"


def test_a_directory_setting_naming_a_file_is_refused_where_it_is_read(tmp_path):
    a_file = tmp_path / "plugins.py"
    a_file.write_text("")
    with pytest.raises(config.SettingsError) as refused:
        config.existing_directory(a_file, "PLUGINS_DIR")
    assert str(refused.value) == f"PLUGINS_DIR {a_file} is not a directory"
    assert config.existing_directory(tmp_path, "PLUGINS_DIR") == tmp_path


def test_each_command_refuses_only_the_settings_it_reads():
    serving_only = {"HOST": "", "PORT": "abc", "SOLARSERV_PROCESSES": "0", "REDIS_URL": "localhost:6379",
                    "API_KEY_REQUIRED": "maybe", "CONSOLE": "lan", "TRUST_PROXY": "maybe", "ANON_RPM": "-1"}
    for command in (config.CALC, config.PLUGINS, config.KEYS):
        settings = config.load(environ=serving_only, command=command)
        assert (settings.port, settings.processes, settings.redis_url, settings.console) == (8000, 1, None, "local")
    assert refusal(serving_only) == "PORT='abc': must be a whole number, got 'abc'"  # serve reads them all
    with pytest.raises(config.SettingsError, match="^GEOCODER='google'"):
        config.load(environ={"GEOCODER": "google"}, command=config.CALC)
    assert config.load(environ={"GEOCODER": "google", "PLUGIN_TIMEOUT": "0"}, command=config.KEYS).geocoder == "offline"
    with pytest.raises(config.SettingsError, match="^LOG_LEVEL='loud'"):
        config.load(environ={"LOG_LEVEL": "loud"}, command=config.KEYS)
