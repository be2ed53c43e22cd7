"""Handler base classes: security headers, CORS for the API, and the one place an error becomes a response (the
API's JSON envelope, the public page's HTML). The lines they log about requests are solarserv.web.logs's.

BaseHandler → ApiHandler (JSON, error envelope, identity and rate limits in ``prepare``): the API's handlers
              (web/api.py) and NotFoundHandler below, the application's last route
            → console.ConsoleHandler (HTML pages with XSRF-checked forms and a session): the console's handlers
            → page.CalculatorPageHandler: the public calculator page at /
            → app.StaticFiles: /static/, Tornado's file serving
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from typing import Any

import tornado.web

from solarserv.errors import ApiError, malformed
from solarserv.keys import KeyStoreBusy, KeyStoreUnusable, without_keys
from solarserv.text import TARGET_SHOWN, escaped, in_words, shortened
from solarserv.web import access
from solarserv.web.body import drain_after_answer
from solarserv.web.logs import as_sent, request_summary

log = logging.getLogger("solarserv.web")


@tornado.web.stream_request_body  # only so that solarserv.web.body's BodyReader decides when the handler starts
class BaseHandler(tornado.web.RequestHandler):
    # Whether a body whose Content-Type names a form is read as its fields (the console's forms).
    reads_form = True
    # A handler's own headers on every answer, after the common ones: its pages' content security policy,
    # framing and caching (console.SECURITY_HEADERS, page.SECURITY_HEADERS).
    security_headers: Mapping[str, str] = {}

    def set_default_headers(self) -> None:
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.clear_header("Server")
        for name, value in self.security_headers.items():
            self.set_header(name, value)

    @property
    def services(self) -> Any:
        """The application's services (settings, pipeline, …): see solarserv.web.app.Services."""
        return self.application.settings["services"]

    def prepare(self) -> None:
        self.check_body()

    def check_body(self) -> None:
        """Refuse the request if its body could not be taken (solarserv.web.body: over 16 KiB, compressed, a form
        Tornado cannot read). Called in ``prepare``, after any check that must come first."""
        refusal = self.request.body_reader.refusal
        if refusal is not None:
            raise refusal

    def finish(self, chunk: Any = None) -> Any:
        connection = self.request.connection.stream.socket  # None once the client has gone
        if not self.request.body_reader.left_unread or connection is None:
            return super().finish(chunk)
        # Tornado closes the connection after this answer rather than read the body: say so (RFC 9112 §9.6).
        self.set_header("Connection", "close")
        return drain_after_answer(connection, functools.partial(super().finish, chunk))

    def head(self, *args: str) -> Any:
        """HEAD is GET without the body (RFC 9110 §9.3.2): Tornado routes it to ``head``, which answers 405
        unless defined, and drops the body of a HEAD response itself while keeping its Content-Length. So
        the same work (for the API, the same count against the limit), the same status and headers as a
        GET; 405 where there is no GET."""
        return self.get(*args)

    def decode_argument(self, value: bytes, name: str | None = None) -> str:
        """A query or form argument, or a part of the path, as text. Tornado's refuses bytes that are not UTF-8
        with an HTTPError whose message, which the log writes, quotes them: a console login link's admin token.
        This refusal is the service's own 400, naming the argument but not what it held."""
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            what = f"The argument {name}" if name else "The path"
            raise malformed(f"{what} is not valid UTF-8.") from None

    def check_xsrf_cookie(self) -> None:
        """Tornado calls this before any handler code, for every method but GET, HEAD and OPTIONS. A body that
        could not be taken (over 16 KiB) is refused as such, and only a method this handler defines can take a
        form: any other is answered 405 naming those it does (set_allow_header), not 403 as a form without its
        XSRF token."""
        self.check_body()
        if self.request.method in self.defined_methods():
            self.check_form_token()

    def check_form_token(self) -> None:
        """The form's XSRF token, checked as Tornado does (against the _xsrf cookie)."""
        super().check_xsrf_cookie()

    def send_error(self, status_code: int = 500, **kwargs: Any) -> None:
        """An ApiError is answered with its own status, whichever handler raised it (a body refused in
        ``check_body``, on a console page as on the API): Tornado answers 500 to any exception but its
        HTTPError."""
        exception = kwargs.get("exc_info", (None, None, None))[1]
        super().send_error(exception.status if isinstance(exception, ApiError) else status_code, **kwargs)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """The service's own HTML error page, for the public page and its static files (the API and the console
        write their own): Tornado's has no language, heading or way back, and a traceback under its debug
        settings. Never one here; BaseHandler.log_exception has logged it on the server."""
        self.set_allow_header(status_code)
        self.render("error.html", status=status_code, reason=tornado.web.httputil.responses.get(status_code, "Error"),
                    message=client_message(kwargs), path=as_sent(self.request.path))

    def set_allow_header(self, status: int) -> None:
        """A 405 names the methods this handler answers (RFC 9110 §15.5.6): those it defines, and HEAD with
        GET unless HEAD is the method refused (the console's login link refuses it)."""
        if status != 405:
            return
        methods = [method for method in self.answered_methods() if not method == self.request.method == "HEAD"]
        self.set_header("Allow", ", ".join(methods))

    def answered_methods(self) -> list[str]:
        """The methods this handler defines, and HEAD after GET (``head`` is GET without the body)."""
        methods = self.defined_methods()
        if "GET" in methods:
            methods.insert(1, "HEAD")
        return methods

    def defined_methods(self) -> list[str]:
        return [method for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
                if getattr(type(self), method.lower()) is not getattr(tornado.web.RequestHandler, method.lower())]

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """Tornado's own lines name the request's URI, and the one for an uncaught exception adds the whole
        request: a console login link, or a mistyped one, would put the admin token in the log. These name
        the request as the access log does (request_summary), and keep the traceback."""
        if isinstance(value, ApiError):
            # An answer the client is meant to get, not a fault: one line, no traceback. The message may quote what
            # the client sent (a 415 its Content-Encoding, a key sent as a place name). A 429's access line says all
            # there is: a client sending on past its limit wrote this line too, at each request, 390 bytes of log each.
            if value.status != 429:
                log.info("%s → %d %s: %s", request_summary(self), value.status, value.code,
                         escaped(without_keys(value.message)))
        elif isinstance(value, KeyStoreBusy):
            # Answered 503 "try again" (the console's write_error): another process's doing, not a fault.
            log.warning("%s → 503: %s", request_summary(self), value)
        elif isinstance(value, KeyStoreUnusable):
            # Answered 503 (the console's write_error): the file's fault, which the operator repairs, not the code's.
            log.error("%s → 503: %s", request_summary(self), value)
        elif isinstance(value, tornado.web.HTTPError):
            if value.get_message():
                # A 4xx (no console session, a form without its XSRF token) is the client's doing, as an ApiError is.
                log.log(logging.INFO if value.status_code < 500 else logging.WARNING, "%s → %d: %s",
                        request_summary(self), value.status_code, escaped(value.get_message()))
        else:
            log.error("Uncaught exception %s", request_summary(self), exc_info=(typ, value, tb))


