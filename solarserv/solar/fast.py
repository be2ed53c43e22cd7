"""The service's engine: the reference engine's numbers from a per-day fit, in microseconds instead of 2 ms.

What the reference engine computes splits into a part that depends on the instant alone and a part that
depends on the place:

* **Instant alone, smooth in time.** The equation of time (the Sun's Greenwich apparent hour angle minus
  the hours of UTC: GAST, which runs on UT1, minus the apparent right ascension, which runs on TT), the
  apparent geocentric declination and the Sun's distance. Skyfield computes them once per UTC day, as an
  array, at seven Chebyshev nodes; a degree-6 polynomial through them reproduces skyfield between the
  nodes to about 1e-9 s of time and 1e-13° (measured at 2000 points a day on three days).
  Within a UTC day the time-scale rule (``ephemeris.skyfield_time``) is smooth: leap seconds and both
  ends of the IERS table fall on 0h UTC, a day boundary.
* **Place.** True solar time = UTC + longitude/15 h + equation of time. Azimuth and elevation come from
  the geocentric direction (hour angle, declination, distance) by the geometry skyfield's ``altaz``
  applies, done here with ``math`` on floats (numpy's per-call overhead on scalars would cost more than
  the whole calculation):
  - the observer sits on the WGS84 ellipsoid at sea level, where ``wgs84.latlon`` puts it. Parallax
    (up to 8.8″) matters: leaving it out errs by 0.0024°; a spherical Earth would err by 0.00001°;
  - the observer's speed about the Earth's axis adds diurnal aberration (up to 0.32″ eastward);
  - the horizon frame is skyfield's ITRS: the true equator and equinox of date turned by GAST. The
    built-in timescale carries no polar-motion table, so skyfield applies no polar motion, nor does this;
  - refraction is skyfield's formula (``skyfield.earthlib.refract``) for 10 °C and 1010 hPa, iterated
    the same way and cut off at the same apparent altitudes (below −1° and above 89.9°).

Left out: the light-time and Earth-deflection differences between the geocentre and the surface, and
second-order aberration. Measured against the reference on random instants and places 1900–2050: true
solar time within 4e-5 s (the reference's own resolution before 1973, where it passes UT1 as one float
Julian date), the apparent position within 4e-7° on the sky (the azimuth difference itself grows as
1/cos(elevation) toward the zenith). tests/test_solar_fast.py holds it to 0.01 s of true solar time and
0.0005° in azimuth and elevation (elevation above −1°).

``hour_angle_and_declination`` (what the search for sunrise, noon and sunset asks, six times a request)
is the first part alone: the day's polynomials and the longitude, under a microsecond a call; ``sun_state``
adds the topocentric part, about 3 µs.

Fits live in a cache of days, the first fitted dropped first once it holds ``CACHED_DAYS`` (least recently
used would reorder it on every read, and a request reads it six times or more); it is read without a lock
(one dict lookup) and written under one, and two threads missing the same day may both fit it, which is
harmless. A missing day costs one vectorised skyfield evaluation, about 1.5 ms (scripts/bench
calc), most of it skyfield's fixed cost per call: the two days an answer's solar day spans take 1.8 ms
in one evaluation and 2.8 ms in two, a year of days 0.1 s in one instead of 0.55 s. So ``prepare`` fits
every missing day of a span at once; the search for sunrise, noon and sunset asks for its span first.
A day's fit is the same whichever evaluation made it, to rounding (1e-17 in its coefficients).
"""

from __future__ import annotations

import datetime as dt
import math
import threading
from collections.abc import Callable, Sequence

import numpy as np
from skyfield.api import wgs84
from skyfield.constants import ANGVEL, AU_M, C
from skyfield.timelib import Time

