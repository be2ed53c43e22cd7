"""Input rules (DESIGN §4): what is accepted, and 400 (shape) versus 422 (value) for what is not."""

from __future__ import annotations

import datetime as dt

import pytest

from solarserv.errors import ApiError
from solarserv.request import parse_json_fields, parse_query_fields

PARIS = {"date": "2026-07-14", "local_time": "14:30", "latitude": 48.8566, "longitude": 2.3522}


def query_args(fields: dict) -> dict[str, list[bytes]]:
    return {name: [str(value).encode()] for name, value in fields.items()}


def rejected(parse, fields) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse(fields)
    assert caught.value.code == "INVALID_REQUEST"
    return caught.value


def test_coordinate_mode_parses_numbers_and_seconds_default_to_zero():
    query = parse_json_fields(PARIS)
    assert query.date == dt.date(2026, 7, 14)
    assert query.local_time == dt.time(14, 30, 0)
    assert (query.latitude, query.longitude, query.place_name) == (48.8566, 2.3522, None)


def test_get_and_post_give_the_same_query():
    assert parse_query_fields(query_args(PARIS)) == parse_json_fields(PARIS)


def test_place_name_is_trimmed_and_unknown_fields_are_ignored():
    query = parse_json_fields({"date": "2026-07-14", "local_time": "14:30:15", "place_name": "  Paris ",
                               "colour": "blue"})
    assert query.place_name == "Paris"
    assert query.local_time == dt.time(14, 30, 15)


def test_integer_coordinates_are_numbers():
    assert parse_json_fields({**PARIS, "latitude": 48, "longitude": -2}).latitude == 48.0


@pytest.mark.parametrize("parse,fields", [(parse_json_fields, {**PARIS, "place_name": ""}),
                                          (parse_query_fields, query_args({**PARIS, "place_name": " "}))])
def test_an_empty_place_name_beside_coordinates_is_told_to_be_left_out(parse, fields):
    # An HTML form sends its empty fields: "not both" alone read as if the coordinates were the field too many.
    error = rejected(parse, fields)
    assert error.status == 422 and error.message == (
        "place_name is empty while latitude and longitude are given: leave it out to use the coordinates (give "
        "either place_name or latitude and longitude, not both).")


@pytest.mark.parametrize("body", [[], "text", 3, None])
def test_body_not_an_object_is_400(body):
    assert rejected(parse_json_fields, body).status == 400


@pytest.mark.parametrize("field", ["date", "local_time"])
def test_missing_required_field_is_400_naming_it(field):
    fields = {name: value for name, value in PARIS.items() if name != field}
    error = rejected(parse_json_fields, fields)
    assert error.status == 400 and field in error.message


@pytest.mark.parametrize("field,value", [
    ("latitude", "48.8"), ("longitude", True), ("date", 20260714), ("local_time", 1430), ("latitude", [1]),
])
def test_wrong_json_type_is_400_naming_the_field(field, value):
    error = rejected(parse_json_fields, {**PARIS, field: value})
    assert error.status == 400 and field in error.message


def test_neither_mode_is_400():
    assert rejected(parse_json_fields, {"date": "2026-07-14", "local_time": "14:30"}).status == 400


@pytest.mark.parametrize("fields", [{"date": "2026-7-14", "local_time": "14:30"},
                                    {"date": "2026-07-14", "local_time": "25:00"}])
def test_a_body_without_either_mode_is_400_whatever_its_values(fields):
    # A shape problem is told before a value problem, as for every other field: a bad date hid the missing
    # place_name or coordinates behind a 422, and the fixed request was then a 400.
    error = rejected(parse_json_fields, fields)
    assert error.status == 400 and error.message == "Give either place_name, or latitude and longitude."


@pytest.mark.parametrize("changes,words", [
    ({"latitude": 90.5}, "latitude must be between -90 and 90"),
    ({"longitude": -180.01}, "longitude must be between -180 and 180"),
    ({"longitude": 180.0001}, "got 180.0001."),  # the value as sent, not rounded into the range
    ({"latitude": 90.0000001}, "got 90.0000001."),
    ({"latitude": float("inf")}, "finite"),  # a Python caller's float: JSON has no infinity
    ({"latitude": float("nan")}, "finite"),
    ({"longitude": 10**400}, "longitude must be between -180 and 180 degrees, got 10000000000000000000… (401 "
                             "characters)."),
    ({"date": "2026-02-30"}, "not a real calendar date"),
    ({"date": "2026-7-14"}, "YYYY-MM-DD"),
    ({"date": "14/07/2026"}, "YYYY-MM-DD"),
    ({"date": "١٩٩٠-٠١-٠١"}, "YYYY-MM-DD"),
    ({"date": "1899-12-31"}, "outside the supported range 1900-01-01 to 2050-12-31"),
    ({"date": "2051-01-01"}, "outside the supported range"),
    ({"local_time": "24:00"}, "not a time of day"),
    ({"local_time": "12:60"}, "not a time of day"),
    ({"local_time": "12:00:60"}, "not a time of day"),
    ({"local_time": "2:30"}, "HH:MM"),
    ({"local_time": "14:30:00.5"}, "HH:MM"),
    ({"local_time": "2pm"}, "HH:MM"),
    ({"place_name": "Paris"}, "not both"),
    ({"longitude": None}, "longitude is missing"),
])
def test_well_formed_but_invalid_values_are_422_with_the_rule(changes, words):
    error = rejected(parse_json_fields, {**PARIS, **changes})
    assert error.status == 422
    assert words in error.message


