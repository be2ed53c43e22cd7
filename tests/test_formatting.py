"""How times, offsets and coordinates are written: one function each (solarserv.timefmt), shared by the
result JSON and the texts' filters, so the two never disagree."""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from solarserv import civil, formatting, timefmt
from solarserv.timefmt import (
    format_clock,
    format_coordinates,
    format_hm,
    format_hms,
    format_latitude,
    format_longitude,
    format_offset,
    round_to_second,
)


@pytest.mark.parametrize(("value", "text"), [
    (dt.datetime(2026, 7, 14, 14, 30), "14:30:00"),
    (dt.datetime(2026, 7, 14, 12, 33, 29, 500_000), "12:33:30"),  # half a second rounds up
    (dt.datetime(2026, 7, 14, 12, 33, 29, 499_999), "12:33:29"),
    (dt.datetime(2026, 7, 14, 23, 59, 59, 500_000, tzinfo=dt.UTC), "00:00:00"),  # wraps at midnight
    (dt.time(6, 2, 2), "06:02:02"),
    (dt.time(23, 0, 5), "23:00:05"),  # fewer seconds past the hour than hours: an hour of 3601 s reads 22:
    (59.5, "00:01:00"),
    (-0.4, "00:00:00"),
    (86399.6, "00:00:00"),
])
def test_hms(value, text):
    assert format_hms(value) == text


@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2050, 12, 31)))
@example(dt.datetime(2026, 7, 14, 12, 33, 29, 499_999))  # a microsecond short of the half: it stays 12:33:29
def test_hms_reads_the_clock_of_the_moment_rounded_to_the_second(moment):
    # The JSON writes true_solar_date from round_to_second and true_solar_time with format_hms: the
    # two must round alike, or 23:59:59.5 would read as 00:00:00 of the wrong date.
    assert format_hms(moment) == round_to_second(moment).strftime("%H:%M:%S")


def test_a_moment_rounded_to_the_second_has_no_fraction_left():
    assert round_to_second(dt.datetime(2026, 7, 14, 23, 59, 59, 600_000)) == dt.datetime(2026, 7, 15)
    assert round_to_second(dt.datetime(2026, 7, 14, 12, 33, 29, 400_000)) == dt.datetime(2026, 7, 14, 12, 33, 29)


def test_hm_and_clock():
    assert format_hm(dt.time(13, 4, 31)) == "13:05"
    assert format_hm(dt.time(13, 4, 29, 400_000)) == "13:04"
    assert format_hm(dt.datetime(2026, 7, 14, 23, 59, 30)) == "00:00"
    # Seconds of day too, as hms takes them (a plugin's template may give either): 13:04:29.6 is shown 13:04:30.
    assert (format_hm(47_069.6), format_hm(47_069.4), format_hm(86_369.5)) == ("13:05", "13:04", "00:00")
    assert format_clock(dt.time(14, 30)) == "14:30"
    assert format_clock(dt.time(14, 30, 5)) == "14:30:05"
    assert format_clock(dt.time(14, 29, 59, 700_000)) == "14:30"


@given(st.datetimes(min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2050, 12, 31)))
@example(dt.datetime(2026, 7, 14, 13, 4, 29, 600_000))
@example(dt.datetime(2026, 7, 14, 23, 59, 29, 500_000))
def test_a_minute_shown_is_the_minute_of_the_second_the_json_shows(moment):
    # The JSON gives sunrise 13:04:30 for 13:04:29.6; the texts read "13:04", which no reader of the JSON
    # rounds it to.
    shown_second = round_to_second(moment)
    assert format_hm(moment) == format_hm(shown_second) == (shown_second + dt.timedelta(seconds=30)).strftime("%H:%M")
    assert formatting.shown_date(moment) == (shown_second + dt.timedelta(seconds=30)).date()


def _rounded_by_size(figure: Decimal, step: str) -> Decimal:
    """A figure as a reader rounds it: by its size, half up, then the sign; never -0."""
    size = abs(figure).quantize(Decimal(step), ROUND_HALF_UP)
    return -size if figure < 0 and size else size


def _json_figure(value: float) -> Decimal:
    """The number the JSON writes, exactly as written: four decimals (round, then repr)."""
    return Decimal(repr(round(value, timefmt.MINUTES_DECIMALS)))


