"""Generated input thrown at the real app over loopback HTTP: odd JSON bodies, query strings, request-targets, headers,
API keys, place names of every script, dates, times and points at every edge and around every clock change, and the
equation of time; and at `solarserv calc`, which answers as the API does. Every answer is a 200 that holds the
result's invariants (README "Invariants", DESIGN §3) or the error envelope with a code documented for its status
(README "Errors"); never a 5xx, never a bare body but where Tornado refuses what it cannot read as HTTP, never a
hang (each request's client gives up after CLIENT_TIMEOUT_SECONDS).

The suite runs a few examples of each, derandomized, so that it fails the same way each time. To hunt, run them
with thousands: `scripts/test tests/test_fuzz.py --hypothesis-profile=fuzz` (tests/conftest.py's profile), or under
any other profile chosen on the command line, which is then used as it is.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import http.client
import importlib.resources
import json
import re
import shutil
from decimal import Decimal
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import given as hypothesis_given
from hypothesis import strategies as st
from servers import serving_in_thread

from solarserv.cli import main
from solarserv.geo import gazetteer
from solarserv.geo.periods import zone_periods
from solarserv.keys import KeyStore
from solarserv.solar.ephemeris import SUPPORTED_FIRST_DATE, SUPPORTED_LAST_DATE
from solarserv.web.app import Services

CLIENT_TIMEOUT_SECONDS = 60

HUNTING = settings.get_current_profile_name() != "default"
SUITE_EXAMPLES = 60


def given(*strategies: Any, suite_examples: int = SUITE_EXAMPLES) -> Any:
    """hypothesis.given with this module's settings: ``suite_examples``, derandomized, in the suite; the chosen
    profile's, when hunting."""
    suite = {} if HUNTING else {"max_examples": suite_examples, "derandomize": True}

    def decorate(test: Any) -> Any:
        checks = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
        return settings(deadline=None, suppress_health_check=checks, **suite)(hypothesis_given(*strategies)(test))

    return decorate


# --- What every answer must be ---------------------------------------------------------------------------------

# The codes README "Errors" documents for each status the app (offline geocoder, no Redis) can give.
DOCUMENTED_CODES = {
    400: {"INVALID_REQUEST"},
    401: {"MISSING_API_KEY", "INVALID_API_KEY"},
    404: {"PLACE_NOT_FOUND", "NOT_FOUND"},
    405: {"METHOD_NOT_ALLOWED"},
    409: {"AMBIGUOUS_LOCATION"},
    413: {"REQUEST_TOO_LARGE"},
    415: {"UNSUPPORTED_MEDIA_TYPE"},
    422: {"INVALID_REQUEST", "TIMEZONE_RESOLUTION_FAILED"},
}
_CLOCK = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]")
_OFFSET = re.compile(r"[+-]([01][0-9]|2[0-3]):[0-5][0-9]")
_OFFSET_EXACT = re.compile(r"([+-])([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])")


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def strict_json(body: bytes) -> Any:
    """The body as a client's strict parser reads it: UTF-8, and no NaN or Infinity."""
    return json.loads(body.decode("utf-8"), parse_constant=_refuse_constant)


def send(base_url: str, method: str, target: str, body: bytes | None = None,
         headers: dict[str, str | bytes] | None = None) -> tuple[int, http.client.HTTPMessage, bytes]:
    """One request on a connection of its own, headers sent as given (bytes as they are)."""
    address = urlsplit(base_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=CLIENT_TIMEOUT_SECONDS)
    try:
        connection.putrequest(method, target, skip_accept_encoding=True)
        for name, value in (headers or {}).items():
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def assert_documented(status: int, headers: http.client.HTTPMessage, body: bytes) -> Any:
    """A 200 or a documented error envelope; returns the decoded JSON."""
    assert status < 500, (status, body)
    assert headers.get("Content-Type", "").startswith("application/json"), (status, headers, body)
    payload = strict_json(body)
    if status == 200:
        return payload
    assert status in DOCUMENTED_CODES, (status, body)
    assert isinstance(payload, dict) and set(payload) == {"error"}, body
    error = payload["error"]
    assert error["code"] in DOCUMENTED_CODES[status], (status, body)
    assert isinstance(error["message"], str) and error["message"].strip(), body
    if error["code"] == "PLACE_NOT_FOUND":
        assert isinstance(error["suggestions"], list) and all(isinstance(name, str) for name in error["suggestions"])
    if error["code"] == "AMBIGUOUS_LOCATION":
        assert error["candidates"], body
        for candidate in error["candidates"]:
            assert {"display_name", "latitude", "longitude", "recommended"} <= set(candidate), body
            assert -90 <= candidate["latitude"] <= 90 and -180 <= candidate["longitude"] <= 180
    return payload


