"""The solar-time API (POST canonical, GET alias), the equation of time over a year, and the health endpoint."""

from __future__ import annotations

import collections
import json
from typing import Any

from solarserv import request as request_fields
from solarserv.errors import ApiError, malformed
from solarserv.web.base import ApiHandler


class SolarTimeHandler(ApiHandler):
    async def post(self) -> None:
        query = request_fields.parse_json_fields(decode_json(self.request.body))
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
        year = request_fields.parse_year(self.request.query_arguments)
        self.write_json(await self.services.pipeline.equation_of_time(year))


class HealthHandler(ApiHandler):
    metered = False  # load balancers and monitors probe it: never keyed, never limited

    async def get(self) -> None:
        self.write_json(await self.services.health())


def decode_json(body: bytes) -> Any:
    if not body.strip():
        raise malformed("The request body is empty; send a JSON object (Content-Type: application/json).")
    try:
        # Numbers as Decimal: exact, and read whatever their size (int() refuses more than 4,300 digits, float()
        # makes 1e400 infinite), so that one out of range is refused as such, quoted as sent.
        decoded = json.loads(body, parse_constant=_reject_constant, parse_float=request_fields.decimal_number,
                             parse_int=request_fields.decimal_number, object_pairs_hook=_object)
    except (UnicodeDecodeError, ValueError) as exc:
        raise malformed(f"The request body is not valid JSON: {exc}.") from None
    except RecursionError:
        raise malformed("The request body is nested too deeply.") from None
    if isinstance(decoded, _ObjectWithRepeats):  # the body's own fields; one inside an unknown field is ignored
        quoted = json.dumps(decoded.repeated, ensure_ascii=False)
        raise malformed(f"The request body gives the field {quoted} {decoded.times} times; give it once.")
    return decoded


class _ObjectWithRepeats(dict):
    """A JSON object giving a name more than once, with the most repeated one. JSON allows a repeat and json.loads
    keeps the last value, which hides a client's mistake (a field set twice by code that merges two objects); a
    query parameter given twice is refused too."""

    repeated: str
    times: int


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    fields = dict(pairs)
    if len(fields) == len(pairs):
        return fields
    repeats = _ObjectWithRepeats(fields)
    repeats.repeated, repeats.times = collections.Counter(name for name, _ in pairs).most_common(1)[0]
    return repeats


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


routes = [
    (r"/api/v1/solar-time", SolarTimeHandler),
    (r"/api/v1/equation-of-time", EquationOfTimeHandler),
    (r"/healthz", HealthHandler),
]
