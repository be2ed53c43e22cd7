"""The HTTP server for the application: Tornado's, with limits on how long a request may take to arrive and on how
many connections it holds.

Time limits. Tornado's defaults give a client an hour to send a request's headers (or to leave a keep-alive
connection idle) and no limit for its body, so idle or slow connections were held for good. Both limits here are
nginx's defaults, which clients of public web services meet everywhere: ``client_header_timeout`` and
``client_body_timeout`` (60 s; its ``keepalive_timeout``, 75 s, is Tornado's header timeout too, which runs from
the end of the previous answer). nginx times a body between two reads; Tornado times the whole body, at most
16 KiB kept here (solarserv.web.body), which takes 60 s only below 273 bytes a second.

Connections. Every connection takes a file descriptor, and Tornado's accept loop stops at nothing: at the
process's open-file limit each ``accept()`` fails, the listening socket stays readable, and the event loop spins,
logging a traceback each turn. This server stops accepting while it holds as many connections as its descriptors
allow (half of those free when it starts: while a request runs its connection may need a second one, a Redis
connection, a geocoder's socket or a static file), and resumes as they close. Connections it holds keep being
served; new ones wait in the kernel's listen queue. Should descriptors run out all the same, it pauses accepting
for half a second (as nginx does) or until a connection closes, and logs it at most once a minute.

Stopping. Tornado's close_all_connections closes every connection at once, cutting the answers of the requests
in flight: their clients got the connection closed, no answer. This server stops accepting, closes its idle
connections, lets the requests it has begun reading finish (their answers written, saying Connection: close, then
their connections closed), for STOP_GRACE_SECONDS at most, then closes the connections left.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import math
import os
import resource
import socket
import time
from collections.abc import Awaitable, Iterable
from typing import Any

import tornado.httpserver
import tornado.httputil
import tornado.ioloop
import tornado.web

from solarserv.web.body import MAX_DRAINED_BYTES

log = logging.getLogger("solarserv.web")

IDLE_CONNECTION_TIMEOUT_SECONDS = 60.0
BODY_TIMEOUT_SECONDS = 60.0
# How long accepting pauses when the process has no descriptor left, unless a connection closes first.
OUT_OF_DESCRIPTORS_PAUSE_SECONDS = 0.5
# At most one "not accepting" line in this time, however often accepting pauses.
PAUSE_LOG_INTERVAL_SECONDS = 60.0
# Connections accepted in one turn of the event loop, as Tornado's accept loop does (its listen backlog): a
# stream of new connections must not starve the connections being served.
ACCEPTS_PER_TURN = 128
# How long a stopping server waits for the requests in flight: longer than any answer takes, shorter than a
# service manager's wait before it kills the process (systemd's TimeoutStopSec, 90 s).
STOP_GRACE_SECONDS = 30.0
# accept() failing for want of a descriptor (this process's, the system's) or of kernel memory.
_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def make_server(app: tornado.web.Application) -> BoundedHTTPServer:
    """The HTTP server for ``app``, with Tornado's own body limits behind the BodyReader's (its defaults would read
    100 MB of a request into memory). Twice MAX_DRAINED_BYTES: Tornado refuses a chunk that would take a body
    past max_body_size before the reader sees any of it, and the chunk that takes one past MAX_DRAINED_BYTES
    must reach the reader, which answers it."""
    return BoundedHTTPServer(app, xheaders=False, max_body_size=2 * MAX_DRAINED_BYTES,
                             max_buffer_size=2 * MAX_DRAINED_BYTES,
                             idle_connection_timeout=IDLE_CONNECTION_TIMEOUT_SECONDS, body_timeout=BODY_TIMEOUT_SECONDS,
                             max_connections=connections_allowed())


def connections_allowed() -> int:
    """Half of the descriptors this process has free under its open-file limit (see the module), at least one."""
    soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return max(1, (soft_limit - len(os.listdir("/dev/fd"))) // 2)


class BoundedHTTPServer(tornado.httpserver.HTTPServer):
    """Tornado's HTTP server with its own accept loop, which pauses instead of taking more connections than
    ``max_connections`` or failing for want of a descriptor (see the module)."""

    def initialize(self, *args: Any, max_connections: int, **kwargs: Any) -> None:
        super().initialize(*args, **kwargs)
        self.max_connections = max_connections
        self._accepting = True
        self._resume_timer: object | None = None
        self._last_pause_logged = -math.inf
        self._in_flight = 0
        self._none_in_flight = asyncio.Event()
        self._none_in_flight.set()
        self.stopping = False
        # Each connection's latest request, in flight or not yet begun (its connection idle).
        self._latest_requests: dict[object, _RequestInFlight] = {}

    def add_sockets(self, sockets: Iterable[socket.socket]) -> None:
        """As TCPServer.add_sockets, with this server's accept loop in place of netutil.add_accept_handler's."""
        loop = tornado.ioloop.IOLoop.current()
        for listening in sockets:
            self._sockets[listening.fileno()] = listening
            # What TCPServer.stop calls to stop accepting from the socket.
            self._handlers[listening.fileno()] = functools.partial(loop.remove_handler, listening)
            loop.add_handler(listening, self._accept, tornado.ioloop.IOLoop.READ)

    def _accept(self, listening: socket.socket, events: int) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            if len(self._connections) >= self.max_connections:
                self._pause(f"it holds {len(self._connections)} connections, as many as its open-file limit "
                            f"({resource.getrlimit(resource.RLIMIT_NOFILE)[0]}) allows")
                return
            try:
                connection, address = listening.accept()
            except BlockingIOError:  # none waiting
                return
            except ConnectionAbortedError:  # closed by the client while it waited
                continue
            except OSError as exc:
                if exc.errno not in _OUT_OF_DESCRIPTORS:
                    raise
                self._pause(f"it has no file descriptor left ({exc.strerror})", OUT_OF_DESCRIPTORS_PAUSE_SECONDS)
                return
            self._handle_connection(connection, address)

    def _pause(self, why: str, seconds: float | None = None) -> None:
        """Stop accepting until a connection closes, or ``seconds`` have passed."""
        loop = tornado.ioloop.IOLoop.current()
        self._accepting = False
        for listening in self._sockets.values():
            loop.update_handler(listening, 0)
        if seconds is not None and self._resume_timer is None:
            self._resume_timer = loop.call_later(seconds, self._resume)
        now = time.monotonic()
        if now - self._last_pause_logged >= PAUSE_LOG_INTERVAL_SECONDS:
            self._last_pause_logged = now
            log.warning("Not accepting new connections while %s: they wait in the listen queue (an idle connection "
                        "is closed after %g s).", why, IDLE_CONNECTION_TIMEOUT_SECONDS)

    def _resume(self) -> None:
        if self._resume_timer is not None:
            tornado.ioloop.IOLoop.current().remove_timeout(self._resume_timer)
            self._resume_timer = None
        if self._accepting or self._stopped:
            return
        self._accepting = True
        for listening in self._sockets.values():
            tornado.ioloop.IOLoop.current().update_handler(listening, tornado.ioloop.IOLoop.READ)

    def on_close(self, server_conn: object) -> None:
        super().on_close(server_conn)
        self._latest_requests.pop(server_conn, None)
        self._resume()

    def start_request(self, server_conn: object,
                      request_conn: tornado.httputil.HTTPConnection) -> tornado.httputil.HTTPMessageDelegate:
        request = self._latest_requests[server_conn] = _RequestInFlight(self, server_conn)
        return _CountingDelegate(super().start_request(server_conn, _CountingConnection(request_conn, request)),
                                 request)

    @property
    def requests_in_flight(self) -> int:
        return self._in_flight

    async def stop_after_requests_in_flight(self) -> None:
        """Stop accepting and close the idle connections, wait for the requests in flight to be answered
        (STOP_GRACE_SECONDS at most), then close every connection."""
        self.stop()
        self.stopping = True
        # Left open, they would take new requests, and a client sending one after another would hold the server
        # until its grace ran out.
        for request in list(self._latest_requests.values()):
            if not request.counted:
                request.close_connection()
        try:
            await asyncio.wait_for(self._none_in_flight.wait(), STOP_GRACE_SECONDS)
        except TimeoutError:
            one = self._in_flight == 1
            log.warning("Stopping with %d request%s still unanswered after %g s: %s closed", self._in_flight,
                        "" if one else "s", STOP_GRACE_SECONDS, "its connection is" if one else "their connections are")
        await self.close_all_connections()

    def _count_in_flight(self, change: int) -> None:
        self._in_flight += change
        if self._in_flight:
            self._none_in_flight.clear()
        else:
            self._none_in_flight.set()


class _RequestInFlight:
    """One request, counted in flight by its server from its headers' arrival until its answer is written or its
    client goes away."""

    def __init__(self, server: BoundedHTTPServer, server_conn: Any) -> None:
        self.server = server
        self.server_conn = server_conn
        self.counted = False

    def begin(self) -> None:
        if not self.counted:
            self.counted = True
            self.server._count_in_flight(+1)

    def end(self) -> None:
        if self.counted:
            self.counted = False
            self.server._count_in_flight(-1)
            if self.server.stopping:  # its answer said Connection: close
                self.close_connection()

    def close_connection(self) -> None:
        self.server_conn.stream.close()


class _CountingDelegate(tornado.httputil.HTTPMessageDelegate):
    """The application's reader of one request, which begins the request's count when its headers arrive."""

    def __init__(self, delegate: tornado.httputil.HTTPMessageDelegate, request: _RequestInFlight) -> None:
        self.delegate = delegate
        self.request = request

    def headers_received(self, start_line: Any, headers: tornado.httputil.HTTPHeaders) -> Awaitable[None] | None:
        self.request.begin()
        return self.delegate.headers_received(start_line, headers)

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        return self.delegate.data_received(chunk)

    def finish(self) -> None:
        self.delegate.finish()

    def on_connection_close(self) -> None:
        self.delegate.on_connection_close()
        self.request.end()


class _CountingConnection:
    """One request's connection as the application writes the answer to it, which ends the request's count once
    the answer is written: what was written last has left."""

    def __init__(self, connection: tornado.httputil.HTTPConnection, request: _RequestInFlight) -> None:
        self.connection = connection
        self.request = request
        self.last_write: asyncio.Future[None] | None = None

    def __getattr__(self, name: str) -> Any:  # the rest of the connection, as the application uses it
        return getattr(self.connection, name)

    def write_headers(self, start_line: Any, headers: tornado.httputil.HTTPHeaders,
                      chunk: bytes | None = None) -> asyncio.Future[None]:
        if self.request.server.stopping:
            headers["Connection"] = "close"
        self.last_write = self.connection.write_headers(start_line, headers, chunk)
        return self.last_write

    def write(self, chunk: bytes) -> asyncio.Future[None]:
        self.last_write = self.connection.write(chunk)
        return self.last_write

    def finish(self) -> None:
        self.connection.finish()
        if self.last_write is None or self.last_write.done():
            self.request.end()
        else:
            self.last_write.add_done_callback(lambda _: self.request.end())
