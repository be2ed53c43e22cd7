"""Sunrise, solar noon and sunset around a civil day, found with nothing but a ``SunEngine``.

Definitions:

* **Solar noon** is the instant when the local apparent hour angle is 0 (true solar time 12:00:00): the
  transit nearest the middle of the civil day. It lies inside the day unless the clocks run about 12 h from
  the Sun: at the South Pole on New Zealand time noon comes within a minute of midnight, and a civil day can
  hold none (13 June 2024: the nearest is the 12th's, at 23:59:59).
* **Sunrise / sunset** are the standard ones of almanacs (USNO, NOAA, NREL SPA): the centre of the Sun at a
  geometric (unrefracted) altitude of −0°50′ = −0.8333°, i.e. its upper limb (16′ above the centre) on the
  horizon under the standard 34′ of refraction. The altitude is computed from the engine's declination and
  hour angle, not from its refracted elevation, so the answer does not depend on how a refraction model is
  cut off below the horizon, and it is a smooth function of time for Newton's method.
* The events belong to **one solar day**, from the solar midnight before this day's solar noon to the one
  after it: the sunrise is where the Sun climbs through −0.8333° in it, the sunset where it sinks through.
  Almost everywhere the sunrise falls before noon and the sunset after. At high latitudes the sunset can
  fall after local midnight (Tromsø on 2024-05-16 sets at 00:12 on the 17th); it is still this day's
  sunset and is returned with its own date, so day length = sunset − sunrise stays meaningful.
* **State**: ``polar_day`` when the Sun stays above −0.8333° the whole solar day, ``polar_night`` when it
  stays below; otherwise ``normal``. On the one day a year when the midnight Sun begins (or ends), the Sun
  rises after a short night but does not set again before the next solar midnight (or sets without having
  risen): the state is ``normal`` and the missing event is ``None``.
* **Near a pole** the Sun's altitude follows its declination as much as the hour angle, and its highest
  and lowest points drift from noon and midnight by up to hours. One event may come on the other side of
  noon (the South Pole's sunset of March 2024 falls in the morning of a solar day whose noon is already
  below the line); a Sun below the line at noon may peek over it for minutes after noon, rising and
  setting in the afternoon; and on the rare day that holds two rises (or two sets) the first rise and the
  last set are the day's.

The search cuts the solar day at noon, at the solar midnights, and where the altitude turns when the Sun
is near the line there (``_Search.turn_near``), into stretches where the Sun only climbs or only sinks;
a stretch whose ends lie on either side of the line holds one crossing, found by
``_Search.standard_altitude_crossing``.

Cost: before its first call the search tells the engine the span it will probe, the solar day around the
transit (``SunEngine.prepare``: the fast engine fits its days in one evaluation). Then two or three engine
calls for noon, two 12 h either side of it and usually one per event: the first guess comes from the
Sun's hour angle and declination interpolated between the noon and midnight probes, and one engine call
confirms it. Six to eight calls in all (six for 85% of scripts/bench_http.py's requests), four or five in
polar states. Grazing events near the polar-day or polar-night thresholds, and days near the poles, take
a few Newton steps more, a turn near the line one call, and each solar midnight one when the Sun is near
the line there: at most 24 per request on 80,000 random days 1900–2050, a third of them within 30° of a
pole and a third within 1° (the midnights were probed on 0.25% of them); by
construction never more than 31 per event (see ``_Search.standard_altitude_crossing``). Each call is the
engine's ``hour_angle_and_declination`` (no topocentric work), and the search runs on Unix seconds as
floats (a resolution of 0.5 µs in 1900–2050): only the answers become datetimes.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from typing import NamedTuple

from solarserv.models import SolarEvents, SunState
from solarserv.solar import HALF_DAY_SECONDS, RADIANS_PER_SECOND, SECONDS_PER_DAY, SECONDS_PER_DEGREE, SunEngine

# Centre of the Sun at sunrise and sunset: 16′ semi-diameter + 34′ refraction below the horizon.
STANDARD_ALTITUDE_DEGREES = -50 / 60

_SIN_STANDARD_ALTITUDE = math.sin(math.radians(STANDARD_ALTITUDE_DEGREES))
_NOON_TOLERANCE_SECONDS = 1.0
EVENT_TOLERANCE_SECONDS = 0.1  # a search ends on a Newton step or a bracket shorter than this
_MAX_NOON_STEPS = 4
_MAX_GUIDED_PROBES = 12  # the interpolated guess, Newton steps or false position; then bisection
_EQUATION_OF_TIME_BOUND_SECONDS = 17 * 60  # it stays within −14.46 … +16.49 min in 1900–2050
# What _SolarDay's interpolation may miss in the height (0.007″ of declination is 3e-8), with room to spare.
_INTERPOLATED_HEIGHT_ERROR = 1e-7
_TURN_MARGIN_SECONDS = 60.0  # beyond the estimated time of a turn, so that its bracket holds it
_FASTEST_DECLINATION_RATE = math.radians(0.41) / SECONDS_PER_DAY  # radians a second, near the equinoxes
# 90° of hour angle: the furthest a turn can lie from noon or a solar midnight (turn_near).
_QUARTER_DAY_SECONDS = HALF_DAY_SECONDS / 2
# How far from the line the Sun can be at noon or midnight and still cross it before its altitude turns:
# turn_near's bound, 2 × drift × reach, at the fastest drift and the furthest reach.
_TURN_HEIGHT_LIMIT = 2 * _FASTEST_DECLINATION_RATE * _QUARTER_DAY_SECONDS + _INTERPOLATED_HEIGHT_ERROR
# How far the Sun's height can move between noon ± 12 h and the solar midnight: an apparent solar day lasts
# 24 h ± 30 s, and the height changes by less than the Earth's rotation (7.27e-5 rad/s) and the
# declination's drift (1e-7 rad/s) together. Nearer the line than this, or than a turn there may take it, the
# solar midnight itself is probed (_Search.solar_midnight).
_MIDNIGHT_SHIFT_HEIGHT = 30 * 7.3e-5
_MIDNIGHT_PROBE_HEIGHT = max(_MIDNIGHT_SHIFT_HEIGHT, _TURN_HEIGHT_LIMIT)


class _Probe(NamedTuple):
    """One engine call: the instant (Unix seconds), the Sun's hour angle and declination then (radians),
    and its height above the standard altitude."""

    seconds: float
    hour_angle: float
    declination: float
    height: float  # sin(geometric altitude) − sin(−0.8333°): > 0 when the Sun is above it


def solar_events(
    engine: SunEngine,
    day_start_utc: dt.datetime,
    day_end_utc: dt.datetime,
    latitude: float,
    longitude: float,
) -> SolarEvents:
    """Sunrise, solar noon and sunset for the civil day [day_start_utc, day_end_utc), as aware UTC datetimes.

    The caller converts the local midnights that bound the day to UTC (the day may last 23 or 25 hours),
    and the answers to local civil time if it shows them (``solarserv.calculation`` does).
    """
    middle = (day_start_utc.timestamp() + day_end_utc.timestamp()) / 2
    engine.prepare(*_solar_day_span(middle, longitude))
    search = _Search(engine, latitude, longitude)
    noon, near_noon = search.solar_noon(middle)
    solar_noon = dt.datetime.fromtimestamp(noon, dt.UTC)
    half_a_day_before = search.probe(noon - HALF_DAY_SECONDS)
    half_a_day_after = search.probe(noon + HALF_DAY_SECONDS)
    solar_day = _SolarDay.through(noon, half_a_day_before, near_noon, half_a_day_after)
    midnight_before = search.solar_midnight(half_a_day_before, solar_day)
    midnight_after = search.solar_midnight(half_a_day_after, solar_day)
    # The day cut where the altitude turns, into stretches where the Sun only climbs or only sinks: each
    # crosses the standard altitude once if its ends lie on either side of it, else not at all. A turn
    # matters only with the Sun near the line at noon or midnight (near the polar day or night, or a pole);
    # turn_near finds none on other days.
    anchors = (midnight_before, near_noon, midnight_after)
    turns = [turn for anchor in anchors
             if (turn := search.turn_near(anchor, solar_day, midnight_before.seconds, midnight_after.seconds))]
    cuts = sorted([*anchors, *turns], key=lambda probe: probe.seconds)
    rises, sets = [], []
    for behind, ahead in itertools.pairwise(cuts):
        if (behind.height > 0) != (ahead.height > 0):
            crossing = search.standard_altitude_crossing(near_noon, (behind, ahead), solar_day)
            (rises if ahead.height > 0 else sets).append(crossing)
    if not (rises or sets):
        return SolarEvents(state="polar_day" if near_noon.height > 0 else "polar_night", sunrise=None,
                           solar_noon=solar_noon, sunset=None)
    # A Sun that only peeks over the line rises and sets in one half of the day; on the rare day with two
    # rises (or sets), the first rise and the last set are the day's.
    return SolarEvents(state="normal", sunrise=_utc(rises[0] if rises else None), solar_noon=solar_noon,
                       sunset=_utc(sets[-1] if sets else None))


def above_standard_altitude(latitude: float, sun: SunState) -> bool:
    """Whether the Sun's centre is above −0.8333° geometric at ``sun``'s instant: risen, as sunrise and sunset
    count it. Decided as the search decides, from the declination and the hour angle: the refracted elevation
    at the standard altitude depends on the refraction (−0.21° at the engines' 10 °C and 1010 hPa, which
    refract 37′ there, not the −0.27° that 34′ would give)."""
    phi = math.radians(latitude)
    hour_angle = (sun.true_solar_seconds - HALF_DAY_SECONDS) * RADIANS_PER_SECOND
    return _height(math.sin(phi), math.cos(phi), hour_angle, math.radians(sun.declination)) > 0


def _height(sin_latitude: float, cos_latitude: float, hour_angle: float, declination: float) -> float:
    """sin(geometric altitude) − sin(−0.8333°): > 0 when the Sun's centre is above the standard altitude."""
    return (sin_latitude * math.sin(declination) + cos_latitude * math.cos(declination) * math.cos(hour_angle)
            - _SIN_STANDARD_ALTITUDE)


