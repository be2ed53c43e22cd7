"""The solar-time API (POST canonical, GET alias) and the health endpoint."""

from __future__ import annotations

import json
from typing import Any

import tornado.ioloop
import tornado.web

from solarserv import request as request_fields
from solarserv.errors import ApiError, malformed
from solarserv.result import MINUTES_DECIMALS
from solarserv.solar import curves
from solarserv.web.base import ApiHandler

MAX_BODY_BYTES = 16 * 1024


@tornado.web.stream_request_body
class SolarTimeHandler(ApiHandler):
    """Streams the body so an oversized one is refused with an envelope, not a dropped connection."""

    def initialize(self) -> None:
        self._body = bytearray()
        self._body_too_large = False

    async def prepare(self) -> None:
        await super().prepare()
        declared = self.request.headers.get("Content-Length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            raise _too_large()

    def data_received(self, chunk: bytes) -> None:
        # Chunked bodies have no Content-Length: count as they arrive, keep nothing past the limit.
        if len(self._body) + len(chunk) > MAX_BODY_BYTES:
            self._body_too_large = True
        else:
            self._body.extend(chunk)

    async def post(self) -> None:
        if self._body_too_large:
            raise _too_large()
        query = request_fields.parse_json_fields(_decode_json(bytes(self._body)))
        self.write_json(await self.services.pipeline.run(query))

    async def get(self) -> None:
        try:
            query = request_fields.parse_query_fields(self.request.query_arguments)
            result = await self.services.pipeline.run(query)
        except ApiError as error:
            if error.code == "INVALID_REQUEST" and error.status != 400:
                # Spec: on the GET alias every invalid parameter is a 400.
                raise ApiError(error.code, 400, error.message, **error.extra) from None
            raise
        self.write_json(result)


class EquationOfTimeHandler(ApiHandler):
    """GET /api/v1/equation-of-time?year=YYYY: the equation of time on each day of a year (the page's
    chart)."""

    async def get(self) -> None:
        year = _parse_year(self.get_query_argument("year", None))
        # A year not yet cached takes most of a second to compute: off the event loop, so other requests
        # keep flowing meanwhile.
        days = await tornado.ioloop.IOLoop.current().run_in_executor(
            None, curves.equation_of_time_by_day, self.services.pipeline.engine, year)
        self.write_json({
            "year": year,
            "utc_time": curves.SAMPLE_TIME_UTC.strftime("%H:%M:%S"),
            "ephemeris": self.services.pipeline.engine.name,
            "days": [{"date": date.isoformat(), "equation_of_time_minutes": round(minutes, MINUTES_DECIMALS)}
                     for date, minutes in days],
        })


class HealthHandler(ApiHandler):
    metered = False  # load balancers and monitors probe it: never keyed, never limited

    def get(self) -> None:
        self.write_json(self.services.health())


def _decode_json(body: bytes) -> Any:
    if not body.strip():
        raise malformed("The request body is empty; send a JSON object (Content-Type: application/json).")
    try:
        return json.loads(body, parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise malformed(f"The request body is not valid JSON: {exc}.") from None
    except RecursionError:
        raise malformed("The request body is nested too deeply.") from None


def _parse_year(text: str | None) -> int:
    """Every problem is a 400, as on the solar-time GET alias: these are invalid query parameters."""
    first, last = curves.SUPPORTED_YEARS.start, curves.SUPPORTED_YEARS.stop - 1
    if text is None:
        raise malformed(f"The query parameter year is required, e.g. year={last}.")
    if not (len(text) == 4 and text.isascii() and text.isdigit()):
        raise malformed(f"year must be a four-digit year, got {text!r}.")
    if int(text) not in curves.SUPPORTED_YEARS:
        raise malformed(f"year {text} is outside the supported range {first} to {last} (the span of the "
                        "JPL DE421 ephemeris used).")
    return int(text)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _too_large() -> ApiError:
    return ApiError("REQUEST_TOO_LARGE", 413, f"The request body is larger than {MAX_BODY_BYTES} bytes.")


routes = [
    (r"/api/v1/solar-time", SolarTimeHandler),
    (r"/api/v1/equation-of-time", EquationOfTimeHandler),
    (r"/healthz", HealthHandler),
]
