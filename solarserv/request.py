"""Turn the request fields (a JSON object, or query parameters) into a validated SolarQuery.

Shape problems (not an object, a field of the wrong type, a required field missing) raise
``errors.malformed`` (400); well-formed but unacceptable values raise ``errors.invalid`` (422). The
GET alias answers both with 400 (spec: invalid query parameters give 400). Unknown fields are ignored.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from solarserv.errors import invalid, malformed
from solarserv.geo.matching import fold, split_qualifiers
from solarserv.models import SolarQuery
from solarserv.solar.ephemeris import EPHEMERIS_NAME, SUPPORTED_FIRST_DATE, SUPPORTED_LAST_DATE
from solarserv.text import has_hidden_characters, shortened

FIELD_NAMES = ("date", "local_time", "place_name", "latitude", "longitude")
PLACE_NAME_MAX_LENGTH = 200
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIME = re.compile(r"([0-9]{2}):([0-9]{2})(?::([0-9]{2}))?")
# A decimal number as JSON and people write it (sign, digits, point, exponent): float() alone would also
# take "1_0", spaces around it and digits of other scripts ("٤٨").
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# Reads decimal text exactly, at any length. Decimal() itself refuses (InvalidOperation) an exponent beyond the
# ±10**18 it holds: read here, one that large is ±Infinity (out of any range), one that small 0.
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[])


@dataclasses.dataclass(frozen=True)
class Spelling:
    """How a caller writes the fields, for its refusals to name them as it did: the API by their names, `solarserv
    calc` by its flags."""

    # The fields it writes otherwise than the API does.
    renamed: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # Around a field's name, in the refusal of a value as given (twice, not UTF-8) and of a number that is none: a
    # query parameter is said to be one, a flag is plain.
    as_given: str = "{}"
    as_number: str = "{}"
    # A query string's "+" is a space: a number with a space in it there was likely written with a + (+48.85).
    plus_reads_as_space: bool = False

    def name(self, field: str) -> str:
        return self.renamed.get(field, field)


JSON_BODY = Spelling()
QUERY_STRING = Spelling(as_given="The query parameter {}", as_number="The parameter {}", plus_reads_as_space=True)


def decimal_number(text: str) -> Decimal:
    """A number written in decimal (a JSON number's text, a query parameter matching _DECIMAL), exactly: 1e400
    stays 1E+400, where a float is infinite; 1e999999999999999999999 is Infinity, 1e-999999999999999999999 is 0."""
    return _EXACT.create_decimal(text)


def parse_json_fields(body: Any) -> SolarQuery:
    """A POST body, already decoded from JSON: numbers must be JSON numbers, text JSON strings."""
    if not isinstance(body, dict):
        raise malformed("The request body must be a JSON object with the fields date, local_time and "
                        "either place_name or latitude and longitude.")
    return _parse(body, _json_number, JSON_BODY)


def parse_query_fields(arguments: Mapping[str, list[bytes]], spelling: Spelling = QUERY_STRING) -> SolarQuery:
    """GET query parameters (Tornado's request.query_arguments), or `solarserv calc`'s flags in their ``spelling``:
    numbers arrive as text. Only the fields are read: any other parameter (a link tracker's, say) is ignored however
    it is given."""
    return _parse({name: _query_value(arguments, name, spelling) for name in FIELD_NAMES}, _text_number, spelling)


def parse_year(arguments: Mapping[str, list[bytes]]) -> int:
    """The equation-of-time endpoint's ?year=, read from the query parameters as the solar-time GET alias reads
    its fields. Every problem is a 400, as there."""
    first, last = SUPPORTED_FIRST_DATE.year, SUPPORTED_LAST_DATE.year
    text = _query_value(arguments, "year", QUERY_STRING)
    if text is None:
        raise malformed(f"The query parameter year is required, e.g. year={last}.")
    if not (len(text) == 4 and text.isascii() and text.isdigit()):
        raise malformed(f"year must be a four-digit year, got {shortened(text, repr)}.")
    if not first <= int(text) <= last:
        raise malformed(f"year {text} is outside the supported range {first} to {last} (the span of the "
                        f"{EPHEMERIS_NAME} ephemeris used).")
    return int(text)


def _query_value(arguments: Mapping[str, list[bytes]], name: str, spelling: Spelling) -> str | None:
    """The text of the query parameter ``name``, None when it is not given."""
    values = arguments.get(name)
    if values is None:
        return None
    given = spelling.as_given.format(spelling.name(name))
    if len(values) > 1:
        raise malformed(f"{given} is given {len(values)} times; give it once.")
    try:
        return values[0].decode("utf-8")
    except UnicodeDecodeError:
        raise malformed(f"{given} is not valid UTF-8.") from None


def _parse(fields: Mapping[str, Any], number: Any, spelling: Spelling) -> SolarQuery:
    # The strings' shape is the API's alone to get wrong: the command line requires --date and --time, as text.
    date_text = _required_string(fields, "date")
    time_text = _required_string(fields, "local_time")
    place_name = _optional_string(fields, "place_name")
    latitude = number(fields, "latitude", spelling)
    longitude = number(fields, "longitude", spelling)
    place_field, latitude_field, longitude_field = map(spelling.name, ("place_name", "latitude", "longitude"))

    has_coordinates = latitude is not None or longitude is not None
    # A shape problem (400) is told before any value's (422), a missing mode as a missing field.
    if place_name is None and not has_coordinates:
        raise malformed(f"Give either {place_field}, or {latitude_field} and {longitude_field}.")

    date = _parse_date(date_text, spelling.name("date"))
    local_time = _parse_time(time_text, spelling.name("local_time"))
    if place_name is not None and has_coordinates:
        if not place_name.strip():  # an HTML form sends its empty fields
            raise invalid(f"{place_field} is empty while {latitude_field} and {longitude_field} are given: leave it "
                          f"out to use the coordinates (give either {place_field} or {latitude_field} and "
                          f"{longitude_field}, not both).")
        raise invalid(f"Give either {place_field} or {latitude_field} and {longitude_field}, not both.")
    if place_name is not None:
        return SolarQuery(date, local_time, place_name=_check_place_name(place_name, place_field))
    if latitude is None or longitude is None:
        missing = longitude_field if longitude is None else latitude_field
        raise invalid(f"{latitude_field} and {longitude_field} must be given together; {missing} is missing.")
    _check_range(latitude_field, latitude, 90)
    _check_range(longitude_field, longitude, 180)
    return SolarQuery(date, local_time, latitude=float(latitude), longitude=float(longitude))


def _required_string(fields: Mapping[str, Any], name: str) -> str:
    if name not in fields or fields[name] is None:
        raise malformed(f"The field {name} is required.")
    value = fields[name]
    if not isinstance(value, str):
        raise malformed(f"The field {name} must be a string.")
    return value


def _optional_string(fields: Mapping[str, Any], name: str) -> str | None:
    if fields.get(name) is None:
        return None
    return _required_string(fields, name)


def _json_number(fields: Mapping[str, Any], name: str, spelling: Spelling) -> Decimal | None:
    """A number as JSON decodes it for the API (api.decode_json: decimal_number's Decimal), or as a Python caller
    gives it (int or float)."""
    value = fields.get(name)
    if value is None:
        return None
    # bool is an int subclass in Python; true/false are not coordinates.
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        raise malformed(f"The field {spelling.name(name)} must be a JSON number of decimal degrees.")
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no NaN or Infinity; a Python caller does
        raise invalid(f"{spelling.name(name)} must be a finite number.")
    # str: a float's shortest form, so 180.0001 stays 180.0001, not its binary expansion.
    return Decimal(str(value)) if isinstance(value, float) else Decimal(value)


def _text_number(fields: Mapping[str, Any], name: str, spelling: Spelling) -> Decimal | None:
    text = fields.get(name)
    if text is None:
        return None
    if not _DECIMAL.fullmatch(text):
        # "latitude=+48.85" in a URL: a query string's "+" is a space, which the client did not write.
        plus_read_as_space = spelling.plus_reads_as_space and " " in text and _DECIMAL.fullmatch(text.replace(" ", "+"))
        raise malformed(f"{spelling.as_number.format(spelling.name(name))} must be a number of decimal degrees, got "
                        f"{shortened(text, repr)}" + (
            ": a + in a query string reads as a space, so write it %2B." if plus_read_as_space else "."))
    return decimal_number(text)


def _check_range(name: str, value: Decimal, limit: int) -> None:
    if not -limit <= value <= limit:
        # Exact, not rounded to a float: 180.0001 must not read "got 180", nor 1e400 "got inf".
        shown = shortened(str(value)) if value.is_finite() else f"a number beyond ±1E+{decimal.MAX_EMAX}"
        raise invalid(f"{name} must be between -{limit} and {limit} degrees, got {shown}.")


def _parse_date(text: str, field: str) -> dt.date:
    if not _DATE.fullmatch(text):
        raise invalid(f"{field} must be YYYY-MM-DD, got {shortened(text, repr)}.")
    try:
        date = dt.date.fromisoformat(text)
    except ValueError:
        raise invalid(f"{field} {text} is not a real calendar date.") from None
    if not SUPPORTED_FIRST_DATE <= date <= SUPPORTED_LAST_DATE:
        raise invalid(f"{field} {text} is outside the supported range {SUPPORTED_FIRST_DATE} to "
                      f"{SUPPORTED_LAST_DATE} (the span of the {EPHEMERIS_NAME} ephemeris used).")
    return date


def _parse_time(text: str, field: str) -> dt.time:
    match = _TIME.fullmatch(text)
    if not match:
        raise invalid(f"{field} must be HH:MM or HH:MM:SS (24-hour), got {shortened(text, repr)}.")
    hour, minute, second = (int(part or 0) for part in match.groups())
    if hour > 23 or minute > 59 or second > 59:
        raise invalid(f"{field} {text} is not a time of day (hours 00-23, minutes and seconds 00-59).")
    return dt.time(hour, minute, second)


def _check_place_name(raw: str, field: str) -> str:
    name = raw.strip()
    if not name:
        raise invalid(f"{field} must not be empty.")
    if len(name) > PLACE_NAME_MAX_LENGTH:
        raise invalid(f"{field} must be at most {PLACE_NAME_MAX_LENGTH} characters, got {len(name)}.")
    if has_hidden_characters(name):
        raise invalid(f"{field} must not contain control, private-use, unassigned or layout characters (line "
                      "separators, bidirectional overrides).")
    if not fold(split_qualifiers(name)[0]):
        # Names are compared by their letters and digits alone, and the name is what comes before the first
        # comma (geo.matching): this one would match nothing.
        raise invalid(f"{field} must begin with a name holding a letter or a digit (a region or country may "
                      f"follow it after a comma: \"Paris, FR\"), got {name!r}.")
    return name