def _seconds_of_offset(text: str) -> int:
    sign, hours, minutes, seconds = _OFFSET_EXACT.fullmatch(text).groups()
    return (-1 if sign == "-" else 1) * (int(hours) * 3600 + int(minutes) * 60 + int(seconds))


def assert_result(result: dict, date: str | None = None, local_time: str | None = None) -> None:
    """The invariants of a 200 (DESIGN §3, README "Invariants"); ``date`` and ``local_time`` as asked, when known."""
    for name in ("true_solar_time", "local_time", "utc_time"):
        assert _CLOCK.fullmatch(result[name]), (name, result[name])
    assert _OFFSET.fullmatch(result["utc_offset"]), result["utc_offset"]
    assert isinstance(result["dst"], bool) and isinstance(result["timezone"], str) and result["timezone"]
    assert result["confidence"] in {"HIGH", "MEDIUM", "LOW"}
    assert result["historical_context_status"] in {"found", "not_found"}
    for name in ("summary", "historical_context", "solar_context", "validation"):
        assert isinstance(result[name], str) and result[name], name
    civil_date = dt.date.fromisoformat(result["date"])
    assert SUPPORTED_FIRST_DATE <= civil_date <= SUPPORTED_LAST_DATE
    if date is not None:
        assert result["date"] == date
    if local_time is not None:
        assert result["local_time"] == (local_time if len(local_time) == 8 else local_time + ":00")
    location = result["location"]
    assert -90 <= location["latitude"] <= 90 and -180 <= location["longitude"] <= 180
    assert isinstance(location["display_name"], str) and location["display_name"]
    assert isinstance(location["country_code"], str)

    calculation = result["calculation"]
    equation, correction = calculation["equation_of_time_minutes"], calculation["longitude_correction_minutes"]
    total, dst = calculation["total_difference_minutes"], calculation["dst_minutes"]
    assert abs(equation) < 16.6 and -720 < correction <= 720 and dst >= 0
    assert abs(total - (equation + correction - dst)) <= 0.0002 + 1e-9  # each figure rounded on its own
    assert -180 < calculation["standard_meridian"] <= 180

    # The clock time and the offset give the UTC instant; the clock time and the total difference, to the second,
    # the sundial's reading on its own calendar day.
    local = dt.datetime.combine(civil_date, dt.time.fromisoformat(result["local_time"]))
    utc = dt.datetime.combine(dt.date.fromisoformat(result["utc_date"]), dt.time.fromisoformat(result["utc_time"]))
    offset = _seconds_of_offset(calculation["utc_offset_exact"])
    assert abs((local - utc).total_seconds() - offset) <= 1, result  # utc_time rounded to the second
    assert abs(offset - _seconds_of_offset(result["utc_offset"] + ":00")) <= 30
    solar = dt.datetime.combine(dt.date.fromisoformat(result["true_solar_date"]),
                                dt.time.fromisoformat(result["true_solar_time"]))
    assert abs((solar - local).total_seconds() - total * 60) <= 0.5 + 0.003 + 1e-6, result

    position = result["solar_position"]
    assert 0 <= position["azimuth"] < 360 and -90 <= position["elevation"] <= 90
    events = result["solar_events"]
    assert events["state"] in {"normal", "polar_day", "polar_night"}
    share = result["share"]
    assert share["url"] == "/?" + share["url_params"] and isinstance(share["text"], str)
    assert result["dst"] == (dst > 0)


# What a share link must give again: all but the place as the request named it.
SHARED_FIELDS = ("true_solar_time", "true_solar_date", "utc_time", "utc_date", "utc_offset", "timezone", "dst", "date",
                 "local_time", "calculation", "solar_position", "solar_events")