from solarserv.models import SunState
from solarserv.solar import (
    HALF_DAY_SECONDS,
    RADIANS_PER_SECOND,
    SECONDS_PER_DAY,
    SECONDS_PER_DEGREE,
    STANDARD_PRESSURE_MBAR,
    STANDARD_TEMPERATURE_C,
    UNIX_EPOCH,
    wrap_seconds_of_day,
)
from solarserv.solar.ephemeris import (
    EPHEMERIS_NAME,
    ephemeris,
    iers_table_coverage,
    julian_date,
    timescale,
)

NODES_PER_DAY = 7  # degree-6 fits; six nodes already reach skyfield's rounding, one more is margin
CACHED_DAYS = 4096  # about 11 years of days, a few MB; a year's daily curve fits with room to spare

# The observer on the WGS84 ellipsoid, as skyfield's ``Geoid.latlon`` places it.
_EQUATORIAL_RADIUS_AU = wgs84.radius.au
_ONE_MINUS_FLATTENING_SQUARED = (1 - 1 / wgs84.inverse_flattening) ** 2
# Diurnal aberration: a point at r au from the Earth's axis moves east at ω·r; as a fraction of c, per au of r.
_ROTATION_SPEED_OVER_C_PER_AU = ANGVEL * AU_M / C

# skyfield.earthlib.refraction: refraction (degrees) at apparent altitude h is
# 0.016667° / tan(h + 7.31° / (h + 4.4°)) scaled by 0.28 × pressure / (temperature + 273), applied only
# for −1° ≤ h ≤ 89.9°; refract() iterates h = geometric + refraction(h) until it moves by ≤ 3e-5°.
_REFRACTION_SCALE = 0.28 * STANDARD_PRESSURE_MBAR / (STANDARD_TEMPERATURE_C + 273.0)
_REFRACTION_LOWEST_DEGREES = -1.0
_REFRACTION_HIGHEST_DEGREES = 89.9
_REFRACTION_CONVERGED_DEGREES = 3.0e-5

# A day's fit: power-series coefficients in u = seconds of the UTC day / 43200 − 1 (−1 … 1), highest
# power first, each a triple (equation of time in seconds, declination in radians, distance in au).
DayFit = tuple[tuple[float, float, float], ...]


