"""Civil time → UTC: offsets to the second, gaps, folds, DST as people know it, day bounds."""

from __future__ import annotations

import bisect
import datetime as dt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solarserv.civil import day_bounds_utc, format_offset, resolve
from solarserv.errors import ApiError
from solarserv.geo.periods import zone_periods
from solarserv.geo.tzhistory import zone_history
from solarserv.geo.zones import TZDATA_VERSION, canonical_zone, zone, zone_names

UTC = dt.UTC
HOUR = dt.timedelta(hours=1)


def hours(value: float) -> dt.timedelta:
    return dt.timedelta(hours=value)


def at(date: str, time: str, zone_name: str):
    return resolve(dt.date.fromisoformat(date), dt.time.fromisoformat(time), zone_name)


def refused(date: str, time: str, zone_name: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        at(date, time, zone_name)
    assert (caught.value.code, caught.value.status) == ("INVALID_REQUEST", 422)
    return caught.value


# --- offsets -----------------------------------------------------------------------------------


def test_paris_summer_is_summer_time_on_central_european_time():
    civil = at("2026-07-14", "14:30", "Europe/Paris")
    assert civil.utc == dt.datetime(2026, 7, 14, 12, 30, tzinfo=UTC)
    assert (civil.utc_offset, civil.dst_offset, civil.standard_offset) == (hours(2), HOUR, HOUR)
    assert civil.dst and civil.abbreviation == "CEST"
    assert not civil.ambiguous and not civil.local_mean_time
    assert civil.zone == "Europe/Paris" and civil.local == dt.datetime(2026, 7, 14, 14, 30)
    assert civil.tzdata_version == TZDATA_VERSION


def test_paris_1905_uses_paris_mean_time_to_the_second():
    civil = at("1905-06-01", "12:00", "Europe/Paris")
    assert civil.utc_offset == dt.timedelta(minutes=9, seconds=21)
    assert civil.utc == dt.datetime(1905, 6, 1, 11, 50, 39, tzinfo=UTC)
    assert civil.abbreviation == "PMT" and civil.local_mean_time
    assert civil.standard_offset == civil.utc_offset and not civil.dst


def test_local_mean_time_ends_when_paris_adopts_greenwich_time_in_1911():
    assert at("1911-03-10", "12:00", "Europe/Paris").local_mean_time
    after = at("1911-03-12", "12:00", "Europe/Paris")
    assert after.utc_offset == dt.timedelta(0) and not after.local_mean_time


def test_sydney_january_is_southern_summer_time():
    civil = at("2026-01-15", "12:00", "Australia/Sydney")
    assert (civil.utc_offset, civil.dst_offset, civil.standard_offset) == (hours(11), HOUR, hours(10))
    assert civil.abbreviation == "AEDT"


def test_kathmandu_has_a_quarter_hour_offset():
    civil = at("2026-01-15", "12:00", "Asia/Kathmandu")
    assert civil.utc_offset == civil.standard_offset == hours(5.75)
    assert civil.utc == dt.datetime(2026, 1, 15, 6, 15, tzinfo=UTC)


def test_kiritimati_at_plus_14_is_a_day_ahead_of_utc():
    civil = at("2026-01-15", "12:00", "Pacific/Kiritimati")
    assert civil.utc_offset == hours(14) and not civil.dst
    assert civil.utc == dt.datetime(2026, 1, 14, 22, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("offset", "text"),
    [
        (hours(2), "+02:00"),
        (hours(-9.5), "-09:30"),
        (dt.timedelta(minutes=9, seconds=21), "+00:09:21"),
        (-dt.timedelta(minutes=25, seconds=21), "-00:25:21"),
        (dt.timedelta(0), "+00:00"),
    ],
)
def test_format_offset(offset, text):
    assert format_offset(offset) == text


# --- negative DST re-based -----------------------------------------------------------------------


def test_dublin_winter_is_standard_time_not_negative_dst():
    # zoneinfo itself reports dst() == -1 h here: tzdata encodes Irish winter time as negative DST.
    assert dt.datetime(2026, 1, 15, 12, tzinfo=zone("Europe/Dublin")).dst() == -HOUR
    civil = at("2026-01-15", "12:00", "Europe/Dublin")
    assert (civil.utc_offset, civil.dst_offset, civil.standard_offset) == (hours(0), hours(0), hours(0))
    assert not civil.dst and civil.abbreviation == "GMT"


def test_dublin_summer_is_summer_time_on_greenwich_time():
    assert dt.datetime(2026, 7, 15, 12, tzinfo=zone("Europe/Dublin")).dst() == dt.timedelta(0)
    civil = at("2026-07-15", "12:00", "Europe/Dublin")
    assert (civil.utc_offset, civil.dst_offset, civil.standard_offset) == (HOUR, HOUR, hours(0))
    assert civil.dst and civil.abbreviation == "IST"


@pytest.mark.parametrize("zone_name,date,offset,standard,summer", [
    # zoneinfo guesses dst() 3 h / 2 h / 2 h here: the standard offset changed as summer time began.
    ("Asia/Ust-Nera", "1982-07-01", 12, 11, 1),
    ("America/Scoresbysund", "1982-07-01", 0, -1, 1),
    ("America/Inuvik", "1980-07-01", -6, -7, 1),
    ("Antarctica/Troll", "2026-07-01", 2, 0, 2),  # a real two-hour summer time stays two hours
])
def test_summer_time_is_measured_from_the_standard_offset_in_force(zone_name, date, offset, standard, summer):
    civil = at(date, "12:00", zone_name)
    assert (civil.utc_offset, civil.standard_offset, civil.dst_offset) == (
        hours(offset), hours(standard), hours(summer))


def test_dublin_1968_to_1971_all_year_irish_standard_time_stays_standard():
    civil = at("1970-06-01", "12:00", "Europe/Dublin")
    assert (civil.utc_offset, civil.dst_offset) == (HOUR, hours(0))


@pytest.mark.parametrize(
    ("date", "offset", "dst"),
    [
        ("2026-01-15", HOUR, True),  # between Ramadan periods: +01:00 as summer time on +00:00
        ("2026-03-01", hours(0), False),  # Ramadan: back to +00:00, standard time
        ("2026-07-01", HOUR, True),
    ],
)
def test_casablanca_keeps_a_standard_offset_of_zero(date, offset, dst):
    civil = at(date, "12:00", "Africa/Casablanca")
    assert civil.utc_offset == offset and civil.dst is dst
    assert civil.standard_offset == hours(0)


def test_namibia_after_2017_is_standard_time_although_it_follows_negative_dst():
    winter_2010 = at("2010-07-01", "12:00", "Africa/Windhoek")
    summer_2010 = at("2010-12-01", "12:00", "Africa/Windhoek")
    today = at("2026-06-01", "12:00", "Africa/Windhoek")
    assert (winter_2010.utc_offset, winter_2010.dst) == (HOUR, False)
    assert (summer_2010.utc_offset, summer_2010.dst_offset) == (hours(2), HOUR)
    assert summer_2010.standard_offset == HOUR
    assert (today.utc_offset, today.dst, today.standard_offset) == (hours(2), False, hours(2))


def test_wartime_cest_that_zoneinfo_reads_as_negative_dst_is_summer_time():
    # Vilnius went from Moscow time (+03) to German CEST (+02) in 1941; zoneinfo measures that
    # summer time from the Moscow offset and reports dst() == -1 h.
    assert dt.datetime(1941, 8, 1, 12, tzinfo=zone("Europe/Vilnius")).dst() == -HOUR
    civil = at("1941-08-01", "12:00", "Europe/Vilnius")
    assert (civil.utc_offset, civil.dst_offset, civil.standard_offset) == (hours(2), HOUR, HOUR)


def _history_period(civil):
    """The period of the zone's history (the one its text is told from) in effect at civil.utc."""
    periods = zone_history(civil.zone).periods
    return periods[bisect.bisect_right([period.start for period in periods[1:]], civil.utc.replace(tzinfo=None))]


@pytest.mark.parametrize(("zone_name", "date", "offset", "standard", "summer"), [
    # Winamac, Indiana: Eastern standard time until April 2006, then Central time, whose summer time kept
    # the clocks at -05:00; back to Eastern time on 11 March 2007, the day summer time began.
    ("America/Indiana/Winamac", "2006-01-15", -5, -5, 0),
    ("America/Indiana/Winamac", "2006-07-01", -5, -6, 1),
    ("America/Indiana/Winamac", "2007-07-01", -4, -5, 1),  # not 2 h on Central time
    ("America/Indiana/Winamac", "2026-01-15", -5, -5, 0),
    # Paris: German time (CET, CEST) from June 1940; liberated in August 1944, back to Western European
    # time with double summer time (WEMT) over it — zoneinfo's dst() says 1 h on +01:00.
    ("Europe/Paris", "1941-07-01", 2, 1, 1),  # not 2 h on Western European time
    ("Europe/Paris", "1942-12-01", 1, 1, 0),
    ("Europe/Paris", "1943-07-01", 2, 1, 1),
    ("Europe/Paris", "1944-09-15", 2, 0, 2),
    ("Europe/Paris", "1945-01-15", 1, 0, 1),
    # Kyiv: Moscow time until German CET/CEST from 20 September 1941 — zoneinfo's dst() says -1 h.
    ("Europe/Kyiv", "1941-07-01", 3, 3, 0),
    ("Europe/Kyiv", "1941-10-01", 2, 1, 1),
    ("Europe/Kyiv", "1942-07-01", 2, 1, 1),
    ("Europe/Kyiv", "1942-12-01", 1, 1, 0),
    ("Europe/Kyiv", "1944-01-15", 3, 3, 0),
    # Hong Kong 1941: summer time (HKST), then half an hour of "winter time" (HKWT) until the Japanese
    # occupation's +09:00 (JST) — zoneinfo's dst() measures HKWT from JST: -30 min.
    ("Asia/Hong_Kong", "1941-07-01", 9, 8, 1),
    ("Asia/Hong_Kong", "1941-11-01", 8.5, 8, 0.5),
    ("Asia/Hong_Kong", "1942-07-01", 9, 9, 0),
    # London: British summer time all year from February 1940, double summer time (BDST) in the summers
    # of 1941–45 and 1947 — two hours on GMT, not (zoneinfo's dst()) one hour on +01:00.
    ("Europe/London", "1941-01-15", 1, 0, 1),
    ("Europe/London", "1941-06-01", 2, 0, 2),
    ("Europe/London", "1947-07-01", 2, 0, 2),
])
def test_standard_and_summer_time_as_tzdata_records_them(zone_name, date, offset, standard, summer):
    """The standard offset is the one tzdata's zone line gives, whatever came before or after."""
    civil = at(date, "12:00", zone_name)
    expected = (hours(offset), hours(standard), hours(summer))
    assert (civil.utc_offset, civil.standard_offset, civil.dst_offset) == expected
    period = _history_period(civil)
    assert (period.utc_offset, period.standard_offset, period.utc_offset - period.standard_offset) == expected


# --- times that do not exist or happen twice -----------------------------------------------------


def test_paris_spring_forward_gap_is_refused_naming_the_jump():
    error = refused("2026-03-29", "02:30", "Europe/Paris")
    assert error.message == (
        "local_time 02:30 on 2026-03-29 does not exist in Europe/Paris: "
        "clocks went forward from 02:00 to 03:00 (UTC+01:00 → UTC+02:00)"
    )


def test_lord_howe_gap_is_half_an_hour():
    error = refused("2026-10-04", "02:15", "Australia/Lord_Howe")
    assert "clocks went forward from 02:00 to 02:30 (UTC+10:30 → UTC+11:00)" in error.message
    assert at("2026-10-04", "02:30", "Australia/Lord_Howe").utc_offset == hours(11)
    assert at("2026-10-04", "01:59:59", "Australia/Lord_Howe").utc_offset == hours(10.5)


@pytest.mark.parametrize("time", ["00:00", "12:00", "23:59:59"])
def test_apia_skipped_2011_12_30_entirely(time):
    error = refused("2011-12-30", time, "Pacific/Apia")
    jump = "from 2011-12-30 00:00 to 2011-12-31 00:00 (UTC-10:00 → UTC+14:00)"
    assert f"clocks went forward {jump}" in error.message


def test_new_york_fall_back_uses_the_first_occurrence():
    civil = at("2026-11-01", "01:30", "America/New_York")
    assert civil.ambiguous
    assert civil.abbreviation == "EDT" and civil.dst_offset == HOUR
    assert civil.utc == dt.datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # the EST reading would be 06:30
    assert not at("2026-11-01", "02:00", "America/New_York").ambiguous


def test_the_first_clocks_of_a_station_own_the_hours_that_precede_them_in_utc():
    # Palmer's clocks began at 0h UTC on 1 January 1965, which they showed as 21:00 on 31 December (-03).
    # Read as UTC (tzdata's "-00": no clocks yet) that evening would also lie before them; the clocks win.
    civil = at("1964-12-31", "21:30", "Antarctica/Palmer")
    assert civil.utc == dt.datetime(1965, 1, 1, 0, 30, tzinfo=UTC)
    assert (civil.utc_offset, civil.no_local_time, civil.ambiguous) == (hours(-3), False, False)
    earlier = at("1964-12-31", "20:59", "Antarctica/Palmer")
    assert earlier.no_local_time and earlier.utc == dt.datetime(1964, 12, 31, 20, 59, tzinfo=UTC)


def _forward_jumps(zone_name: str, year: int):
    """(instant, offset before, offset after) of each forward jump in the year, found by plain
    scanning (days, then hours, minutes, seconds), independent of civil.py's bisection."""
    tz = zone(zone_name)

    def offset(instant):
        return instant.astimezone(tz).utcoffset()

    day = dt.datetime(year, 1, 1, tzinfo=UTC)
    while day.year == year:
        if offset(day + dt.timedelta(days=1)) > offset(day):
            start = day
            for step in (dt.timedelta(hours=1), dt.timedelta(minutes=1), dt.timedelta(seconds=1)):
                while offset(start + step) == offset(start):
                    start += step
            if offset(start + dt.timedelta(seconds=1)) > offset(start):
                yield start + dt.timedelta(seconds=1), offset(start), offset(start + dt.timedelta(seconds=1))
        day += dt.timedelta(days=1)


def clock(wall: dt.datetime) -> str:
    return wall.strftime("%H:%M:%S" if wall.second else "%H:%M")


CANONICAL_ZONES = sorted(name for name in zone_names() if canonical_zone(name) == name)


@pytest.mark.parametrize("year", [1916, 1942, 1979, 2026])
def test_every_gap_message_names_the_exact_jump(year):
    checked = 0
    for zone_name in CANONICAL_ZONES:
        for jump, before, after in _forward_jumps(zone_name, year):
            gap_start = (jump + before).replace(tzinfo=None)
            gap_end = (jump + after).replace(tzinfo=None)
            error = refused(gap_start.date().isoformat(), gap_start.time().isoformat(), zone_name)
            offsets = f"(UTC{format_offset(before)} → UTC{format_offset(after)})"
            if gap_end.date() == gap_start.date():
                jump = f"from {clock(gap_start)} to {clock(gap_end)}"
            else:
                jump = f"from {gap_start:%Y-%m-%d} {clock(gap_start)} to {gap_end:%Y-%m-%d} {clock(gap_end)}"
            assert f"clocks went forward {jump} {offsets}" in error.message
            last_second = gap_start - dt.timedelta(seconds=1)
            assert resolve(last_second.date(), last_second.time(), zone_name).utc_offset == before
            assert resolve(gap_end.date(), gap_end.time(), zone_name).utc_offset == after
            checked += 1
    assert checked > 30  # many zones change clocks in each of these years


MOMENTS = st.datetimes(
    min_value=dt.datetime(1900, 1, 1), max_value=dt.datetime(2050, 12, 31, 23, 59, 59)
).map(lambda moment: moment.replace(microsecond=0))  # the API takes whole seconds


@settings(max_examples=400, deadline=None)
@given(zone_name=st.sampled_from(sorted(zone_names())), moment=MOMENTS)
def test_resolve_is_consistent_for_any_zone_and_time(zone_name, moment):
    tz = zone(zone_name)
    try:
        civil = resolve(moment.date(), moment.time(), zone_name)
    except ApiError as error:
        assert (error.code, error.status) == ("INVALID_REQUEST", 422)
        # Refused only if the clocks never showed it: neither reading comes back to the same wall time.
        for fold in (0, 1):
            shown = moment.replace(tzinfo=tz, fold=fold).astimezone(UTC).astimezone(tz)
            assert shown.replace(tzinfo=None) != moment
        return
    assert (civil.utc + civil.utc_offset).replace(tzinfo=None) == moment
    assert civil.utc.astimezone(tz).replace(tzinfo=None) == moment
    assert civil.dst_offset >= dt.timedelta(0)
    assert civil.standard_offset == civil.utc_offset - civil.dst_offset
    second_reading = moment.replace(tzinfo=tz, fold=1).astimezone(UTC)
    # A reading where tzdata records no clocks ("-00", Davis after 1964-10-31 10:00 UTC) is no second one.
    read_as_utc = not zone_periods(zone_name).at(second_reading.replace(tzinfo=None)).inhabited
    assert civil.ambiguous == (second_reading != civil.utc and not read_as_utc)
    assert civil.utc <= second_reading


# --- day bounds ---------------------------------------------------------------------------------


def local_clock(instant: dt.datetime, zone_name: str) -> dt.datetime:
    return instant.astimezone(zone(zone_name)).replace(tzinfo=None)


@pytest.mark.parametrize(
    ("date", "length"),
    [("2026-03-29", hours(23)), ("2026-07-14", hours(24)), ("2026-10-25", hours(25))],
)
def test_paris_day_lengths(date, length):
    start, end = day_bounds_utc(dt.date.fromisoformat(date), "Europe/Paris")
    assert end - start == length
    assert local_clock(start, "Europe/Paris") == dt.datetime.fromisoformat(date)


@pytest.mark.parametrize(
    ("zone_name", "date"), [("America/Havana", "2026-03-08"), ("America/Santiago", "2026-09-06")]
)
def test_a_day_whose_midnight_was_skipped_starts_at_one(zone_name, date):
    start, end = day_bounds_utc(dt.date.fromisoformat(date), zone_name)
    assert local_clock(start, zone_name) == dt.datetime.fromisoformat(date).replace(hour=1)
    assert local_clock(start - dt.timedelta(seconds=1), zone_name).date() < dt.date.fromisoformat(date)
    assert end - start == hours(23)


def test_a_day_whose_midnight_the_clocks_showed_twice_starts_at_the_first():
    # Havana fell back from 01:00 CDT to 00:00 CST on 2024-11-03: midnight at 04:00 and again at 05:00 UTC.
    start, end = day_bounds_utc(dt.date(2024, 11, 3), "America/Havana")
    assert (start, end - start) == (dt.datetime(2024, 11, 3, 4, 0, tzinfo=UTC), hours(25))


def test_apia_skipped_day_has_no_length():
    start, end = day_bounds_utc(dt.date(2011, 12, 30), "Pacific/Apia")
    assert start == end == dt.datetime(2011, 12, 30, 10, 0, tzinfo=UTC)
    before, _ = day_bounds_utc(dt.date(2011, 12, 29), "Pacific/Apia")
    assert start - before == hours(24)


def test_new_york_fall_back_day_is_25_hours():
    start, end = day_bounds_utc(dt.date(2026, 11, 1), "America/New_York")
    assert (start, end - start) == (dt.datetime(2026, 11, 1, 4, 0, tzinfo=UTC), hours(25))


# --- one reading of standard and summer time, shared with the zone history --------------------------


def _sample_walls(zone_name: str):
    """Wall times to resolve: noon on 1 January and 1 July of every year 1900–2050, and the last second
    before and the first second of every period of the zone's history that starts in 1900–2050."""
    for year in range(1900, 2051):
        for month in (1, 7):
            yield dt.datetime(year, month, 1, 12)
    tz = zone(zone_name)
    for period in zone_history(zone_name).periods[1:]:
        if dt.datetime(1900, 1, 1) <= period.start < dt.datetime(2051, 1, 1):
            for instant in (period.start - dt.timedelta(seconds=1), period.start):
                yield instant.replace(tzinfo=UTC).astimezone(tz).replace(tzinfo=None)


def _disagreements(zone_name: str) -> list[str]:
    found = []
    for wall in _sample_walls(zone_name):
        civil = resolve(wall.date(), wall.time(), zone_name)
        period = _history_period(civil)
        history = (period.utc_offset, period.standard_offset, period.summer)
        if history != (civil.utc_offset, civil.standard_offset, civil.dst):
            found.append(f"{zone_name} {wall} (UTC {civil.utc:%Y-%m-%d %H:%M:%S}): resolve says "
                         f"UTC{format_offset(civil.utc_offset)} on standard UTC{format_offset(civil.standard_offset)}"
                         f"{' (summer time)' if civil.dst else ''}, the history's period "
                         f"UTC{format_offset(period.utc_offset)} on UTC{format_offset(period.standard_offset)}"
                         f"{' (summer time)' if period.summer else ''}")
    return found


def test_resolve_and_the_zone_history_read_every_instant_alike():
    """Every zone, 1900–2050, and both sides of every transition: the numbers (resolve) and the history
    text (zone_history) give the same offset, standard offset and summer time."""
    found = [line for zone_name in CANONICAL_ZONES for line in _disagreements(zone_name)]
    assert not found, f"{len(found)} disagreements, e.g.:\n" + "\n".join(found[:25])


def test_nuuk_kept_minus_two_until_the_eu_rule_began_in_october_2023():
    # zoneinfo reads this wall time with the rule that began only at 01:00 UTC the next day (−01:00 with
    # summer time), so the same instant would come back as 22:30: the clocks showed −02:00 all evening.
    civil = resolve(dt.date(2023, 10, 28), dt.time(23, 30), "America/Nuuk")
    assert civil.utc == dt.datetime(2023, 10, 29, 1, 30, tzinfo=UTC)
    assert (civil.utc_offset, civil.dst_offset, civil.ambiguous) == (dt.timedelta(hours=-2), dt.timedelta(0), False)
    assert day_bounds_utc(dt.date(2023, 10, 28), "America/Nuuk")[1] == dt.datetime(2023, 10, 29, 2, tzinfo=UTC)


TRANSITION_OFFSETS = [dt.timedelta(seconds=seconds) for seconds in (-3600, -1, 0, 1, 1799, 3600, 7199)]


def test_every_clock_reading_near_every_transition_resolves_to_when_the_clocks_showed_it():
    """Both sides of every transition 1900–2050 in every zone: the wall time the clocks showed at an
    instant (zoneinfo reads UTC → local right) resolves to that instant, or, if the clocks showed it twice,
    to the earlier one. A time read as UTC where tzdata records no clocks ("-00") resolves to the clocks'
    reading when they showed it too."""
    wrong = []
    for zone_name in CANONICAL_ZONES:
        tz, periods = zone(zone_name), zone_periods(zone_name)
        for period in periods.periods[1:]:
            for offset in TRANSITION_OFFSETS:
                instant = (period.start + offset).replace(tzinfo=UTC)
                if not dt.datetime(1900, 1, 2, tzinfo=UTC) <= instant < dt.datetime(2050, 12, 31, tzinfo=UTC):
                    continue
                wall = instant.astimezone(tz).replace(tzinfo=None)
                civil = resolve(wall.date(), wall.time(), zone_name)
                read_as_utc = not periods.at(instant.replace(tzinfo=None)).inhabited
                if not (civil.utc == instant or (civil.ambiguous and civil.utc < instant)
                        or (read_as_utc and not civil.no_local_time)) or \
                        (civil.utc + civil.utc_offset).replace(tzinfo=None) != wall:
                    wrong.append(f"{zone_name} {wall}: {civil.utc} {format_offset(civil.utc_offset)}, not {instant}")
    assert not wrong, f"{len(wrong)} wrong, e.g.:\n" + "\n".join(wrong[:20])
