"""The `solarserv` command: its parser, and calc, plugins and keys (serve is solarserv.serving). Every subcommand
takes the settings flags."""

from __future__ import annotations

import argparse
import asyncio
import codecs
import contextlib
import io
import json
import logging
import sys
from collections.abc import Iterator
from typing import Any

import solarserv
from solarserv import config
from solarserv.errors import ApiError
from solarserv.keys import (
    ACTIVE,
    BY_THE_CLI,
    INACTIVE,
    TIER_ALIASES,
    TIERS,
    IssuedKey,
    KeyStore,
    KeyStoreBusy,
    KeyStoreError,
    KeyStoreUnusable,
    checked_key_fields,
)
from solarserv.narration import Narrator, TemplateLoadError
from solarserv.plugin_manager import PluginConflict
from solarserv.request import FIELD_NAMES, Spelling, parse_query_fields
from solarserv.stdout import discard_stdout
from solarserv.text import terminal_width

# calc's exit statuses for a question the API would not answer with its result: refused, as its 4xx (fix the
# question), or not answerable now, as its 5xx (an online geocoder down, no gazetteer index: ask again later, or give
# coordinates). A script told them apart by the message alone, both being 1.
REFUSED_STATUS = 1
UNANSWERED_STATUS = 3
CALC_STATUSES = (f"exit status: 0 answered; {REFUSED_STATUS} the question refused (the API's 4xx); 2 the command line "
                 f"or a setting refused; {UNANSWERED_STATUS} the question not answerable now (the API's 5xx: the "
                 "geocoder unavailable); 130 stopped by Ctrl-C")
# calc's flags for the question's fields, which its refusals name: the API's names ("Give either place_name, or
# latitude and longitude.") were not what the caller wrote.
QUESTION_FLAGS = Spelling(renamed={"date": "--date", "local_time": "--time", "latitude": "--lat", "longitude": "--lon",
                                   "place_name": "--place"})


def main(argv: list[str] | None = None) -> int:
    if isinstance(sys.stdout, io.TextIOWrapper):
        # On a stdout in another encoding than UTF-8 (a Latin-1 locale), a character it cannot write (✓, “, ±) is
        # written as Python writes it to stderr, \u2713: it ended the command with a traceback, `keys create` once
        # the key was stored, without ever showing it. Before the arguments are parsed: --help writes … and → too.
        sys.stdout.reconfigure(errors="backslashreplace")
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        settings = config.load(flags=vars(args), command=args.settings_of)
    except config.SettingsError as exc:
        # A value, often from the environment, not the command line's shape: one line, without the usage of the
        # top command that parser.error prints first.
        _refuse(parser, exc)
        return 2
    configure_logging(settings)
    try:
        return args.command(settings, args)
    except BrokenPipeError:
        # The reader went away (`solarserv plugins | head -1`): stop quietly, as other commands in a pipe do.
        discard_stdout()
        return 1
    except StdoutUnwritable as exc:
        if sys.stdout is not None:
            discard_stdout()  # what could not be written is not tried again at exit
        _refuse(parser, exc)
        return 1
    except (KeyStoreError, KeyStoreBusy, KeyStoreUnusable) as exc:
        # The key store refused, was locked or cannot be used, in any command: one line in its words.
        _refuse(parser, exc)
        return 1
    except (config.SettingsError, PluginConflict, TemplateLoadError) as exc:
        # Problems an operator fixes or retries (a port in use, plugins, templates): one line, not a traceback.
        _refuse(parser, exc)
        return 2


class StdoutUnwritable(Exception):
    """What a command prints could not be written: stdout is closed, or its disk is full. (A reader that went away
    is BrokenPipeError, a quiet stop.)"""


def _shown(text: str) -> None:
    """``text`` on stdout, written through at once, so that a failure to write it comes here, while the command
    can still say so, not at exit; a closed stdout, which print passes over in silence, is one too."""
    if sys.stdout is None:
        raise StdoutUnwritable("cannot write to stdout: it is closed")
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise StdoutUnwritable(f"cannot write to stdout ({exc.strerror})") from exc


