"""The periods of every zone: offsets as zoneinfo has them, footer rules expanded, the horizon."""

from __future__ import annotations

import datetime as dt
import io
import struct
from zoneinfo import ZoneInfo

import pytest

from solarserv.geo.periods import LISTED_UNTIL, zone_periods
from solarserv.geo.tzformats import FooterRule
from solarserv.geo.zones import zone, zone_names
from solarserv.solar.ephemeris import SUPPORTED_LAST_DATE

UTC = dt.UTC
SECOND = dt.timedelta(seconds=1)


def test_every_period_of_every_zone_agrees_with_zoneinfo():
    """Each period's offset and abbreviation are zoneinfo's (same files) from its first second, the one
    before is the previous period's — footer-rule periods included — and summer time is never negative."""
    checked = 0
    for name in sorted(zone_names()):
        tz = zone(name)
        listed = zone_periods(name).periods
        for previous, period in zip(listed, listed[1:], strict=False):
            start = period.start.replace(tzinfo=UTC).astimezone(tz)
            assert (start.utcoffset(), start.tzname()) == (period.utc_offset, period.abbreviation), (name, period)
            assert (start - SECOND).utcoffset() == previous.utc_offset, (name, period)
            checked += 1
        for period in listed:
            assert period.summer_time >= dt.timedelta(0), (name, period)
            assert period.summer == (period.summer_time > dt.timedelta(0))
    assert checked > 40_000


def test_periods_reach_past_the_last_supported_date_in_every_zone():
    # The last local midnight the service answers for, in the zone furthest behind UTC (−12:00).
    assert dt.datetime.combine(SUPPORTED_LAST_DATE, dt.time()) + dt.timedelta(days=1, hours=12) < LISTED_UNTIL
    paris = zone_periods("Europe/Paris").periods
    assert paris[-1].start.year == LISTED_UNTIL.year - 1  # the footer rule, expanded to 2051
    assert zone_periods("Europe/Paris").at(dt.datetime(2050, 7, 1)).abbreviation == "CEST"


def test_links_share_the_periods_of_their_zone():
    assert zone_periods("Europe/Amsterdam").periods is zone_periods("Europe/Brussels").periods


def _footer_only_tzif(footer: str) -> bytes:
    """A version-2 TZif file with no transitions and one local time type, so that the footer's POSIX TZ
    rule alone gives every offset (RFC 8536 §3.3)."""
    header = struct.pack(">4sc15x6L", b"TZif", b"2", 0, 0, 0, 0, 1, 4)
    block = struct.pack(">lBB", 0, 0, 0) + b"XXX\0"
    return header + block + header + block + b"\n" + footer.encode() + b"\n"


@pytest.mark.parametrize("footer", [
    "CET-1CEST,M3.5.0,M10.5.0/3",  # Mm.w.d, week 5 = the last
    "AEST-10AEDT,M10.1.0,M4.1.0/3",  # southern hemisphere: summer time spans the new year
    "<-02>2<-01>,M3.5.0/-1,M10.5.0/0",  # a negative time of day (Nuuk: 22:00 the day before)
    "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0",  # half-hour summer time, its offset given (Lord Howe)
    "<-03>3<-02>,M9.1.6/24,M4.1.6/24",  # 24:00, midnight at the end of the day (Santiago)
    "<+13>-13<+14>,M9.5.0/50,M4.1.0/75",  # hours past 24 (RFC 8536)
])
@pytest.mark.parametrize("year", [2023, 2024, 2030])
def test_footer_rules_change_the_clocks_when_zoneinfo_does(footer, year):
    tz = ZoneInfo.from_file(io.BytesIO(_footer_only_tzif(footer)))
    rule = FooterRule.parse(footer)
    changes = rule.transitions(year)
    assert [kind for _, kind in changes] in ([rule.summer, rule.standard], [rule.standard, rule.summer])
    for when, kind in changes:
        after = when.replace(tzinfo=UTC).astimezone(tz)
        before = (when - SECOND).replace(tzinfo=UTC).astimezone(tz)
        other = rule.standard if kind == rule.summer else rule.summer
        assert (after.utcoffset(), after.tzname()) == (kind.utc_offset, kind.abbreviation)
        assert before.utcoffset() == other.utc_offset


@pytest.mark.parametrize(("footer", "year", "summer_starts", "summer_ends"), [
    # Jn: day n of 1–365, 29 February never counted: J59 is 28 February, J300 27 October, every year.
    ("<+00>0<+01>,J59/12,J300/12", 2023, dt.datetime(2023, 2, 28, 12), dt.datetime(2023, 10, 27, 11)),
    ("<+00>0<+01>,J59/12,J300/12", 2024, dt.datetime(2024, 2, 28, 12), dt.datetime(2024, 10, 27, 11)),
    # n: day n of 0–365, 29 February counted: day 59 is 1 March, or 29 February in a leap year.
    ("<+00>0<+01>,59/12,300/12", 2023, dt.datetime(2023, 3, 1, 12), dt.datetime(2023, 10, 28, 11)),
    ("<+00>0<+01>,59/12,300/12", 2024, dt.datetime(2024, 2, 29, 12), dt.datetime(2024, 10, 27, 11)),
])
def test_footer_rules_by_day_of_the_year(footer, year, summer_starts, summer_ends):
    """POSIX's day-of-year forms, which no tzdata zone uses today, as glibc reads them (CPython 3.11's
    zoneinfo puts J59 on 29 February in leap years and every n a day early, so it cannot be the check)."""
    rule = FooterRule.parse(footer)
    assert rule.transitions(year) == [(summer_starts, rule.summer), (summer_ends, rule.standard)]
