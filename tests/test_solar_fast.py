"""The fast engine against the reference engine (per-call skyfield), NREL SPA, and through solar events.

The bounds are the issue's: true solar time within 0.01 s, azimuth and elevation within 0.0005° wherever
the reference elevation is above −1° (skyfield stops refracting below −1°, so there the apparent
elevation jumps by 0.65° across the cut-off and a bound would only test which side a sample falls).
The reference side is evaluated as skyfield arrays, so 12,000 samples take seconds, not half a minute.
"""

from __future__ import annotations

import datetime as dt
import functools
import random
import subprocess
import sys
import threading
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from skyfield.earthlib import refract
from solar_checks import (
    CASES,
    MID_LATITUDE_DAYS,
    SPA_REFRACTION_CUTOFF,
    assert_events_within_tolerance,
    degrees_apart,
    events_for,
    spa_at,
)

from solarserv.solar import RADIANS_PER_SECOND, STANDARD_PRESSURE_MBAR, STANDARD_TEMPERATURE_C, fast
from solarserv.solar.ephemeris import iers_table_coverage, skyfield_time, timescale, ut1_minus_utc_seconds
from solarserv.solar.fast import FastEngine
from solarserv.solar.reference import SkyfieldEngine, apparent_sun, signed_seconds, utc_seconds_of_day

FAST = FastEngine()
REFERENCE = SkyfieldEngine()

TRUE_SOLAR_TIME_BOUND_SECONDS = 0.01
POSITION_BOUND_DEGREES = 0.0005
LOWEST_CHECKED_ELEVATION = -1.0
EVENT_BOUND = dt.timedelta(seconds=TRUE_SOLAR_TIME_BOUND_SECONDS)  # measured: 3e-5 s

# Instants in UTC: the supported civil dates (1900-01-01 … 2050-12-31) seen from every time zone.
FIRST_INSTANT = dt.datetime(1899, 12, 31, 10, tzinfo=dt.UTC)
LAST_INSTANT = dt.datetime(2051, 1, 1, 12, tzinfo=dt.UTC)
RANDOM_DAYS = 600
SAMPLES_PER_DAY = 20  # the engine fits whole days: sampling days, then instants, keeps the test fast


@dataclass(frozen=True)
class Sample:
    instant: dt.datetime
    latitude: float
    longitude: float


@dataclass(frozen=True)
class ReferenceArrays:
    """``SkyfieldEngine.sun_state`` for many samples at once, field by field."""

    true_solar_seconds: np.ndarray
    equation_of_time_minutes: np.ndarray
    declination: np.ndarray
    azimuth: np.ndarray
    elevation: np.ndarray


def random_samples(seed: int) -> list[Sample]:
    rng = random.Random(seed)
    days = (LAST_INSTANT - FIRST_INSTANT).days
    samples = []
    for _ in range(RANDOM_DAYS):
        day_start = FIRST_INSTANT + dt.timedelta(days=rng.randrange(days))
        for _ in range(SAMPLES_PER_DAY):
            instant = day_start + dt.timedelta(microseconds=rng.randrange(86_400_000_000))
            latitude = float(np.degrees(np.arcsin(rng.uniform(-1, 1))))  # uniform over the sphere
            samples.append(Sample(instant, latitude, rng.uniform(-180, 180)))
    return samples


def reference_arrays(samples: list[Sample]) -> ReferenceArrays:
    """The reference engine's own computation (``apparent_sun``) on skyfield arrays. The times come from
    the reference's ``skyfield_time``, one instant at a time, joined into one array ``Time`` by TT."""
    times = [skyfield_time(sample.instant) for sample in samples]
    t = timescale().tt_jd(np.array([x.whole for x in times]), np.array([x.tt_fraction for x in times]))
    latitudes = np.array([sample.latitude for sample in samples])
    longitudes = np.array([sample.longitude for sample in samples])
    utc_seconds = np.array([utc_seconds_of_day(sample.instant) for sample in samples])
    sun = apparent_sun(t, latitudes, longitudes, utc_seconds)
    return ReferenceArrays(
        true_solar_seconds=sun.true_solar_seconds % 86400,
        equation_of_time_minutes=((sun.equation_of_time_seconds + 43200) % 86400 - 43200) / 60,
        declination=sun.declination,
        azimuth=sun.azimuth % 360,
        elevation=sun.elevation,
    )