def assert_share_link_answers_the_same(base_url: str, result: dict) -> None:
    status, headers, body = send(base_url, "GET", "/api/v1/solar-time?" + result["share"]["url_params"])
    again = assert_documented(status, headers, body)
    assert status == 200, body
    assert {name: again[name] for name in SHARED_FIELDS} == {name: result[name] for name in SHARED_FIELDS}


# --- What is sent -----------------------------------------------------------------------------------------------

# Any character at all: every category, lone surrogates (sent as JSON's \ud800 escapes), NUL, controls.
any_character = st.characters(codec=None, categories=None)
odd_characters = st.sampled_from([
    "\x00", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\u00a0", "\u200b", "\u200d", "\u200e", "\u200f", "\u202e",
    "\u2028", "\u2066", "\ufeff", "\ufffd", "\uffff", "\ud800", "\udfff", "\U0001f600",
    "\U0001f3f3\ufe0f\u200d\U0001f308", "\u0301", "\u0308\u0308\u0308", "\ue000", "\U000e0001", "\u0378",
    "%", "+", "&", "=", ",", "/", ";", "\\", '"', "'", "<", ">", "..", " ", "٤", "８", "Ⅻ", "ß", "İ", "ǅ", "ﬁ"])
odd_text = st.lists(any_character | odd_characters, max_size=24).map("".join)

# Real names in many scripts, with their neighbours in the index: each may find a place, a few, or none.
PLACE_NAMES = [
    "Paris", "Paris, Texas", "Springfield", "São Paulo", "Zürich", "Łódź", "Reykjavík", "İstanbul", "Москва",
    "Київ", "Αθήνα", "ירושלים", "القاهرة", "تهران", "कराची", "दिल्ली", "ঢাকা", "கொழும்பு", "กรุงเทพมหานคร",
    "ວຽງຈັນ", "ཐིམ་ཕུ", "ትግራይ", "Երևան", "თბილისი", "東京", "北京", "서울", "臺北", "Улаанбаатар", "Hà Nội",
    "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch", "Kashgar", "Kiritimati", "Apia", "Nukuʻalofa",
    "Lord Howe Island", "Longyearbyen", "McMurdo", "Shibuya, Tokyo-to", "Paris, FR", "Paris/", "Paris;",
    "St. John's", "Ho Chi Minh City", "Xyzzyqq Qwfp", "a", "1", "0", "Ω", "東", "ñ", "e\u0301"]
place_names = st.one_of(
    st.sampled_from(PLACE_NAMES),
    st.tuples(st.sampled_from(PLACE_NAMES), odd_text).map(lambda parts: parts[0] + parts[1]),
    st.tuples(odd_text, st.sampled_from(PLACE_NAMES)).map(lambda parts: parts[0] + ", " + parts[1]),
    st.text(st.characters(categories=["L", "M", "N"]), min_size=1, max_size=30),
    odd_text,
    st.integers(195, 215).map(lambda length: "a" * length),
)