def _solar_day_span(near: float, longitude: float) -> tuple[float, float]:
    """The instants the search may probe: the solar midnights around the transit nearest ``near``, with
    room for the equation of time. The transit is where mean solar time (UTC + longitude/15 h) reads 12:00,
    give or take the equation of time (never over 17 minutes)."""
    from_mean_noon = math.remainder(near + longitude * SECONDS_PER_DEGREE - HALF_DAY_SECONDS, SECONDS_PER_DAY)
    reach = HALF_DAY_SECONDS + _EQUATION_OF_TIME_BOUND_SECONDS
    if abs(from_mean_noon) < HALF_DAY_SECONDS - _EQUATION_OF_TIME_BOUND_SECONDS:
        mean_noon = near - from_mean_noon
        return mean_noon - reach, mean_noon + reach
    # ``near`` is within the equation of time of a solar midnight: the nearest transit is either neighbour.
    return near - HALF_DAY_SECONDS - reach, near + HALF_DAY_SECONDS + reach


def _utc(unix_seconds: float | None) -> dt.datetime | None:
    return None if unix_seconds is None else dt.datetime.fromtimestamp(unix_seconds, dt.UTC)


class _SolarDay(NamedTuple):
    """The Sun's hour angle and declination over one solar day, interpolated without engine calls.

    Parabolas in x = (t − noon) / 12 h through the probes 12 h before and after noon (x = ±1, within 15 s
    of the solar midnights) and at noon (x = 0; the noon probe lies within a second of it). The hour angle
    is π·x plus a lag that is zero at noon and follows the change of the equation of time (seconds a day).
    Both vary on the scale of a year, so what a parabola leaves out (third-order terms) is small: on 15,000
    random instants 1900–2050 the interpolated hour angle is within 0.3 ms of time of the engine's and the
    declination within 0.007″ — except across a step of UT1 − UTC at 0h UTC (a leap second, the end of the IERS
    table), where the guess can miss by up to the step; the probes that follow correct it.
    """

    noon: float
    lag: tuple[float, float]  # of x and x²
    declination: tuple[float, float, float]  # of 1, x and x²

    @classmethod
    def through(cls, noon: float, before: _Probe, at_noon: _Probe, after: _Probe) -> _SolarDay:
        # 12 h from noon the hour angle reads ∓180° plus the lag; at noon it is 0 by definition.
        lag_before = math.remainder(before.hour_angle + math.pi, 2 * math.pi)
        lag_after = math.remainder(after.hour_angle - math.pi, 2 * math.pi)
        declination = at_noon.declination
        return cls(
            noon,
            ((lag_after - lag_before) / 2, (lag_after + lag_before) / 2),
            (declination, (after.declination - before.declination) / 2,
             (after.declination + before.declination) / 2 - declination),
        )

    def at(self, seconds: float) -> tuple[float, float]:
        """Hour angle (not wrapped) and declination at ``seconds``, radians."""
        x = (seconds - self.noon) / HALF_DAY_SECONDS
        lag_1, lag_2 = self.lag
        declination_0, declination_1, declination_2 = self.declination
        return (math.pi + lag_1 + lag_2 * x) * x, declination_0 + (declination_1 + declination_2 * x) * x

    def solar_midnight(self, side: int) -> float:
        """The instant the interpolated hour angle reads −180° (``side`` −1, before noon) or +180° (+1)."""
        lag_1, lag_2 = self.lag
        # One Newton step from x = ±1 on H(x) = (π + lag_1 + lag_2·x)·x: the lag is under 1e-3 rad, so the
        # step's error is under a millisecond.
        x = side - (lag_1 * side + lag_2) / (math.pi + lag_1 + 2 * lag_2 * side)
        return self.noon + x * HALF_DAY_SECONDS

    def rates(self, seconds: float) -> tuple[float, float]:
        """Rates of change of the hour angle and the declination at ``seconds``, radians per second."""
        x = (seconds - self.noon) / HALF_DAY_SECONDS
        lag_1, lag_2 = self.lag
        _, declination_1, declination_2 = self.declination
        return ((math.pi + lag_1 + 2 * lag_2 * x) / HALF_DAY_SECONDS,
                (declination_1 + 2 * declination_2 * x) / HALF_DAY_SECONDS)


