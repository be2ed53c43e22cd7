"""Sunrise, solar noon and sunset around a civil day, found with nothing but a ``SunEngine``.

Definitions:

* **Solar noon** is the instant when the local apparent hour angle is 0 (true solar time 12:00:00): the
  transit nearest the middle of the civil day. In every real time zone that transit lies inside the day.
* **Sunrise / sunset** are the standard ones of almanacs (USNO, NOAA, NREL SPA): the centre of the Sun at a
  geometric (unrefracted) altitude of −0°50′ = −0.8333°, i.e. its upper limb (16′ above the centre) on the
  horizon under the standard 34′ of refraction. The altitude is computed from the engine's declination and
  hour angle, not from its refracted elevation, so the answer does not depend on how a refraction model is
  cut off below the horizon, and it is a smooth function of time for Newton's method.
* The events belong to **one solar day**: the sunrise between the solar midnight before this day's solar
  noon and that noon, and the sunset between the noon and the following solar midnight. At high latitudes
  the sunset can fall after local midnight (Tromsø on 2024-05-16 sets at 00:12 on the 17th); it is still
  this day's sunset and is returned with its own date, so day length = sunset − sunrise stays meaningful.
* **State**: ``polar_night`` when the Sun is below −0.8333° at solar noon; ``polar_day`` when it is above
  at noon and at both neighbouring solar midnights; otherwise ``normal``. On the one day a year when the
  midnight Sun begins (or ends), the Sun rises after a short night but does not set again before the next
  solar midnight (or set without having risen): the state is ``normal`` and the missing event is ``None``.

Cost: two or three engine calls for noon, two for the solar midnights and two or three per event (steps in
hour angle from the noon declination): eight to ten in all, two or four in polar states. Grazing events
near the polar-day or polar-night thresholds, and the poles, take up to about twenty.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from dataclasses import dataclass

from solarserv.models import SolarEvents, SunState
from solarserv.solar import SunEngine
from solarserv.solar.reference import SECONDS_PER_DAY, signed_seconds

# Centre of the Sun at sunrise and sunset: 16′ semi-diameter + 34′ refraction below the horizon.
STANDARD_ALTITUDE_DEGREES = -50 / 60

_SIN_STANDARD_ALTITUDE = math.sin(math.radians(STANDARD_ALTITUDE_DEGREES))
_NOON_SECONDS = SECONDS_PER_DAY / 2
_RADIANS_PER_SECOND = 2 * math.pi / SECONDS_PER_DAY  # of hour angle, at the rate of true solar time
_NOON_TOLERANCE = dt.timedelta(seconds=1)
_EVENT_TOLERANCE = dt.timedelta(seconds=0.1)
_MAX_NOON_STEPS = 4
_MAX_EVENT_STEPS = 8


@dataclass(frozen=True)
class _Probe:
    """One engine call: the instant, the Sun's state then, and its height above the standard altitude."""

    instant: dt.datetime
    state: SunState
    height: float  # sin(geometric altitude) − sin(−0.8333°): > 0 when the Sun is above it


def solar_events(
    engine: SunEngine, day_start_utc: dt.datetime, day_end_utc: dt.datetime, latitude: float, longitude: float
) -> SolarEvents:
    """Sunrise, solar noon and sunset (aware UTC datetimes) for the civil day [day_start_utc, day_end_utc).

    The caller converts the local midnights that bound the day to UTC (the day may last 23 or 25 hours)
    and converts the answers back to local time.
    """

    def probe(instant: dt.datetime) -> _Probe:
        state = engine.sun_state(instant, latitude, longitude)
        return _Probe(instant, state, _height_above_standard(state, latitude))

    noon, near_noon = _solar_noon(probe, day_start_utc + (day_end_utc - day_start_utc) / 2)
    if near_noon.height <= 0:
        return SolarEvents(state="polar_night", sunrise=None, solar_noon=noon, sunset=None)

    half_day = dt.timedelta(seconds=_NOON_SECONDS)
    midnight_before, midnight_after = probe(noon - half_day), probe(noon + half_day)
    if midnight_before.height > 0 and midnight_after.height > 0:
        return SolarEvents(state="polar_day", sunrise=None, solar_noon=noon, sunset=None)

    sunrise = sunset = None
    if midnight_before.height <= 0:
        sunrise = _standard_altitude_crossing(probe, latitude, near_noon, (midnight_before, near_noon))
    if midnight_after.height <= 0:
        sunset = _standard_altitude_crossing(probe, latitude, near_noon, (near_noon, midnight_after))
    return SolarEvents(state="normal", sunrise=sunrise, solar_noon=noon, sunset=sunset)


