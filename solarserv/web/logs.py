"""The log lines about requests: the access log's (``log_request``, the application's log_function), how every
line names a request and its client (``request_summary``, ``client_shown``), and Tornado's own line about a request
it cannot read (``MalformedRequestLines``); with ``as_sent``, the request line as the client wrote it, which the
answers quoting it use too."""

from __future__ import annotations

import logging
from urllib.parse import unquote

import tornado.web

from solarserv.keys import KEY_PREFIX
from solarserv.text import TARGET_SHOWN, escaped, shortened
from solarserv.web import access

access_log = logging.getLogger("tornado.access")

# Where the operator console lives (solarserv.web.console); its login link carries the admin token, so no line
# names a request there with its query (request_summary).
CONSOLE_PATH = "/console"

# Query parameters whose value may be a secret (request_summary), as access.parameter_names writes them.
_SECRET_PARAMETERS = access.KEY_PARAMETERS | {"token"}


def log_request(handler: tornado.web.RequestHandler) -> None:
    """The access-log line of every answer (the application's log_function), naming the request as every line
    does (request_summary). A 4xx is INFO like a 2xx: the client's doing, answered as meant, nothing for the
    operator to mend; at WARNING (Tornado's level) one client sending bad requests, or sending on past its rate
    limit, wrote a warning line for each of them, megabytes a minute. A 5xx is ERROR."""
    status = handler.get_status()
    level = logging.INFO if status < 500 else logging.ERROR
    access_log.log(level, "%d %s %.2fms", status, request_summary(handler), 1000.0 * handler.request.request_time())


def request_summary(handler: tornado.web.RequestHandler) -> str:
    """The request as a log line names it, "GET /path?query (client address)", without the query string
    where it may hold a secret: on console pages (the login link), wherever a ``token`` parameter is given (a
    console URL mistyped), and wherever an API key is (``api_key=``, or a value with the keys' prefix: sent
    where the X-API-Key header was meant). What the client sent is shortened and escaped (bytes 0x80 to
    0x9F arrive as control characters), and so is the address. It is the client's as the rate limits count it:
    with TRUST_PROXY, the one the proxy reports, not the proxy's."""
    request = handler.request
    # The query decoded, as the key-in-the-URL check reads it: "%74st_…" is a key too.
    holds_secret = (request.path.lower().startswith(CONSOLE_PATH) or KEY_PREFIX in unquote(request.query)
                    or bool(access.parameter_names(request) & _SECRET_PARAMETERS))
    target = as_sent(request.path if holds_secret else request.uri)
    return f"{request.method} {escaped(shortened(target, longest=TARGET_SHOWN))} ({client_shown(handler)})"


def as_sent(text: str) -> str:
    """A part of the request line (the path, the URI) as the client wrote it. Tornado reads its bytes as Latin-1, so
    UTF-8 sent unencoded (curl sends "Zürich" as typed) would read "ZÃ¼rich"; bytes that are not UTF-8 are left as
    Tornado read them."""
    if text.isascii():
        return text
    try:
        return text.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return text


class MalformedRequestLines(logging.Filter):
    """Tornado's own line about a request it cannot read as HTTP (answered with a bare 400 before any handler)
    quotes what it could not read: an invalid header's whole value, which may be an API key or a session cookie, up
    to 64 KiB. That value is left out, and the rest shortened and escaped as every line about a request is."""

    MESSAGE = "Malformed HTTP message from %s: %s"  # tornado.http1connection's

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == self.MESSAGE and isinstance(record.args, tuple) and len(record.args) == 2:
            client, problem = record.args[0], str(record.args[1])
            if problem.startswith("Invalid header value"):
                problem = "Invalid header value (not shown)"
            record.args = (client, escaped(shortened(problem, longest=TARGET_SHOWN)))
        return True


logging.getLogger("tornado.general").addFilter(MalformedRequestLines())


def client_shown(handler: tornado.web.RequestHandler) -> str:
    """The client's address as every log line about a request shows it (request_summary): shortened and escaped."""
    client = access.client_ip(handler.request, handler.application.settings["services"].settings.trust_proxy)
    return escaped(shortened(client))
