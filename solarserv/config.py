"""One settings object, built from flags and the environment (a flag wins), validated at start.

``SETTINGS`` is the single declarative table: the CLI's flags and ``--help`` and ``Settings`` come from it,
and a test holds README's configuration table to it. Add a setting by adding one row here (and to README).
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off", ""}:
        return False
    raise ValueError(f"expected true or false, got {text!r}")


def _whole_number(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # whose message is Python's: "invalid literal for int() with base 10"
        raise ValueError(f"must be a whole number, got {text!r}") from None


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:  # whose message is Python's: "could not convert string to float"
        raise ValueError(f"must be a number, got {text!r}") from None
    if not math.isfinite(value):  # float() reads "inf" and "nan"
        raise ValueError(f"must be a finite number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = _whole_number(text)
    if value < 1:
        raise ValueError(f"must be at least 1, got {value}")
    return value


# Each answer is work for a core, so processes beyond the cores only take turns on them, and each holds its own
# memory (86 MiB RSS, README's Performance): a bound that leaves room to try, and keeps a typo (80 for 8, or a
# number of requests) from forking processes until the machine runs out of memory.
PROCESSES_PER_CORE = 4


def most_processes() -> int:
    """The most SOLARSERV_PROCESSES may be: PROCESSES_PER_CORE for each core this process may run on."""
    return PROCESSES_PER_CORE * _cores()


def _cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or taskset narrows), else the
    machine's."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _process_count(text: str) -> int:
    value = _positive_int(text)
    if value > most_processes():
        raise ValueError(f"must be at most {most_processes()}, {PROCESSES_PER_CORE} for each of the {_cores()} "
                         f"cores here, got {value}")
    return value


def _port(text: str) -> int:
    value = _whole_number(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"must be 0..65535, got {value}")
    return value


def _positive_float(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise ValueError(f"must be greater than 0, got {value}")
    return value


def _non_negative_float(text: str) -> float:
    value = _number(text)
    if not value >= 0:
        raise ValueError(f"must be 0 or more, got {value}")
    return value


def _redis_url(text: str) -> str:
    """A URL that redis-py reads as the logs and /healthz show it: redis-py would take a database path that is not
    a number (``/abc``) as database 0, and let a ``?db=`` override the path, without a word."""
    scheme, separator, _ = text.partition("://")
    if not separator or scheme not in {"redis", "rediss", "unix"}:
        raise ValueError("must start with redis://, rediss:// or unix:// (e.g. redis://127.0.0.1:6379/0)")
    parts = urlsplit(text)
    if scheme != "unix" and "@" in parts.path:  # a "/" in the password ended the host early
        raise ValueError("a '/' in the user or password must be written %2F (it ended the host early)")
    database = parse_qs(parts.query).get("db", [None])[0]  # redis-py reads the first ?db= only
    if scheme == "unix":  # the path is the socket's; the database can only be a ?db=
        if not parts.path:
            raise ValueError("must name the socket, e.g. unix:///run/redis/redis.sock?db=0")
        if database is not None and not re.fullmatch("[0-9]+", database):
            raise ValueError(f"?db= must be a database number, got {database!r}")
        return _with_options_solarserv_takes(text)
    try:
        port = parts.port  # None when not given: redis-py's default, 6379
    except ValueError:  # not a number, or over 65535
        port = 0
    if port == 0:
        raise ValueError("the port must be a number from 1 to 65535")
    if database is not None:
        raise ValueError("give the database as the path (redis://host:port/N), not as ?db=")
    if not re.fullmatch("/?[0-9]*", parts.path):
        raise ValueError(f"the database (the URL's path) must be a number, got {parts.path!r}")
    return _with_options_solarserv_takes(text)


def _with_options_solarserv_takes(url: str) -> str:
    # Imported here: solarserv.ratelimit imports this module, and only `serve` reads REDIS_URL.
    from solarserv.ratelimit import url_option_fault

    if fault := url_option_fault(url):
        raise ValueError(fault)
    return url


# A scheme and the slashes after it, its ":" left out or misplaced. A "/" cannot be in a user or password (it would
# end the host), so this is never one; without a "/", "redis:pw@host" cannot be told from "user:pw@host".
_SCHEME_WITHOUT_ITS_SEPARATOR = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:?/+")


def redis_url_shown(url: str) -> str:
    """A Redis URL as logs, /healthz and settings errors show it: without its user and password (before the last
    "@") and, of its query, only the database (a query may hold a password). Works on URLs too malformed to parse,
    which are the ones a settings error echoes. A socket's database is kept: unix:// URLs can only give it as
    ``?db=`` (``_redis_url`` refuses one elsewhere)."""
    scheme, separator, rest = url.partition("://")
    if not separator:  # refused: a scheme whose "://" is mistyped ("redis//", "redis:/"), shown as written, or none
        scheme = mistyped.group() if (mistyped := _SCHEME_WITHOUT_ITS_SEPARATOR.match(url)) else ""
        rest = url[len(scheme):]
    location, _, query = rest.rpartition("@")[2].partition("?")
    database = parse_qs(query).get("db", [None])[0]
    return f"{scheme}{separator}{location}{f'?db={database}' if database else ''}"


# Who may open the operator console (CONSOLE); solarserv.web.console.ConsoleHandler applies it.
CONSOLE_ACCESS = ("local", "any", "off")

# A token a console login is guessed against: 20 characters of a URL-safe alphabet are 120 bits (a generated
# one has 43). Checked by `solarserv serve` with the console on (serving._check_before_binding): the other commands
# and a server without a console do not use the token.
ADMIN_TOKEN_MIN_LENGTH = 20


def _one_of(*choices: str) -> Callable[[str], str]:
    """A parser that takes any of `choices`, in any case, and gives it as written there."""
    by_folded = {choice.casefold(): choice for choice in choices}

    def parse(text: str) -> str:
        chosen = by_folded.get(text.strip().casefold())
        if chosen is None:
            raise ValueError(f"must be one of {', '.join(choices)}, got {text!r}")
        return chosen

    return parse


# "offline", then the online providers of solarserv.geo.online (a test keeps the two lists equal; geopy is
# not imported to check a setting).
GEOCODERS = ("offline", "nominatim", "photon")


# Host (a name, an IPv4 address or a bracketed IPv6 one), optional port, optional path: what geopy puts after
# "scheme://". A URL here would be asked for at "https://http://…" and fail on every request.
_GEOCODER_DOMAIN = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:[0-9]{1,5})?(/[^\s?#]*)?", re.IGNORECASE)


def _geocoder_domain(text: str) -> str:
    if "://" in text:
        raise ValueError("must be host[:port][/path] without a scheme (GEOCODER_SCHEME=http for plain HTTP)")
    parts = _GEOCODER_DOMAIN.fullmatch(text)
    if not parts:
        raise ValueError("must be host[:port][/path], e.g. nominatim.example.org or localhost:8080/nominatim")
    port = parts.group(2)
    if port and not 1 <= int(port[1:]) <= 65535:  # else every call was refused, a 503 for every place name
        raise ValueError(f"its port must be 1..65535, got {int(port[1:])}")
    return text


def _header_value(text: str) -> str:
    """Text sent as an HTTP header's value. A line break in it made http.client refuse every call ("Invalid header
    value"), which the API answered 503 as if the geocoder were down; a character beyond ASCII is not sent as
    written."""
    if not all(" " <= character <= "~" for character in text):
        raise ValueError("must be printable ASCII, as an HTTP header carries it")
    return text


# The `solarserv` commands (solarserv.cli), as a setting names those that read it.
SERVE, CALC, PLUGINS, KEYS = "serve", "calc", "plugins", "keys"


@dataclass(frozen=True)
class Setting:
    name: str  # attribute on Settings
    env: str  # environment variable
    flag: str | None  # CLI flag, which every command takes (and ignores unless it reads the setting); None: env only
    parse: Callable[[str], Any]
    default: Any
    help: str
    # The commands that read it; the others leave it at its default without reading it, so that a value they would
    # not use cannot stop them (a malformed REDIS_URL, `keys deactivate` in an incident). `serve` reads them all.
    commands: tuple[str, ...] = (SERVE,)
    empty_is_value: bool = False  # an empty value is a value, not "unset" (an allow-list allowing nothing)
    shown_in_errors: Callable[[str], str] = str  # a value holding secrets hides them here


SETTINGS: tuple[Setting, ...] = (
    Setting("host", "HOST", "--host", str, "127.0.0.1", "Interface to listen on."),
    Setting("port", "PORT", "--port", _port, 8000, "TCP port to listen on (0 picks a free one)."),
    Setting("processes", "SOLARSERV_PROCESSES", "--processes", _process_count, 1,
            f"Server processes sharing the port, forked by `solarserv serve` after binding it, at most "
            f"{PROCESSES_PER_CORE} for each core; with more than one, set REDIS_URL so they share rate-limit counts."),
    Setting("data_dir", "SOLARSERV_DATA_DIR", "--data-dir", Path, Path("./var"),
            "Directory for the SQLite key store and the gazetteer index.", commands=(SERVE, CALC, KEYS)),
    Setting("redis_url", "REDIS_URL", "--redis-url", _redis_url, None,
            "Redis URL for shared rate-limit counters: redis://[[user]:password@]host[:port][/db], rediss://… "
            "(TLS) or unix://path[?db=N], with the query options under Several processes or machines; unset: "
            "in-process counters.", shown_in_errors=redis_url_shown),
    Setting("api_key_required", "API_KEY_REQUIRED", None, _bool, False,
            "true: every API request needs a valid X-API-Key."),
    Setting("admin_token", "ADMIN_TOKEN", None, str, None,
            f"Console login token, at least {ADMIN_TOKEN_MIN_LENGTH} characters, no control character, no space at "
            "either end; unset: one is generated at start and its login URL printed."),
    Setting("console", "CONSOLE", "--console", _one_of(*CONSOLE_ACCESS), "local",
            "Who may open the operator console: local (connections from this machine: a browser here, an SSH "
            "tunnel, a proxy on this machine), any (every address: serve it behind TLS) or off (404)."),
    Setting("trust_proxy", "TRUST_PROXY", "--trust-proxy", _bool, False,
            "true: take the client IP from X-Forwarded-For / X-Real-IP, and HTTPS from X-Forwarded-Proto (the "
            "console cookie's Secure flag)."),
    Setting("anon_rpm", "ANON_RPM", "--anon-rpm", _positive_int, 60,
            "Anonymous requests per minute per client IP."),
    Setting("geocoder", "GEOCODER", "--geocoder", _one_of(*GEOCODERS), "offline",
            "Place-name geocoder: offline (embedded gazetteer), nominatim or photon (online, via geopy).",
            commands=(SERVE, CALC)),
    Setting("geocoder_domain", "GEOCODER_DOMAIN", "--geocoder-domain", _geocoder_domain, None,
            "Host[:port][/path] of the online geocoder, without a scheme; unset: the provider's public service.",
            commands=(SERVE, CALC)),
    Setting("geocoder_scheme", "GEOCODER_SCHEME", None, _one_of("http", "https"), "https",
            "http or https for the online geocoder.", commands=(SERVE, CALC)),
    Setting("geocoder_user_agent", "GEOCODER_USER_AGENT", None, _header_value, None,
            "User-Agent sent to the online geocoder, in printable ASCII (Nominatim's usage policy asks for one that "
            "names your application); unset: solarserv/VERSION.", commands=(SERVE, CALC)),
    Setting("geocoder_timeout", "GEOCODER_TIMEOUT", None, _positive_float, 5.0,
            "Seconds to wait for the online geocoder before answering 503 GEOCODER_UNAVAILABLE.",
            commands=(SERVE, CALC)),
    Setting("geocoder_interval", "GEOCODER_INTERVAL", None, _non_negative_float, None,
            "Least seconds between two calls to the online geocoder, from all of the server's processes together; "
            "unset: 1 for Nominatim's public service (its usage policy), else 0.", commands=(SERVE, CALC)),
    Setting("plugins_dir", "PLUGINS_DIR", "--plugins-dir", Path, None,
            "Directory of extra plugin .py files to load.", commands=(SERVE, CALC, PLUGINS)),
    Setting("narratives_dir", "NARRATIVES_DIR", "--narratives-dir", Path, None,
            "Directory of templates that override the built-in narratives.", commands=(SERVE, CALC, PLUGINS)),
    Setting("plugins_allow", "SOLARSERV_PLUGINS", None, str, None,
            "Comma-separated allow-list of installed plugins' entry-point names; set but empty: none; unset: all load.",
            empty_is_value=True, commands=(SERVE, CALC, PLUGINS)),
    Setting("plugin_timeout", "PLUGIN_TIMEOUT", None, _positive_float, 2.0,
            "Seconds a request waits for third-party plugins before answering with the built-in texts.",
            commands=(SERVE, CALC)),
    Setting("log_level", "LOG_LEVEL", "--log-level", _one_of("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"), "INFO",
            "Logging level: DEBUG, INFO, WARNING, ERROR or CRITICAL.", commands=(SERVE, CALC, PLUGINS, KEYS)),
)


# The settings object: one frozen attribute per row of SETTINGS, defaulting to the row's default.
# `dataclasses.replace(settings, port=0)` makes a changed copy (tests use it).
Settings = make_dataclass(
    "Settings",
    [(setting.name, Any, field(default=setting.default)) for setting in SETTINGS],
    frozen=True,
)


class SettingsError(ValueError):
    """A setting's value cannot be used; the message names the variable or flag."""


