"""The civil-time history of an IANA zone, read from the tzdata package's TZif file.

``zoneinfo`` converts instants but does not expose a zone's transitions, so this module reads the
compiled file itself (RFC 8536) and summarises it the way people tell the story: the local mean
time clocks kept first, the day standard time was adopted, the years with summer time, and the
other changes of the zone's standard offset.

tzdata encodes a few zones (Europe/Dublin, Africa/Casablanca) with *negative* DST: the winter
offset is flagged as "daylight saving" and the summer offset as standard. ``ZoneHistory`` re-bases
them so that summer time is always the higher of the two offsets, as people know it.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import struct
from dataclasses import dataclass
from importlib.resources import files

import tzdata

from solarserv.geo.zones import canonical_zone, unknown_zone, zone_names

_EPOCH = dt.datetime(1970, 1, 1)
_HEADER = struct.Struct(">4s c 15x 6L")  # magic, version, unused, then six counts (RFC 8536 §3.1)
_LOCAL_TIME_TYPE = struct.Struct(">l B B")  # utoff seconds, isdst, index into the abbreviations
# tzdata's abbreviation for "no local time": an uninhabited place before its first settlement.
_NO_LOCAL_TIME = "-00"
# The POSIX TZ string of the footer: standard name, standard offset, then (optionally) a DST part.
_TZ_STANDARD_PART = re.compile(r"(<[^>]*>|[A-Za-z]+)[+-]?\d{1,3}(:\d{2}){0,2}")


@dataclass(frozen=True)
class _LocalTimeType:
    utc_offset: dt.timedelta
    is_dst: bool  # tzdata's flag, before re-basing negative DST
    abbreviation: str


@dataclass(frozen=True)
class _TZif:
    """The parts of a TZif file this module uses."""

    transitions: tuple[tuple[dt.datetime, _LocalTimeType], ...]  # (naive UTC instant, type from then on)
    initial: _LocalTimeType  # in effect before the first transition
    footer: str  # POSIX TZ rule for instants after the last transition


def _parse_tzif(data: bytes) -> _TZif:
    """Read the version-2+ (64-bit) data block of a TZif file.

    A TZif file holds a header and a 32-bit data block (kept for old readers), then, from version 2
    on, a second header and the same data with 64-bit transition times, then a footer line.
    """
    magic, version, *counts = _HEADER.unpack_from(data, 0)
    if magic != b"TZif" or version == b"\0":
        raise ValueError("not a version 2+ TZif file")
    isut_count, isstd_count, leap_count, time_count, type_count, char_count = counts
    # Skip the 32-bit block: 4-byte times, 1-byte type indices, 6-byte types, abbreviation
    # characters, 8-byte leap-second records, then the standard/wall and UT/local indicator bytes.
    position = _HEADER.size + (time_count * 5 + type_count * 6 + char_count + leap_count * 8
                               + isstd_count + isut_count)

    magic, _, *counts = _HEADER.unpack_from(data, position)
    if magic != b"TZif":
        raise ValueError("missing the 64-bit TZif header")
    isut_count, isstd_count, leap_count, time_count, type_count, char_count = counts
    position += _HEADER.size

    times = struct.unpack_from(f">{time_count}q", data, position)
    position += 8 * time_count
    type_indices = data[position:position + time_count]
    position += time_count
    raw_types = [_LOCAL_TIME_TYPE.unpack_from(data, position + 6 * i) for i in range(type_count)]
    position += 6 * type_count
    abbreviations = data[position:position + char_count]
    position += char_count + leap_count * 12 + isstd_count + isut_count

    def abbreviation(start: int) -> str:
        return abbreviations[start:abbreviations.index(b"\0", start)].decode("ascii")

    types = [_LocalTimeType(dt.timedelta(seconds=utoff), bool(isdst), abbreviation(index))
             for utoff, isdst, index in raw_types]
    footer = data[position:].strip(b"\n").decode("ascii")
    return _TZif(
        transitions=tuple((_EPOCH + dt.timedelta(seconds=when), types[index])
                          for when, index in zip(times, type_indices, strict=True)),
        # RFC 8536: local time type 0 applies before the first transition.
        initial=types[0],
        footer=footer,
    )


@dataclass(frozen=True)
class Period:
    """A stretch of civil time between two transitions, with summer time as people know it."""

    start: dt.datetime | None  # naive UTC instant; None: before the first recorded transition
    utc_offset: dt.timedelta
    standard_offset: dt.timedelta
    summer: bool
    abbreviation: str

    @property
    def inhabited(self) -> bool:
        return self.abbreviation != _NO_LOCAL_TIME

    @property
    def mean_time(self) -> bool:
        """Clocks kept the mean solar time of some place: tzdata gives those offsets to the second."""
        return self.abbreviation == "LMT" or self.standard_offset.total_seconds() % 60 != 0

    def local_start(self, previous: Period) -> dt.datetime:
        """When the period began on the clocks it replaced (how the change is dated in law)."""
        assert self.start is not None
        return self.start + previous.utc_offset


@dataclass(frozen=True)
class OffsetChange:
    """The zone's standard offset changed on a date (local date of the clocks before the change)."""

    date: dt.date
    old_offset: dt.timedelta
    new_offset: dt.timedelta
    abbreviation: str | None  # of the new standard time; None when the change came under summer time


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
    """The history of `zone` (an IANA name tzdata knows), parsed once per zone and process.

    Raises ``unknown_zone(zone)`` (TIMEZONE_RESOLUTION_FAILED) for a name the package lacks; checking
    the package's list first also keeps names like "../x" away from the file system.
    """
    if zone not in zone_names():
        raise unknown_zone(zone)
    tzif = _parse_tzif(files("tzdata.zoneinfo").joinpath(*zone.split("/")).read_bytes())
    periods = _periods(tzif)
    release_year = int(tzdata.IANA_VERSION[:4])
    changes = _standard_offset_changes(periods)
    adopted_at = next((index for index, (_, before, after) in enumerate(changes)
                       if before.mean_time and not after.mean_time), None)
    # Without an adoption every change is a later one: split as if it came before the first.
    split = -1 if adopted_at is None else adopted_at
    first = periods[0]
    return ZoneHistory(
        zone=zone,
        record_of=canonical_zone(zone),
        tzdata_version=tzdata.IANA_VERSION,
        periods=periods,
        local_mean_time=first.utc_offset if first.abbreviation == "LMT" else None,
        mean_time_changes=tuple(change for change, _, _ in changes[:max(split, 0)]),
        standard_time_adopted=None if adopted_at is None else changes[adopted_at][0],
        offset_changes=tuple(change for change, _, _ in changes[split + 1:]),
        summer_time=_summer_time_runs(periods, _footer_has_dst(tzif.footer), release_year),
    )


