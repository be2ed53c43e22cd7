"""The real app served from a background thread with its own event loop, for synchronous clients
(hypothesis tests, browsers, urllib) that cannot share the test's loop."""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import tornado.netutil

from solarserv.web.app import Services, make_app
from solarserv.web.server import make_server


def start_solarserv(arguments: Sequence[str], log_path: Path, open_file_limit: tuple[int, int] | None = None,
                    under: Sequence[str] = (), stdout: int = subprocess.PIPE) -> subprocess.Popen:
    """`python -m solarserv serve ARGUMENTS` as a real subprocess on its embedded defaults (the environment the
    tests run in has none of this shell's solarserv settings, and no installed plugin allowed: conftest's
    hermetic_environment): its stdout piped as text for the lines it prints, its log to a file.
    ``open_file_limit``: its RLIMIT_NOFILE (soft, hard) instead of this process's. ``under``: a command that runs
    it, as `nohup` does (one that execs it, so the process returned is the server's). ``stdout``: a descriptor in
    place of the pipe."""
    def limit_open_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, open_file_limit)

    with log_path.open("w") as log:  # the server keeps its own copy of the file
        return subprocess.Popen([*under, sys.executable, "-m", "solarserv", "serve", *arguments],
                                stdout=stdout, stderr=log, text=True,
                                preexec_fn=limit_open_files if open_file_limit else None)


def answers(port: int) -> bool:
    """Whether a server on the loopback ``port`` answers /healthz."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=30) as response:
            return response.status == 200
    except OSError:  # refused, or reset by a server that stopped
        return False


def get_json(base_url: str, path: str) -> tuple[int, Any]:
    """The status and JSON body of GET ``path``, an error status included."""
    try:
        with urllib.request.urlopen(base_url + path, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)


def refuses_connections(port: int) -> bool:
    """Whether nothing accepts a connection on the loopback ``port``: a stopped or stopping server."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=30).close()
    except (ConnectionRefusedError, ConnectionResetError):  # reset: queued as the listening socket closed
        return True
    return False


def stop_solarserv(process: subprocess.Popen) -> None:
    """Kill a server started by ``start_solarserv`` that is still running, and its workers with it."""
    if process.poll() is None:
        for worker in psutil.Process(process.pid).children():
            worker.kill()
        process.kill()
    process.wait(timeout=30)
    if process.stdout:
        process.stdout.close()


@contextlib.contextmanager
def serving_in_thread(settings: Any, build_services: Callable[[], Services], host: str = "127.0.0.1") -> Iterator[str]:
    """Yields the base URL. The services are built inside the serving thread: the key store's SQLite
    connection belongs to the thread that opens it, and async clients to the loop that creates them."""
    started = threading.Event()
    state: dict[str, Any] = {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        services = build_services()

        async def start() -> None:
            sockets = tornado.netutil.bind_sockets(0, host)
            server = make_server(make_app(settings, services))
            server.add_sockets(sockets)
            state.update(loop=loop, server=server, port=sockets[0].getsockname()[1])

        loop.run_until_complete(start())
        started.set()
        loop.run_forever()
        state["server"].stop()
        services.keys.close()
        loop.close()

    thread = threading.Thread(target=serve, name="test-server", daemon=True)
    thread.start()
    assert started.wait(60), "the test server did not start"
    try:
        yield f"http://{f'[{host}]' if ':' in host else host}:{state['port']}"
    finally:
        state["loop"].call_soon_threadsafe(state["loop"].stop)
        thread.join(10)