def client_message(error: dict[str, Any]) -> str | None:
    """What an HTML error page (write_error's ``error``) tells the client beyond its status: the message of the
    ApiError answered (a body over 16 KiB, an argument that is not UTF-8), as the API's envelope does."""
    exception = error.get("exc_info", (None, None, None))[1]
    return exception.message if isinstance(exception, ApiError) else None


# Scripts on any site may call the API (CORS), and read the answer's limits. "*" is safe: the API reads no
# cookie, only the X-API-Key header, which a script has to send itself.
_CROSS_ORIGIN_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Expose-Headers": ", ".join(
        ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-API-Key-Status")),
}
# How long a browser may reuse a preflight's answer (Chromium keeps one 2 hours at most, Firefox a day).
_PREFLIGHT_MAX_AGE_SECONDS = 86400


class ApiHandler(BaseHandler):
    """JSON in and out. Every failure, expected or not, is written by ``write_error`` as the envelope."""

    # False for endpoints outside the metered API (the health check): no key needed, no rate limit.
    metered = True
    # A body is JSON whatever its Content-Type says (curl -d sends a form's): read as a form first, a
    # multipart one was refused with the form parser's complaint.
    reads_form = False
    admission: access.Admission | None = None

    async def prepare(self) -> None:
        """Admit the request (API key, rate limit: solarserv.web.access) before the endpoint runs; not a CORS
        preflight, which a browser sends without the key and which asks for no answer of the API."""
        if self.metered and self.request.method != "OPTIONS":
            await self._admit()
            if self.admission.refusal is not None:
                raise self.admission.refusal
        self.check_body()

    async def _admit(self) -> None:
        """Count the request and set the rate-limit headers; the caller decides what a refusal means."""
        self.admission = await access.admit(self.request, self.services)
        self._write_admission_headers()

    def check_xsrf_cookie(self) -> None:
        """Exempt: the key travels in a header, never a cookie, so a cross-site form has no credential to
        ride on; and JSON clients have no XSRF token to send."""

    def set_default_headers(self) -> None:
        super().set_default_headers()
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.set_header("Cache-Control", "no-store")
        for name, value in _CROSS_ORIGIN_HEADERS.items():
            self.set_header(name, value)

    def options(self, *args: str) -> None:
        """A CORS preflight: the methods and request headers a script on another site may use here."""
        methods = [method for method in self.answered_methods() if method != "OPTIONS"]
        self.set_status(204)
        self.set_header("Access-Control-Allow-Methods", ", ".join(methods))
        self.set_header("Access-Control-Allow-Headers", "Content-Type, X-API-Key")
        self.set_header("Access-Control-Max-Age", str(_PREFLIGHT_MAX_AGE_SECONDS))
        self.finish()

    def compute_etag(self) -> None:
        """No ETag: answers are no-store, so hashing each GET's body for one would be work for nothing."""
        return None

    def write_json(self, payload: Any) -> None:
        self.finish(_json_bytes(payload))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        # Tornado raises a 405 itself, before any code of the handler runs, with its reason phrase as the message.
        error = (self._method_not_answered() if status_code == 405
                 else _as_api_error(kwargs.get("exc_info")))
        self.set_status(error.status)
        # Headers set for a response that then failed (e.g. a half-built result) must not leak into the error.
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        # send_error's clear() dropped the headers prepare set; the rate-limit ones belong on every answer.
        self._write_admission_headers()
        self.set_allow_header(error.status)
        if "retry_after" in error.extra:
            self.set_header("Retry-After", str(error.extra["retry_after"]))
        if error.status == 401:
            self.set_header("WWW-Authenticate", access.KEY_CHALLENGE)
        self.finish(_json_bytes(error.envelope()))

    def _write_admission_headers(self) -> None:
        for name, value in self.admission.headers.items() if self.admission else ():
            self.set_header(name, value)

    def _method_not_answered(self) -> ApiError:
        """405 naming the method refused and those answered here, as the Allow header does (set_allow_header)."""
        answered = in_words(self.answered_methods() or ["no method"])
        return ApiError("METHOD_NOT_ALLOWED", 405, f"{self.request.method} is not answered at "
                        f"{shortened(as_sent(self.request.path), longest=TARGET_SHOWN)}, which answers {answered}.")