def _periods(tzif: _TZif) -> tuple[Period, ...]:
    """Each stretch of civil time, with negative DST re-based so summer time is the higher offset."""
    starts = [None, *(when for when, _ in tzif.transitions)]
    types = [tzif.initial, *(kind for _, kind in tzif.transitions)]
    footer_alternates = _footer_has_dst(tzif.footer)

    def nearest_non_dst_offset(index: int) -> dt.timedelta:
        for neighbour in (*reversed(types[:index]), *types[index + 1:]):
            if not neighbour.is_dst and neighbour.abbreviation != _NO_LOCAL_TIME:
                return neighbour.utc_offset
        return types[index].utc_offset

    def summer(index: int) -> bool:
        kind = types[index]
        if kind.is_dst:
            # Positive DST; a "DST" offset below the zone's standard one is a negative-DST winter.
            return kind.utc_offset >= nearest_non_dst_offset(index)
        # A standard offset between lower "DST" offsets is the summer half of negative DST. Both
        # neighbours must be: Dublin's year-round +01:00 of 1968-1971 ends in one, yet was standard.
        # The offset before the first record never is (it is local mean time or "-00", uninhabited).
        # After the last record the footer rule takes over: when it still alternates, the phase before
        # comes round again (Dublin's IST); when it does not, one lower neighbour is not enough
        # (Namibia's +02:00 since 2017 follows a negative-DST winter, yet is its standard time).
        following = types[index + 1:index + 2] or (types[index - 1:index] if footer_alternates else [])
        neighbours = types[index - 1:index] + following if index else []
        return len(neighbours) == 2 and all(other.is_dst and other.utc_offset < kind.utc_offset
                                            for other in neighbours)

    is_summer = [summer(index) for index in range(len(types))]

    def next_standard_offset(index: int) -> dt.timedelta | None:
        return next((types[other].utc_offset for other in range(index + 1, len(types))
                     if not is_summer[other]), None)

    # TZif does not record how much summer time adds, so the standard offset under summer time is
    # inferred: the standard offset in effect before it, or the one after it when the zone moved
    # its standard time while on summer time (Moscow 1991), or else the usual one hour.
    periods: list[Period] = []
    for index, (start, kind) in enumerate(zip(starts, types, strict=True)):
        standard = kind.utc_offset
        if is_summer[index]:
            candidates = [periods[-1].standard_offset] if periods and periods[-1].inhabited else []
            candidates.append(next_standard_offset(index))
            below = (offset for offset in candidates if offset is not None and offset < kind.utc_offset)
            standard = next(below, kind.utc_offset - dt.timedelta(hours=1))
        periods.append(Period(start, kind.utc_offset, standard, is_summer[index], kind.abbreviation))
    return tuple(periods)


