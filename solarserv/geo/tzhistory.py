"""The civil-time history of an IANA zone, told from its periods (``solarserv.geo.periods``).

The story as people tell it: the local mean time clocks kept first, the day standard time was adopted,
the years with summer time, and the other changes of the zone's standard offset. The periods are the
ones ``civil.resolve`` reads a request's instant from, so the history and the numbers always agree on
what was standard time and what was summer time (Dublin's negative DST re-based, see periods.py).
"""

from __future__ import annotations

import datetime as dt
import functools
import itertools
from dataclasses import dataclass

from solarserv.geo.periods import Period, zone_periods
from solarserv.geo.zones import TZDATA_VERSION, canonical_zone

# An offset change this large moved the place across the date line: the calendar jumped a day.
_DATE_LINE_SHIFT = dt.timedelta(hours=12)
_DAY = dt.timedelta(days=1)


@dataclass(frozen=True)
class DateLineCrossing:
    """A change that moved the clocks a day or so across the date line, and the dates that made odd."""

    forward: bool  # True: the calendar jumped ahead, skipping `dates`; False: it went back over `dates`
    dates: tuple[dt.date, ...]  # skipped (forward) or shown twice (backward)


@dataclass(frozen=True)
class OffsetChange:
    """The zone's standard offset changed on a date: the local date of the clocks before the change, or
    across the date line the first date the new clocks showed (the old clocks' date was skipped, or the
    new offset began on an earlier date)."""

    date: dt.date
    old_offset: dt.timedelta
    new_offset: dt.timedelta
    abbreviation: str | None  # of the new standard time; None when the change came under summer time
    local_time: bool = True  # False: from then tzdata records no local time ("-00", a station left empty)
    mean_time: bool = False  # back to a mean time after standard time (Lagos 1908, Tallinn 1919)
    date_line: DateLineCrossing | None = None


@dataclass(frozen=True)
class SummerTimeRun:
    """Consecutive calendar years in which summer time was in effect at some point."""

    first_year: int
    last_year: int  # for a run still observed: the tzdata release year
    still_observed: bool

    @property
    def years(self) -> int:
        return self.last_year - self.first_year + 1


@dataclass(frozen=True)
class ZoneHistory:
    zone: str
    # tzdata's main data merges zones that agree since 1970 and keeps the other names as links
    # (Europe/Amsterdam → Europe/Brussels): the history is then the linked zone's.
    record_of: str
    tzdata_version: str
    periods: tuple[Period, ...]
    local_mean_time: dt.timedelta | None  # the offset before the first transition, when it was LMT
    mean_time_changes: tuple[OffsetChange, ...]  # to other mean times (a city's), before standard time
    standard_time_adopted: OffsetChange | None  # the change from mean time to a standard offset
    offset_changes: tuple[OffsetChange, ...]  # every later change of the standard offset
    summer_time: tuple[SummerTimeRun, ...]

    def __hash__(self) -> int:
        # The zone and the tzdata release determine everything else; hashing every period instead would
        # cost more than rendering the text this history is a cache key for (hookspecs.Narrative shared).
        return hash((self.zone, self.tzdata_version))

    @property
    def found(self) -> bool:
        """tzdata records at least one change of the zone's clocks."""
        return len(self.periods) > 1

    @property
    def recorded_since(self) -> dt.date | None:
        """The local date of the first recorded change."""
        return self.periods[1].local_start(self.periods[0]).date() if self.found else None


