"""Civil (clock) time in an IANA zone → a UTC instant, read the way people read their clocks.

Read from the zone's periods (``solarserv.geo.periods``), not from zoneinfo, which misreads some wall
times after a TZif file's last transition (America/Nuuk, 2023-10-28 23:30). Three things to get right:

* **Times that do not exist.** When clocks jump forward, the skipped wall times are refused with a
  message naming the real jump (found in the data, not assumed to be one hour).
* **Times that happen twice.** When clocks fall back, the first occurrence is used and flagged.
* **Standard time and summer time.** zoneinfo's ``dst()`` is a guess from the TZif file (negative in
  Dublin's winter, one hour in London's 1941 double summer time). The standard offset and the summer
  time come instead from the zone's period at the instant: the standard offset of tzdata's zone line,
  with negative DST re-based as tzdata's rearguard format does — the same periods the zone's history
  text is told from.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from solarserv.errors import invalid
from solarserv.geo.periods import ZonePeriods, zone_periods
from solarserv.geo.zones import TZDATA_VERSION
from solarserv.models import CivilInstant
from solarserv.timefmt import format_clock, format_offset

_UTC = dt.UTC
_MIDNIGHT = dt.time()


def _dated_clock(moment: dt.datetime) -> str:
    return f"{moment:%Y-%m-%d} {format_clock(moment)}"


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


def resolve(date: dt.date, local_time: dt.time, zone_name: str) -> CivilInstant:
    """The UTC instant at which clocks in ``zone_name`` showed ``local_time`` on ``date``.

    Raises ``invalid()`` (422) for a time the clocks skipped, naming the jump; uses the first
    occurrence of a time shown twice (``ambiguous=True``); reports summer time as a shift ≥ 0 on the
    standard offset of the zone's period at that instant. The offset is exact to the second, local
    mean time included.
    """
    periods = zone_periods(zone_name)
    wall = dt.datetime.combine(date, local_time).replace(tzinfo=None, fold=0)
    showing = periods.showing(wall)
    if not showing:
        jump, before, after = periods.jump_over(wall)
        raise invalid(_Gap(jump.replace(tzinfo=_UTC), before.utc_offset, after.utc_offset).describe(wall, zone_name))
    utc, period = showing[0]  # the first occurrence of a time shown twice
    return CivilInstant(
        zone=zone_name,
        local=wall,
        utc=utc.replace(tzinfo=_UTC),
        utc_offset=period.utc_offset,
        standard_offset=period.standard_offset,
        dst_offset=period.summer_time,
        abbreviation=period.abbreviation,
        ambiguous=len(showing) > 1,
        local_mean_time=period.mean_time,
        no_local_time=not period.inhabited,
        tzdata_version=TZDATA_VERSION,
    )


def _start_of_day(date: dt.date, periods: ZonePeriods) -> dt.datetime:
    """The first UTC instant at which the clocks showed ``date``."""
    midnight = dt.datetime.combine(date, _MIDNIGHT)
    showing = periods.showing(midnight)
    # The first midnight if the clocks showed it twice; the jump, if they jumped over it.
    start = showing[0][0] if showing else periods.jump_over(midnight)[0]
    return start.replace(tzinfo=_UTC)


def day_bounds_utc(date: dt.date, zone_name: str) -> tuple[dt.datetime, dt.datetime]:
    """UTC instants at which the civil ``date`` began and ended in ``zone_name``.

    The day is 23 or 25 hours long on DST days; it starts late where a jump skipped midnight; a day
    the zone skipped entirely (Pacific/Apia, 2011-12-30) has zero length.
    """
    periods = zone_periods(zone_name)
    return _start_of_day(date, periods), _start_of_day(date + dt.timedelta(days=1), periods)