def test_the_service_path_does_not_load_the_reference_engine():
    # The reference engine is what tests and benchmarks hold the service's engine to; the service itself,
    # engine and search for events included, needs nothing of it.
    loaded = "import sys, solarserv.pipeline; print('solarserv.solar.reference' in sys.modules)"
    answer = subprocess.run([sys.executable, "-c", loaded], capture_output=True, text=True, check=True)
    assert answer.stdout == "False\n"


def test_the_array_reference_is_the_reference_engine():
    samples = random_samples(seed=7)[::400]
    arrays = reference_arrays(samples)
    for index, sample in enumerate(samples):
        sun = REFERENCE.sun_state(sample.instant, sample.latitude, sample.longitude)
        assert signed_seconds(sun.true_solar_seconds - arrays.true_solar_seconds[index]) == pytest.approx(0, abs=1e-6)
        assert sun.equation_of_time_minutes == pytest.approx(arrays.equation_of_time_minutes[index], abs=1e-8)
        assert sun.declination == pytest.approx(arrays.declination[index], abs=1e-10)
        assert degrees_apart(sun.azimuth, arrays.azimuth[index]) < 1e-9
        assert sun.elevation == pytest.approx(arrays.elevation[index], abs=1e-9)


@functools.cache
def random_comparison() -> tuple[list[Sample], ReferenceArrays]:
    """Random samples and the reference's answers, computed once for the tests that share them."""
    samples = random_samples(seed=2024)
    return samples, reference_arrays(samples)


def test_fast_engine_matches_the_reference_on_random_instants_and_places():
    samples, expected = random_comparison()
    states = [FAST.sun_state(sample.instant, sample.latitude, sample.longitude) for sample in samples]

    def errors(field: str) -> np.ndarray:
        return np.array([getattr(state, field) for state in states]) - getattr(expected, field)

    assert all(0 <= state.true_solar_seconds < 86400 for state in states)
    true_solar_error = (errors("true_solar_seconds") + 43200) % 86400 - 43200
    assert np.abs(true_solar_error).max() <= TRUE_SOLAR_TIME_BOUND_SECONDS
    assert np.abs(errors("equation_of_time_minutes") * 60).max() <= TRUE_SOLAR_TIME_BOUND_SECONDS
    assert np.abs(errors("declination")).max() <= POSITION_BOUND_DEGREES

    visible = expected.elevation > LOWEST_CHECKED_ELEVATION
    assert visible.sum() > 5000  # half the samples are in daylight or twilight
    azimuth_error = (errors("azimuth") + 180) % 360 - 180
    assert np.abs(azimuth_error[visible]).max() <= POSITION_BOUND_DEGREES
    assert np.abs(errors("elevation")[visible]).max() <= POSITION_BOUND_DEGREES


def test_hour_angle_and_declination_match_the_reference_and_sun_state():
    samples, expected = random_comparison()
    answers = np.array([FAST.hour_angle_and_declination(s.instant.timestamp(), s.longitude) for s in samples])
    hour_angle_seconds = answers[:, 0] / RADIANS_PER_SECOND
    assert np.abs(hour_angle_seconds).max() <= 43200  # wrapped into ±12 h
    hour_angle_error = (hour_angle_seconds - expected.true_solar_seconds) % 86400 - 43200
    assert np.abs(hour_angle_error).max() <= TRUE_SOLAR_TIME_BOUND_SECONDS
    assert np.abs(np.degrees(answers[:, 1]) - expected.declination).max() <= POSITION_BOUND_DEGREES

    # The same fit as sun_state: equal but for the float Unix seconds' rounding (< 0.5 µs).
    for sample, (hour_angle, declination) in zip(samples[:500], answers[:500], strict=True):
        sun = FAST.sun_state(sample.instant, sample.latitude, sample.longitude)
        assert abs(signed_seconds(hour_angle / RADIANS_PER_SECOND + 43200 - sun.true_solar_seconds)) < 1e-6
        assert np.degrees(declination) == pytest.approx(sun.declination, abs=1e-10)


