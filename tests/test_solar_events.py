"""Sunrise, solar noon and sunset from the reference engine, against NREL SPA (pvlib), and the polar cases."""

from __future__ import annotations

import datetime as dt

import pandas as pd
import pvlib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reports import report_at
from solar_checks import (
    MID_LATITUDE_DAYS,
    assert_events_within_tolerance,
    civil_day,
    events_for,
    standard_altitude_height,
)

from solarserv.geo.zones import zone as tzdata_zone
from solarserv.models import SunState
from solarserv.solar.ephemeris import skyfield_time
from solarserv.solar.events import STANDARD_ALTITUDE_DEGREES, solar_events
from solarserv.solar.fast import FastEngine
from solarserv.solar.reference import SkyfieldEngine, signed_seconds

ENGINE = SkyfieldEngine()
# The standard altitude is geocentric; SPA's elevation is topocentric, lower by the Sun's parallax
# (8.8″ × cos altitude ≈ 0.0024° at the horizon).
SOLAR_PARALLAX_DEGREES = 8.794 / 3600
# While the Sun's centre is above −0.8333° geometric, its upper limb is above the horizon: the engine's
# refracted elevation of the centre is then above −16′ (the Sun's semi-diameter).
UPPER_LIMB_ON_HORIZON_ELEVATION = -16 / 60


class CountingEngine:
    """The reference engine, counting the calls ``solar_events`` makes (of either method)."""

    name = ENGINE.name

    def __init__(self) -> None:
        self.calls = 0

    def sun_state(self, instant: dt.datetime, latitude: float, longitude: float) -> SunState:
        self.calls += 1
        return ENGINE.sun_state(instant, latitude, longitude)

    def hour_angle_and_declination(self, unix_seconds: float, longitude: float) -> tuple[float, float]:
        self.calls += 1
        return ENGINE.hour_angle_and_declination(unix_seconds, longitude)

    def prepare(self, first_unix_seconds: float, last_unix_seconds: float) -> None:
        ENGINE.prepare(first_unix_seconds, last_unix_seconds)  # computes nothing: not counted