def existing_directory(path: Path, setting: str) -> Path:
    """``path``, the value of the directory setting ``setting`` (PLUGINS_DIR, NARRATIVES_DIR), if it is a directory.
    Checked where it is read, when plugins and templates load, so only the commands that use it refuse it."""
    if not Path(path).is_dir():
        raise SettingsError(f"{setting} {path} is not a directory")
    return Path(path)


def without_settings(environ: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``environ`` without any variable that configures solarserv: the environment for a server
    started on its embedded defaults (by the tests and benchmarks), whatever this shell has set."""
    names = {setting.env for setting in SETTINGS}
    return {name: value for name, value in environ.items() if name not in names}


def shown_default(setting: Setting) -> str:
    """The default as the README table and --help show it."""
    if setting.default is None:
        return "unset"
    if isinstance(setting.default, Path) and not setting.default.is_absolute():
        return f"`./{setting.default}`"
    return f"`{str(setting.default).lower() if isinstance(setting.default, bool) else setting.default}`"


def environment_only_help() -> str:
    """The settings without a flag, for the end of `solarserv serve --help`."""
    lines = [f"  {setting.env} (default {shown_default(setting)}): {setting.help}"
             for setting in SETTINGS if not setting.flag]
    return "settings from the environment only:\n" + "\n".join(lines)


def add_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """Give `parser`, of ``command``, one flag per setting that has one (values stay strings until `load`). Those of
    the settings it does not read are listed apart, without what they mean: among its own, `calc --help` offered
    `--port` as the TCP port to listen on."""
    unread = parser.add_argument_group(f"flags {command} accepts and ignores, of settings other commands read")
    for setting in SETTINGS:
        if not setting.flag:
            continue
        if command in setting.commands:
            parser.add_argument(setting.flag, dest=setting.name, default=None, metavar=setting.env,
                                help=f"{setting.help} (env {setting.env}; default {shown_default(setting)})")
        else:
            unread.add_argument(setting.flag, dest=setting.name, default=None, metavar=setting.env)


def load(environ: Mapping[str, str] | None = None, flags: Mapping[str, Any] | None = None,
         command: str = SERVE) -> Any:
    """Settings from flags (winning) and the environment, each value parsed and validated: those ``command``
    reads; the others at their defaults."""
    environ = os.environ if environ is None else environ
    flags = flags or {}
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        if command not in setting.commands:
            continue
        raw, source = flags.get(setting.name), setting.flag
        if raw is None:
            raw, source = environ.get(setting.env), setting.env
        if raw is None or (raw == "" and not setting.empty_is_value):
            values[setting.name] = setting.default
            continue
        try:
            values[setting.name] = setting.parse(raw) if isinstance(raw, str) else raw
        except ValueError as exc:
            raise SettingsError(f"{source}={setting.shown_in_errors(raw)!r}: {exc}") from None
    return Settings(**values)