# Where the time scale steps: leap seconds and the ends of the IERS table fall on 0h UTC.
TABLE_FIRST, TABLE_LAST = iers_table_coverage()
MICROSECOND = dt.timedelta(microseconds=1)
EDGE_INSTANTS = [
    FIRST_INSTANT,
    LAST_INSTANT,
    dt.datetime(1972, 6, 30, 23, 59, 59, 999999, tzinfo=dt.UTC),  # the first leap second, before the table
    dt.datetime(1972, 7, 1, tzinfo=dt.UTC),
    TABLE_FIRST - MICROSECOND,
    TABLE_FIRST,
    dt.datetime(2016, 12, 31, 23, 59, 59, 999999, tzinfo=dt.UTC),  # a leap second inside the table
    dt.datetime(2017, 1, 1, tzinfo=dt.UTC),
    TABLE_LAST - MICROSECOND,
    TABLE_LAST,  # the table's last instant: UT1 − UTC = +0.094 s there, 0 a microsecond later
    TABLE_LAST + MICROSECOND,
    dt.datetime(2024, 7, 1, 14, 30, tzinfo=dt.timezone(dt.timedelta(hours=5, minutes=45))),  # not UTC
]


@pytest.mark.parametrize("instant", EDGE_INSTANTS, ids=lambda instant: instant.isoformat())
@pytest.mark.parametrize(("latitude", "longitude"), [(51.4769, -0.0005), (-33.9249, 18.4241), (1.87, -157.43)])
def test_fast_engine_matches_the_reference_where_the_time_scale_steps(instant, latitude, longitude):
    ours = FAST.sun_state(instant, latitude, longitude)
    theirs = REFERENCE.sun_state(instant, latitude, longitude)
    assert abs(signed_seconds(ours.true_solar_seconds - theirs.true_solar_seconds)) <= 1e-3
    assert abs(ours.equation_of_time_minutes - theirs.equation_of_time_minutes) * 60 <= 1e-3
    assert ours.declination == pytest.approx(theirs.declination, abs=1e-9)
    if theirs.elevation > LOWEST_CHECKED_ELEVATION:
        assert degrees_apart(ours.azimuth, theirs.azimuth) <= POSITION_BOUND_DEGREES
        assert ours.elevation == pytest.approx(theirs.elevation, abs=POSITION_BOUND_DEGREES)
    our_hour_angle, our_declination = FAST.hour_angle_and_declination(instant.timestamp(), longitude)
    their_hour_angle, their_declination = REFERENCE.hour_angle_and_declination(instant.timestamp(), longitude)
    assert abs(signed_seconds((our_hour_angle - their_hour_angle) / RADIANS_PER_SECOND)) <= 1e-3
    assert our_declination == pytest.approx(their_declination, abs=1e-11)


# The equation of time changes by at most 30 s a day, 0.35 ms a second; the engine's fits must not add a step where
# one day's fit meets the next (0h UTC). Measured from UTC, it steps only with UT1 − UTC (leap seconds, the
# table's ends).
EQUATION_OF_TIME_SECOND_BOUND = 1e-3
ONE_SECOND = dt.timedelta(seconds=1)


@settings(max_examples=200, deadline=None)
@given(st.datetimes(FIRST_INSTANT.replace(tzinfo=None), (LAST_INSTANT - ONE_SECOND).replace(tzinfo=None)),
       st.booleans())