class SpanCheckingEngine(CountingEngine):
    """Records the span ``solar_events`` prepares and every instant it then asks about."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: list[tuple[float, float]] = []
        self.asked: list[float] = []

    def prepare(self, first_unix_seconds: float, last_unix_seconds: float) -> None:
        self.spans.append((first_unix_seconds, last_unix_seconds))

    def hour_angle_and_declination(self, unix_seconds: float, longitude: float) -> tuple[float, float]:
        self.asked.append(unix_seconds)
        return super().hour_angle_and_declination(unix_seconds, longitude)


def spa_event_seconds_apart(kind: str, instant: dt.datetime, latitude: float, longitude: float) -> float:
    """Seconds from SPA's sunrise / transit / sunset to ``instant``, both read as times of the UT day.

    SPA (Reda & Andreas 2004, appendix A.2) finds each event as a fraction m of the UT day, limited to
    0 ≤ m < 1: the sunrise that happens on that UT day. pvlib then shifts a sunrise or sunset by a whole
    day when it belongs to the solar day of a neighbouring transit, without recomputing it (so the shifted
    value is off by a day's change, up to a minute). The time of day is SPA's own answer.
    """
    day = pd.DatetimeIndex([pd.Timestamp(instant.date(), tz="UTC")])
    delta_t = float(skyfield_time(instant).delta_t)
    frame = pvlib.solarposition.sun_rise_set_transit_spa(day, latitude, longitude, delta_t=delta_t)
    spa = frame[kind].iloc[0].to_pydatetime(warn=False)  # ns → µs
    return signed_seconds((instant - spa).total_seconds())


def spa_geometric_elevation(instant: dt.datetime, latitude: float, longitude: float) -> float:
    delta_t = float(skyfield_time(instant).delta_t)
    frame = pvlib.solarposition.spa_python(pd.DatetimeIndex([instant]), latitude, longitude, delta_t=delta_t)
    return float(frame["elevation"].iloc[0])


@pytest.mark.parametrize(("zone", "date", "latitude", "longitude"), MID_LATITUDE_DAYS)
def test_events_match_spa(zone, date, latitude, longitude):
    events = events_for(zone, date, latitude, longitude)
    assert events.state == "normal"
    for kind, ours in [
        ("sunrise", events.sunrise),
        ("transit", events.solar_noon),
        ("sunset", events.sunset),
    ]:
        # Both use −0.8333° geocentric; the rest is ephemeris detail and UT1 − UTC (< 0.9 s).
        assert abs(spa_event_seconds_apart(kind, ours, latitude, longitude)) < 5, kind


@pytest.mark.parametrize(("zone", "date", "latitude", "longitude"), MID_LATITUDE_DAYS)
def test_solar_noon_reads_twelve_on_the_sundial_and_lies_in_the_civil_day(zone, date, latitude, longitude):
    events = events_for(zone, date, latitude, longitude)
    start, end = civil_day(zone, dt.date.fromisoformat(date))
    assert start <= events.solar_noon < end
    assert ENGINE.sun_state(events.solar_noon, latitude, longitude).true_solar_seconds == pytest.approx(
        43200, abs=0.01
    )
    assert events.sunrise < events.solar_noon < events.sunset


@pytest.mark.parametrize(
    ("zone", "date", "latitude", "longitude", "state"),
    [
        ("Arctic/Longyearbyen", "2025-06-21", 78.2232, 15.6267, "polar_day"),
        ("Arctic/Longyearbyen", "2025-12-21", 78.2232, 15.6267, "polar_night"),
        ("Europe/Oslo", "2024-06-21", 69.6492, 18.9553, "polar_day"),
        ("Europe/Oslo", "2024-12-21", 69.6492, 18.9553, "polar_night"),
        ("Antarctica/McMurdo", "2024-12-21", -77.8460, 166.6760, "polar_day"),
        ("Antarctica/McMurdo", "2024-06-21", -77.8460, 166.6760, "polar_night"),
    ],
)
def test_polar_day_and_night(zone, date, latitude, longitude, state):
    events = events_for(zone, date, latitude, longitude)
    assert (events.state, events.sunrise, events.sunset) == (state, None, None)
    noon = ENGINE.sun_state(events.solar_noon, latitude, longitude)
    assert noon.true_solar_seconds == pytest.approx(43200, abs=0.01)
    if state == "polar_night":
        assert noon.elevation < 0
        assert events.day_length_minutes == 0
    else:
        midnight = ENGINE.sun_state(events.solar_noon + dt.timedelta(hours=12), latitude, longitude)
        assert midnight.elevation > UPPER_LIMB_ON_HORIZON_ELEVATION
        assert events.day_length_minutes == 24 * 60


def test_sunset_after_local_midnight_belongs_to_the_day_it_ends():
    # Tromsø, four days before the midnight Sun: the Sun sets at 00:12 on the 17th. It is the 16th's
    # sunset (the day length is sunset − sunrise of one solar day), returned with its own date.
    oslo = tzdata_zone("Europe/Oslo")
    events = events_for("Europe/Oslo", "2024-05-16", 69.6492, 18.9553)
    assert events.state == "normal"
    assert events.sunrise.astimezone(oslo).date() == dt.date(2024, 5, 16)
    assert events.sunset.astimezone(oslo).date() == dt.date(2024, 5, 17)
    assert 22 * 60 < events.day_length_minutes < 23 * 60


def test_first_day_of_the_midnight_sun_has_a_sunrise_and_no_sunset():
    events = events_for("Europe/Oslo", "2024-05-17", 69.6492, 18.9553)
    assert (events.state, events.sunset) == ("normal", None)
    assert events.sunrise < events.solar_noon
    midnight_after = ENGINE.sun_state(events.solar_noon + dt.timedelta(hours=12), 69.6492, 18.9553)
    assert midnight_after.elevation > UPPER_LIMB_ON_HORIZON_ELEVATION


def test_last_day_of_the_midnight_sun_has_a_sunset_and_no_sunrise():
    events = events_for("Europe/Oslo", "2024-07-25", 69.6492, 18.9553)
    assert (events.state, events.sunrise) == ("normal", None)
    assert events.sunset > events.solar_noon
    midnight_before = ENGINE.sun_state(events.solar_noon - dt.timedelta(hours=12), 69.6492, 18.9553)
    assert midnight_before.elevation > UPPER_LIMB_ON_HORIZON_ELEVATION


GRAZING_DAYS = [
    ("Europe/Oslo", "2024-05-16", 69.6492, 18.9553),  # sunset after local midnight
    ("Europe/Oslo", "2024-05-17", 69.6492, 18.9553),  # night of a few minutes before the midnight Sun
    ("Europe/Oslo", "2024-11-26", 69.6492, 18.9553),  # the Sun is up for 51 minutes
    ("Antarctica/McMurdo", "2024-02-20", -77.8460, 166.6760),
    ("Etc/UTC", "2024-03-18", 90.0, 0.0),  # the North Pole at the end of its night
    ("Etc/UTC", "2024-03-18", 89.9, 0.0),
]


@pytest.mark.parametrize(("zone", "date", "latitude", "longitude"), GRAZING_DAYS)
def test_grazing_events_find_the_standard_altitude(zone, date, latitude, longitude):
    # Where the Sun barely crosses the line, clock times are ill-conditioned (and SPA's own rise/set
    # routine drifts by a minute); what must hold is the altitude at the instants found.
    events = events_for(zone, date, latitude, longitude)
    found = [event for event in (events.sunrise, events.sunset) if event is not None]
    assert found
    for event in found:
        elevation = spa_geometric_elevation(event, latitude, longitude)
        assert elevation == pytest.approx(STANDARD_ALTITUDE_DEGREES - SOLAR_PARALLAX_DEGREES, abs=0.003)


def test_events_take_six_to_eight_engine_calls():
    # Two or three for noon, two for the solar midnights, one per event where the interpolated guess holds.
    for zone, date, latitude, longitude in MID_LATITUDE_DAYS:
        engine = CountingEngine()
        events_for(zone, date, latitude, longitude, engine=engine)
        assert 6 <= engine.calls <= 8, (zone, date, engine.calls)


# Near a pole the Sun's altitude changes slowly, and the drift of its declination moves it as much as the
# hour angle does: days where an earlier search stopped seconds to minutes from the crossing (as it did
# at 89.9° in GRAZING_DAYS).
NEAR_POLE_DAYS = [
    ("Etc/GMT+1", "2025-09-23", 89.6469345880691, -20.86279832299354),  # sunset 00:25:41 UTC, not 00:17:53
    ("Etc/GMT+5", "1931-09-21", -89.8548743871632, -69.79369444652947),  # sunrise 225 s off
    ("Etc/UTC", "2027-03-22", 88.4, 78.0),
    ("Etc/UTC", "2024-09-20", -90.0, 0.0),  # the South Pole's sunrise
    # The last day with the Sun up, only from 10:50 to 11:36 UTC: its altitude peaks before noon (the
    # declination falls fast), so before the sunrise the rate points away from it and false position runs.
    ("Etc/UTC", "1905-09-27", 89.36866429603927, 3.784446737929926),
    ("Etc/GMT+5", "1996-03-27", -87.9271330895386, -78.40524119486462),
]


@pytest.mark.parametrize(
    ("zone", "date", "latitude", "longitude"), MID_LATITUDE_DAYS + GRAZING_DAYS + NEAR_POLE_DAYS
)
def test_events_lie_within_the_tolerance_of_the_exact_crossings(zone, date, latitude, longitude):
    assert_events_within_tolerance(ENGINE, events_for(zone, date, latitude, longitude), latitude, longitude)


# Measured: at most 17 on 80,000 random near-pole and polar-circle days (its construction allows 68).
MAX_CALLS_NEAR_POLES = 20


@pytest.mark.parametrize(("zone", "date", "latitude", "longitude"), NEAR_POLE_DAYS)
def test_events_near_the_poles_take_few_engine_calls(zone, date, latitude, longitude):
    engine = CountingEngine()
    events = events_for(zone, date, latitude, longitude, engine=engine)
    assert events.sunrise is not None or events.sunset is not None
    assert engine.calls <= MAX_CALLS_NEAR_POLES, engine.calls


def test_events_come_in_utc_and_the_report_gives_them_in_the_zone():
    start, end = civil_day("Asia/Kathmandu", dt.date(2024, 3, 1))
    kathmandu = tzdata_zone("Asia/Kathmandu")
    in_utc = solar_events(ENGINE, start, end, 27.7172, 85.3240)
    local = report_at("UTC", "2024-03-01", "12:00", latitude=27.7172, longitude=85.3240,
                      timezone="Asia/Kathmandu").events
    assert local == in_utc  # the same instants
    for utc_event, local_event in [(in_utc.sunrise, local.sunrise), (in_utc.solar_noon, local.solar_noon),
                                   (in_utc.sunset, local.sunset)]:
        assert utc_event.utcoffset() == dt.timedelta(0)
        assert local_event.tzinfo is kathmandu
        assert local_event.utcoffset() == dt.timedelta(hours=5, minutes=45)



def test_day_length_counts_elapsed_time_when_the_clocks_change_between_sunrise_and_sunset():
    # Greece began summer time at 09:00 on 1 April 1979, with the Sun up: sunrise on EET, sunset on EEST.
    start, end = civil_day("Europe/Athens", dt.date(1979, 4, 1))
    in_utc = solar_events(ENGINE, start, end, 37.9667, 23.7167)
    local = report_at("UTC", "1979-04-01", "12:00", latitude=37.9667, longitude=23.7167,
                      timezone="Europe/Athens").events
    assert (local.sunrise.utcoffset(), local.sunset.utcoffset()) == (dt.timedelta(hours=2), dt.timedelta(hours=3))
    # 12 h 35 min 51 s of daylight; the clocks' readings, 06:11:36 to 19:47:27, are an hour more apart.
    assert local.day_length_minutes == pytest.approx(in_utc.day_length_minutes, abs=1e-6)
    assert local.day_length_minutes == pytest.approx(755.85, abs=0.01)

@settings(max_examples=60, deadline=None)
@given(
    date=st.dates(min_value=dt.date(1900, 1, 2), max_value=dt.date(2050, 12, 30)),
    latitude=st.floats(min_value=-90, max_value=90),
    longitude=st.floats(min_value=-180, max_value=180),
    zone_hours=st.integers(min_value=-12, max_value=14),
)
def test_the_engine_is_asked_only_within_the_span_prepared_first(date, latitude, longitude, zone_hours):
    # The fast engine fits the prepared span's days in one evaluation; an instant outside it would cost a
    # day fitted alone. Zones up to 14 h from the longitude's own (Kiritimati, Antarctic stations).
    start = dt.datetime.combine(date, dt.time(0), dt.UTC) - dt.timedelta(hours=zone_hours)
    engine = SpanCheckingEngine()
    solar_events(engine, start, start + dt.timedelta(days=1), latitude, longitude)
    [(first, last)] = engine.spans
    assert engine.asked and all(first <= asked <= last for asked in engine.asked)


def test_the_span_prepared_is_one_solar_day_unless_the_civil_day_centres_on_a_solar_midnight():
    engine = SpanCheckingEngine()
    start, end = civil_day("Europe/Paris", dt.date(2026, 7, 14))
    solar_events(engine, start, end, 48.8566, 2.3522)
    [(first, last)] = engine.spans
    assert last - first == 86400 + 2 * 17 * 60  # the solar day, and room for the equation of time
    noon = dt.datetime(2026, 7, 14, 12, tzinfo=dt.UTC).timestamp() - 2.3522 * 240
    assert (first + last) / 2 == pytest.approx(noon)
    # A civil day twelve hours off its longitude's: the transit nearest its middle may be either neighbour.
    start = dt.datetime(2000, 1, 1, 12, tzinfo=dt.UTC)
    solar_events(engine, start, start + dt.timedelta(days=1), 0.0, 0.0)
    first, last = engine.spans[-1]
    assert last - first == 2 * 86400 + 2 * 17 * 60


@settings(max_examples=40, deadline=None)
@given(
    date=st.dates(min_value=dt.date(1900, 1, 2), max_value=dt.date(2050, 12, 30)),
    latitude=st.floats(min_value=-90, max_value=90),
    longitude=st.floats(min_value=-180, max_value=180),
)
def test_events_are_always_a_consistent_answer(date, latitude, longitude):
    start = dt.datetime.combine(date, dt.time(0), dt.UTC) - dt.timedelta(hours=round(longitude / 15))
    engine = CountingEngine()
    events = solar_events(engine, start, start + dt.timedelta(days=1), latitude, longitude)
    assert events.state in {"normal", "polar_day", "polar_night"}
    assert abs(events.solar_noon - (start + dt.timedelta(hours=12))) < dt.timedelta(hours=1)
    if events.state == "normal":
        assert events.sunrise is not None or events.sunset is not None
    else:
        assert events.sunrise is None and events.sunset is None
    half_day = dt.timedelta(hours=12, minutes=1)
    for event in (events.sunrise, events.sunset):
        if event is not None:
            assert abs(event - events.solar_noon) < half_day
    if events.sunrise is not None and events.sunset is not None:
        # Daylight between them; or, near a pole, a night around noon between a set and a rise.
        assert events.sunrise < events.sunset or events.sunset < events.solar_noon < events.sunrise
    assert engine.calls <= 25


FAST_ENGINE = FastEngine()
SCAN_STEP_SECONDS = 60.0


def assert_every_crossing_is_one_days_event(latitude: float, longitude: float, first_day: dt.date, days: int):
    """Over consecutive solar days, the sunrises and sunsets reported are crossings of −0.8333° that a scan
    every minute finds, each reported by one day; and a crossing left out is a day's second rise (or
    set) where that day reports its first rise (or last set): none falls between two days' answers."""
    reported: list[tuple[str, float, int]] = []
    noons = []
    for day in range(days):
        start = dt.datetime.combine(first_day + dt.timedelta(days=day), dt.time(0), dt.UTC) - dt.timedelta(
            hours=round(longitude / 15))
        events = solar_events(FAST_ENGINE, start, start + dt.timedelta(days=1), latitude, longitude)
        noons.append(events.solar_noon.timestamp())
        reported += [(kind, event.timestamp(), day) for kind, event in
                     (("sunrise", events.sunrise), ("sunset", events.sunset)) if event is not None]
    scanned: list[tuple[str, float, float]] = []
    seconds, end = noons[0] - 43200, noons[-1] + 43200
    height = standard_altitude_height(FAST_ENGINE, seconds, latitude, longitude)
    while seconds < end:
        later = seconds + SCAN_STEP_SECONDS
        later_height = standard_altitude_height(FAST_ENGINE, later, latitude, longitude)
        if (height > 0) != (later_height > 0):
            scanned.append(("sunrise" if later_height > 0 else "sunset", seconds, later))
        seconds, height = later, later_height
    left_out = list(scanned)
    for kind, instant, _ in reported:
        found = [crossing for crossing in left_out
                 if crossing[0] == kind and crossing[1] - 1 <= instant <= crossing[2] + 1]
        assert len(found) == 1, (kind, instant, reported, scanned)
        left_out.remove(found[0])
    for kind, after, _ in left_out:
        day = min(range(days), key=lambda index: abs(noons[index] - after))
        # That day reported the same kind of event, earlier for a rise (its first), later for a set (its last).
        assert any(other_kind == kind and other_day == day and (instant < after if kind == "sunrise" else
                                                                 instant > after)
                   for other_kind, instant, other_day in reported), (kind, after, reported, scanned)


