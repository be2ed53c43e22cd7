"""`solarserv serve`: the checks before binding, the port bound, the open-file limit raised, the workers forked
(solarserv.workers supervises them) and each serving until stopped, with the lines saying where it listens."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import gc
import importlib
import ipaddress
import logging
import mmap
import os
import resource
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tornado.netutil

import solarserv
from solarserv import config, geo, workers
from solarserv.keys import KeyStore
from solarserv.narration import Narrator
from solarserv.stdout import discard_stdout
from solarserv.text import has_hidden_characters

if TYPE_CHECKING:  # for the annotations: serve imports the console, and the offline geocoder alone reads places
    from solarserv.geo.discs import PlaceDiscs
    from solarserv.web.console import ConsoleSecrets

log = logging.getLogger("solarserv")


def serve(settings: Any, args: argparse.Namespace) -> int:
    """Check what can be checked, bind the port, fork the workers when SOLARSERV_PROCESSES > 1, then build the
    application in each and serve until stopped.

    Everything holding a connection, an open file or loop state (Redis client, key store, timezone
    finder, gazetteer) is built after the fork, so no two processes share one; the code is loaded before
    it (_load_code), and the gazetteer's places for reverse geocoding read, so the workers share their memory.
    The console secrets are made before it too, so the one login link printed works on every worker.
    Each process prints the ready line once it accepts connections (N lines for N workers); the first
    also prints the console line, once a run: whichever of its starts gets to it first. A stop signal
    (workers.STOP_SIGNALS) stops the workers cleanly, then the parent.
    """
    from solarserv.web.console import ConsoleSecrets

    _check_before_binding(settings)
    narrator = _load_code(settings)
    console = ConsoleSecrets.load(settings)
    console_line = _PrintedOnce()
    _raise_open_file_limit()
    sockets = _bind(settings)
    worker = towns = None
    if settings.processes > 1:
        worker, towns, sockets = _fork_workers(settings, sockets)
    try:
        asyncio.run(_serve_until_stopped(settings, sockets, console, console_line, narrator, towns, worker))
    except KeyboardInterrupt:  # Ctrl-C before the event loop took over the signals
        pass
    # Stopping: a second signal (Ctrl-C reaches a worker directly and through the parent) must not make
    # the exit status say "killed".
    for signum in workers.STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    return 0


def _check_before_binding(settings: Any) -> None:
    """Refuse, before the port is bound, what would stop every worker: a data dir this user cannot write, a key
    store it cannot use, a Redis that refuses REDIS_URL; and, for a console on, an admin token too short or one the
    login form cannot be given (a space at an end, a control character)."""
    from solarserv.ratelimit import redis_refusal

    token = settings.admin_token
    if settings.console != "off" and token is not None:
        if len(token) < config.ADMIN_TOKEN_MIN_LENGTH:
            raise config.SettingsError(f"ADMIN_TOKEN=(hidden): must be at least {config.ADMIN_TOKEN_MIN_LENGTH} "
                                       "characters, or set CONSOLE=off")
        # Compared as it is, such a token refused every login with the token the operator meant to set.
        if token != token.strip() or has_hidden_characters(token):
            raise config.SettingsError("ADMIN_TOKEN=(hidden): begins or ends with a space or holds a control "
                                       "character (a carriage return from a file with Windows line ends?), which "
                                       "the login form cannot be given")
    _check_data_dir(Path(settings.data_dir))
    _check_key_store(settings)
    # A Redis that refuses REDIS_URL would not mend by waiting, while every process counted on its own: a
    # configuration error, refused like a malformed setting. A Redis that is down may come up after us.
    if settings.redis_url and (refusal := redis_refusal(settings.redis_url)):
        raise config.SettingsError(refusal)


def _load_code(settings: Any) -> Narrator:
    """Everything a worker runs, loaded before any fork: the service's modules, the geocoder's, and the narrator
    (the plugins imported, built-in, installed and PLUGINS_DIR's, and the templates compiled). The workers share
    it, and one that is started again runs what its siblings run: after the checkout changed under the
    server, a worker that imported anything itself would run new code beside old, or fail at every restart. A
    plugin conflict or a template that does not compile stops `serve` here, before the port is bound."""
    for module in ("solarserv.web.app", "solarserv.web.server", geo.geocoder_module(settings.geocoder)):
        importlib.import_module(module)
    return Narrator.build(settings)


def _raise_open_file_limit() -> None:
    """Raise this process's open-file limit to the most it may have (the soft limit, often 1024, to the hard one),
    as nginx's worker_rlimit_nofile does; the workers inherit it. Every connection takes a descriptor, and the
    server holds as many connections as its descriptors allow (solarserv.web.server)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:  # macOS refuses an unlimited hard limit above its own maximum
        log.warning("Could not raise the open-file limit from %d to %d (%s): it stays %d", soft, hard, exc, soft)
        return
    log.info("Raised the open-file limit from %d to its hard limit, %d", soft, hard)


def _bind(settings: Any) -> list[socket.socket]:
    """The listening sockets on HOST and PORT. For workers each listening on a socket of their own (SO_REUSEPORT),
    the port is first bound without it: bound with it alone, a port that another server's workers listen on was
    not refused as in use but shared, that server answering its share of the connections."""
    if not _spreads_connections(settings):
        return _listen(settings.host, settings.port, reuse_port=False)
    probes = _listen(settings.host, settings.port, reuse_port=False)
    port = probes[0].getsockname()[1]  # the one chosen for PORT=0
    for probe in probes:
        probe.close()
    return _listen(settings.host, port, reuse_port=True)


def _listen(host: str, port: int, *, reuse_port: bool) -> list[socket.socket]:
    """Sockets listening on ``host`` and ``port``; a port that cannot be had is a SettingsError."""
    try:
        return tornado.netutil.bind_sockets(port, host, reuse_port=reuse_port)
    except OSError as exc:  # in use, not this machine's address, or a name that does not resolve
        raise config.SettingsError(f"cannot listen on HOST={host!r} PORT={port}: {exc.strerror or exc}") from None


def _spreads_connections(settings: Any) -> bool:
    """Whether each worker listens on a socket of its own (see _worker_sockets)."""
    return settings.processes > 1 and sys.platform == "linux"


def _fork_workers(settings: Any,
                  sockets: list[socket.socket]) -> tuple[workers.Worker, PlaceDiscs | None, list[socket.socket]]:
    """Fork SOLARSERV_PROCESSES workers; returns only in each of them (the parent supervises them: see
    solarserv.workers): which worker it is, the offline gazetteer's places read once before the fork, and its
    listening sockets."""
    if not settings.redis_url:
        log.warning("%d processes without REDIS_URL: each counts requests on its own, so a client "
                    "gets up to %d times its rate limit", settings.processes, settings.processes)
    towns = None
    if settings.geocoder == "offline":
        from solarserv.geo.offline import read_towns  # the offline geocoder's alone: not imported otherwise

        towns = read_towns(Path(settings.data_dir))
    # The collector writes to every object it examines, so each worker's first collections would copy
    # the pages of everything imported: frozen, they stay shared (20 MB less per process, measured).
    gc.freeze()
    parent = os.getpid()
    worker = workers.fork_workers(settings.processes, sockets)  # returns only in the workers
    _stop_with_parent(parent)
    if _spreads_connections(settings) and worker.number > 0:
        sockets = _worker_sockets(sockets, settings.host)
    return worker, towns, sockets


async def _serve_until_stopped(settings: Any, sockets: list[socket.socket], console: ConsoleSecrets,
                               console_line: _PrintedOnce, narrator: Narrator, towns: PlaceDiscs | None,
                               worker: workers.Worker | None) -> None:
    """Build the application, serve it on ``sockets`` and say so, until a stop signal; then close the
    connections, the rate limiter's Redis client and the key store. ``worker``: which worker this is, or None
    in a server of one process. The one process, or worker 0, also prints the console line unless a start of
    worker 0 before it did (``console_line``): printed again, it would copy a generated admin token, the console's
    whole credential, once more to wherever stdout goes, with nothing new in it; left to the first start alone,
    it was never printed when that start died before printing it."""
    from solarserv.web.app import Services, make_app
    from solarserv.web.server import STOP_GRACE_SECONDS, make_server

    stopping = asyncio.Event()
    server = None

    def stop(signum: int) -> None:
        if worker is not None:  # its parent says it for all, and stops it at once on a second SIGINT
            # Taken from the loop, whose closing would give SIGINT back to Python's KeyboardInterrupt: a second
            # Ctrl-C reaching a worker that had finished its requests then wrote a traceback as it exited.
            for each in workers.STOP_SIGNALS:
                asyncio.get_running_loop().remove_signal_handler(each)
                signal.signal(each, signal.SIG_IGN)
            stopping.set()
            return
        if stopping.is_set() and signum == signal.SIGINT:  # Ctrl-C pressed again: the operator will not wait
            unanswered = server.requests_in_flight if server else 0
            log.warning("Stopping at once on a second SIGINT: %d request%s in flight left unanswered (exit status "
                        "%d)", unanswered, "" if unanswered == 1 else "s", workers.STOPPED_AT_ONCE_STATUS)
            workers.exit_at_once()
        if not stopping.is_set():
            log.info("Stopping on %s: answering the requests in flight (%g s at most), then exiting",
                     signal.Signals(signum).name, STOP_GRACE_SECONDS)
        stopping.set()

    for signum in workers.STOP_SIGNALS:
        asyncio.get_running_loop().add_signal_handler(signum, stop, signum)
    services = Services.build(settings, console, towns, narrator)
    await services.limiter.check_redis()  # logs whether Redis answers before the ready line
    server = make_server(make_app(settings, services))
    server.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    _announce(f"solarserv {solarserv.__version__} ready at http://{_url_host(settings.host)}:{port}/")
    if settings.console != "off" and (worker is None or worker.number == 0) and not console_line.printed:
        _announce(_console_line(console, settings.host, port, settings.console))
        console_line.printed = True
    await stopping.wait()
    await server.stop_after_requests_in_flight()
    await services.limiter.close()
    services.keys.close()


def _check_data_dir(directory: Path) -> None:
    """Create the data dir if missing; refuse one this process cannot write before binding anything (the
    key store, the console secret and the gazetteer index all live there)."""
    if directory.exists() and not directory.is_dir():  # which mkdir would call "File exists"
        raise config.SettingsError(f"SOLARSERV_DATA_DIR={str(directory)!r}: is a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise config.SettingsError(f"SOLARSERV_DATA_DIR={str(directory)!r}: cannot be created "
                                   f"({exc.strerror or exc})") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise config.SettingsError(f"SOLARSERV_DATA_DIR={str(directory)!r}: this user cannot write to it")


def _check_key_store(settings: Any) -> None:
    """Open the key store (making it in a new data dir) and write to it, before binding anything: a store this
    user cannot read or write would otherwise fail in every worker, at each start, or at the first console
    login."""
    with contextlib.closing(KeyStore.open(settings.data_dir)) as store:
        store.drop_expired_sessions()


def _announce(line: str) -> None:
    """Print a line in one write: workers share stdout, and print() writes the text and the newline
    separately when Python runs unbuffered (PYTHONUNBUFFERED), so two workers' lines could interleave.
    Without a reader (`serve >&-`, `serve | head -1` once head has gone, a terminal closed after `serve &`) the
    line goes nowhere and the server goes on: the lines are for whoever watches, and a failed write stopped the
    server, or made every worker fail at each start until the parent gave up."""
    if sys.stdout is None:  # started with stdout closed
        return
    try:
        sys.stdout.write(f"{line}\n")
        sys.stdout.flush()
    except OSError as exc:  # a broken pipe; EIO from a terminal hung up; a full disk
        discard_stdout()
        log.warning("cannot write to stdout any more (%s): the lines solarserv prints there (where it listens, the "
                    "console link) are dropped", exc.strerror or exc)


def _worker_sockets(inherited: list[socket.socket], host: str) -> list[socket.socket]:
    """Listening sockets of this worker's own, on the port the parent bound.

    On one shared listening socket, the worker that wakes first accepts every connection waiting, so
    keep-alive clients that connect together (a proxy's pool, a benchmark) can all land on one worker
    while the others idle. Sockets bound to one port with SO_REUSEPORT each have their own queue, and
    Linux spreads new connections over them. Worker 0 keeps the inherited socket: the parent holds it
    open too, so it stays in the group and needs a worker accepting from it. A worker started again after
    the address went away (an interface's address removed) fails in one line, as the server would at start.
    """
    port = inherited[0].getsockname()[1]
    for sock in inherited:
        sock.close()
    return _listen(host, port, reuse_port=True)


def _stop_with_parent(parent: int) -> None:
    """In a worker, on Linux: be sent SIGTERM when the parent dies, however it dies, and stop as when the
    parent passes one on. After `kill -9` of the parent, workers would otherwise keep serving the port
    with no process left to stop or restart them."""
    if sys.platform != "linux":
        return
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before the request took hold
        os.kill(os.getpid(), signal.SIGTERM)


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


class _PrintedOnce:
    """Whether a line was printed in this run, by any start of any worker: one byte of memory mapped shared, which
    the workers forked after it is made share with the parent instead of copying, those started again among them.
    The parent learns nothing, so nothing waits for a worker or reads its exit status; and it ends with the run,
    as no file in the data dir would. One worker at a time prints the line, so no lock."""

    def __init__(self) -> None:
        self._byte = mmap.mmap(-1, 1)  # no file: anonymous, and shared (MAP_SHARED) by default

    @property
    def printed(self) -> bool:
        return self._byte[0] == 1

    @printed.setter
    def printed(self, printed: bool) -> None:
        self._byte[0] = int(printed)


def _console_line(console: ConsoleSecrets, host: str, port: int, access: str) -> str:
    """Where to open the console. A wildcard bind address (0.0.0.0, ::) is no address a browser can open:
    the link then names this machine's loopback, and says whether another machine may use another name or
    address of it (``access``: the CONSOLE setting, local or any)."""
    browsable = _browsable_host(host)
    base_url = f"http://{_url_host(browsable)}:{port}"
    if access == "local":
        elsewhere = "" if _is_loopback(host) else " (CONSOLE=local: from this machine only)"
    elif browsable != host:
        elsewhere = (f" (listening on every interface: from another machine, put this machine's name or address "
                     f"in place of {_url_host(browsable)})")
    else:
        elsewhere = ""
    if console.token_generated:
        return (f"Console login link (admin token generated for this run): {console.login_link(base_url)}"
                f"{elsewhere}")
    return f"Console: {base_url}/console (log in with ADMIN_TOKEN){elsewhere}"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # another host name, or "" (every interface)
        return False


def _browsable_host(host: str) -> str:
    """``host``, or the loopback address of its family when it is a wildcard bind address."""
    if not host:  # Tornado binds every interface, IPv4 among them
        return "127.0.0.1"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host  # a host name
    if address.is_unspecified:
        return "::1" if address.version == 6 else "127.0.0.1"
    return host


def _url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host
