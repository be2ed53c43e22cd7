"""The periods of a zone's civil time — offset, standard offset, summer time — read once from tzdata.

One reading serves both the numbers of a request (``civil.resolve`` finds the period whose clocks showed its
wall time, ``ZonePeriods.showing``) and the zone's history text (``tzhistory`` tells the story of all of
them), so the two cannot disagree.

Where each piece comes from, all in the tzdata package:

* **When the clocks changed, and to what offset and abbreviation**: the zone's compiled TZif file
  (RFC 8536), read by ``tzformats`` because ``zoneinfo`` does not expose transitions. The package's
  files are "slim": transitions stop where the footer's POSIX TZ rule (``CET-1CEST,M3.5.0,M10.5.0/3``)
  can predict them, so that rule is expanded here into the periods up to ``LISTED_UNTIL``.
* **The standard offset under each period**: the zone's lines in tzdata.zi, tzdata's own source text.
  TZif records only an offset and an "is DST" flag, never how much of the offset is summer time; every
  reader of TZif alone guesses (``zoneinfo``'s ``dst()`` takes the offset of the neighbouring standard
  time, and so reads London's 1941 double summer time, between two stretches of single summer time,
  as one hour on +01:00, Hong Kong's 1941 winter time +08:30 as half an hour *below* Japanese time).
  A zone line gives the standard offset in force for its span of years exactly (zic's STDOFF): summer
  time is the offset minus it (zic's SAVE).
* **Summer time as people know it.** tzdata's main data gives a few zones *negative* summer time:
  Irish law makes +01:00 the standard time and winter GMT the exception, so Europe/Dublin's zone line
  says +01:00 and winter saves −1 h; so do Morocco (+01:00 with −1 h in Ramadan, 2019–2026), Namibia
  (1994–2017) and Prague (winter 1946–47). tzdata's "rearguard" format, for software that cannot take
  a negative save, re-bases these so that summer time is always the higher offset; so do we, and so do
  people: Dublin is on GMT in winter and on summer time in summer. See ``_standard_offsets``.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from solarserv.geo.tzformats import Era, FooterRule, LocalTimeType, TZif, parse_tzif
from solarserv.geo.zones import canonical_zone, has_zone, unknown_zone, zone_file, zone_lines

#: Periods are listed up to this UTC instant: past 2050-12-31, the last date the service answers
#: (``solar.ephemeris.SUPPORTED_LAST_DATE``), in every zone. Later periods repeat the footer rule.
LISTED_UNTIL = dt.datetime(2052, 1, 1)
_A_DAY = dt.timedelta(days=1)

_ZERO = dt.timedelta(0)
# tzdata's abbreviation for "no local time": an uninhabited place before its first settlement.
_NO_LOCAL_TIME = "-00"
# Standard times named "mean time": Greenwich's, and New Zealand's of 1868–1946 (UTC+11:30, the meridian
# 172°30′E, the first national standard time).
_STANDARD_TIMES_NAMED_MEAN = frozenset({"GMT", "NZMT"})


@dataclass(frozen=True)
class Period:
    """A stretch of unchanged civil time, with summer time as people know it (never negative)."""

    start: dt.datetime | None  # naive UTC instant; None: before the first recorded transition
    utc_offset: dt.timedelta
    standard_offset: dt.timedelta  # equal to utc_offset outside summer time
    abbreviation: str

    @property
    def summer_time(self) -> dt.timedelta:
        """How far summer time puts the clocks ahead of standard time (0 outside it)."""
        return self.utc_offset - self.standard_offset

    @property
    def summer(self) -> bool:
        return self.utc_offset > self.standard_offset

    @property
    def inhabited(self) -> bool:
        return self.abbreviation != _NO_LOCAL_TIME

    @property
    def mean_time(self) -> bool:
        """Clocks kept the mean solar time of some place rather than a standard offset.

        tzdata marks a place's own mean time "LMT"; city mean times used as legal time carry their own
        names ending in "MT" (Paris Mean Time "PMT", +00:09:21, until 1911; Warsaw Mean Time "WMT",
        +01:24, until 1915; Minsk's "MMT", +01:50, until 1924), most with an offset to the second (Dublin
        Mean Time −00:25:21, with summer time on it in 1916). Two standard times carry the name too
        (_STANDARD_TIMES_NAMED_MEAN), and a summer time's "MT" is midsummer time (France's "WEMT" of 1944,
        Germany's "CEMT" of 1945). Every standard offset is a whole number of minutes.
        """
        named_mean_time = (not self.summer and self.abbreviation.endswith("MT")
                           and self.abbreviation not in _STANDARD_TIMES_NAMED_MEAN)
        return named_mean_time or self.standard_offset % dt.timedelta(minutes=1) != _ZERO

    def local_start(self, previous: Period) -> dt.datetime:
        """When the period began on the clocks it replaced (how the change is dated in law), or on its own
        where there were none before ("-00": Palmer's first clocks began on 31 December 1964, at 0h UTC)."""
        assert self.start is not None
        return self.start + (previous.utc_offset if previous.inhabited else self.utc_offset)


class ZonePeriods:
    """Every period of one zone, in order, from its first record to ``LISTED_UNTIL`` (the last one holds
    there, and for zones without summer time any time after)."""

    def __init__(self, periods: Sequence[Period]):
        self.periods = tuple(periods)
        self._starts = [period.start for period in self.periods[1:]]

    def at(self, utc: dt.datetime) -> Period:
        """The period in effect at the naive UTC instant ``utc`` (a period includes its start)."""
        return self.periods[bisect.bisect_right(self._starts, utc)]

    def showing(self, wall: dt.datetime) -> list[tuple[dt.datetime, Period]]:
        """Each (naive UTC instant, period) at which the clocks showed the naive wall time ``wall``,
        earliest first: none when a jump forward skipped it, two when the clocks went back over it.

        Told from the periods themselves, not by zoneinfo, which errs here: for a wall time after a
        file's last transition it applies the zone's future rule even before the rule takes effect
        (America/Nuuk on 2023-10-28 at 23:30, when the clocks still showed −02:00, reads as −01:00).

        A time before a place had clocks ("-00", read as UTC) that its first clocks then showed counts
        as theirs: Palmer's clocks started at 21:00 on 31 December 1964, at −03:00."""
        found = []
        for index in self._around(wall):
            period = self.periods[index]
            utc = wall - period.utc_offset
            if self._begins(index) <= utc < self._begins(index + 1):
                found.append((utc, period))
        return [entry for entry in found if entry[1].inhabited] or found

    def jump_over(self, wall: dt.datetime) -> tuple[dt.datetime, Period, Period]:
        """For a wall time no period shows: the naive UTC instant the clocks jumped over it, and the
        periods before and after the jump."""
        for index in self._around(wall):
            if index:
                jump, before, after = self._starts[index - 1], self.periods[index - 1], self.periods[index]
                if jump + before.utc_offset <= wall < jump + after.utc_offset:
                    return jump, before, after
        raise ValueError(f"the clocks showed {wall}")

    def _around(self, wall: dt.datetime) -> range:
        """Indexes of the periods that can show ``wall``: no UTC offset is a day or more from the clock."""
        return range(bisect.bisect_left(self._starts, wall - _A_DAY),
                     bisect.bisect_right(self._starts, wall + _A_DAY) + 1)

    def _begins(self, index: int) -> dt.datetime:
        """Where the period ``index`` begins (the first one: always; one past the last: never)."""
        if index == 0:
            return dt.datetime.min
        return self._starts[index - 1] if index <= len(self._starts) else dt.datetime.max


@functools.cache
def zone_periods(name: str) -> ZonePeriods:
    """The periods of the zone or link ``name``, read once per name (links share their zone's).

    Raises ``unknown_zone(name)`` (TIMEZONE_RESOLUTION_FAILED) for a name the package lacks.
    """
    if not has_zone(name):
        raise unknown_zone(name)
    return _read_zone_periods(canonical_zone(name))


class _Phase(NamedTuple):
    """One period as tzdata's main data has it: the offset, and summer time relative to the zone line's
    standard offset (negative in the low phase of negative DST)."""

    utc_offset: dt.timedelta
    save: dt.timedelta


@functools.cache
def _read_zone_periods(name: str) -> ZonePeriods:
    """The TZif file's periods, continued by its footer rule, each read against its zone line as tzdata's main
    data has it (``_Phase``), then with negative DST re-based (``_standard_offsets``)."""
    tzif = parse_tzif(zone_file(name))
    footer = FooterRule.parse(tzif.footer)
    listed = [*tzif.transitions, *_footer_transitions(tzif, footer)]
    starts = [None, *(when for when, _ in listed)]
    types = [tzif.initial, *(kind for _, kind in listed)]
    eras = [Era.parse(fields) for fields in zone_lines(name)]
    phases = []
    for start, kind, line_standard in zip(starts, types, _era_standard_offsets(eras, starts, types), strict=True):
        phase = _Phase(kind.utc_offset, kind.utc_offset - line_standard)
        # zic flags a type DST exactly when its save is not zero: the two files must agree.
        if kind.is_dst != (phase.save != _ZERO):
            raise ValueError(f"{name}: the zone line read for the period from {start} contradicts the "
                             "TZif file's DST flag")
        phases.append(phase)
    following = None
    if footer is not None:  # the footer rule goes on switching after the last period listed
        alternate = footer.standard if types[-1] == footer.summer else footer.summer
        following = _Phase(alternate.utc_offset, alternate.utc_offset - eras[-1].standard_offset)
    standards = _standard_offsets(phases, following)
    return ZonePeriods([Period(start, kind.utc_offset, standard, kind.abbreviation)
                        for start, kind, standard in zip(starts, types, standards, strict=True)])


def _standard_offsets(phases: list[_Phase], after_last: _Phase | None) -> list[dt.timedelta]:
    """The standard offset under each period, with negative DST re-based as tzdata's rearguard format
    does it: summer time is always ≥ 0, on top of the lower of the two offsets.

    * A positive save is summer time on the zone line's standard offset: Paris's CEST on +01:00, and
      London's double summer time of 1941–45 and 1947 (BDST, +02:00) two hours on GMT, although
      single summer time (+01:00) came before and after it all through the war.
    * A negative save (Dublin's winter GMT, Morocco's Ramadan months, Namibia's winter WAT) is the
      zone's low phase: standard time as people know it.
    * A period at the zone line's standard offset that lies between two lower ones, at least one of them
      such a low phase, is the summer half: Dublin's IST is summer time on GMT. One lower neighbour is
      not enough: Ireland kept +01:00 all year as standard time from 1968 to 1971, and Namibia has kept
      +02:00 as standard time since September 2017 (its law of 24 October 2017, which the rearguard
      data dates it from, changed nothing on the clocks, so TZif cannot show it). For the same reason
      Morocco's +01:00 from October 2018, when it stopped changing its clocks, to Ramadan 2019 reads as
      standard time, as its zone line has it (the rearguard format calls it summer time on +00:00, for
      want of negative DST); from Ramadan 2019 to September 2026 its +01:00 lies between lower
      stretches and is summer time.
    """
    standards = []
    for index, phase in enumerate(phases):
        if phase.save > _ZERO:
            standards.append(phase.utc_offset - phase.save)
            continue
        # The initial period (local mean time, or "-00") has no neighbour before it and is never summer.
        before = phases[index - 1:index]
        after = phases[index + 1:index + 2] or ([after_last] if after_last else [])
        neighbours = before + after if before else []
        lower = [other.utc_offset for other in neighbours if other.utc_offset < phase.utc_offset]
        high_phase = (phase.save == _ZERO and len(lower) == 2
                      and any(other.save < _ZERO for other in neighbours))
        standards.append(max(lower) if high_phase else phase.utc_offset)
    return standards


def _era_standard_offsets(eras: list[Era], starts: list[dt.datetime | None],
                          types: list[LocalTimeType]) -> list[dt.timedelta]:
    """The zone line's standard offset at the start of each period. zic writes a transition exactly where
    a line ends if the clocks change there, so each period lies within one line's span."""
    era = 0
    offsets = []
    for index, start in enumerate(starts):
        while index and eras[era].ended_by(start, types[index - 1].utc_offset):
            era += 1
        offsets.append(eras[era].standard_offset)
    return offsets


def _footer_transitions(tzif: TZif, rule: FooterRule | None) -> list[tuple[dt.datetime, LocalTimeType]]:
    """The footer rule's changes after the last transition of the file and before LISTED_UNTIL."""
    if rule is None or not tzif.transitions:
        # Every zone with a summer-time rule records at least its move from local mean time.
        return []
    last_start, current = tzif.transitions[-1]
    changes = []
    for year in range(last_start.year, LISTED_UNTIL.year + 1):
        for when, kind in rule.transitions(year):
            if last_start < when < LISTED_UNTIL and kind != current:
                changes.append((when, kind))
                current = kind
    return changes
