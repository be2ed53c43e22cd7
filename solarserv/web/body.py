"""How every request's body is read: at most MAX_BODY_BYTES of it is kept, and a longer one is refused.

Left to itself, Tornado reads a body whole into memory, up to 100 MB, before any handler code runs, and answers a
longer one with a bare 400 and a dropped connection. Instead, the application puts a ``BodyReader`` between Tornado
and each request's handler (``app.Application.get_handler_delegate``). It keeps the body while it fits, and what it
could not take becomes a refusal that the handler raises in ``prepare`` (``BaseHandler.check_body``): so the answer
is the handler's own (the API's error envelope, the console's error page), after the checks that come first (the
API counts every request and answers 429 before anything else).

A refused body is read on to its end and dropped, so that the answer leaves a keep-alive connection open for the
next request. Two are refused at once, before their body is read, and that answer says ``Connection: close``, as
Tornado then closes the connection rather than read on: a body declared (Content-Length) over the limit, which would
be read for nothing, and a body sent in chunks that is still arriving after MAX_DRAINED_BYTES. Such a connection is
not closed outright (see drain_after_answer): with the body's rest in its socket, the kernel would reset it, and a
client still sending, as a proxy sends a body it has buffered, lost the answer.

Every handler is declared to stream its body (``BaseHandler``) only so that the reader decides when it starts:
Tornado starts a streaming handler when told that the headers are in, and waits for its ``prepare`` to return. The
reader tells it once the body is in (or at once, to refuse it), having set ``request.body`` and, for a handler that
reads forms (``BaseHandler.reads_form``: the console, not the API, which reads JSON), the form arguments as
Tornado does for a handler that does not stream.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Awaitable, Callable

import tornado.httputil
import tornado.ioloop

from solarserv.errors import ApiError, malformed
from solarserv.text import shortened

MAX_BODY_BYTES = 16 * 1024
MAX_DRAINED_BYTES = 1024 * 1024
# How long a connection closed with its body unread is read on, and dropped, after its answer (nginx's
# lingering_timeout).
LINGER_SECONDS = 5.0
# How many such connections a process reads on at once: each holds a descriptor of its own, which the connection
# limit does not count, so a flood of oversized bodies gets its answers closed outright past these.
MAX_LINGERING = 256
_lingering: set[socket.socket] = set()


class BodyReader(tornado.httputil.HTTPMessageDelegate):
    """Reads one request's body for its handler's delegate, then starts the handler (see the module)."""

    def __init__(self, handler: tornado.httputil.HTTPMessageDelegate,
                 request: tornado.httputil.HTTPServerRequest, *, reads_form: bool) -> None:
        self._handler = handler
        self._request = request
        self._reads_form = reads_form
        self._head: tuple[tornado.httputil.RequestStartLine, tornado.httputil.HTTPHeaders] | None = None
        self._body = bytearray()
        self._received = 0
        self._started = False
        # What the handler raises in prepare, if anything: the body could not be taken.
        self.refusal: ApiError | None = None
        # The handler answers before the body is read, and Tornado then closes the connection.
        self.left_unread = False
        request.body_reader = self  # how the handler finds both (BaseHandler)

    def headers_received(self, start_line: tornado.httputil.RequestStartLine,
                         headers: tornado.httputil.HTTPHeaders) -> Awaitable[None] | None:
        self._head = (start_line, headers)
        declared = headers.get("Content-Length", "")
        # ASCII digits only: "²" (the byte 0xB2, as Tornado reads headers) is a digit to isdigit() and none to int().
        # Any other value Tornado refuses when it reads the body.
        if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            self.refusal = _too_large()
            return self._start_unread()
        return None

    def data_received(self, chunk: bytes) -> Awaitable[None] | None:
        if self._started:  # refused unread, and the handler, which did not answer at once, gets no body
            return None
        self._received += len(chunk)
        if self._received <= MAX_BODY_BYTES:
            self._body += chunk
        elif self.refusal is None:
            self.refusal = _too_large()
            self._body.clear()
        if self._received > MAX_DRAINED_BYTES:
            return self._start_unread()
        return None

    def finish(self) -> None:
        if not self._started:
            self._request.body = bytes(self._body)
            self.refusal = self.refusal or _unsupported_encoding(self._request) or (
                self._read_form() if self._reads_form else None)
            self._start()
        self._handler.finish()  # the streaming handler's body is in: its method may run

    def on_connection_close(self) -> None:
        if self._started:
            self._handler.on_connection_close()

    def _start(self) -> Awaitable[None] | None:
        self._started = True
        start_line, headers = self._head
        return self._handler.headers_received(start_line, headers)  # waits for the handler's prepare

    def _start_unread(self) -> Awaitable[None] | None:
        self.left_unread = True
        return self._start()

    def _read_form(self) -> ApiError | None:
        """The form fields of a form body, as Tornado reads them for a handler that does not stream."""
        request = self._request
        if not request.body:
            return None
        try:
            # Without the headers: Tornado would refuse any Content-Encoding, "identity" or empty too, which
            # _unsupported_encoding has let through as the only ones meaning "as sent".
            tornado.httputil.parse_body_arguments(request.headers.get("Content-Type", ""), request.body,
                                                  request.body_arguments, request.files)
        except tornado.httputil.HTTPInputError as exc:
            return malformed(f"Invalid body: {exc}")
        for name, values in request.body_arguments.items():
            request.arguments.setdefault(name, []).extend(values)
        return None


def drain_after_answer(connection: socket.socket,
                       answer: Callable[[], asyncio.Future[None]]) -> asyncio.Future[None]:
    """``answer()``, then, once it is written, half-close ``connection`` and read on, dropping what comes, until the
    client closes or LINGER_SECONDS have passed (RFC 9112 §9.6): closed with unread data, its kernel sends a reset,
    which can overtake the answer. A duplicate of the socket keeps it open when Tornado closes its own; with
    MAX_LINGERING read on already, or no descriptor left for it, the answer is only written."""
    if len(_lingering) >= MAX_LINGERING:
        return answer()
    try:
        lingering = socket.socket(fileno=os.dup(connection.fileno()))
    except OSError:  # no descriptor left (EMFILE)
        return answer()
    _lingering.add(lingering)
    loop = tornado.ioloop.IOLoop.current()

    def close() -> None:
        loop.remove_timeout(deadline)
        _lingering.discard(lingering)
        if lingering.fileno() != -1:
            loop.remove_handler(lingering)
            lingering.close()

    def drain(fd: object, events: int) -> None:
        try:
            if lingering.recv(65536):
                return
        except BlockingIOError:
            return
        except OSError:
            pass
        close()

    def begin(_: asyncio.Future[None]) -> None:
        try:
            lingering.shutdown(socket.SHUT_WR)
        except OSError:  # the client has gone already
            close()
            return
        lingering.setblocking(False)
        loop.add_handler(lingering, drain, tornado.ioloop.IOLoop.READ)

    deadline = loop.call_later(LINGER_SECONDS, close)
    written = answer()
    written.add_done_callback(begin)
    return written


def _unsupported_encoding(request: tornado.httputil.HTTPServerRequest) -> ApiError | None:
    """A body is taken as sent: a compressed one (gzip, br, …) would otherwise read as bytes that are not JSON."""
    encoding = request.headers.get("Content-Encoding", "")
    if not request.body or encoding.strip().lower() in ("", "identity"):  # empty, it names no coding
        return None
    return ApiError("UNSUPPORTED_MEDIA_TYPE", 415, f"The request body has Content-Encoding: {shortened(encoding)}, "
                    "which this service does not decode; send it without one (uncompressed).")


def _too_large() -> ApiError:
    return ApiError("REQUEST_TOO_LARGE", 413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")