@given(st.floats(min_value=-1500, max_value=1500))
@example(0.02499996)  # written 0.025 min, 1.5 s: it read "1 s", where the JSON's reader reads 2 s
@example(-0.02499996)
@example(-0.0250003)  # written -0.025 as well
@example(0.0083)  # 0.498 s, within 3 ms of the half: written 0.0083 min, read 0 s
@example(-1234.57499996)  # written -1234.575 min, -74074.5 s: the figure's whole-number path, far from zero
def test_a_duration_is_the_jsons_figure_to_the_second(minutes):
    assert formatting.whole_seconds(minutes) == _rounded_by_size(_json_figure(minutes) * 60, "1")


@given(st.floats(min_value=-90, max_value=360))
@example(0.14999999)  # written 0.15: it read "0.1°", as "%.1f" rounds the binary 0.1499…
@example(62.04999)  # written 62.05: it read "62.0°"
@example(0.149954)  # written 0.15 as well, though further from the tie than "%.1f" rounds alike
@example(-0.04)  # "0.0°", never "-0.0°"
def test_an_angle_is_the_jsons_figure_to_a_tenth_of_a_degree(value):
    assert formatting.degrees(value) == f"{_rounded_by_size(_json_figure(value), '0.1')}°"


@given(st.floats(min_value=-90, max_value=360), st.integers(min_value=0, max_value=4))
# Written 74.9249 and -78.2494, while the float products by 10⁴ are the ties 749249.5 and 782494.5: rounded from
# those, they read "74.93°" and "-78.250°". No example of the tenths' test reaches that path.
@example(74.92495, 2)
@example(-78.24945, 3)
@example(0.49995, 0)  # written 0.5, 1 whole: the float is 0.00005 from the tie, at the edge of the figure's reach
def test_an_angle_to_any_decimals_is_the_jsons_figure_rounded(value, digits):
    step = Decimal(1).scaleb(-digits)
    assert formatting.degrees(value, digits) == f"{_rounded_by_size(_json_figure(value), str(step))}°"


def hms_offset(hours: int, minutes: int, seconds: int, sign: int = 1) -> dt.timedelta:
    return sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)


@pytest.mark.parametrize(("offset", "minute", "exact"), [
    (hms_offset(7, 6, 30), "+07:07", "+07:06:30"),  # Ho Chi Minh to 1911
    (hms_offset(0, 44, 30, -1), "-00:45", "-00:44:30"),  # Monrovia 1919–1972
    (hms_offset(5, 46, 30, -1), "-05:47", "-05:46:30"),  # Knox, Indiana, to 1883
    (hms_offset(0, 25, 21, -1), "-00:25", "-00:25:21"),  # Dublin Mean Time
    (hms_offset(0, 0, 29, -1), "+00:00", "-00:00:29"),  # rounds to zero: no minus sign
    (hms_offset(0, 0, 30, -1), "-00:01", "-00:00:30"),
    # Offsets of zoneinfo's zones are whole seconds; a computed one rounds its half second up by its size too.
    (hms_offset(0, 0, 29, -1) - dt.timedelta(microseconds=500_000), "-00:01", "-00:00:30"),
    (hms_offset(0, 0, 29, -1) - dt.timedelta(microseconds=499_999), "+00:00", "-00:00:29"),
    (hms_offset(24, 0, 0), "+24:00", "+24:00:00"),  # a day or more, as the mirror test below reaches
])
def test_offsets_round_by_their_size_on_either_side_of_utc(offset, minute, exact):
    assert (format_offset(offset, "minute"), format_offset(offset, "second")) == (minute, exact)
    # The offset a reading to the minute carries in the JSON is the one written.
    assert format_offset(timefmt.offset_to_minute(offset), "second") == f"{minute}:00"


@given(st.integers(min_value=1, max_value=26 * 3600), st.sampled_from(["auto", "minute", "second"]))
def test_an_offset_west_of_utc_reads_as_its_mirror_east_of_it(seconds, precision):
    east = format_offset(dt.timedelta(seconds=seconds), precision)
    west = format_offset(dt.timedelta(seconds=-seconds), precision)
    assert west == (east if east.strip("+0:") == "" else "-" + east[1:])