edge_dates = st.one_of(
    st.sampled_from(["1900-01-01", "2050-12-31", "1899-12-31", "2051-01-01", "2000-02-29", "1900-02-29",
                     "2024-02-29", "2023-02-29", "2100-02-29", "0000-01-01", "9999-12-31", "2026-00-10",
                     "2026-13-01", "2026-04-31", "2011-12-30", "2011-12-29", "1993-08-21", "1994-12-31",
                     "2026-03-29", "2026-10-25", "2026-04-05", "2026-09-27", "2026-7-14", "20260714",
                     "2026-07-14T00:00", "２０２６-07-14", "2026-07-14 ", " 2026-07-14", "", "-2026-07-14"]),
    st.dates(dt.date(1900, 1, 1), dt.date(2050, 12, 31)).map(str),
    st.dates().map(str),
    odd_text,
)
edge_times = st.one_of(
    st.sampled_from(["00:00", "00:00:00", "23:59", "23:59:59", "24:00", "24:00:00", "23:59:60", "23:60",
                     "02:00", "02:30", "03:00", "01:59:59", "01:30", "02:59:59", "12:00", "9:30", "09:30:5",
                     "14:30Z", "14:30+01:00", "14:30:00.5", "1430", "", "٠٩:٣٠", "99:99", "-1:00", "00:00:00:00"]),
    st.times().map(lambda time: time.strftime("%H:%M:%S")),
    st.times().map(lambda time: time.strftime("%H:%M")),
    odd_text,
)
# Poles, the antimeridian and the date line, tiny islands, open ocean, zones at UTC-12 and UTC+14, odd DST.
EDGE_POINTS = [
    (90, 0), (-90, 0), (90, 180), (-90, -180), (89.9999, 179.9999), (-89.9999, -179.9999), (0, 180), (0, -180),
    (0, 0), (-0.0, -0.0), (1.87, -157.4), (0.1953, -176.4768), (-0.5, 166.9), (-13.8333, -171.7667),
    (-21.1393, -175.2018), (-31.5553, 159.0821), (-43.95, -176.55), (78.2232, 15.6267), (-77.85, 166.67),
    (-72.0114, 2.5350), (39.4704, 75.9898), (27.7172, 85.3240), (8.7209, 167.7357), (-54.4208, 3.3464),
    (64.8378, -147.7164), (65.6835, -168.0878), (-54.8, -68.3), (51.5072, -0.1276), (53.3498, -6.2603),
    (33.5731, -7.5898), (-22.5609, 17.0658), (0.0, -140.0), (-60.0, -40.0), (71.2906, -156.7886),
    (-16.5, 179.9999), (-16.5, -179.9999), (52.0, 179.0), (66.56, 25.72), (-66.56, 140.0)]
latitudes = st.one_of(st.sampled_from([point[0] for point in EDGE_POINTS]), st.floats(-90, 90),
                      st.sampled_from([90.0000001, -90.0000001, 1e308, -1e308, 5e-324, -5e-324]))
longitudes = st.one_of(st.sampled_from([point[1] for point in EDGE_POINTS]), st.floats(-180, 180),
                       st.sampled_from([180.0000001, -180.0000001, 1e308, 5e-324, -0.0]))