@pytest.mark.parametrize(
    ("latitude", "longitude", "first_day"),
    [
        (-90.0, 0.0, "2024-03-17"),  # the sunset falls in the morning of a solar day whose noon is below
        (90.0, 0.0, "2024-03-13"),
        (-90.0, 0.0, "2024-09-15"),
        (90.0, 0.0, "2024-09-19"),
        (-89.95, 45.0, "2024-03-17"),
        (89.99, -120.0, "2024-09-19"),
        (69.6492, 18.9553, "2024-05-12"),  # Tromsø: the midnight Sun begins
        (69.6492, 18.9553, "2024-07-20"),  # and ends
        (69.6492, 18.9553, "2024-11-22"),  # the polar night begins
        (-77.8460, 166.6760, "2024-02-16"),  # McMurdo: the midnight Sun ends
        (-89.8125, 0.0, "1977-09-17"),  # below at noon, the Sun peeks over the line for 29 min after it
        (-89.7536, -78.9168, "1978-03-15"),  # ... and on the last day it does so
        (89.7798, -35.3615, "1923-03-15"),  # a day that rises, sets and rises again: its first rise counts
        (89.1538, 32.0408, "1972-09-17"),  # a day that sets, rises and sets again: its last set counts
        (-90.0, 180.0, "1979-09-17"),  # a sunrise 21 s from a solar midnight, where noon + 12 h was already past
        (89.92734, 180.0, "1992-03-15"),  # the altitude turns 4 h from noon and from midnight: rise, set, rise
        (-89.9338, 126.4276, "2035-03-15"),  # ... and sets, rises, sets: the middle two were missed
    ],
)
def test_every_crossing_of_the_standard_altitude_is_one_days_event(latitude, longitude, first_day):
    assert_every_crossing_is_one_days_event(latitude, longitude, dt.date.fromisoformat(first_day), 10)


@settings(max_examples=25, deadline=None)
@given(
    year=st.integers(min_value=1900, max_value=2050),
    equinox=st.sampled_from([(3, 15), (9, 17)]),
    distance_from_pole=st.floats(min_value=0, max_value=1),
    south=st.booleans(),
    longitude=st.floats(min_value=-180, max_value=180),
)
def test_near_a_pole_every_crossing_is_one_days_event(year, equinox, distance_from_pole, south, longitude):
    # Within a degree of a pole the declination's drift competes with the hour angle: a day's one event
    # may fall on the other side of its noon.
    latitude = (distance_from_pole - 90) if south else (90 - distance_from_pole)
    assert_every_crossing_is_one_days_event(latitude, longitude, dt.date(year, *equinox), 10)
