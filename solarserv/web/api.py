"""The solar-time API (POST canonical, GET alias) and the health endpoint."""

from __future__ import annotations

import json
from typing import Any

import tornado.web

from solarserv import request as request_fields
from solarserv.errors import ApiError, malformed
from solarserv.web.base import ApiHandler

MAX_BODY_BYTES = 16 * 1024


@tornado.web.stream_request_body
class SolarTimeHandler(ApiHandler):
    """Streams the body so an oversized one is refused with an envelope, not a dropped connection.

    Tornado runs ``prepare`` before the body arrives, and closes the connection under an answer finished
    before the body was read, whatever the client meant to send next. So a refusal met in ``prepare`` (401,
    429, 503, …) is answered once the body is in, dropped as it arrives; only a body declared too large is
    refused at once, rather than read for nothing, and that answer says the connection closes.
    """

    def initialize(self) -> None:
        self._body = bytearray()
        self._refusal: Exception | None = None  # answered by the method, once the body is in
        self._body_left_unread = False

    async def prepare(self) -> None:
        try:
            await super().prepare()
        except Exception as refusal:  # anything prepare raises, a bug too, is answered as it would have been
            self._refusal = refusal
        declared = self.request.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            self._body_left_unread = True
            raise self._refusal or _too_large()

    def data_received(self, chunk: bytes) -> None:
        # Chunked bodies have no Content-Length: count as they arrive, keep nothing past the limit.
        if self._refusal is None and len(self._body) + len(chunk) > MAX_BODY_BYTES:
            self._refusal = _too_large()
        if self._refusal is None:
            self._body.extend(chunk)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        if self._body_left_unread:
            # Tornado closes the connection after this answer rather than read the body: say so (RFC 9112 §9.6).
            self.set_header("Connection", "close")
        super().write_error(status_code, **kwargs)

    async def post(self) -> None:
        self._raise_any_refusal()
        query = request_fields.parse_json_fields(_decode_json(bytes(self._body)))
        self.write_json(await self.services.pipeline.run(query))

    async def get(self) -> None:
        self._raise_any_refusal()
        try:
            query = request_fields.parse_query_fields(self.request.query_arguments)
            result = await self.services.pipeline.run(query)
        except ApiError as error:
            if error.code == "INVALID_REQUEST" and error.status != 400:
                # Spec: on the GET alias every invalid parameter is a 400.
                raise ApiError(error.code, 400, error.message, **error.extra) from None
            raise
        self.write_json(result)

    def _raise_any_refusal(self) -> None:
        if self._refusal is not None:
            raise self._refusal


class EquationOfTimeHandler(ApiHandler):
    """GET /api/v1/equation-of-time?year=YYYY: the equation of time on each day of a year (the page's
    chart)."""

    async def get(self) -> None:
        year = request_fields.parse_year(self.get_query_argument("year", None))
        self.write_json(await self.services.pipeline.equation_of_time(year))


class HealthHandler(ApiHandler):
    metered = False  # load balancers and monitors probe it: never keyed, never limited

    async def get(self) -> None:
        self.write_json(await self.services.health())


def _decode_json(body: bytes) -> Any:
    if not body.strip():
        raise malformed("The request body is empty; send a JSON object (Content-Type: application/json).")
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise malformed(f"The request body is not valid JSON: {exc}.") from None
    except RecursionError:
        raise malformed("The request body is nested too deeply.") from None


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _too_large() -> ApiError:
    return ApiError("REQUEST_TOO_LARGE", 413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")


routes = [
    (r"/api/v1/solar-time", SolarTimeHandler),
    (r"/api/v1/equation-of-time", EquationOfTimeHandler),
    (r"/healthz", HealthHandler),
]
