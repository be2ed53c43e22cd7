"""tzdata's file formats, read: the zone lines of tzdata.zi (``Era``: a standard offset until a date), TZif files
(RFC 8536: ``parse_tzif``, the transitions and their local time types) and the POSIX TZ rule of a TZif footer
(``FooterRule``). solarserv.geo.periods joins what they say into a zone's periods."""

from __future__ import annotations

import calendar
import datetime as dt
import re
import struct
from dataclasses import dataclass
from typing import NamedTuple

from solarserv.timefmt import MONTH_NAMES

_ZERO = dt.timedelta(0)
_EPOCH = dt.datetime(1970, 1, 1)
_HEADER = struct.Struct(">4s c 15x 6L")  # magic, version, unused, then six counts (RFC 8536 §3.1)
_LOCAL_TIME_TYPE = struct.Struct(">l B B")  # utoff seconds, isdst, index into the abbreviations


# --- tzdata.zi zone lines ----------------------------------------------------------------------------

# zic's English names (calendar.day_name would follow the locale), Monday first as date.weekday() counts.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_UNTIL_CLOCKS = "wsugz"  # local wall clock (the default), local standard time, UT (three spellings)


def _by_prefix(word: str, names: tuple[str, ...]) -> int:
    """zic takes any unambiguous prefix of a month or weekday name; tzdata.zi uses the shortest ("Ja")."""
    matches = [index for index, name in enumerate(names) if name.lower().startswith(word.lower())]
    if len(matches) != 1:
        raise ValueError(f"not one month or weekday name: {word!r}")
    return matches[0]


def _duration(text: str) -> dt.timedelta:
    """``[-]h[:mm[:ss]]``, as zic writes offsets and times of day."""
    sign = -1 if text.startswith("-") else 1
    hours, minutes, seconds = (int(part) for part in (*text.lstrip("-").split(":"), "0", "0")[:3])
    return sign * dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)


def _day_of_month(year: int, month: int, text: str) -> int:
    """``15``, ``lastSun``, ``Sun>=8`` (the first Sunday on or after the 8th) or ``Sun<=25``."""
    if text.startswith("last"):
        text = f"{text[4:]}<={calendar.monthrange(year, month)[1]}"  # the last Sunday is Sun<=31
    for operator, step in ((">=", 1), ("<=", -1)):
        if operator in text:
            name, bound = text.split(operator)
            day, weekday = int(bound), _by_prefix(name, _WEEKDAYS)
            while dt.date(year, month, day).weekday() != weekday:
                day += step
            return day
    return int(text)


@dataclass(frozen=True)
class Era:
    """One zone line: the standard offset in force until a local date and time (None: to this day)."""

    standard_offset: dt.timedelta
    until: dt.datetime | None
    until_clock: str  # one of _UNTIL_CLOCKS

    @classmethod
    def parse(cls, fields: list[str]) -> Era:
        """From STDOFF RULES FORMAT [YEAR [MONTH [DAY [TIME]]]]."""
        standard_offset, until = _duration(fields[0]), fields[3:]
        if not until:
            return cls(standard_offset, None, "w")
        year = int(until[0])
        month = _by_prefix(until[1], MONTH_NAMES) + 1 if len(until) > 1 else 1
        day = _day_of_month(year, month, until[2]) if len(until) > 2 else 1
        time = until[3] if len(until) > 3 else "0"
        clock = time[-1] if time[-1] in _UNTIL_CLOCKS else "w"
        return cls(standard_offset, dt.datetime(year, month, day) + _duration(time.rstrip(_UNTIL_CLOCKS)), clock)

    def ended_by(self, instant: dt.datetime, wall_offset: dt.timedelta) -> bool:
        """Whether the line's span is over at the UTC ``instant``, the clocks showing UTC + ``wall_offset``
        until then."""
        if self.until is None:
            return False
        clock_offset = {"w": wall_offset, "s": self.standard_offset}.get(self.until_clock, _ZERO)
        return instant >= self.until - clock_offset


# --- TZif files ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LocalTimeType:
    utc_offset: dt.timedelta
    is_dst: bool  # tzdata's main data: summer time, or the low phase of negative DST
    abbreviation: str


@dataclass(frozen=True)
class TZif:
    """The parts of a TZif file the periods use."""

    transitions: tuple[tuple[dt.datetime, LocalTimeType], ...]  # (naive UTC instant, type from then on)
    initial: LocalTimeType  # in effect before the first transition
    footer: str  # POSIX TZ rule for instants after the last transition