def test_the_json_offset_of_monrovia_mean_time_rounds_away_from_utc():
    instant = civil.resolve(dt.date(1960, 7, 1), dt.time(12), "Africa/Monrovia")
    assert instant.utc_offset == hms_offset(0, 44, 30, -1)
    assert format_offset(instant.utc_offset, "minute") == "-00:45"


@pytest.mark.parametrize(("latitude", "text"), [
    (48.8566, "48.8566°N"),
    (48.85, "48.85°N"),  # as typed: no padding to four decimals
    (48.85661, "48.8566°N"),
    (-33.8688, "33.8688°S"),
    (-12.0, "12°S"),
    (90.0, "90°N"),
    (0.0, "0°"),
    (-0.00004, "0°"),  # rounds to the equator: no letter, no minus sign
    (0.5, "0.5°N"),  # within a degree of the equator, on either side
    (-0.5, "0.5°S"),
])
def test_latitude(latitude, text):
    assert format_latitude(latitude) == text


@pytest.mark.parametrize(("longitude", "text"), [
    (2.3522, "2.3522°E"),
    (-157.4, "157.4°W"),
    (120.0, "120°E"),
    (0.0, "0°"),
    (-0.00001, "0°"),
    (0.5, "0.5°E"),  # within a degree of the prime meridian, on either side
    (-0.5, "0.5°W"),
    (180.0, "180°"),
    (-180.0, "180°"),
    (-179.99996, "180°"),  # the antimeridian is neither east nor west
])
def test_longitude(longitude, text):
    assert format_longitude(longitude) == text


def test_fewer_digits_on_request():
    assert format_latitude(48.8566, 2) == "48.86°N"
    assert format_longitude(-157.4, 0) == "157°W"


def test_coordinates_join_latitude_and_longitude():
    assert format_coordinates(48.85, 2.3522) == "48.85°N, 2.3522°E"
    assert format_coordinates(-33.8688, -70.0) == "33.8688°S, 70°W"


def test_the_template_filters_are_the_functions_the_json_uses():
    same = {"hms": timefmt.format_hms, "hm": timefmt.format_hm, "clock": timefmt.format_clock,
            "offset": timefmt.format_offset, "latitude": timefmt.format_latitude,
            "longitude": timefmt.format_longitude}
    for name, function in same.items():
        assert formatting.FILTERS[name] is function, name


# --- the result JSON and the texts, over HTTP --------------------------------------------------------------

async def test_a_coordinate_query_names_the_point_alike_in_the_json_and_the_texts(api):
    reply = await api("/api/v1/solar-time", method="POST",
                      body={"date": "2026-07-14", "local_time": "14:30:05", "latitude": 48.85, "longitude": 2.35})
    assert reply.status == 200, reply.body
    result = reply.json()
    point = "48.85°N, 2.35°E"
    assert result["location"]["place_name"] == point
    assert f" at {point} (" in result["summary"]
    assert result["share"]["text"].startswith(f"Sundial time at {point} on 14 July 2026 at 14:30:05: ")
    # Times too: the JSON's readings are the ones the texts quote.
    assert result["local_time"] == "14:30:05"
    assert f"a sundial reads {result['true_solar_time']} " in result["summary"]
    assert f"local time 14:30:05 = UTC {result['utc_time']} {result['utc_offset']}, " in result["validation"]


@pytest.mark.parametrize(("azimuth", "point"), [
    (22.5, "north-east"),  # read "north", half to even, where the page (Math.round) reads "north-east"
    (112.5, "south-east"),
    (22.49996, "north-east"),  # written 22.5: the page, which has only the JSON's figure, reads "north-east"
    (337.5, "north"),
])
def test_a_compass_point_is_the_nearest_to_the_jsons_figure_half_up_as_on_the_page(azimuth, point):
    assert formatting.compass(azimuth) == point


@given(st.text(alphabet=st.sampled_from(" \n\t\r\x85\u00a0\u2028a°—"), max_size=40))
@example("The difference is \nthe equation of time\n(-5 min 55 s)\n")
@example("one\n \ntwo")
def test_a_paragraph_is_the_words_of_its_text_with_one_space_between_them(text):
    # The lines are joined by replacing their ends where no other whitespace is found: as if split into words.
    assert formatting.paragraph(text) == " ".join(text.split())
