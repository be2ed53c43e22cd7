"""The reference engine: per-call skyfield with JPL DE421. Slow, exact; faster engines are held to it.

Definitions (DESIGN §3):

* true solar time = local apparent hour angle of the Sun + 12 h (mod 24 h), where the hour angle is
  Greenwich apparent sidereal time + longitude/15 − the Sun's apparent geocentric right ascension of date.
  The Earth's angle comes from UT1, chosen by ``ephemeris.skyfield_time``.
* equation of time = true solar time − (UTC + longitude/15 h), wrapped to (−720, 720] minutes. It includes
  UT1 − UTC (< 0.9 s), so local clock time + EoT + longitude correction − DST is the sundial reading to the
  second.
* declination: apparent geocentric, of date.
* azimuth / elevation: topocentric apparent position from sea level on the WGS84 ellipsoid, refracted for
  10 °C and 1010 hPa (skyfield's ``altaz``), azimuth 0 = north, clockwise.

Why the hour angle is geocentric: seen from the surface, the Sun is displaced by parallax (at most its
horizontal parallax, 8.8″), which moves the hour angle by less than 0.6 s of time. Taking the geocentric
hour angle makes the equation of time a property of the instant alone — the same number everywhere, the
number almanacs tabulate — so the breakdown "EoT + longitude correction − DST" holds exactly instead of
carrying a place-dependent sub-second remainder. Azimuth and elevation, which describe what an observer
sees, are topocentric.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any, NamedTuple

from skyfield.api import wgs84
from skyfield.timelib import Time
from skyfield.units import Angle

from solarserv.models import SunState
from solarserv.solar import (
    HALF_DAY_SECONDS,
    RADIANS_PER_SECOND,
    SECONDS_PER_DAY,
    SECONDS_PER_DEGREE,
    STANDARD_PRESSURE_MBAR,
    STANDARD_TEMPERATURE_C,
    wrap_seconds_of_day,
)
from solarserv.solar.ephemeris import EPHEMERIS_NAME, ephemeris, skyfield_time


def signed_seconds(seconds: float) -> float:
    """Wrap a time difference in seconds into (−43200, 43200]."""
    return seconds - SECONDS_PER_DAY * math.ceil((seconds - HALF_DAY_SECONDS) / SECONDS_PER_DAY)


def utc_seconds_of_day(instant: dt.datetime) -> float:
    """Seconds since 00:00 UTC of an aware instant's UTC day."""
    utc = instant.astimezone(dt.UTC)
    return utc.hour * 3600 + utc.minute * 60 + utc.second + utc.microsecond / 1e6


class SkyfieldEngine:
    """``SunEngine`` computing every call from scratch with skyfield (about 2 ms per call; 1 ms for
    ``hour_angle_and_declination``, which skips the observer's apparent position)."""

    name = f"{EPHEMERIS_NAME} via skyfield"

    def sun_state(self, instant: dt.datetime, latitude: float, longitude: float) -> SunState:
        sun = apparent_sun(skyfield_time(instant), latitude, longitude, utc_seconds_of_day(instant))
        return SunState(
            true_solar_seconds=wrap_seconds_of_day(float(sun.true_solar_seconds)),
            equation_of_time_minutes=signed_seconds(float(sun.equation_of_time_seconds)) / 60,
            declination=float(sun.declination),
            azimuth=float(sun.azimuth) % 360.0,
            elevation=float(sun.elevation),
        )

    def prepare(self, first_unix_seconds: float, last_unix_seconds: float) -> None:
        """Nothing to prepare: every call computes from scratch."""

    def hour_angle_and_declination(self, unix_seconds: float, longitude: float) -> tuple[float, float]:
        instant = dt.datetime.fromtimestamp(unix_seconds, dt.UTC)  # to the microsecond
        hour_angle_hours, declination = _geocentric_hour_angle_and_declination(skyfield_time(instant), longitude)
        hour_angle_seconds = math.remainder(float(hour_angle_hours) * 3600, SECONDS_PER_DAY)
        return hour_angle_seconds * RADIANS_PER_SECOND, float(declination.radians)


class ApparentSun(NamedTuple):
    true_solar_seconds: Any  # not yet wrapped into one day
    equation_of_time_seconds: Any  # not yet wrapped into (−12 h, 12 h]
    declination: Any
    azimuth: Any
    elevation: Any


def apparent_sun(t: Time, latitude: Any, longitude: Any, utc_seconds: Any) -> ApparentSun:
    """The reference computation, on one instant or on skyfield/numpy arrays of them (the fast engine's
    accuracy test runs it on arrays): degrees, seconds; ``utc_seconds`` is UTC's seconds of day."""
    hour_angle_hours, declination = _geocentric_hour_angle_and_declination(t, longitude)
    true_solar_seconds = (hour_angle_hours + 12) * 3600
    local_mean_seconds = utc_seconds + longitude * SECONDS_PER_DEGREE

    bodies = ephemeris()
    observer = bodies["earth"] + wgs84.latlon(latitude, longitude)
    elevation, azimuth, _ = (
        observer.at(t)
        .observe(bodies["sun"])
        .apparent()
        .altaz(temperature_C=STANDARD_TEMPERATURE_C, pressure_mbar=STANDARD_PRESSURE_MBAR)
    )
    return ApparentSun(true_solar_seconds, true_solar_seconds - local_mean_seconds, declination.degrees,
                       azimuth.degrees, elevation.degrees)


def _geocentric_hour_angle_and_declination(t: Time, longitude: Any) -> tuple[Any, Angle]:
    """The Sun's local apparent hour angle (hours, not wrapped) and apparent geocentric declination."""
    bodies = ephemeris()
    right_ascension, declination, _ = bodies["earth"].at(t).observe(bodies["sun"]).apparent().radec(epoch="date")
    return t.gast + longitude / 15 - right_ascension.hours, declination