# A JSON number as a client may spell it: beyond a double, tiny, with signs and exponents, and the spellings that
# are not JSON (NaN, Infinity, a leading +, a bare point).
number_spellings = st.one_of(
    st.sampled_from(["1e308", "-1e308", "1e309", "1e400", "-0.0", "-0", "0e0", "0E-0", "5e-324", "1e-400",
                     "1" + "0" * 400, "9" * 4400, "1e999999999999999999999", "-1e-999999999999999999999",
                     "90.0000000000000000000001", "180", "-180.0", "NaN", "-NaN", "Infinity", "-Infinity", "+1",
                     ".5", "5.", "0x10", "01", "1_0", "1e", "--1", "٤٨"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers().map(str),
    st.decimals(allow_nan=False, allow_infinity=False).map(str),
)


def json_string(text: str) -> str:
    """``text`` as a JSON string: escaped as ASCII, so a lone surrogate is written \\ud800 (json.loads reads it)."""
    return json.dumps(text)


json_leaves = st.one_of(
    st.just("null"), st.just("true"), st.just("false"), number_spellings, odd_text.map(json_string),
    place_names.map(json_string), edge_dates.map(json_string), edge_times.map(json_string))


def _nest(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return (st.lists(children, max_size=3).map(lambda items: "[" + ",".join(items) + "]")
            | st.lists(st.tuples(odd_text.map(json_string), children), max_size=3).map(
                lambda pairs: "{" + ",".join(f"{name}:{value}" for name, value in pairs) + "}"))


json_values = st.recursive(json_leaves, _nest, max_leaves=10)
FIELD_NAMES = ["date", "local_time", "place_name", "latitude", "longitude"]


def field_value(name: str) -> st.SearchStrategy[str]:
    """The JSON text of a field's value: mostly of its own kind, sometimes anything."""
    own = {
        "date": edge_dates.map(json_string),
        "local_time": edge_times.map(json_string),
        "place_name": place_names.map(json_string),
        "latitude": latitudes.map(repr).map(lambda text: text.replace("inf", "Infinity")) | number_spellings,
        "longitude": longitudes.map(repr).map(lambda text: text.replace("inf", "Infinity")) | number_spellings,
    }[name]
    return st.one_of(own, own, own, json_values)


@st.composite
def json_bodies(draw: st.DrawFn) -> bytes:
    """A JSON object's text, its members in any order, some fields given twice, unknown ones among them."""
    names = draw(st.lists(st.sampled_from(FIELD_NAMES), max_size=7))
    if draw(st.booleans()):  # most bodies ask something answerable
        names = ["date", "local_time", *draw(st.sampled_from([["latitude", "longitude"], ["place_name"]])), *names[:1]]
    members = [f"{json_string(name)}:{draw(field_value(name))}" for name in names]
    members += [f"{name}:{value}" for name, value in draw(st.lists(
        st.tuples(odd_text.map(json_string), json_values), max_size=2))]
    members = draw(st.permutations(members))
    space = draw(st.sampled_from(["", " ", "\n", "\t", "\r\n  "]))
    return ("{" + space + ("," + space).join(members) + space + "}").encode()


odd_bodies = st.one_of(
    json_values.map(str.encode),
    st.integers(1, 3000).map(lambda depth: ("[" * depth + "]" * depth).encode()),
    st.integers(1, 3000).map(lambda depth: ('{"a":' * depth + "1" + "}" * depth).encode()),
    st.integers(1, 100_000).map(lambda depth: b"[" * depth),
    st.binary(max_size=64),
    st.sampled_from([b"", b" ", b"\xef\xbb\xbf{}", b"\xef\xbb\xbf" + json.dumps({"date": "2026-07-14"}).encode(),
                     b'{"date": "2026-07-14"}garbage', b"{}{}", b"\x00", "{\"é\":1}".encode("utf-16"),
                     b'{"date":"2026-07-14","local_time":"12:00","latitude":48.85,"longitude":2.35'
                     + b" " * 16000 + b"}"]),
)


def answer_to_json_body(base_url: str, body: bytes, headers: dict | None = None) -> tuple[int, Any]:
    status, response_headers, payload = send(base_url, "POST", "/api/v1/solar-time", body,
                                             {"Content-Type": "application/json", **(headers or {})})
    return status, assert_documented(status, response_headers, payload)


def asked(body: bytes) -> dict[str, Any]:
    """The fields a body gives, as the service reads them (the last of a repeat), when it is a JSON object."""
    try:
        decoded = json.loads(body, parse_float=Decimal, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        return {}
    return decoded if isinstance(decoded, dict) else {}


# --- The properties ---------------------------------------------------------------------------------------------

@given(json_bodies())
def test_a_json_body_of_any_shape_is_answered_as_documented(live_server, body):
    status, payload = answer_to_json_body(live_server, body)
    if status == 200:
        fields = asked(body)
        assert_result(payload, fields.get("date"), fields.get("local_time"))
        assert_share_link_answers_the_same(live_server, payload)


@given(odd_bodies)
def test_a_body_that_is_no_json_object_or_barely_one_is_answered_as_documented(live_server, body):
    status, payload = answer_to_json_body(live_server, body)
    if status == 200:
        assert_result(payload)


@given(st.sampled_from(EDGE_POINTS) | st.tuples(latitudes, longitudes), edge_dates, edge_times)
def test_any_point_date_and_time_is_answered_as_documented_by_post_and_get_alike(live_server, point, date, time):
    latitude, longitude = point
    fields = {"date": date, "local_time": time, "latitude": latitude, "longitude": longitude}
    status, payload = answer_to_json_body(live_server, json.dumps(fields).encode())
    if status == 200:
        assert_result(payload, date, time)
    query = "&".join(f"{name}={encoded(str(value))}" for name, value in fields.items())
    get_status, headers, body = send(live_server, "GET", "/api/v1/solar-time?" + query)
    get_payload = assert_documented(get_status, headers, body)
    # The alias answers what the POST answers; only an invalid request's 422 is its 400.
    assert (get_status, get_payload) == (status, payload) or (status, get_status) == (422, 400), (status, get_status)


@given(place_names, st.sampled_from(["2026-07-14", "1900-01-01", "2050-12-31", "2026-03-29", "1911-03-10"]),
       st.sampled_from(["12:00", "00:00", "23:59:59", "02:30"]))
def test_a_place_name_of_any_script_is_answered_as_documented(live_server, place_name, date, time):
    fields = {"date": date, "local_time": time}
    status, payload = answer_to_json_body(live_server, json.dumps({**fields, "place_name": place_name}).encode())
    if status == 200:
        assert_result(payload, date, time)
        assert_share_link_answers_the_same(live_server, payload)
    elif status == 404 and payload["error"]["suggestions"]:
        # README: each suggestion is a name to resend as place_name.
        suggestion = {**fields, "place_name": payload["error"]["suggestions"][0]}
        again, _ = answer_to_json_body(live_server, json.dumps(suggestion).encode())
        assert again in (200, 409) or (again == 422 and time == "02:30"), (suggestion, again)
    elif status == 409:
        # README: resend one candidate's coordinates.
        candidate = payload["error"]["candidates"][-1]
        chosen = {**fields, "latitude": candidate["latitude"], "longitude": candidate["longitude"]}
        again, _ = answer_to_json_body(live_server, json.dumps(chosen).encode())
        assert again == 200 or (again == 422 and time == "02:30"), (chosen, again)


query_names = st.sampled_from([*FIELD_NAMES, "year", "", "date[]", "DATE", "latitude ", "utm_source"]) | odd_text
query_values = st.one_of(
    edge_dates, edge_times, place_names, number_spellings, odd_text,
    st.integers(1, 9000).map(lambda length: "x" * length))


def encoded(text: str) -> str:
    """``text`` percent-encoded as UTF-8, a lone surrogate as the three bytes it would take (not UTF-8)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


@st.composite
def query_strings(draw: st.DrawFn) -> str:
    """Parameters percent-encoded or sent raw with percent-garbage, repeated, empty, valueless, overlong."""
    parts = []
    for name, value in draw(st.lists(st.tuples(query_names, query_values), max_size=8)):
        spelling = draw(st.sampled_from(["encoded", "encoded", "garbage", "valueless", "empty"]))
        if spelling == "encoded":
            parts.append(f"{encoded(name)}={encoded(value)}")
        elif spelling == "garbage":
            garbage = draw(st.sampled_from(["%", "%Z", "%ZZ", "%ff", "%00", "%c3", "%ed%a0%80", "%2", "+", "%25%",
                                            "%u00e9", "%F0%9F%98"]))
            parts.append(f"{encoded(name)}={garbage}")
        elif spelling == "valueless":
            parts.append(encoded(name))
        else:
            parts.append(f"{encoded(name)}=")
    separator = draw(st.sampled_from(["&", "&", ";", "&&"]))
    return separator.join(parts)


@given(query_strings())
def test_a_query_string_of_any_shape_is_answered_as_documented(live_server, query):
    status, headers, body = send(live_server, "GET", "/api/v1/solar-time?" + query)
    payload = assert_documented(status, headers, body)
    if status == 200:
        assert_result(payload)


@given(query_strings() | st.sampled_from(["year=1900", "year=2050", "year=1899", "year=2051", "year=0000", "year=+2026",
                                          "year=" + encoded("２０２６"), "year=2026&year=2026", "year=2026.0"]))
def test_the_equation_of_time_answers_any_query_as_documented(live_server, query):
    status, headers, body = send(live_server, "GET", "/api/v1/equation-of-time?" + query)
    payload = assert_documented(status, headers, body)
    assert status in (200, 400), (status, body)
    if status == 200:
        days = payload["days"]
        assert len(days) in (365, 366) and all(abs(day["equation_of_time_minutes"]) < 16.6 for day in days)
        assert {day["date"][:4] for day in days} == {str(payload["year"])}


header_values = st.one_of(
    odd_text.map(lambda text: text.encode("utf-8", "surrogatepass")),
    st.binary(max_size=40),
    st.sampled_from([b"", b" ", b"tst_", b"tst_" + b"a" * 5000, b"\xff\xfe", b"tst_\x00", b"Bearer tst_abc"]),
).map(lambda value: value.replace(b"\r", b"").replace(b"\n", b""))  # a line break would end the header
content_types = st.sampled_from([
    b"application/json", b"application/json; charset=utf-8", b"application/json; charset=latin-1",
    b"APPLICATION/JSON", b"text/plain", b"application/x-www-form-urlencoded", b"multipart/form-data",
    b"multipart/form-data; boundary=", b"multipart/form-data; boundary=x", b"application/json;;;", b"",
    b"*/*", b"\xff", b"application/json\x00"]) | header_values
content_encodings = st.sampled_from([None, b"", b"identity", b" IDENTITY ", b"gzip", b"br", b"gzip, identity",
                                     b"\xff", b"x" * 300])


# What Tornado refuses in a header value (a control character but the tab), answering a bare 400 before any handler
# and closing the connection, README "Errors": the closing may reset it before the client reads the answer.
_UNREADABLE_HEADER_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")


@given(header_values, content_types, content_encodings, json_bodies() | st.sampled_from([b"", b"{}"]))
def test_odd_headers_are_answered_as_documented(live_server, api_key, content_type, encoding, body):
    headers = {"X-API-Key": api_key, "Content-Type": content_type}
    if encoding is not None:
        headers["Content-Encoding"] = encoding
    if any(_UNREADABLE_HEADER_VALUE.search(value) for value in headers.values()):
        try:
            status, _, payload = send(live_server, "POST", "/api/v1/solar-time", body, headers)
        except ConnectionResetError:
            return
        assert (status, payload) == (400, b"")
        return
    status, response_headers, payload = send(live_server, "POST", "/api/v1/solar-time", body, headers)
    decoded = assert_documented(status, response_headers, payload)
    if status == 200:
        assert_result(decoded)


def as_argument(text: str) -> str:
    """``text`` as sys.argv holds it: its UTF-8 bytes, any that are not UTF-8 read as surrogates (os.fsdecode)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "surrogateescape")


calc_arguments = st.one_of(
    st.tuples(st.just("--lat"), latitudes.map(str) | number_spellings, st.just("--lon"),
              longitudes.map(str) | number_spellings),
    st.tuples(st.just("--place"), place_names),
    st.lists(st.sampled_from(["--lat", "--lon", "--place"]), unique=True).flatmap(
        lambda flags: st.tuples(*[st.tuples(st.just(flag), query_values) for flag in flags])).map(
        lambda pairs: tuple(part for pair in pairs for part in pair)),
)


@given(calc_arguments, edge_dates, edge_times, suite_examples=15)  # each builds the pipeline anew: 0.3 s
def test_calc_answers_any_arguments_as_the_api_does(capsys, data_dir, arguments, date, time):
    flags = [*zip(arguments[::2], arguments[1::2], strict=True), ("--date", date), ("--time", time)]
    status = main(["calc", "--json", "--data-dir", str(data_dir), *(f"{flag}={as_argument(value)}"
                                                                     for flag, value in flags)])
    payload = strict_json(capsys.readouterr().out.encode("utf-8"))
    if status == 0:
        assert_result(payload, date, time)
    else:
        assert status == 1 and set(payload) == {"error"}, payload
        assert any(payload["error"]["code"] in codes for codes in DOCUMENTED_CODES.values()), payload


def _zone_cities() -> list[tuple[float, float, str]]:
    """Each zone of tzdata's zone1970.tab at its principal city: (latitude, longitude, zone)."""
    def degrees(text: str, width: int) -> float:
        whole, minutes, seconds = text[1:width + 1], text[width + 1:width + 3], text[width + 3:] or "0"
        return (-1 if text[0] == "-" else 1) * (int(whole) + int(minutes) / 60 + int(seconds) / 3600)

    cities = []
    for line in (importlib.resources.files("tzdata.zoneinfo") / "zone1970.tab").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        _, coordinates, name = line.split("\t")[:3]
        split = max(coordinates.rfind("+"), coordinates.rfind("-"))
        cities.append((degrees(coordinates[:split], 2), degrees(coordinates[split:], 3), name))
    return cities


ZONE_CITIES = _zone_cities()


@st.composite
def clock_changes(draw: st.DrawFn) -> tuple[float, float, dt.datetime]:
    """A zone's city and a wall time within three hours of one of its clock changes in 1900–2050 (gaps and folds,
    odd offsets, whole days skipped), or of its first or last supported day."""
    latitude, longitude, name = draw(st.sampled_from(ZONE_CITIES))
    periods = zone_periods(name).periods
    changes = [period.local_start(previous) for previous, period in zip(periods, periods[1:], strict=False)
               if SUPPORTED_FIRST_DATE.year <= period.start.year <= SUPPORTED_LAST_DATE.year]
    around = draw(st.sampled_from([*changes, dt.datetime(1900, 1, 1), dt.datetime(2051, 1, 1)]))
    return latitude, longitude, around + dt.timedelta(seconds=draw(st.integers(-3 * 3600, 3 * 3600)))


@given(clock_changes())
def test_a_wall_time_around_any_clock_change_is_answered_as_documented(live_server, change):
    latitude, longitude, wall = change
    date, local_time = wall.date().isoformat(), wall.time().isoformat()
    body = json.dumps({"date": date, "local_time": local_time, "latitude": latitude, "longitude": longitude})
    status, payload = answer_to_json_body(live_server, body.encode())
    if status == 200:
        assert_result(payload, date, local_time)
        assert_share_link_answers_the_same(live_server, payload)


@pytest.fixture(scope="module")
def keyed_server(base_settings, tmp_path_factory):
    """The real app with API_KEY_REQUIRED=true and a key store of its own, holding one active key. Yields the base
    URL and the key."""
    data_dir = tmp_path_factory.mktemp("keyed")
    shutil.copyfile(gazetteer.index_path(base_settings.data_dir), gazetteer.index_path(data_dir))
    settings = dataclasses.replace(base_settings, api_key_required=True, data_dir=data_dir)
    keys = KeyStore.open(data_dir)
    issued = keys.create("fuzz", "free", by="a test")
    keys.close()
    with serving_in_thread(settings, lambda: Services.build(settings)) as url:
        yield url, issued.key


@given(header_values | st.sampled_from(["valid", "valid with spaces"]), st.sampled_from(["GET", "POST", "HEAD"]))
def test_any_api_key_is_answered_as_documented_where_keys_are_required(keyed_server, api_key, method):
    base_url, valid_key = keyed_server
    if api_key == "valid":
        api_key = valid_key.encode()
    elif api_key == "valid with spaces":
        api_key = b" \t" + valid_key.encode() + b"\t "
    headers = {"X-API-Key": api_key, "Content-Type": "application/json"}
    fields = {"date": "2026-07-14", "local_time": "12:00", "latitude": 48.85, "longitude": 2.35}
    target = "/api/v1/solar-time" + ("" if method == "POST" else "?" + urlencode(fields))
    body = json.dumps(fields).encode() if method == "POST" else None
    if _UNREADABLE_HEADER_VALUE.search(api_key):
        return  # refused by Tornado before any handler: test_odd_headers_are_answered_as_documented
    status, response_headers, payload = send(base_url, method, target, body, headers)
    if method == "HEAD":
        assert payload == b"" and status in (200, 401), status
        return
    decoded = assert_documented(status, response_headers, payload)
    if api_key.strip() == valid_key.encode():
        assert status == 200, payload
        assert_result(decoded)
    else:
        assert status == 401 and decoded["error"]["code"] in {"MISSING_API_KEY", "INVALID_API_KEY"}, payload


api_paths = st.sampled_from(["/api/v1/solar-time", "/api/v1/equation-of-time", "/healthz", "/api/v1/", "/api/v1",
                             "/API/v1/solar-time", "/api/v1/solar-time/", "/api/v1//solar-time", "/api/v1/./solar-time",
                             "/api/v1/../v1/solar-time", "/api/v1/solar%2Dtime", "/%ff%fe", "/nope", "//"])
absolute_forms = st.sampled_from(["http://solarserv.example", "HTTP://solarserv.example", "https://[::1]:8443",
                                  "http://127.0.0.1", "http://solarserv.example:80"])


@given(st.sampled_from(["GET", "POST", "HEAD", "OPTIONS", "DELETE", "FOO"]), absolute_forms, api_paths, query_strings())
def test_a_request_target_in_absolute_form_is_answered_as_its_path_is(live_server, method, absolute, path, query):
    body = b"{}" if method == "POST" else None
    target = f"{path}?{query}"
    status, headers, payload = send(live_server, method, target, body)
    absolute_status, absolute_headers, absolute_payload = send(live_server, method, absolute + target, body)
    assert (absolute_status, absolute_payload) == (status, payload)
    if method not in ("HEAD", "OPTIONS") and status != 200:
        assert_documented(status, headers, payload)
