"""Civil (clock) time in an IANA zone → a UTC instant, read the way people read their clocks.

Three things zoneinfo leaves to us:

* **Times that do not exist.** When clocks jump forward, the skipped wall times are refused with a
  message naming the real jump (found in the data, not assumed to be one hour).
* **Times that happen twice.** When clocks fall back, the first occurrence is used and flagged.
* **Standard time and summer time.** zoneinfo's ``dst()`` is a guess from the TZif file (negative in
  Dublin's winter, one hour in London's 1941 double summer time). The standard offset and the summer
  time come instead from the zone's period at the instant (``solarserv.geo.periods``): the standard
  offset of tzdata's zone line, with negative DST re-based as tzdata's rearguard format does — the
  same periods the zone's history text is told from.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from solarserv.errors import invalid
from solarserv.geo.periods import zone_periods
from solarserv.geo.zones import TZDATA_VERSION, zone
from solarserv.models import CivilInstant
from solarserv.timefmt import format_clock, format_offset

_UTC = dt.UTC
_MIDNIGHT, _MIDNIGHT_SECOND_FOLD = dt.time(), dt.time(fold=1)


def _dated_clock(moment: dt.datetime) -> str:
    return f"{moment:%Y-%m-%d} {format_clock(moment)}"


def _offset_at(instant: dt.datetime, tz: ZoneInfo) -> dt.timedelta:
    return instant.astimezone(tz).utcoffset()


@dataclass(frozen=True)
class _Gap:
    """Clocks jumped forward at ``transition`` (UTC) from ``offset_before`` to ``offset_after``."""

    transition: dt.datetime
    offset_before: dt.timedelta
    offset_after: dt.timedelta

    def describe(self, wall: dt.datetime, zone_name: str) -> str:
        wall_start = (self.transition + self.offset_before).replace(tzinfo=None)
        wall_end = (self.transition + self.offset_after).replace(tzinfo=None)
        if wall_start.date() == wall_end.date() == wall.date():
            jump = f"from {format_clock(wall_start)} to {format_clock(wall_end)}"
        else:  # the jump crossed midnight, or skipped whole days (Pacific/Apia, 2011-12-30)
            jump = f"from {_dated_clock(wall_start)} to {_dated_clock(wall_end)}"
        return (
            f"local_time {format_clock(wall)} on {wall:%Y-%m-%d} does not exist in {zone_name}: clocks went "
            f"forward {jump} (UTC{format_offset(self.offset_before)} → UTC{format_offset(self.offset_after)})"
        )


def _gap_at(wall: dt.datetime, tz: ZoneInfo) -> _Gap | None:
    """The jump that skipped the naive wall time ``wall``, or None when the clocks showed it."""
    # PEP 495: inside a gap, fold=0 reads the wall time with the offset from before the jump and
    # fold=1 with the one after; only in a gap is the first offset the smaller one.
    before = wall.replace(tzinfo=tz, fold=0).utcoffset()
    after = wall.replace(tzinfo=tz, fold=1).utcoffset()
    if before >= after:
        return None
    # wall lies in [jump + before, jump + after), so the jump's UTC instant lies in (earliest, latest].
    earliest = (wall - after).replace(tzinfo=_UTC)
    latest = (wall - before).replace(tzinfo=_UTC)
    # Bisect on whole seconds (tzdata transitions fall on whole seconds) for the first instant with
    # the new offset.
    while latest - earliest > dt.timedelta(seconds=1):
        half = int((latest - earliest).total_seconds()) // 2
        middle = earliest + dt.timedelta(seconds=half)
        if _offset_at(middle, tz) == before:
            earliest = middle
        else:
            latest = middle
    return _Gap(latest, before, after)


def resolve(date: dt.date, local_time: dt.time, zone_name: str) -> CivilInstant:
    """The UTC instant at which clocks in ``zone_name`` showed ``local_time`` on ``date``.

    Raises ``invalid()`` (422) for a time the clocks skipped, naming the jump; uses the first
    occurrence of a time shown twice (``ambiguous=True``); reports summer time as a shift ≥ 0 on the
    standard offset of the zone's period at that instant. The offset is exact to the second, local
    mean time included.
    """
    tz = zone(zone_name)
    wall = dt.datetime.combine(date, local_time).replace(tzinfo=None, fold=0)
    gap = _gap_at(wall, tz)
    if gap is not None:
        raise invalid(gap.describe(wall, zone_name))
    first = wall.replace(tzinfo=tz)  # fold=0: the first occurrence of a repeated time
    offset = first.utcoffset()
    period = zone_periods(zone_name).at(wall - offset)
    return CivilInstant(
        zone=zone_name,
        local=wall,
        utc=first.astimezone(_UTC),
        utc_offset=offset,
        standard_offset=period.standard_offset,
        dst_offset=offset - period.standard_offset,
        abbreviation=period.abbreviation,
        ambiguous=first.replace(fold=1).utcoffset() != offset,
        local_mean_time=period.mean_time,
        tzdata_version=TZDATA_VERSION,
    )


def _start_of_day(date: dt.date, tz: ZoneInfo) -> dt.datetime:
    """The first UTC instant at which the clocks showed ``date``."""
    # _gap_at's test, on datetimes built by combine() rather than replace(tzinfo=…, fold=…), which costs
    # about a microsecond a call: every request asks for the starts of two days.
    midnight = dt.datetime.combine(date, _MIDNIGHT, tz)  # fold=0: the first midnight if repeated
    if midnight.utcoffset() < dt.datetime.combine(date, _MIDNIGHT_SECOND_FOLD, tz).utcoffset():
        # the clocks jumped over midnight: the day began with the jump
        return _gap_at(midnight.replace(tzinfo=None), tz).transition
    return midnight.astimezone(_UTC)


def day_bounds_utc(date: dt.date, zone_name: str) -> tuple[dt.datetime, dt.datetime]:
    """UTC instants at which the civil ``date`` began and ended in ``zone_name``.

    The day is 23 or 25 hours long on DST days; it starts late where a jump skipped midnight; a day
    the zone skipped entirely (Pacific/Apia, 2011-12-30) has zero length.
    """
    tz = zone(zone_name)
    return _start_of_day(date, tz), _start_of_day(date + dt.timedelta(days=1), tz)