def test_the_equation_of_time_is_continuous_but_for_the_steps_of_ut1_minus_utc(instant, across_midnight):
    start = instant.replace(tzinfo=dt.UTC)
    if across_midnight:  # where two days' fits meet
        start = start.replace(hour=0, minute=0, second=0, microsecond=0) - ONE_SECOND / 2
    end = start + ONE_SECOND
    change = (FAST.sun_state(end, 0.0, 0.0).equation_of_time_minutes
              - FAST.sun_state(start, 0.0, 0.0).equation_of_time_minutes) * 60
    step = ut1_minus_utc_seconds(end) - ut1_minus_utc_seconds(start)
    assert abs(change - step) < EQUATION_OF_TIME_SECOND_BOUND


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.label)
def test_fast_engine_matches_spa(case):
    # The reference engine's own SPA comparison (tests/test_solar_reference.py), with the fast engine.
    sun = FAST.sun_state(case.instant, case.latitude, case.longitude)
    spa = spa_at(case.instant, case.latitude, case.longitude)
    assert abs(signed_seconds(sun.true_solar_seconds - spa.true_solar_seconds)) < 0.1
    assert degrees_apart(sun.azimuth, spa.azimuth) < 0.01
    if not -1 <= spa.geometric_elevation < SPA_REFRACTION_CUTOFF:
        assert sun.elevation == pytest.approx(spa.apparent_elevation, abs=0.01)


EVENT_DAYS = [
    *MID_LATITUDE_DAYS,
    ("Europe/Oslo", "2024-05-16", 69.6492, 18.9553),  # sunset after local midnight
    ("Europe/Oslo", "2024-05-17", 69.6492, 18.9553),  # first day of the midnight Sun: no sunset
    ("Europe/Oslo", "2024-11-26", 69.6492, 18.9553),  # the Sun is up for 51 minutes
    ("Europe/Oslo", "2024-12-21", 69.6492, 18.9553),  # polar night
    ("Antarctica/McMurdo", "2024-12-21", -77.8460, 166.6760),  # polar day
    ("Etc/UTC", "2024-03-18", 90.0, 0.0),  # the North Pole at the end of its night
    # A leap second at 0h UTC between noon and sunset: UT1 − UTC steps, so the interpolated first guess
    # misses by a third of a second and the search takes more probes.
    ("America/Los_Angeles", "2016-12-31", 34.0522, -118.2437),
    ("Pacific/Honolulu", "1979-12-31", 21.3069, -157.8583),
]


@pytest.mark.parametrize(("zone", "date", "latitude", "longitude"), EVENT_DAYS)
def test_events_from_the_fast_engine_match_the_reference(zone, date, latitude, longitude):
    ours = events_for(zone, date, latitude, longitude, engine=FAST)
    theirs = events_for(zone, date, latitude, longitude, engine=REFERENCE)
    assert ours.state == theirs.state
    for mine, reference in [
        (ours.sunrise, theirs.sunrise),
        (ours.solar_noon, theirs.solar_noon),
        (ours.sunset, theirs.sunset),
    ]:
        assert (mine is None) == (reference is None)
        if mine is not None:
            assert abs(mine - reference) <= EVENT_BOUND


@pytest.mark.parametrize(("zone", "date", "latitude", "longitude"), EVENT_DAYS)
def test_events_from_the_fast_engine_lie_within_the_tolerance(zone, date, latitude, longitude):
    events = events_for(zone, date, latitude, longitude, engine=FAST)
    assert_events_within_tolerance(FAST, events, latitude, longitude)


def test_refraction_is_skyfields_including_its_cut_off():
    # Every 0.01° from −2° to 90°, and both sides of the cut-offs (−1° and 89.9° apparent).
    geometric = np.concatenate([np.linspace(-2, 90, 9201), [-1 - 1e-9, -1, -0.999, 89.9, 89.9 + 1e-9]])
    expected = refract(geometric, STANDARD_TEMPERATURE_C, STANDARD_PRESSURE_MBAR)
    ours = np.array([fast._refracted(float(altitude)) for altitude in geometric])
    assert np.abs(ours - expected).max() < 1e-12
    assert (ours == geometric).any() and (ours > geometric + 0.5).any()  # cut off, and refracted


def answers_of(engine: FastEngine, sample: Sample) -> tuple:
    return (engine.sun_state(sample.instant, sample.latitude, sample.longitude),
            engine.hour_angle_and_declination(sample.instant.timestamp(), sample.longitude))


