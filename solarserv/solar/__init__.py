"""Astronomy as pure functions of (instant, latitude, longitude): no HTTP, no civil time, no I/O per call.

A ``SunEngine`` answers one instant and place with a ``SunState``, and answers the cheaper question the
search for sunrise, solar noon and sunset asks many times: the Sun's hour angle and declination. The
reference engine is per-call skyfield with JPL DE421; faster engines must agree with it (tests hold the
bounds). The constants below are shared by the engines, the search for events and the calculation, so
the service's engine needs nothing from the reference one.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Protocol

from solarserv.models import SunState

SECONDS_PER_DAY = 86400  # of UTC and of clock readings: POSIX time counts no leap seconds
HALF_DAY_SECONDS = SECONDS_PER_DAY / 2  # from solar noon to either solar midnight
# The Earth turns 360° in 24 h: a degree of longitude is 240 s (4 min) of mean solar time.
SECONDS_PER_DEGREE = SECONDS_PER_DAY // 360
MINUTES_PER_DEGREE = SECONDS_PER_DEGREE // 60
RADIANS_PER_SECOND = 2 * math.pi / SECONDS_PER_DAY  # of hour angle, at the rate of true solar time
UNIX_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Standard refraction, in both engines: skyfield's ``altaz`` for this temperature and pressure.
STANDARD_TEMPERATURE_C = 10.0
STANDARD_PRESSURE_MBAR = 1010.0


def wrap_seconds_of_day(seconds: float) -> float:
    """A time in seconds wrapped into one day, [0, 86400); float rounding can turn −1e-12 % 86400 into
    86400.0."""
    wrapped = seconds % SECONDS_PER_DAY
    return 0.0 if wrapped >= SECONDS_PER_DAY else wrapped


class SunEngine(Protocol):
    name: str  # shown in the result's calculation block, e.g. "JPL DE421 via skyfield"

    def sun_state(self, instant: dt.datetime, latitude: float, longitude: float) -> SunState:
        """The Sun at an aware UTC instant, seen from a place at sea level on the WGS84 ellipsoid."""
        ...

    def hour_angle_and_declination(self, unix_seconds: float, longitude: float) -> tuple[float, float]:
        """The geocentric part of ``sun_state`` at an instant given in Unix seconds (UTC, days of 86400 s):
        the Sun's local apparent hour angle, wrapped into [−π, π] (true solar time − 12 h), and its
        apparent declination, both in radians. No topocentric work: it depends on the longitude only."""
        ...

    def prepare(self, first_unix_seconds: float, last_unix_seconds: float) -> None:
        """Calls for instants between these two follow: do now, at once, what they would each do alone
        (the fast engine fits the UTC days of the span in one evaluation). Answers stay the same, to
        rounding; only the time they take changes."""
        ...