def _refuse(parser: argparse.ArgumentParser, exc: Exception) -> None:
    """One line on stderr in the shape of argparse's own refusals, whatever was refused and when."""
    print(f"{parser.prog}: error: {exc}", file=sys.stderr)


def _plugins_printing_to_stderr() -> contextlib.AbstractContextManager[Any]:
    """While the plugins are imported and run: what they print (a debugging print() left in) goes to stderr, with the
    log, so that stdout holds the command's output alone. It came before the JSON a script reads, which was then
    no JSON."""
    return contextlib.redirect_stdout(sys.stderr)


def _as_json(value: Any, indent: int | None = 2) -> str:
    """``value`` as JSON for stdout; on a stdout in another encoding than UTF-8, in ASCII, every other character
    escaped (\\u00e9): the same JSON read in any encoding, where the escapes stdout falls back to for text are not
    JSON."""
    ascii_only = sys.stdout is not None and codecs.lookup(sys.stdout.encoding).name != "utf-8"
    return json.dumps(value, ensure_ascii=ascii_only, indent=indent)


def configure_logging(settings: Any) -> None:
    """Log lines (the access log among them) to stderr at LOG_LEVEL, as every command writes them."""
    logging.basicConfig(level=settings.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="solarserv", description=solarserv.__doc__)
    parser.add_argument("--version", action="version", version=f"solarserv {solarserv.__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    serve_parser = commands.add_parser("serve", help="run the HTTP service", epilog=config.environment_only_help(),
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
    serve_parser.set_defaults(command=serve)

    calc_parser = commands.add_parser("calc", help="compute one result, as the API would", epilog=CALC_STATUSES)
    # Each kept as often as it is given, for the question to be refused as the API refuses a field given twice:
    # argparse kept the last without a word.
    calc_parser.add_argument("--date", required=True, action="append", help="YYYY-MM-DD")
    calc_parser.add_argument("--time", required=True, action="append", dest="local_time",
                             help="HH:MM or HH:MM:SS, civil time")
    calc_parser.add_argument("--lat", action="append", dest="latitude", help="decimal degrees, north positive")
    calc_parser.add_argument("--lon", action="append", dest="longitude", help="decimal degrees, east positive")
    calc_parser.add_argument("--place", action="append", dest="place_name", help="a place name instead of coordinates")
    calc_parser.add_argument("--json", action="store_true", help="print the exact API JSON")
    calc_parser.set_defaults(command=calc)

    plugins_parser = commands.add_parser("plugins", help="list the plugins, those left out too, and their hooks")
    plugins_parser.add_argument("--json", action="store_true", help="print JSON")
    plugins_parser.set_defaults(command=list_plugins)

    keys_parser = commands.add_parser("keys", help="issue, list, deactivate and activate API keys")
    key_commands = keys_parser.add_subparsers(title="key commands", metavar="KEY_COMMAND", required=True)
    create_parser = key_commands.add_parser("create", help="issue a key; the full key is printed this once")
    create_parser.add_argument("--label", required=True, help="whose key it is")
    create_parser.add_argument("--tier", required=True, choices=[*TIERS, *TIER_ALIASES],
                               help="; ".join(tier.describe() for tier in TIERS.values()) + " ("
                               + ", ".join(f"{alias} is {name}" for alias, name in TIER_ALIASES.items()) + ")")
    create_parser.add_argument("--rpm", type=int, help="requests per minute, for a " + " or ".join(
        f"{tier.name} key ({tier.min_rpm} to {tier.max_rpm})" for tier in TIERS.values() if tier.rpm_is_chosen))
    create_parser.add_argument("--json", action="store_true", help="print JSON")
    create_parser.set_defaults(command=create_key)
    list_parser = key_commands.add_parser("list", help="list the keys (previews, never the keys)")
    list_parser.add_argument("--json", action="store_true", help="print JSON")
    list_parser.set_defaults(command=list_keys)
    status_parsers = []
    for action, status in (("deactivate", INACTIVE), ("activate", ACTIVE)):
        status_parser = key_commands.add_parser(action, help=f"{action} a key, at once in every server")
        status_parser.add_argument("reference", metavar="PREVIEW_OR_ID",
                                   help="the key's id, its preview (tst_abcd…) or the whole key")
        status_parser.set_defaults(command=change_key_status, status=status)
        status_parsers.append(status_parser)

    for command, subparsers in ((config.SERVE, [serve_parser]), (config.CALC, [calc_parser]),
                                (config.PLUGINS, [plugins_parser]),
                                (config.KEYS, [create_parser, list_parser, *status_parsers])):
        for subparser in subparsers:
            config.add_flags(subparser, command)
            subparser.set_defaults(settings_of=command)
    return parser


def serve(settings: Any, args: argparse.Namespace) -> int:
    # Imported here: no other command needs Tornado's sockets, forking or the open-file limit.
    from solarserv import serving

    return serving.serve(settings, args)


def calc(settings: Any, args: argparse.Namespace) -> int:
    from solarserv.pipeline import Pipeline

    # Every flag is text, as the GET alias's query parameters are: read the same way, numbers exact, and refused in
    # the flags' names.
    fields = {name: getattr(args, name) for name in FIELD_NAMES}
    try:
        # An argument that was not UTF-8 arrives as surrogates (os.fsdecode): its bytes back, refused as the API does.
        query = parse_query_fields({name: [value.encode("utf-8", "surrogateescape") for value in values]
                                    for name, values in fields.items() if values is not None}, QUESTION_FLAGS)
        with _plugins_printing_to_stderr():
            result = asyncio.run(Pipeline.build(settings).run(query))
    except ApiError as error:
        if args.json:
            _shown(_as_json(error.envelope()))
        else:
            print(f"error {error.code}: {error.message}", file=sys.stderr)
            # An ambiguous name's message says to resend one candidate's coordinates: here they are, as flags.
            for candidate in error.extra.get("candidates", []):
                recommended = "  (recommended)" if candidate["recommended"] else ""
                print(f"  --lat {candidate['latitude']} --lon {candidate['longitude']}  {candidate['display_name']}"
                      f"{recommended}", file=sys.stderr)
        return UNANSWERED_STATUS if error.status >= 500 else REFUSED_STATUS
    _shown(_as_json(result) if args.json else _readable(result))
    return 0


def _readable(result: dict[str, Any]) -> str:
    calculation, position = result["calculation"], result["solar_position"]
    lines = [
        f"True solar time   {result['true_solar_time']}  ({result['true_solar_date']})",
        f"Local time        {result['local_time']}  {result['date']}  UTC{result['utc_offset']}  "
        f"{result['timezone']}{'  (DST)' if result['dst'] else ''}",
        f"UTC               {result['utc_time']}  {result['utc_date']}",
        f"Place             {result['location']['display_name']}  "
        f"({result['location']['latitude']}, {result['location']['longitude']})",
        f"Equation of time  {calculation['equation_of_time_minutes']:+.3f} min",
        f"Longitude corr.   {calculation['longitude_correction_minutes']:+.3f} min",
        f"Total difference  {calculation['total_difference_minutes']:+.3f} min",
        f"Sun               azimuth {position['azimuth']:.2f}°, elevation {position['elevation']:.2f}°",
        f"Confidence        {result['confidence']}",
        "",
        result["summary"],
        "",
        result["solar_context"],
        "",
        result["historical_context"],
        "",
        result["validation"],
    ]
    return "\n".join(lines)


def list_plugins(settings: Any, args: argparse.Namespace) -> int:
    with _plugins_printing_to_stderr():
        plugins = Narrator.build(settings).plugins.listing()
    if args.json:
        _shown(_as_json(plugins))
        return 0
    for plugin in plugins:
        version = f" {plugin['version']}" if plugin["version"] else ""
        hooks = (f"not loaded, {plugin['not_loaded']} (see the log)" if "not_loaded" in plugin
                 else ", ".join(plugin["hooks"]))
        _shown(f"{plugin['name']}{version} ({plugin['source']}): {hooks}")
    return 0


@contextlib.contextmanager
def _key_store(settings: Any, may_create: bool = False) -> Iterator[KeyStore]:
    """The key store in the data dir: the same one every server on that data dir reads. Unless ``may_create``,
    a data dir without one is refused: a mistyped --data-dir would otherwise list an empty, new store, or
    deactivate nothing."""
    path = KeyStore.path_in(settings.data_dir)
    if not may_create and not path.exists():
        raise KeyStoreError(f"There is no key store at {path}: no key was created and no server has run with "
                            "this data dir. Give the servers' --data-dir (or SOLARSERV_DATA_DIR).")
    store = KeyStore.open(settings.data_dir)
    try:
        yield store
    finally:
        store.close()


def create_key(settings: Any, args: argparse.Namespace) -> int:
    new_store = not KeyStore.path_in(settings.data_dir).exists()
    # Checked before the store is opened, which makes one in a new data dir: a key refused there would leave
    # an empty store behind, and a mistyped --data-dir would then pass for one with no keys yet.
    fields = checked_key_fields(args.label, args.tier, args.rpm)
    with _key_store(settings, may_create=True) as store:
        issued = store.create(*fields, by=BY_THE_CLI)
        if new_store:
            print(f"note: created a new key store at {store.path}; servers read it when started with this data "
                  "dir.", file=sys.stderr)
        try:
            _shown(_new_key_shown(issued, args.json))
        except (StdoutUnwritable, BrokenPipeError) as exc:
            # The key is nowhere but in this process now: deactivated, so that no one can use it unseen (a copy of
            # the part that reached a file or pipe), and the operator is told to create another.
            store.set_status(issued.record.id, INACTIVE, by=BY_THE_CLI)
            reason = "cannot write to stdout: its reader went away" if isinstance(exc, BrokenPipeError) else exc
            raise StdoutUnwritable(f"{reason}, so {issued.record.described()} was created but not shown; it is now "
                                   "inactive, as no one has it: create another.") from exc
    return 0


def _new_key_shown(issued: IssuedKey, as_json: bool) -> str:
    record = issued.record
    if as_json:
        return _as_json({"key": issued.key, **record.public_fields()}, indent=None)
    return (f"Key {record.id} for “{record.label}”: {record.tier}, {record.rpm} requests per minute, "
            f"{record.status}.\n\n    {issued.key}\n\n"
            "This is the only time the full key is shown (only its hash is stored). "
            "Clients send it in the X-API-Key header.")


def list_keys(settings: Any, args: argparse.Namespace) -> int:
    with _key_store(settings) as store:
        keys = store.all()
    if args.json:
        _shown(_as_json([key.public_fields() for key in keys]))
        return 0
    if not keys:  # naming the store read, which may not be the servers' (a --data-dir mistyped)
        _shown(f"No keys in {store.path} yet: `solarserv keys create` issues one.")
        return 0
    rows = [("ID", "Label", "Key preview", "Tier", "RPM", "Created", "Status")]
    rows += [(str(key.id), key.label, key.preview, key.tier, str(key.rpm), key.created, key.status)
             for key in keys]
    # Padded by the columns a terminal gives each cell: a label in Chinese takes two a character, not one.
    widths = [max(terminal_width(row[column]) for row in rows) for column in range(len(rows[0]))]
    _shown("\n".join("  ".join(cell + " " * (width - terminal_width(cell))
                                for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows))
    return 0


def change_key_status(settings: Any, args: argparse.Namespace) -> int:
    with _key_store(settings) as store:
        change = store.set_status(store.find(args.reference).id, args.status, by=BY_THE_CLI)
    try:
        _shown(change.told())
    except StdoutUnwritable as exc:
        # The change is made: said where it can be, lest the failing status pass for the change refused.
        raise StdoutUnwritable(f"{exc}, so this was not shown: {change.told()}") from exc
    return 0