def _solar_noon(probe: Callable[[dt.datetime], _Probe], near: dt.datetime) -> tuple[dt.datetime, _Probe]:
    """The transit nearest ``near``, and the last probe taken (within a second of it).

    True solar time runs at the rate of clock time to within 3.5e-4 (the apparent solar day is 24 h ± 30 s),
    so stepping by the offset from 12:00 lands within seconds of noon; the next step is exact to
    milliseconds.
    """
    instant = near
    for _ in range(_MAX_NOON_STEPS):
        last = probe(instant)
        offset = dt.timedelta(seconds=signed_seconds(last.state.true_solar_seconds - _NOON_SECONDS))
        instant -= offset
        if abs(offset) < _NOON_TOLERANCE:
            break
    return instant, last


def _hour_angle_radians(state: SunState) -> float:
    return (state.true_solar_seconds - _NOON_SECONDS) * _RADIANS_PER_SECOND


def _height_above_standard(state: SunState, latitude: float) -> float:
    phi, delta = math.radians(latitude), math.radians(state.declination)
    sin_altitude = math.sin(phi) * math.sin(delta) + math.cos(phi) * math.cos(delta) * math.cos(
        _hour_angle_radians(state)
    )
    return sin_altitude - _SIN_STANDARD_ALTITUDE


def _standard_altitude_crossing(
    probe: Callable[[dt.datetime], _Probe], latitude: float, start: _Probe, bracket: tuple[_Probe, _Probe]
) -> dt.datetime:
    """The instant inside ``bracket`` (ends on opposite sides of −0.8333°) where the Sun crosses it.

    Each step asks: with the declination the Sun has at the last probe, at which hour angle would it
    stand at −0.8333° (the textbook hour angle of sunrise/sunset)? It then moves by the hour-angle
    difference. With a fixed declination that step is exact; the declination's drift (≤ 0.4° a day)
    leaves seconds after the first step and milliseconds after the second. Where that step is
    undefined or leaves the bracket (the Sun only grazes the altitude; at a pole the hour angle does
    not matter) the step is false position on the bracket, which shrinks it every time.
    """
    low, high = bracket
    rising = low.height <= 0
    last = start
    for _ in range(_MAX_EVENT_STEPS):
        step = _hour_angle_step(last.state, latitude, rising)
        if step is not None and low.instant < last.instant + step < high.instant:
            if abs(step) < _EVENT_TOLERANCE:
                return last.instant + step
            candidate = last.instant + step
        else:
            fraction = low.height / (low.height - high.height)
            candidate = low.instant + (high.instant - low.instant) * fraction
        last = probe(candidate)
        if (last.height > 0) == (low.height > 0):
            low = last
        else:
            high = last
    return last.instant


def _hour_angle_step(state: SunState, latitude: float, rising: bool) -> dt.timedelta | None:
    """Time from ``state`` to the hour angle where, at its declination, the Sun is at −0.8333°."""
    phi, delta = math.radians(latitude), math.radians(state.declination)
    denominator = math.cos(phi) * math.cos(delta)
    if denominator < 1e-9:
        return None
    cos_target = (_SIN_STANDARD_ALTITUDE - math.sin(phi) * math.sin(delta)) / denominator
    if not -1 <= cos_target <= 1:
        return None
    target = -math.acos(cos_target) if rising else math.acos(cos_target)
    # Wrapped into ±12 h: just before the solar midnight the hour angle reads +180°, not −180°.
    return dt.timedelta(seconds=signed_seconds((target - _hour_angle_radians(state)) / _RADIANS_PER_SECOND))