class _Search:
    """The Sun over one place, probed through the engine's hour angle and declination."""

    def __init__(self, engine: SunEngine, latitude: float, longitude: float) -> None:
        self._hour_angle_and_declination = engine.hour_angle_and_declination
        self._longitude = longitude
        phi = math.radians(latitude)
        self._sin_latitude, self._cos_latitude = math.sin(phi), math.cos(phi)

    def probe(self, seconds: float) -> _Probe:
        hour_angle, declination = self._hour_angle_and_declination(seconds, self._longitude)
        return _Probe(seconds, hour_angle, declination,
                      _height(self._sin_latitude, self._cos_latitude, hour_angle, declination))

    def solar_noon(self, near: float) -> tuple[float, _Probe]:
        """The transit nearest ``near``, and the last probe taken (within a second of it).

        True solar time runs at the rate of clock time to within 3.5e-4 (the apparent solar day is
        24 h ± 30 s), so stepping by the offset from 12:00 lands within seconds of noon; the next step is
        exact to milliseconds.
        """
        seconds = near
        for _ in range(_MAX_NOON_STEPS):
            last = self.probe(seconds)
            offset = last.hour_angle / RADIANS_PER_SECOND
            seconds -= offset
            if abs(offset) < _NOON_TOLERANCE_SECONDS:
                break
        return seconds, last

    def solar_midnight(self, half_a_day_off: _Probe, day: _SolarDay) -> _Probe:
        """The Sun at the solar midnight next to ``half_a_day_off``, a probe 12 h before or after noon.

        An apparent solar day lasts 24 h ± 30 s, so noon ± 12 h falls up to 15 s before or after the
        midnight: a day cut there shares an event within seconds of it with the next day, or leaves it to
        neither. Where the Sun is further from the line than it moves in 30 s, and than a turn there may
        take it (``turn_near``), the probe stands for the midnight: its side of the line is the midnight's,
        and no event lies between them (nearly every day, at no cost). Else the midnight is probed.
        """
        if abs(half_a_day_off.height) > _MIDNIGHT_PROBE_HEIGHT:
            return half_a_day_off
        return self.probe(day.solar_midnight(1 if half_a_day_off.seconds > day.noon else -1))

    def turn_near(self, anchor: _Probe, day: _SolarDay, earliest: float, latest: float) -> _Probe | None:
        """The Sun where its altitude turns near ``anchor`` (its highest near noon, its lowest near a solar
        midnight), probed, when it may lie on the other side of the standard altitude than at ``anchor``
        and within [earliest, latest]; else None.

        At noon and midnight the hour angle's share of the altitude's rate is zero, not the declination's:
        the turn comes where the two cancel, sin H = drift / swing. Seconds from noon at mid-latitudes, but
        hours within a degree of a pole, where a Sun below the line at noon can peek over it for minutes
        (0.19° from the South Pole on 1977-09-20 it rises and sets again within 29 minutes, 1.3 h after
        noon). On the way the rate falls from the drift to zero, so the altitude changes by less than
        drift × time: further from the line than that, ``anchor``'s side is the turn's.
        """
        if abs(anchor.height) > _TURN_HEIGHT_LIMIT:
            return None  # the bound below can never let it through: skip its arithmetic (nearly every day)
        hour_angle_rate, declination_rate = day.rates(anchor.seconds)
        swing = self._cos_latitude * math.cos(anchor.declination) * hour_angle_rate
        drift = self._height_rate(anchor.hour_angle, anchor.declination, 0.0, declination_rate)
        if drift == 0 or abs(drift) >= swing:
            return None  # no turn: at a pole, or within ~0.06° of one, the drift outruns the daily swing
        reach = math.asin(abs(drift) / swing) / hour_angle_rate
        if abs(anchor.height) > 2 * abs(drift) * reach + _INTERPOLATED_HEIGHT_ERROR:
            return None
        # The highest point lies the way the altitude still climbs at noon, the lowest the way it came from.
        forward = (drift > 0) == (abs(anchor.hour_angle) < math.pi / 2)
        # Within 6 h of the anchor the hour angle's share of the rate only grows, so the rate changes sign
        # there once at most; further on lies the opposite turn (a lowest point after a highest), which at
        # about 4 h from the anchor would put a second sign change inside 2 × reach.
        far_end = anchor.seconds + (1 if forward else -1) * min(2 * reach + _TURN_MARGIN_SECONDS,
                                                                _QUARTER_DAY_SECONDS)
        low, high = sorted((anchor.seconds, min(max(far_end, earliest), latest)))
        turn_seconds = self._interpolated_turn(low, high, day)
        if turn_seconds is None:
            return None  # the turn lies beyond this solar day; the neighbouring day's search finds it
        turn = self.probe(turn_seconds)
        return turn if (turn.height > 0) != (anchor.height > 0) else None

    def _interpolated_turn(self, low: float, high: float, day: _SolarDay) -> float | None:
        """Where the height's rate on ``day``'s interpolation changes sign inside [low, high], within
        ``EVENT_TOLERANCE_SECONDS``, by bisection (no engine calls); None when it has one sign at both ends."""
        rising_at_low = self._interpolated_height_rate(low, day) > 0
        if (self._interpolated_height_rate(high, day) > 0) == rising_at_low:
            return None
        while high - low > EVENT_TOLERANCE_SECONDS:
            middle = (low + high) / 2
            if (self._interpolated_height_rate(middle, day) > 0) == rising_at_low:
                low = middle
            else:
                high = middle
        return (low + high) / 2

    def _interpolated_height_rate(self, seconds: float, day: _SolarDay) -> float:
        return self._height_rate(*day.at(seconds), *day.rates(seconds))

    def _height_rate(self, hour_angle: float, declination: float, hour_angle_rate: float,
                     declination_rate: float) -> float:
        """d/dt of sin φ·sin δ + cos φ·cos δ·cos H, the height's rate of change (per second)."""
        sin_declination, cos_declination = math.sin(declination), math.cos(declination)
        return (self._sin_latitude * cos_declination
                - self._cos_latitude * sin_declination * math.cos(hour_angle)) * declination_rate - (
            self._cos_latitude * cos_declination * math.sin(hour_angle) * hour_angle_rate)

    def standard_altitude_crossing(self, start: _Probe, bracket: tuple[_Probe, _Probe], day: _SolarDay) -> float:
        """The instant inside ``bracket`` (ends on opposite sides of −0.8333°) where the Sun crosses it,
        within ``EVENT_TOLERANCE_SECONDS``.

        The engine is first called where two hour-angle steps from ``start`` (noon) lead on ``day``'s
        interpolated hour angle and declination, usually within a millisecond of the crossing. From each
        probe a Newton step in time follows: the height's rate of change comes from the probe's hour angle
        and declination and their rates on ``day``. A Newton step under 0.1 s ends the search. It counts
        the declination's drift, which a step in hour angle alone leaves out: within a degree of a pole
        that drift moves the Sun's altitude as fast as the hour angle does, and a short hour-angle step
        could sit seconds or minutes from the crossing.

        Each probe replaces the bracket's end on its side. Where the guess or a Newton step is undefined
        or leaves the bracket (the Sun only grazes the altitude, or its altitude peaks between the probe
        and the crossing, so the rate points away from it), the next probe is the false position on the
        bracket, by the Illinois rule so that it cannot stall on an end that stays put (``_narrowed``).
        After ``_MAX_GUIDED_PROBES`` probes the search bisects; a bracket under 0.1 s wide ends it too,
        and 19 halvings bring even a 12-hour one there. So an event takes at most 12 + 19 = 31 engine
        calls, and the answer lies inside the last bracket, or a Newton step under 0.1 s from a probe
        (whose second-order error is far below that unless the altitude is all but stationary there).
        """
        low, high = bracket
        target = self._interpolated_guess(start, day, rising=low.height <= 0)
        probes = 0
        kept_low = None
        while high.seconds - low.seconds > EVENT_TOLERANCE_SECONDS:
            if probes >= _MAX_GUIDED_PROBES:
                target = (low.seconds + high.seconds) / 2
            elif target is None or not low.seconds < target < high.seconds:
                target = _false_position(low, high)
            last = self.probe(target)
            probes += 1
            low, high, kept_low = _narrowed(low, high, last, kept_low)
            step = self._newton_step(last, day)
            if step is None:
                target = None
                continue
            target = last.seconds + step
            if abs(step) < EVENT_TOLERANCE_SECONDS and low.seconds <= target <= high.seconds:
                return target
        return _false_position(low, high)

    def _interpolated_guess(self, start: _Probe, day: _SolarDay, rising: bool) -> float | None:
        """Where two hour-angle steps lead: the first from ``start``, the second from the hour angle and
        declination ``day`` interpolates where the first one lands."""
        first = self._hour_angle_step(start.hour_angle, start.declination, rising)
        if first is None:
            return None
        seconds = start.seconds + first
        second = self._hour_angle_step(*day.at(seconds), rising)
        return None if second is None else seconds + second

    def _hour_angle_step(self, hour_angle: float, declination: float, rising: bool) -> float | None:
        """Seconds from ``hour_angle`` to the one where, at ``declination``, the Sun is at −0.8333°."""
        denominator = self._cos_latitude * math.cos(declination)
        if denominator < 1e-9:  # at a pole (cos 90° is 6e-17 in floats): the hour angle moves no altitude
            return None
        cos_target = (_SIN_STANDARD_ALTITUDE - self._sin_latitude * math.sin(declination)) / denominator
        if not -1 <= cos_target <= 1:
            return None
        target = -math.acos(cos_target) if rising else math.acos(cos_target)
        # Wrapped into ±12 h: just before the solar midnight the hour angle reads +180°, not −180°.
        return math.remainder(target - hour_angle, 2 * math.pi) / RADIANS_PER_SECOND

    def _newton_step(self, probe: _Probe, day: _SolarDay) -> float | None:
        """Seconds from ``probe`` to where its height would reach zero at its present rate of change."""
        rate = self._height_rate(probe.hour_angle, probe.declination, *day.rates(probe.seconds))
        return None if rate == 0 else -probe.height / rate


def _narrowed(low: _Probe, high: _Probe, probe: _Probe, kept_low_before: bool | None
              ) -> tuple[_Probe, _Probe, bool]:
    """The bracket with ``probe`` in place of the end on its side of the standard altitude, and whether
    the low end is the one kept.

    Where the altitude curves, false position lands on the same side of the crossing again and again,
    and the end it keeps never moves (a grazing Sun, the flat curve near a pole). So, as in the Illinois
    method, an end kept twice running has its height halved: the next chord swings towards it.
    """
    kept_low = (probe.height > 0) != (low.height > 0)
    if kept_low:
        high = probe
        if kept_low_before:
            low = low._replace(height=low.height / 2)
    else:
        low = probe
        if kept_low_before is False:
            high = high._replace(height=high.height / 2)
    return low, high, kept_low


def _false_position(low: _Probe, high: _Probe) -> float:
    """Where the chord between the bracket's ends crosses the standard altitude."""
    return low.seconds + (high.seconds - low.seconds) * low.height / (low.height - high.height)
