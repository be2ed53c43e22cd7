"""The reference engine against NREL SPA (pvlib), published equation-of-time values, and the time-scale rule.

SPA and skyfield are independent implementations (VSOP87 + IAU 1980 nutation versus JPL DE421 + IAU 2000A),
so agreement to a fraction of a second of solar time and 0.001° of position says both define and compute
the same thing. To compare one physical instant, SPA gets a time stamp equal to the instant's UT1 and
ΔT = TT − UT1 as skyfield has it at that instant.
"""

from __future__ import annotations

import datetime as dt
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from solar_checks import CASES, SPA_REFRACTION_CUTOFF, Case, degrees_apart, spa_at

from solarserv.solar import RADIANS_PER_SECOND, ephemeris, reference
from solarserv.solar.ephemeris import (
    iers_table_coverage,
    julian_date,
    skyfield_time,
    timescale,
    ut1_minus_utc_seconds,
)
from solarserv.solar.reference import SkyfieldEngine, signed_seconds

ENGINE = SkyfieldEngine()
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.label)
def test_true_solar_time_matches_spa(case: Case):
    sun = ENGINE.sun_state(case.instant, case.latitude, case.longitude)
    spa = spa_at(case.instant, case.latitude, case.longitude)
    # Same definition (geocentric apparent hour angle), two ephemerides: a few hundredths of a second.
    assert abs(signed_seconds(sun.true_solar_seconds - spa.true_solar_seconds)) < 0.1
    assert abs(signed_seconds(sun.true_solar_seconds - spa.true_solar_seconds_by_eot)) < 1.0
    # Our EoT is measured from UTC, SPA's from UT1.
    our_eot_from_ut1 = sun.equation_of_time_minutes * 60 - ut1_minus_utc_seconds(case.instant)
    assert our_eot_from_ut1 == pytest.approx(spa.equation_of_time_minutes * 60, abs=1.0)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.label)
def test_position_matches_spa(case: Case):
    sun = ENGINE.sun_state(case.instant, case.latitude, case.longitude)
    spa = spa_at(case.instant, case.latitude, case.longitude)
    assert degrees_apart(sun.azimuth, spa.azimuth) < 0.01
    # Both refract above the horizon and neither far below it. In the 0.17° band between SPA's cut-off
    # (geometric −0.833°) and skyfield's (−1°) only skyfield refracts, so elevations differ there.
    if not -1 <= spa.geometric_elevation < SPA_REFRACTION_CUTOFF:
        assert sun.elevation == pytest.approx(spa.apparent_elevation, abs=0.01)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.label)
def test_hour_angle_and_declination_are_sun_states(case: Case):
    # The cheap method the event search calls is the geocentric part of sun_state, from a Unix time.
    sun = ENGINE.sun_state(case.instant, case.latitude, case.longitude)
    hour_angle, declination = ENGINE.hour_angle_and_declination(case.instant.timestamp(), case.longitude)
    assert -math.pi <= hour_angle <= math.pi
    assert signed_seconds(hour_angle / RADIANS_PER_SECOND + 43200 - sun.true_solar_seconds) == (
        pytest.approx(0, abs=1e-5)
    )
    assert math.degrees(declination) == pytest.approx(sun.declination, abs=1e-10)


def test_cases_cover_day_night_and_the_horizon():
    elevations = [ENGINE.sun_state(c.instant, c.latitude, c.longitude).elevation for c in CASES]
    assert any(e > 30 for e in elevations)
    assert any(e < -10 for e in elevations)
    assert any(-1 < e < 5 for e in elevations)  # refraction near the horizon is exercised


def test_polar_cases_are_really_polar():
    by_label = {case.label: case for case in CASES}
    for label, above in [
        ("Tromsø midnight sun", True),
        ("McMurdo midnight sun", True),
        ("Longyearbyen midnight sun", True),
        ("Tromsø polar night", False),
        ("Longyearbyen polar night", False),
        ("McMurdo polar night", False),
    ]:
        case = by_label[label]
        sun = ENGINE.sun_state(case.instant, case.latitude, case.longitude)
        solar_hour = sun.true_solar_seconds / 3600
        # The midnight Sun is up near solar midnight; in the polar night it is down near solar noon.
        assert (sun.elevation > 0) == above, label
        assert (solar_hour < 3 or solar_hour > 21) if above else (9 < solar_hour < 15), label


def test_equation_of_time_matches_meeus_worked_example():
    # J. Meeus, Astronomical Algorithms, 2nd ed. (1998), example 28.b: 1992 October 13.0 TD,
    # E = +13m 42.6s. Meeus's mean-longitude formula is the one SPA uses (≈ 0.2 s from ours, see spa_at).
    instant = timescale().tt(1992, 10, 13).utc_datetime()
    eot_seconds = ENGINE.sun_state(instant, 0, 0).equation_of_time_minutes * 60
    eot_from_ut1 = eot_seconds - ut1_minus_utc_seconds(instant)
    assert eot_from_ut1 == pytest.approx(13 * 60 + 42.6, abs=0.5)


def test_equation_of_time_matches_the_nautical_almanac():
    # The Nautical Almanac lists the equation of time to the second at 00h and 12h UT. G. LaPook (NavList,
    # 2011-01-23) quotes it for a noon sight on 2011 January 23: 11m 45s, the Sun slow.
    sun = ENGINE.sun_state(dt.datetime(2011, 1, 23, 12, tzinfo=dt.UTC), 0, 0)
    assert sun.equation_of_time_minutes * 60 == pytest.approx(-(11 * 60 + 45), abs=1.0)