def parse_tzif(data: bytes) -> TZif:
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
    raw_types = [_LOCAL_TIME_TYPE.unpack_from(data, position + _LOCAL_TIME_TYPE.size * i) for i in range(type_count)]
    position += _LOCAL_TIME_TYPE.size * type_count
    abbreviations = data[position:position + char_count]
    # Past the abbreviations: leap-second records, now 12 bytes (an 8-byte time, a 4-byte correction), and
    # the indicator bytes; the footer follows.
    position += char_count + leap_count * 12 + isstd_count + isut_count

    def abbreviation(start: int) -> str:
        return abbreviations[start:abbreviations.index(b"\0", start)].decode("ascii")

    types = [LocalTimeType(dt.timedelta(seconds=utoff), bool(isdst), abbreviation(index))
             for utoff, isdst, index in raw_types]
    footer = data[position:].strip(b"\n").decode("ascii")
    return TZif(
        transitions=tuple((_EPOCH + dt.timedelta(seconds=when), types[index])
                          for when, index in zip(times, type_indices, strict=True)),
        # RFC 8536: local time type 0 applies before the first transition.
        initial=types[0],
        footer=footer,
    )


# --- the footer's POSIX TZ rule ----------------------------------------------------------------------

_NAME = r"<[^>]*>|[A-Za-z]+"
_TIME = r"[+-]?\d+(?::\d+){0,2}"
_DATE = r"M\d+\.\d+\.\d+|J\d+|\d+"
# std offset [dst [offset] ,start[/time],end[/time]] (POSIX, with RFC 8536's hours beyond ±24)
_POSIX_TZ = re.compile(rf"(?P<std>{_NAME})(?P<std_offset>{_TIME})"
                       rf"(?:(?P<dst>{_NAME})(?P<dst_offset>{_TIME})?"
                       rf",(?P<start>{_DATE})(?:/(?P<start_time>{_TIME}))?"
                       rf",(?P<end>{_DATE})(?:/(?P<end_time>{_TIME}))?)?")
_DEFAULT_CHANGE_TIME = "2"  # POSIX: clocks change at 02:00 unless the rule says otherwise


class FooterRule(NamedTuple):
    standard: LocalTimeType
    summer: LocalTimeType
    start: str  # date summer time starts, local standard time …
    start_time: dt.timedelta
    end: str  # … and ends, local summer time
    end_time: dt.timedelta

    @classmethod
    def parse(cls, footer: str) -> FooterRule | None:
        """The footer's rule, or None when it names no summer time (``<+01>-1``, ``CAT-2``)."""
        match = _POSIX_TZ.fullmatch(footer)
        if match is None:
            raise ValueError(f"not a POSIX TZ rule: {footer!r}")
        if match["dst"] is None:
            return None
        # POSIX offsets count hours west of Greenwich; summer time is an hour ahead unless given.
        standard_offset = -_duration(match["std_offset"])
        summer_offset = (-_duration(match["dst_offset"]) if match["dst_offset"]
                         else standard_offset + dt.timedelta(hours=1))
        return cls(LocalTimeType(standard_offset, False, match["std"].strip("<>")),
                   LocalTimeType(summer_offset, True, match["dst"].strip("<>")),
                   match["start"], _duration(match["start_time"] or _DEFAULT_CHANGE_TIME),
                   match["end"], _duration(match["end_time"] or _DEFAULT_CHANGE_TIME))

    def transitions(self, year: int) -> list[tuple[dt.datetime, LocalTimeType]]:
        """The year's two changes, in order, as (naive UTC instant, type from then on)."""
        start = _rule_date(year, self.start) + self.start_time - self.standard.utc_offset
        end = _rule_date(year, self.end) + self.end_time - self.summer.utc_offset
        return sorted([(start, self.summer), (end, self.standard)], key=lambda change: change[0])


def _rule_date(year: int, text: str) -> dt.datetime:
    """Midnight of a POSIX rule date: ``Mm.w.d`` (day d, 0 = Sunday, of week w, 5 = last, of month m),
    ``Jn`` (day n of 1–365, 29 February never counted) or ``n`` (day n of 0–365, counted)."""
    if text.startswith("M"):
        month, week, weekday = (int(part) for part in text[1:].split("."))
        first = dt.date(year, month, 1)
        day = first + dt.timedelta(days=(weekday - first.isoweekday()) % 7, weeks=week - 1)
        if day.month != month:  # week 5 of a month with four such weekdays
            day -= dt.timedelta(weeks=1)
    elif text.startswith("J"):
        number = int(text[1:])
        leap_day_before = calendar.isleap(year) and number >= 60
        day = dt.date(year, 1, 1) + dt.timedelta(days=number - 1 + leap_day_before)
    else:
        day = dt.date(year, 1, 1) + dt.timedelta(days=int(text))
    return dt.datetime.combine(day, dt.time())