@pytest.mark.parametrize("name,words", [
    ("   ", "must not be empty"),
    ("x" * 201, "at most 200 characters"),
    ("Par\x00is", "control"),
    ("Paris\u202e", "control"),  # a bidirectional override
    ("Par\u2028is", "control"),  # a line separator
    ("Par\ue000is", "private-use"),  # a private-use character
    ("Par\u0378is", "unassigned"),  # an unassigned code point
    ("Paris\n", None),  # trailing whitespace, including a newline, is trimmed
    (", , ,", "must begin with a name holding a letter or a digit"),  # not a 404 for the empty name it folds to
    ("- _ .", "must begin with a name holding a letter or a digit"),
    (", Paris", "after a comma: \"Paris, FR\"), got ', Paris'"),  # the name comes first; Paris is a qualifier here
])
def test_place_name_rules(name, words):
    fields = {"date": "2026-07-14", "local_time": "14:30", "place_name": name}
    if words is None:
        assert parse_json_fields(fields).place_name == "Paris"
    else:
        error = rejected(parse_json_fields, fields)
        assert error.status == 422 and words in error.message


def test_place_name_may_hold_a_zero_width_non_joiner():
    # Persian names use U+200C inside words; it is a format character, not a control character.
    name = "\u0645\u06cc\u200c\u0634\u0647\u0631"
    fields = {"date": "2026-07-14", "local_time": "14:30", "place_name": name}
    assert parse_json_fields(fields).place_name == name


@pytest.mark.parametrize("text", ["abc", "", "1,5", "nan", "inf", "Infinity", "1_0", " 48.8", "48.8 ",
                                  "\u0664\u0668", "0x1p4", "48.8°"])
def test_query_numbers_that_are_not_finite_decimal_numbers_are_400(text):
    error = rejected(parse_query_fields, query_args({**PARIS, "latitude": text}))
    assert error.status == 400 and "latitude" in error.message


@pytest.mark.parametrize("text", [" 48.85", "4.885e 1"])
def test_a_plus_sign_read_as_a_space_from_a_query_string_is_told_so(text):
    # "latitude=+48.85" or "4.885e+1" in a URL: a query string's "+" is a space, and the message quoted ' 48.85' alone.
    error = rejected(parse_query_fields, query_args({**PARIS, "latitude": text}))
    assert error.message == (f"The parameter latitude must be a number of decimal degrees, got {text!r}: a + in a "
                             "query string reads as a space, so write it %2B.")


@pytest.mark.parametrize("text,value", [("48", 48.0), ("-48.85", -48.85), ("+48.85", 48.85), ("48.", 48.0),
                                        (".5", 0.5), ("4.885e1", 48.85), ("-0", 0.0)])
def test_query_numbers_are_decimal_numbers_as_json_and_people_write_them(text, value):
    assert parse_query_fields(query_args({**PARIS, "latitude": text})).latitude == value


def test_repeated_query_parameter_is_rejected():
    arguments = {**query_args(PARIS), "date": [b"2026-07-14", b"2026-07-15"]}
    assert "given 2 times" in rejected(parse_query_fields, arguments).message


def test_query_parameter_that_is_not_utf8_is_rejected():
    arguments = {**query_args(PARIS), "date": [b"\xff\xfe"]}
    assert "UTF-8" in rejected(parse_query_fields, arguments).message


def test_other_query_parameters_are_ignored_however_they_are_given():
    arguments = {**query_args(PARIS), "utm_source": [b"a", b"b"], "ref": [b"\xff"], "colour": [b"blue"]}
    assert parse_query_fields(arguments) == parse_query_fields(query_args(PARIS))


@pytest.mark.parametrize("changes", [
    {"latitude": 90, "longitude": 180}, {"latitude": -90, "longitude": -180},
    {"date": "1900-01-01"}, {"date": "2050-12-31"},
    {"local_time": "23:59:59"}, {"local_time": "00:00"},
])
def test_the_edges_of_each_range_are_accepted(changes):
    query = parse_json_fields({**PARIS, **changes})
    assert parse_query_fields(query_args({**PARIS, **changes})) == query


def test_a_place_name_of_200_characters_is_accepted():
    name = "x" * 200
    assert parse_json_fields({"date": "2026-07-14", "local_time": "14:30", "place_name": name}).place_name == name


def test_a_missing_latitude_is_named():
    error = rejected(parse_json_fields, {**PARIS, "latitude": None})
    assert error.status == 422 and "latitude is missing" in error.message


def test_a_null_date_is_missing():
    error = rejected(parse_json_fields, {**PARIS, "date": None})
    assert error.status == 400 and error.message == "The field date is required."