def test_answers_do_not_depend_on_threads_or_cache_evictions():
    samples = random_samples(seed=11)[:160]  # 8 days
    expected = [answers_of(FAST, s) for s in samples]
    crowded = FastEngine(cached_days=3)  # every thread keeps evicting the others' days
    results: dict[int, list] = {}

    def work(worker: int) -> None:
        order = samples[worker::4] + samples  # start on different days, then all share every day
        results[worker] = [(s, answers_of(crowded, s)) for s in order]

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    by_sample = dict(zip(samples, expected, strict=True))
    assert len(results) == 4
    for answers in results.values():
        for sample, answer in answers:
            assert answer == by_sample[sample]


@pytest.fixture
def evaluations(monkeypatch) -> list[list[int]]:
    """The days of each skyfield evaluation the fast engine makes from now on, one list per evaluation."""
    made: list[list[int]] = []
    fit_group = fast._fit_group

    def recorded(days, *arguments):
        made.append(list(days))
        return fit_group(days, *arguments)

    monkeypatch.setattr(fast, "_fit_group", recorded)
    return made


def day_number(instant: dt.datetime) -> int:
    return (instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).days


def assert_same_answers(ours: list, instants: list[dt.datetime]) -> None:
    """As the days fitted one by one (FAST) answer: to rounding, as a batch solves its fits together."""
    for answer, instant in zip(ours, instants, strict=True):
        theirs = FAST.sun_state(instant, 48.8566, 2.3522)
        assert answer.true_solar_seconds == pytest.approx(theirs.true_solar_seconds, abs=1e-9)
        assert answer.declination == pytest.approx(theirs.declination, abs=1e-12)
        assert answer.azimuth == pytest.approx(theirs.azimuth, abs=1e-12)
        assert answer.elevation == pytest.approx(theirs.elevation, abs=1e-12)


def answers(engine: FastEngine, instants: list[dt.datetime]) -> list:
    return [engine.sun_state(instant, 48.8566, 2.3522) for instant in instants]


def test_prepare_fits_the_missing_days_of_a_span_in_one_evaluation(evaluations):
    engine = FastEngine()
    noon = dt.datetime(2026, 7, 14, 12, tzinfo=dt.UTC)
    engine.sun_state(noon, 0.0, 0.0)
    engine.prepare((noon - dt.timedelta(days=1)).timestamp(), (noon + dt.timedelta(days=1)).timestamp())
    assert evaluations == [[day_number(noon)], [day_number(noon) - 1, day_number(noon) + 1]]
    instants = [noon + dt.timedelta(hours=hours) for hours in range(-36, 36, 5)]
    ours = answers(engine, instants)
    assert len(evaluations) == 2  # every answer from the fits already made
    assert_same_answers(ours, instants)


def test_a_span_across_the_end_of_the_iers_table_is_fitted_in_two_evaluations(evaluations):
    _, table_end = iers_table_coverage()
    engine = FastEngine()
    engine.prepare((table_end - dt.timedelta(days=2)).timestamp(), (table_end + dt.timedelta(days=1)).timestamp())
    end_day = day_number(table_end)
    assert evaluations == [[end_day - 2, end_day - 1], [end_day, end_day + 1]]
    # The table's closing instant included: the day before answers it.
    instants = [table_end + dt.timedelta(hours=hours) for hours in range(-48, 48, 4)]
    ours = answers(engine, instants)
    assert len(evaluations) == 2
    assert_same_answers(ours, instants)


def test_the_cache_keeps_the_days_fitted_last(evaluations):
    engine = FastEngine(cached_days=3)
    first = dt.datetime(1950, 3, 1, 6, tzinfo=dt.UTC)
    engine.prepare(first.timestamp(), (first + dt.timedelta(days=9)).timestamp())
    assert len(evaluations) == 1 and len(evaluations[0]) == 10
    engine.sun_state(first + dt.timedelta(days=9), 0.0, 0.0)
    assert len(evaluations) == 1  # one of the last three fitted
    engine.sun_state(first, 0.0, 0.0)
    assert evaluations[-1] == [day_number(first)]  # dropped, fitted again