class FastEngine:
    """``SunEngine`` evaluating a per-day fit of skyfield's geocentric Sun (a few µs per call)."""

    name = f"{EPHEMERIS_NAME} via skyfield, fitted per day"

    def __init__(self, cached_days: int = CACHED_DAYS) -> None:
        # The rule takes UT1 − UTC from the IERS table up to and including its last instant, 0h UTC of a
        # day whose other instants get UT1 = UTC: ``_geocentric`` evaluates that one instant as the end
        # of the day before.
        self._table_end_day = (iers_table_coverage()[1] - UNIX_EPOCH).days
        self._cached_days = cached_days
        self._fits: dict[int, DayFit] = {}  # by UTC day number, in the order they were fitted
        self._storing = threading.Lock()

    def prepare(self, first_unix_seconds: float, last_unix_seconds: float) -> None:
        """Fit, in one skyfield evaluation, every UTC day from the first instant's to the last's that is
        not fitted yet. Answers are the same without it, to rounding; only the time they take differs."""
        first_day, last_day = (int(seconds // SECONDS_PER_DAY) for seconds in (first_unix_seconds, last_unix_seconds))
        missing = [day for day in range(first_day, last_day + 1) if day not in self._fits]
        if missing:
            self._store(_fit_days(missing))

    def sun_state(self, instant: dt.datetime, latitude: float, longitude: float) -> SunState:
        since_epoch = instant - UNIX_EPOCH
        utc_seconds = since_epoch.seconds + since_epoch.microseconds * 1e-6
        eot, declination, distance = self._geocentric(since_epoch.days, utc_seconds)
        solar_seconds = utc_seconds + longitude * SECONDS_PER_DEGREE + eot
        azimuth, elevation = _topocentric_azimuth_elevation(
            (solar_seconds - HALF_DAY_SECONDS) * RADIANS_PER_SECOND, declination, distance, latitude
        )
        return SunState(
            true_solar_seconds=wrap_seconds_of_day(solar_seconds),
            equation_of_time_minutes=eot / 60,
            declination=math.degrees(declination),
            azimuth=azimuth,
            elevation=elevation,
        )

    def hour_angle_and_declination(self, unix_seconds: float, longitude: float) -> tuple[float, float]:
        day, utc_seconds = divmod(unix_seconds, SECONDS_PER_DAY)
        eot, declination, _ = self._geocentric(int(day), utc_seconds)
        solar_seconds = utc_seconds + longitude * SECONDS_PER_DEGREE + eot
        return math.remainder(solar_seconds - HALF_DAY_SECONDS, SECONDS_PER_DAY) * RADIANS_PER_SECOND, declination

    def _geocentric(self, day: int, utc_seconds: float) -> tuple[float, float, float]:
        """Equation of time (s), apparent declination (radians) and distance (au) at ``utc_seconds`` into
        UTC day number ``day``, from the day's fit (Horner's rule on each polynomial)."""
        # The IERS table's last instant takes its UT1 − UTC from the table, as the day before does (__init__).
        if utc_seconds == 0 and day == self._table_end_day:
            day, utc_seconds = day - 1, SECONDS_PER_DAY
        u = utc_seconds / HALF_DAY_SECONDS - 1.0
        eot = declination = distance = 0.0
        fit = self._fits.get(day) or self._store(_fit_days([day]))[day]
        for eot_coefficient, declination_coefficient, distance_coefficient in fit:
            eot = eot * u + eot_coefficient
            declination = declination * u + declination_coefficient
            distance = distance * u + distance_coefficient
        return eot, declination, distance

    def _store(self, fits: dict[int, DayFit]) -> dict[int, DayFit]:
        with self._storing:
            self._fits.update(fits)
            while len(self._fits) > self._cached_days:
                del self._fits[next(iter(self._fits))]  # the first fitted
        return fits


def _topocentric_azimuth_elevation(
    hour_angle: float, declination: float, distance_au: float, latitude: float
) -> tuple[float, float]:
    """Apparent azimuth and refracted elevation (degrees) from sea level at ``latitude``, given the Sun's
    geocentric local hour angle and declination (radians) and distance."""
    # Axes: x toward the local meridian on the equator, y toward the east, z toward the pole.
    cos_declination = math.cos(declination)
    x = distance_au * cos_declination * math.cos(hour_angle)
    y = -distance_au * cos_declination * math.sin(hour_angle)
    z = distance_au * math.sin(declination)

    phi = math.radians(latitude)
    sin_phi, cos_phi = math.sin(phi), math.cos(phi)
    radius_factor = 1 / math.sqrt(cos_phi * cos_phi + _ONE_MINUS_FLATTENING_SQUARED * sin_phi * sin_phi)
    observer_axis_distance = _EQUATORIAL_RADIUS_AU * radius_factor * cos_phi
    x -= observer_axis_distance
    z -= _EQUATORIAL_RADIUS_AU * _ONE_MINUS_FLATTENING_SQUARED * radius_factor * sin_phi
    y += distance_au * observer_axis_distance * _ROTATION_SPEED_OVER_C_PER_AU

    north = cos_phi * z - sin_phi * x
    up = cos_phi * x + sin_phi * z
    azimuth = math.degrees(math.atan2(y, north)) % 360.0
    geometric_elevation = math.degrees(math.atan2(up, math.hypot(north, y)))
    return azimuth, _refracted(geometric_elevation)


def _refracted(geometric_degrees: float) -> float:
    """skyfield's ``refract`` for one altitude: the apparent altitude whose refraction lifts the geometric
    one to it, by the same fixed-point iteration and the same cut-off, so results agree to rounding."""
    apparent = geometric_degrees
    while True:
        previous = apparent
        apparent = geometric_degrees + _refraction_degrees(previous)
        if abs(apparent - previous) <= _REFRACTION_CONVERGED_DEGREES:
            return apparent


def _refraction_degrees(apparent_degrees: float) -> float:
    if not _REFRACTION_LOWEST_DEGREES <= apparent_degrees <= _REFRACTION_HIGHEST_DEGREES:
        return 0.0
    lifted = apparent_degrees + 7.31 / (apparent_degrees + 4.4)
    return 0.016667 / math.tan(math.radians(lifted)) * _REFRACTION_SCALE


def _fit_days(days: Sequence[int]) -> dict[int, DayFit]:
    """The fits for UTC day numbers ``days`` (days since 1970-01-01), from one vectorised skyfield evaluation
    at each day's Chebyshev nodes (interior points: a day's fit never samples the instant a leap second or
    the table's end makes discontinuous); two evaluations when the days lie on both sides of an end of the
    IERS table, whose time-scale rules differ."""
    first, last = iers_table_coverage()
    by_rule: dict[Callable[[list[dt.datetime]], Time], list[int]] = {_table_times: [], _outside_table_times: []}
    for day in days:
        by_rule[_table_times if first <= _day_start(day) < last else _outside_table_times].append(day)
    return {day: fit for times, group in by_rule.items() if group
            for day, fit in _fit_group(group, times).items()}


def _day_start(day: int) -> dt.datetime:
    return UNIX_EPOCH + dt.timedelta(days=day)


def _fit_group(days: list[int], times: Callable[[list[dt.datetime]], Time]) -> dict[int, DayFit]:
    nodes = np.cos(np.pi * (np.arange(NODES_PER_DAY) + 0.5) / NODES_PER_DAY)
    offsets = [dt.timedelta(seconds=HALF_DAY_SECONDS * (1 + node)) for node in nodes]  # rounded to µs
    node_seconds = np.array([offset.total_seconds() for offset in offsets])
    t = times([_day_start(day) + offset for day in days for offset in offsets])
    bodies = ephemeris()
    right_ascension, declination, distance = bodies["earth"].at(t).observe(bodies["sun"]).apparent().radec(epoch="date")
    # Equation of time = (GAST − RA + 12 h) − UTC, wrapped into ±12 h (it never exceeds 17 minutes).
    greenwich_hour_angle_seconds = (t.gast - right_ascension.hours) * 3600
    utc_seconds = np.tile(node_seconds, len(days))
    eot_seconds = (greenwich_hour_angle_seconds - utc_seconds) % SECONDS_PER_DAY - HALF_DAY_SECONDS

    # Each day's polynomials through its nodes, all at once: solve Vandermonde · coefficients = values,
    # the values one column per day and quantity (the nodes are the same in every day).
    u = node_seconds / HALF_DAY_SECONDS - 1
    values = np.stack([eot_seconds, declination.radians, distance.au], axis=-1)  # node of a day, quantity
    by_day = values.reshape(len(days), NODES_PER_DAY, 3).transpose(1, 0, 2).reshape(NODES_PER_DAY, -1)
    coefficients = np.linalg.solve(np.vander(u), by_day).reshape(NODES_PER_DAY, len(days), 3)
    # Row k of a day's fit: the coefficients of u^(N−1−k), one per quantity.
    return {day: tuple(tuple(row) for row in coefficients[:, index, :].tolist()) for index, day in enumerate(days)}


def _table_times(instants: list[dt.datetime]) -> Time:
    """``ephemeris.skyfield_time`` for many instants inside the IERS table, as one array ``Time``."""
    return timescale().from_datetimes(instants)


def _outside_table_times(instants: list[dt.datetime]) -> Time:
    """``ephemeris.skyfield_time`` for many instants outside the IERS table (UT1 = UTC), as one array ``Time``.

    The table starts and ends at 0h UTC, so a day [0h, 24h) lies wholly inside or wholly outside it
    (``FastEngine`` hands the table's closing instant to the day before).
    """
    return timescale().ut1_jd(np.array([julian_date(instant) for instant in instants]))