@functools.cache
def zone_history(zone: str) -> ZoneHistory:
    """The history of `zone` (an IANA name tzdata knows), told once per zone and process.

    Raises ``unknown_zone(zone)`` (TIMEZONE_RESOLUTION_FAILED) for a name the package lacks.
    """
    periods = zone_periods(zone).periods
    changes = _standard_offset_changes(periods)
    adopted_at = next((index for index, (_, before, after) in enumerate(changes)
                       if before.mean_time and after.inhabited and not after.mean_time), None)
    if adopted_at is None:  # no adoption recorded: every change counts as a later one
        before_adoption, adoption, after_adoption = [], None, changes
    else:
        before_adoption, adoption, after_adoption = (
            changes[:adopted_at], changes[adopted_at][0], changes[adopted_at + 1:])
    first = periods[0]
    return ZoneHistory(
        zone=zone,
        record_of=canonical_zone(zone),
        tzdata_version=TZDATA_VERSION,
        periods=periods,
        local_mean_time=first.utc_offset if first.abbreviation == "LMT" else None,
        mean_time_changes=tuple(change for change, _, _ in before_adoption),
        standard_time_adopted=adoption,
        offset_changes=tuple(change for change, _, _ in after_adoption),
        summer_time=_summer_time_runs(periods, int(TZDATA_VERSION[:4])),
    )


def _standard_offset_changes(periods: tuple[Period, ...]) -> list[tuple[OffsetChange, Period, Period]]:
    """Every change of the standard offset, and every stop and restart of local time, with the periods
    before and after it. The first local time of a place that had none ("-00") starts its record rather
    than changing it; a station left empty later (Macquarie 1919–1948) stops it and starts it again."""
    changes = []
    current = periods[0]
    recording = current.inhabited
    for previous, period in itertools.pairwise(periods):
        if period.standard_offset != current.standard_offset or period.inhabited != current.inhabited:
            if recording:
                crossing = _date_line_crossing(previous, period)
                date = (period.start + period.utc_offset if crossing else period.local_start(previous)).date()
                change = OffsetChange(date, current.standard_offset,
                                      period.standard_offset, None if period.summer else period.abbreviation,
                                      local_time=period.inhabited,
                                      mean_time=period.mean_time and not current.mean_time,
                                      date_line=crossing)
                changes.append((change, current, period))
            recording = recording or period.inhabited
            current = period
    return changes


def _date_line_crossing(previous: Period, period: Period) -> DateLineCrossing | None:
    """Samoa 2011 skipped 30 December, Manila 1844 skipped 31 December; Samoa 1892 kept 4 July twice."""
    assert period.start is not None
    shift = period.utc_offset - previous.utc_offset
    if not previous.inhabited or abs(shift) < _DATE_LINE_SHIFT:
        return None
    old_clocks, new_clocks = period.start + previous.utc_offset, period.start + period.utc_offset
    # A date whose midnight the old clocks reached at the change was not lived on them at all.
    last_old_date = old_clocks.date() - (_DAY if old_clocks.time() == dt.time() else dt.timedelta(0))
    if shift > dt.timedelta(0):
        first, end = last_old_date + _DAY, new_clocks.date()
    else:
        first, end = new_clocks.date(), last_old_date + _DAY
    return DateLineCrossing(shift > dt.timedelta(0), tuple(first + day * _DAY for day in range((end - first).days)))


def _summer_time_runs(periods: tuple[Period, ...], release_year: int) -> tuple[SummerTimeRun, ...]:
    """Group the local calendar years that had summer time into runs of consecutive years."""
    years: set[int] = set()
    for index, period in enumerate(periods):
        if not period.summer:
            continue
        start = period.local_start(periods[index - 1]) if index else None
        end = periods[index + 1].local_start(period) if index + 1 < len(periods) else None
        if start is None:
            continue  # summer time before any record: cannot be dated
        last_year = release_year if end is None else (end - dt.timedelta(seconds=1)).year
        years.update(range(start.year, last_year + 1))

    # Years after the tzdata release are predictions (the footer rule's, listed to 2051; Gaza's
    # Ramadan-dependent dates, listed to 2086): a run reaching them is "still observed" and is counted
    # up to the release year.
    still_observed = any(year > release_year for year in years)
    runs: list[SummerTimeRun] = []
    for year in sorted(year for year in years if year <= release_year):
        if runs and runs[-1].last_year == year - 1:
            runs[-1] = SummerTimeRun(runs[-1].first_year, year, False)
        else:
            runs.append(SummerTimeRun(year, year, False))
    if still_observed and runs:
        runs[-1] = SummerTimeRun(runs[-1].first_year, runs[-1].last_year, True)
    return tuple(runs)
