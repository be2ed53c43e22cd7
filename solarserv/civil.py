"""Civil (clock) time in an IANA zone → a UTC instant, read the way people read their clocks.

Three things zoneinfo leaves to us:

* **Times that do not exist.** When clocks jump forward, the skipped wall times are refused with a
  message naming the real jump (found in the data, not assumed to be one hour).
* **Times that happen twice.** When clocks fall back, the first occurrence is used and flagged.
* **Negative DST.** tzdata's main data encodes Europe/Dublin (and Morocco, Namibia 1994–2017 and a
  few wartime periods) with a *negative* DST: Irish law makes summer time the standard and winter
  time the exception, so zoneinfo reports ``dst() == −1 h`` in Dublin's winter. We report DST as
  tzdata's "rearguard" format does and as people know it — a shift ≥ 0 on top of the lower offset;
  see ``_summer_time``.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import NamedTuple
from zoneinfo import ZoneInfo

from solarserv.errors import invalid
from solarserv.geo.zones import TZDATA_VERSION, zone
from solarserv.models import CivilInstant
from solarserv.timefmt import format_offset

_ZERO = dt.timedelta(0)
_ONE_HOUR = dt.timedelta(hours=1)
_UTC = dt.UTC
_MIDNIGHT, _MIDNIGHT_SECOND_FOLD = dt.time(), dt.time(fold=1)


def _clock(moment: dt.datetime) -> str:
    return moment.strftime("%H:%M:%S" if moment.second else "%H:%M")


def _dated_clock(moment: dt.datetime) -> str:
    return f"{moment:%Y-%m-%d} {_clock(moment)}"


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
            jump = f"from {_clock(wall_start)} to {_clock(wall_end)}"
        else:  # the jump crossed midnight, or skipped whole days (Pacific/Apia, 2011-12-30)
            jump = f"from {_dated_clock(wall_start)} to {_dated_clock(wall_end)}"
        return (
            f"local_time {_clock(wall)} on {wall:%Y-%m-%d} does not exist in {zone_name}: clocks went "
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


class _Period(NamedTuple):
    """What zoneinfo reports during one stretch of unchanged clock rules."""

    offset: dt.timedelta
    dst: dt.timedelta


def _period_at(instant: dt.datetime, tz: ZoneInfo) -> _Period:
    local = instant.astimezone(tz)
    return _Period(local.utcoffset(), local.dst())


# Negative-DST stretches in tzdata last from five weeks (Morocco's Ramadan months) to sixteen months
# (Vilnius's wartime CEST), so fortnightly samples see every one, and a neighbouring stretch that
# matters (see _summer_time) begins within two years.
_SAMPLE_STEP = dt.timedelta(days=14)
_NEIGHBOUR_STEP = dt.timedelta(days=7)
_NEIGHBOUR_REACH = 105  # weekly steps: two years


@functools.cache
def _uses_negative_dst(tz: ZoneInfo) -> bool:
    """Whether zoneinfo reports a negative dst() for this zone anywhere in 1900–2051.

    Cached per zone (≈4,000 samples, a few ms, once) so the common zones skip the neighbour search.
    """
    instant = dt.datetime(1900, 1, 1, tzinfo=_UTC)
    end = dt.datetime(2052, 1, 1, tzinfo=_UTC)
    while instant < end:
        if instant.astimezone(tz).dst() < _ZERO:
            return True
        instant += _SAMPLE_STEP
    return False


def _neighbour(instant: dt.datetime, tz: ZoneInfo, direction: int) -> _Period | None:
    """The stretch just before (direction −1) or after (+1) the one holding ``instant``, if it
    begins within _NEIGHBOUR_REACH weeks."""
    here = _period_at(instant, tz)
    for step in range(1, _NEIGHBOUR_REACH + 1):
        there = _period_at(instant + direction * step * _NEIGHBOUR_STEP, tz)
        if there != here:
            return there
    return None


def _summer_time(utc: dt.datetime, tz: ZoneInfo) -> dt.timedelta:
    """The summer-time shift in effect at ``utc``, ≥ 0, as tzdata's rearguard format would give it.

    Positive DST is taken as zoneinfo reports it. Where a zone uses negative DST, the stretches
    around the instant decide (all from the data, no list of zone names):

    * a stretch with negative dst() is the zone's low phase — Dublin's winter GMT, Morocco's
      Ramadan months: standard time, no DST. (zoneinfo can also report a negative dst() for real
      summer time after an offset change, e.g. Vilnius's CEST in 1941 following Moscow time; when
      a neighbouring stretch with dst() == 0 has a lower offset, the DST is measured from that.)
    * a stretch with dst() == 0 lying between two lower stretches, at least one of them with
      negative dst() — Dublin's summer IST — is summer time measured from the higher of the two.
      A stretch that merely follows a negative one is standard time: Namibia has kept +02:00 all
      year since September 2017.

    For Morocco (Africa/Casablanca, Africa/El_Aaiun) this gives: the +01:00 months between Ramadan
    periods are summer time (dst true, 1 h) on a standard offset of +00:00, the Ramadan months are
    standard time at +00:00 — the rearguard reading, which also matches geography (Casablanca, at
    7.6° W, is nearer the 0° meridian than 15° E). The months from 2018-10-28, when Morocco stopped
    switching, to Ramadan 2019 follow a +01:00 summer-time stretch rather than a Ramadan one, so
    they read as standard +01:00. Either reading gives the same sundial time: moving the standard
    offset by an hour moves the longitude correction and the DST minutes by the same 60 minutes.
    """
    here = _period_at(utc, tz)
    if here.dst > _ZERO:
        return _positive_summer_time(utc, tz, here)
    if here.dst == _ZERO and not _uses_negative_dst(tz):
        return _ZERO
    before = _neighbour(utc, tz, -1)
    if here.dst < _ZERO:
        after = _neighbour(utc, tz, +1)
        lower = [p.offset for p in (before, after) if p and p.dst == _ZERO and p.offset < here.offset]
        return here.offset - max(lower) if lower else _ZERO
    # dst() == 0 in a zone that uses negative DST: summer time only between two lower stretches.
    if before is None or before.offset >= here.offset:
        return _ZERO
    after = _neighbour(utc, tz, +1)
    if after is None or after.offset >= here.offset or min(before.dst, after.dst) >= _ZERO:
        return _ZERO
    return here.offset - max(before.offset, after.offset)


def _positive_summer_time(utc: dt.datetime, tz: ZoneInfo, here: _Period) -> dt.timedelta:
    """zoneinfo measures a positive dst() from the standard stretch *before*. Where a zone changed its
    standard offset as summer time began (Asia/Ust-Nera 1981: +09 → summer +12 → standard +11;
    America/Inuvik and Scoresbysund likewise), that overstates it by the change, and the standard
    stretch *after* gives the real shift. Checked only for shifts other than the usual hour, so the
    common case costs nothing; a genuine two-hour summer time (Antarctica/Troll) is kept."""
    if here.dst == _ONE_HOUR:
        return here.dst
    after = _neighbour(utc, tz, +1)
    if after is not None and after.dst == _ZERO and _ZERO < here.offset - after.offset < here.dst:
        return here.offset - after.offset
    return here.dst


def _is_mean_time(offset: dt.timedelta, abbreviation: str) -> bool:
    """Whether the clocks were set to a local mean solar time rather than a standard offset.

    tzdata marks a place's own mean time "LMT"; city mean times used as legal time carry their
    own names but an offset to the second (Paris Mean Time "PMT", +00:09:21, until 1911; Dublin
    Mean Time −00:25:21, until 1916). Every standard offset is a whole number of minutes.
    """
    return abbreviation == "LMT" or offset % dt.timedelta(minutes=1) != _ZERO


def resolve(date: dt.date, local_time: dt.time, zone_name: str) -> CivilInstant:
    """The UTC instant at which clocks in ``zone_name`` showed ``local_time`` on ``date``.

    Raises ``invalid()`` (422) for a time the clocks skipped, naming the jump; uses the first
    occurrence of a time shown twice (``ambiguous=True``); reports DST as a shift ≥ 0 (see
    ``_summer_time``). The offset is exact to the second, local mean time included.
    """
    tz = zone(zone_name)
    wall = dt.datetime.combine(date, local_time).replace(tzinfo=None, fold=0)
    gap = _gap_at(wall, tz)
    if gap is not None:
        raise invalid(gap.describe(wall, zone_name))
    first = wall.replace(tzinfo=tz)  # fold=0: the first occurrence of a repeated time
    offset = first.utcoffset()
    utc = first.astimezone(_UTC)
    summer = _summer_time(utc, tz)
    abbreviation = first.tzname()
    return CivilInstant(
        zone=zone_name,
        local=wall,
        utc=utc,
        utc_offset=offset,
        standard_offset=offset - summer,
        dst_offset=summer,
        abbreviation=abbreviation,
        ambiguous=first.replace(fold=1).utcoffset() != offset,
        local_mean_time=_is_mean_time(offset, abbreviation),
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