def _json_bytes(payload: Any) -> bytes:
    """``payload`` as JSON in UTF-8. A lone surrogate, which a client can send as JSON's "\\ud800" and a message may
    quote, has no UTF-8: it is written as that escape, as it came."""
    return json.dumps(payload, ensure_ascii=False).encode("utf-8", "backslashreplace")


def _as_api_error(exc_info: Any) -> ApiError:
    exception = exc_info[1] if exc_info else None
    if isinstance(exception, ApiError):
        return exception
    # Never a traceback to the client; BaseHandler.log_exception has logged it on the server.
    return ApiError("CALCULATION_FAILED", 500,
                    "The calculation failed because of an internal error. It has been logged; "
                    "please try again or report it.")


class NotFoundHandler(ApiHandler):
    """The application's last route: any unknown path is a JSON 404.

    Counted and given the rate-limit headers like an API request, so probing for paths costs a scanner
    its quota like any other traffic (429 once over the limit). Otherwise the answer is 404 whatever the
    key: a 401 would suggest that something exists there for a client with a key.

    Not counted, because Tornado answers them before any handler code runs: a method it does not know
    (PROPFIND, FOO: 405 on any path) and a missing file under /static/ (its StaticFileHandler's 404).
    """

    def answered_methods(self) -> list[str]:
        """None: every method that reaches ``prepare`` is answered 404, a preflight's OPTIONS too."""
        return []

    async def prepare(self) -> None:
        await self._admit()
        if self.admission.over_limit:
            raise self.admission.refusal
        self.check_body()
        path = shortened(as_sent(self.request.path), longest=TARGET_SHOWN)
        raise ApiError("NOT_FOUND", 404, f"There is nothing at {path}. The API lives under /api/v1/ (POST or GET "
                                         "/api/v1/solar-time).")
