"""How times, UTC offsets and coordinates are written, in the result JSON and in the texts alike.

The result JSON (solarserv.result) calls these functions; the texts reach the same functions as Jinja
filters (solarserv.formatting.FILTERS: ``hms``, ``hm``, ``clock``, ``offset``, ``latitude``, ``longitude``), so a
time or a point reads the same wherever it appears. Times round half up, and offsets by their size on
either side of UTC: round() would send half a second to the even neighbour, and a clock reading should
not depend on that.

A figure the JSON gives and a text rounds further — a difference in minutes shown to the second, an angle to
a tenth of a degree, an event's second to the minute — is rounded from the JSON's figure, not from the exact
value, and by its size, half away from zero, as a reader (and the page, page.js) rounds the number shown: the
JSON's -0.025 min reads "-2 s", its elevation 0.15° reads "0.2°". Rounded from the exact value, a value within
3 ms of a half second (-1.4999 s, shown -0.025 min) read a second apart in the JSON and the texts. Rounding
twice moves a figure by at most 3 ms (or 0.00005°, or half a second for an event) more than rounding once.
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from typing import TYPE_CHECKING, Literal

from solarserv.solar import SECONDS_PER_DAY

if TYPE_CHECKING:
    from solarserv.models import Report

# English month names, independent of the process locale (strftime's %B and calendar.month_name are not).
MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
               "October", "November", "December")
_ZERO = dt.timedelta(0)
# Built once: rounding runs about ten times an answer, and building a timedelta costs as much as the sum.
_HALF_SECOND = dt.timedelta(microseconds=500_000)
# "00" to "59", looked up rather than formatted: a clock reading's three "{:02d}" cost four times as much,
# and an answer writes about fifteen readings.
_TWO_DIGITS = tuple(f"{number:02d}" for number in range(60))
# Both carry hour, minute, second and microsecond: what a clock reading is made of.
_CLOCK_READINGS = (dt.datetime, dt.time)
# Four decimals of a degree are at most 11 m on the ground, and in longitude 0.02 s of solar time:
# finer than anything a sundial or a town's name can tell apart.
COORDINATE_DECIMALS = 4
# The result JSON's differences in minutes (to 6 ms) and its angles.
MINUTES_DECIMALS = 4
DEGREES_DECIMALS = 4
_FIGURE_UNITS = 10**MINUTES_DECIMALS  # both have four decimals: a figure is a whole number of these
_POWERS_OF_TEN = tuple(10**exponent for exponent in range(DEGREES_DECIMALS + 1))
# How near a tie a value must be for its four-decimal figure to round otherwise: 3 ms of a second (0.00005 min,
# with a margin for the float product), and 0.00005 of a unit of the last decimal shown, in that unit.
_NEAR_HALF_SECOND = 0.5 - 0.0032
_TIE_REACH = tuple(0.00005 * 10**digits + 1e-9 for digits in range(DEGREES_DECIMALS))


def round_to_second(moment: dt.datetime) -> dt.datetime:
    """The nearest whole second (23:59:59.6 becomes 00:00:00 of the next day)."""
    return (moment + _HALF_SECOND).replace(microsecond=0)


def whole_seconds(minutes: float) -> int:
    """A difference in minutes as whole seconds, rounded from the JSON's figure (-0.025 min: -2 s)."""
    exact = abs(minutes) * 60
    seconds = int(exact + 0.5)
    # The figure is at most 3 ms from the exact value, so only within 3 ms of a half second can it round
    # otherwise; there it is n ten-thousandths of a minute, 3n/500 s, rounded half up in whole numbers.
    if abs(exact - seconds) > _NEAR_HALF_SECOND:
        seconds = (_figure_units(abs(minutes)) * 3 + 250) // 500
    return -seconds if minutes < 0 else seconds


def shown_true_solar(report: Report) -> dt.datetime:
    """The sundial's reading as the answer shows it: the clock's reading plus the total difference, each
    to the second. Rounding the exact reading instead could put it a second from the clock's reading and the
    difference the texts and the JSON show (12:00:00, -0.025 min, 11:59:59 for an exact -1.4999 s)."""
    reading = report.civil.local + dt.timedelta(seconds=whole_seconds(report.total_difference_minutes))
    return round_to_second(reading) if reading.microsecond else reading  # a clock reading has whole seconds