def daily_equation_of_time(first: dt.date, days: int) -> list[float]:
    noons = (dt.datetime.combine(first + dt.timedelta(days=n), dt.time(12), dt.UTC) for n in range(days))
    return [ENGINE.sun_state(noon, 0, 0).equation_of_time_minutes for noon in noons]


def test_equation_of_time_extremes_fall_within_published_figures():
    # Published extremes for the present era (sources round differently): early November +16m 24s
    # (J. Giesen, geoastro.de, 12h UT in 2001) to +16m 33s (Wikipedia, "Equation of time"); mid-February
    # −14m 6s (Wikipedia) to −14m 20s (Giesen). SPA agrees with us to 0.2 s: +16m 25.6s and −14m 13.6s.
    november_maximum = max(daily_equation_of_time(dt.date(2001, 10, 25), 20))
    february_minimum = min(daily_equation_of_time(dt.date(2001, 2, 1), 25))
    assert 16 + 24 / 60 <= november_maximum <= 16 + 33 / 60
    assert -(14 + 20 / 60) <= february_minimum <= -(14 + 6 / 60)


@pytest.mark.parametrize(
    ("instant", "literal_utc_error_seconds"),
    [
        (dt.datetime(1905, 7, 4, 22, 0, tzinfo=dt.UTC), 36.6),
        (dt.datetime(1950, 12, 25, 13, 0, tzinfo=dt.UTC), 13.1),
    ],
)
def test_old_dates_read_the_clock_as_mean_solar_time(monkeypatch, instant, literal_utc_error_seconds):
    """Before 1972 UT1 = UTC. Skyfield's UTC scale is TAI − 10 s before 1972, not the mean solar time
    clocks kept then: read literally, it puts true solar time off by +36.6 s in 1905 and +13 s in 1950."""
    latitude, longitude = 40.7128, -74.0060
    spa = spa_at(instant, latitude, longitude)  # given UT1 = UTC and ΔT = TT − UT1 explicitly
    engine_error = signed_seconds(
        ENGINE.sun_state(instant, latitude, longitude).true_solar_seconds - spa.true_solar_seconds
    )
    assert abs(engine_error) < 0.1

    monkeypatch.setattr(reference, "skyfield_time", timescale().from_datetime)
    literal_error = signed_seconds(
        ENGINE.sun_state(instant, latitude, longitude).true_solar_seconds - spa.true_solar_seconds
    )
    assert literal_error == pytest.approx(literal_utc_error_seconds, abs=0.5)


def test_ut1_comes_from_the_iers_table_only_where_it_has_data():
    first, last = iers_table_coverage()
    assert first == dt.datetime(1973, 1, 2, tzinfo=dt.UTC)  # the first row of IERS finals2000A
    assert last > dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    inside = [
        first,
        dt.datetime(1990, 6, 1, tzinfo=dt.UTC),
        dt.datetime(2016, 12, 31, 12, tzinfo=dt.UTC),
        last,
    ]
    for instant in inside:
        dut1 = ut1_minus_utc_seconds(instant)
        assert dut1 == pytest.approx(float(timescale().from_datetime(instant).dut1), abs=1e-9)
        assert 0 < abs(dut1) < 0.9
    outside = [
        dt.datetime(1899, 12, 31, 10, tzinfo=dt.UTC),
        dt.datetime(1972, 6, 30, tzinfo=dt.UTC),
        first - dt.timedelta(seconds=1),
        last + dt.timedelta(seconds=1),
        dt.datetime(2051, 1, 1, 13, tzinfo=dt.UTC),
    ]
    for instant in outside:
        assert ut1_minus_utc_seconds(instant) == 0.0


@pytest.mark.parametrize(
    "instant",
    [
        dt.datetime(1905, 7, 4, 22, tzinfo=dt.UTC),
        dt.datetime(1999, 4, 16, 3, 4, 36, tzinfo=dt.UTC),
        dt.datetime(2040, 1, 1, tzinfo=dt.UTC),
    ],
)
def test_skyfield_time_carries_the_chosen_ut1(instant):
    ut1 = skyfield_time(instant).ut1
    expected = julian_date(instant) + ut1_minus_utc_seconds(instant) / 86400
    assert (ut1 - expected) * 86400 == pytest.approx(0, abs=1e-4)  # a Julian-date float resolves ~40 µs


def test_ephemeris_is_the_de421_file_shipped_by_skyfield_data():
    kernel = ephemeris.ephemeris()
    assert kernel.filename == "de421.bsp"
    assert "skyfield_data" in str(kernel.path)


@settings(max_examples=150, deadline=None)
@given(
    instant=st.datetimes(
        min_value=dt.datetime(1900, 1, 1),
        max_value=dt.datetime(2050, 12, 31, 23, 59, 59),
        timezones=st.just(dt.UTC),
    ),
    latitude=st.floats(min_value=-90, max_value=90),
    longitude=st.floats(min_value=-180, max_value=180),
)
def test_sun_state_stays_in_range(instant, latitude, longitude):
    sun = ENGINE.sun_state(instant, latitude, longitude)
    assert 0 <= sun.true_solar_seconds < 86400
    assert abs(sun.equation_of_time_minutes) < 16.6
    assert -90 <= sun.elevation <= 90
    assert 0 <= sun.azimuth < 360
    assert abs(sun.declination) < 23.46  # obliquity 23.452° in 1900, plus nutation