def _standard_offset_changes(periods: tuple[Period, ...]) -> list[tuple[OffsetChange, Period, Period]]:
    """Every change of the standard offset, with the periods before and after it. The first local time
    of a place that had none ("-00") starts its record rather than changing it."""
    changes = []
    current = periods[0]
    for previous, period in zip(periods, periods[1:], strict=False):  # consecutive pairs
        if period.standard_offset != current.standard_offset:
            change = OffsetChange(period.local_start(previous).date(), current.standard_offset,
                                  period.standard_offset, None if period.summer else period.abbreviation)
            if current.inhabited:
                changes.append((change, current, period))
            current = period
    return changes


def _summer_time_runs(periods: tuple[Period, ...], footer_has_dst: bool,
                      release_year: int) -> tuple[SummerTimeRun, ...]:
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
    if footer_has_dst and periods[-1].start is not None:
        # The footer rule takes over after the last recorded transition (the compact "slim" TZif
        # files stop listing transitions as soon as the rule predicts them).
        years.update(range((periods[-1].start + periods[-1].utc_offset).year, release_year + 1))

    # Years after the tzdata release are predictions (Gaza's Ramadan-dependent dates are listed to 2086):
    # a run reaching them is "still observed" and is counted up to the release year.
    still_observed = footer_has_dst or any(year > release_year for year in years)
    runs: list[SummerTimeRun] = []
    for year in sorted(year for year in years if year <= release_year):
        if runs and runs[-1].last_year == year - 1:
            runs[-1] = SummerTimeRun(runs[-1].first_year, year, False)
        else:
            runs.append(SummerTimeRun(year, year, False))
    if still_observed and runs:
        runs[-1] = SummerTimeRun(runs[-1].first_year, runs[-1].last_year, True)
    return tuple(runs)


def _footer_has_dst(footer: str) -> bool:
    """The POSIX TZ rule names a DST part after the standard name and offset ("CET-1CEST,M3.5.0,…")."""
    standard = _TZ_STANDARD_PART.match(footer)
    return bool(standard) and standard.end() < len(footer)