def rounded_figure(value: float, digits: int) -> str:
    """The size of the JSON's four-decimal figure of ``value`` (an angle, ``round(value, 4)``) rounded half up
    to ``digits`` ≤ 4 decimals: 0.15 → "0.2", where "%.1f" gives "0.1" (0.15 is 0.1499… in binary)."""
    size = abs(value)
    if digits < DEGREES_DECIMALS:
        # Away from a tie "%f" rounds as the figure does (it is 0.00005 at most from the value); at one, the
        # figure decides, in whole numbers.
        scaled = size * _POWERS_OF_TEN[digits]
        if abs(scaled - int(scaled) - 0.5) < _TIE_REACH[digits]:
            step = _POWERS_OF_TEN[DEGREES_DECIMALS - digits]
            whole, decimals = divmod((_figure_units(size) + step // 2) // step, _POWERS_OF_TEN[digits])
            return f"{whole}.{str(decimals).zfill(digits)}" if digits else str(whole)
    return f"{size:.{digits}f}"


def _figure_units(size: float) -> int:
    """A non-negative number to four decimals as ``round(size, 4)`` (the JSON) gives it, in ten-thousandths."""
    scaled = size * _FIGURE_UNITS
    units = int(scaled + 0.5)
    # Only next to a tie could the product's own rounding decide otherwise than round(size, 4), which
    # rounds the number itself; that is ten times slower, and an answer rounds some twenty figures.
    if abs(scaled - units) > 0.4999:
        units = round(round(size, MINUTES_DECIMALS) * _FIGURE_UNITS)
    return units


def format_hms(value: dt.datetime | dt.time | float) -> str:
    """HH:MM:SS to the nearest second, from a date-time, a time or seconds since midnight.

    Wraps at midnight (23:59:59.6 → "00:00:00"): a caller that shows the date rounds it with
    round_to_second, which rounds the same way.
    """
    if isinstance(value, _CLOCK_READINGS):
        # Whole-number arithmetic: this runs several times per request.
        seconds = value.hour * 3600 + value.minute * 60 + value.second + (value.microsecond >= 500_000)
    else:
        seconds = math.floor(value + 0.5)
    seconds %= SECONDS_PER_DAY
    return f"{_TWO_DIGITS[seconds // 3600]}:{_TWO_DIGITS[seconds // 60 % 60]}:{_TWO_DIGITS[seconds % 60]}"


def format_hm(value: dt.datetime | dt.time | float) -> str:
    """HH:MM to the nearest minute of the reading to the second that the JSON shows (13:04:29.6, shown
    13:04:30, → "13:05")."""
    minutes = shown_minutes(value) % 1440
    return f"{_TWO_DIGITS[minutes // 60]}:{_TWO_DIGITS[minutes % 60]}"


def shown_minutes(value: dt.datetime | dt.time | float) -> int:
    """The minutes since midnight that format_hm shows: 1440 where it rounds into the next day's 00:00."""
    return (math.floor(seconds_since_midnight(value) + 0.5) + 30) // 60


def format_clock(value: dt.datetime | dt.time | float) -> str:
    """A clock reading as people write it: HH:MM, or HH:MM:SS when the seconds are not zero."""
    text = format_hms(value)
    return text[:5] if text.endswith(":00") else text


def seconds_since_midnight(value: dt.datetime | dt.time | float) -> float:
    """Seconds since midnight of a date-time's or time's clock reading (a number is taken as is)."""
    if isinstance(value, _CLOCK_READINGS):
        return value.hour * 3600 + value.minute * 60 + value.second + value.microsecond / 1e6
    return value


# Kept per offset: an answer writes its zone's offsets six times, and a process meets only tzdata's few hundred.
@functools.lru_cache(maxsize=1024)
def format_offset(offset: dt.timedelta, precision: Literal["auto", "minute", "second"] = "auto") -> str:
    """A UTC offset: "+05:45", "-10:00". "auto" adds seconds only when there are some (local mean time,
    "+00:09:21"); "minute" rounds to the nearest minute; "second" always shows them."""
    # The size rounds half up, then takes the sign: Ho Chi Minh's +07:06:30 of 1906 is +07:07 and
    # Monrovia's -00:44:30 (to 1972) is -00:45; rounding the signed value half up would give -00:44.
    total = _whole_seconds(abs(offset))
    if precision == "minute":
        total = (total + 30) // 60 * 60
    sign = "-" if offset < _ZERO and total else "+"
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}"
    show_seconds = precision == "second" or (precision == "auto" and seconds)
    return f"{text}:{seconds:02d}" if show_seconds else text


def offset_to_minute(offset: dt.timedelta) -> dt.timedelta:
    """The offset to the nearest minute, as ``format_offset(offset, "minute")`` writes it."""
    minutes = (_whole_seconds(abs(offset)) + 30) // 60
    return dt.timedelta(minutes=-minutes if offset < _ZERO else minutes)


def _whole_seconds(size: dt.timedelta) -> int:
    """A non-negative duration to the nearest second, half up."""
    return size.days * SECONDS_PER_DAY + size.seconds + (size.microseconds >= 500_000)


def format_latitude(value: float, digits: int = COORDINATE_DECIMALS) -> str:
    """A latitude: "48.8566°N", "33.87°S", "0°" (the equator takes no letter)."""
    text = _trimmed_degrees(value, digits)
    if text == "0":
        return "0°"
    return f"{text}°{'N' if value > 0 else 'S'}"


def format_longitude(value: float, digits: int = COORDINATE_DECIMALS) -> str:
    """A longitude: "2.3522°E", "157.4°W", "120°E"; the prime meridian and 180° take no letter."""
    text = _trimmed_degrees(value, digits)
    if text in ("0", "180"):
        return f"{text}°"
    return f"{text}°{'E' if value > 0 else 'W'}"


def format_coordinates(latitude: float, longitude: float) -> str:
    """A point as the result's place_name and the texts name it: "48.85°N, 2.3522°E"."""
    return f"{format_latitude(latitude)}, {format_longitude(longitude)}"


def _trimmed_degrees(value: float, digits: int) -> str:
    """The size of an angle to `digits` decimals, without trailing zeros: 48.85 stays "48.85", not
    "48.8500", so a point reads as it was typed. A value that rounds to zero is "0", never "-0"."""
    text = f"{abs(value):.{digits}f}"
    return text.rstrip("0").rstrip(".") if digits else text
