"""Values that flow through the pipeline: query → location → civil instant → sun → report.

All frozen: plugins receive a finished ``Report`` and can read it but not change a number.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SolarQuery:
    """A validated request: exactly one of place_name or (latitude, longitude) is set."""

    date: dt.date
    local_time: dt.time
    place_name: str | None = None
    latitude: float | None = None
    longitude: float | None = None


@dataclass(frozen=True)
class Place:
    """One answer of a geocoder (a gazetteer row or an online provider's hit)."""

    display_name: str
    latitude: float
    longitude: float
    country_code: str
    population: int | None = None  # None: the source gives none (Photon; a Nominatim hit without the tag)
    timezone: str | None = None


@dataclass(frozen=True)
class Location:
    """Where the calculation is done, with how it was found."""

    place_name: str
    display_name: str
    latitude: float
    longitude: float
    country_code: str
    timezone: str
    source: Literal["coordinates", "geocoded"]
    near_zone_border: bool = False
    chosen_among_several: bool = False  # the name matched several places in one country
    # Plain sentences about how the location was chosen, shown in the validation text.
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CivilInstant:
    """A civil date and clock time in an IANA zone, resolved to UTC the way people read their clocks."""

    zone: str
    local: dt.datetime  # naive civil date-time as given
    utc: dt.datetime  # aware, UTC
    utc_offset: dt.timedelta  # exact offset in effect (local mean time has seconds)
    standard_offset: dt.timedelta  # offset of the zone's standard time (negative DST re-based)
    dst_offset: dt.timedelta  # summer-time shift in effect, >= 0
    abbreviation: str
    ambiguous: bool  # a fall-back hour: the first occurrence was used
    local_mean_time: bool  # the zone was still on local mean time (pre-standard-time era)
    # tzdata records no local time here then (its "-00": before a place was settled, or while it was
    # abandoned); the clock time given is read as UTC.
    no_local_time: bool
    tzdata_version: str

    @property
    def dst(self) -> bool:
        return self.dst_offset > dt.timedelta(0)


@dataclass(frozen=True)
class SunState:
    """The Sun seen from (latitude, longitude) at one instant. Pure numbers, no civil time."""

    true_solar_seconds: float  # local apparent hour angle + 12 h, in seconds of day [0, 86400)
    equation_of_time_minutes: float  # TST − (UTC + longitude/15 h), wrapped to (−720, 720]
    declination: float  # apparent geocentric declination, degrees
    azimuth: float  # degrees, 0 = north, clockwise
    elevation: float  # apparent (refracted) degrees above the horizon


@dataclass(frozen=True)
class SolarEvents:
    """Sunrise, solar noon and sunset of one solar day (aware datetimes: UTC from solarserv.solar.events,
    local civil time once solarserv.calculation has converted them). A high-latitude sunset may fall after
    local midnight; on the day the midnight Sun begins or ends one event is None in a "normal" state.
    Near a pole an event may lie on the other side of solar noon, and a day with two rises or two sets
    holds its first rise and its last set (solarserv.solar.events)."""

    state: Literal["normal", "polar_day", "polar_night"]
    sunrise: dt.datetime | None
    solar_noon: dt.datetime
    sunset: dt.datetime | None

    @property
    def day_length_minutes(self) -> float | None:
        """Minutes of daylight; None when the day has a sunrise without a sunset or the reverse."""
        if self.state == "polar_day":
            return 24 * 60.0
        if self.state == "polar_night":
            return 0.0
        if self.sunrise is None or self.sunset is None:
            return None
        # As instants: Python subtracts two datetimes of one zone as clock readings, an hour off when the
        # clocks change while the Sun is up (Athens, 1 April 1979, 09:00).
        return (self.sunset.timestamp() - self.sunrise.timestamp()) / 60

    def astimezone(self, zone: dt.tzinfo) -> SolarEvents:
        """The same events as aware date-times in ``zone``."""
        return SolarEvents(self.state, _astimezone(self.sunrise, zone), self.solar_noon.astimezone(zone),
                           _astimezone(self.sunset, zone))



@dataclass(frozen=True)
class Confidence:
    level: Literal["HIGH", "MEDIUM", "LOW"]
    reasons: tuple[str, ...]  # each rule that applied, in plain words


@dataclass(frozen=True)
class Report:
    """The finished calculation: every number of the result. Plugins read it and add text."""

    query: SolarQuery
    location: Location
    civil: CivilInstant
    sun: SunState
    longitude_correction_minutes: float
    standard_meridian: float
    # The longitude minus standard_meridian, wrapped into (−180°, 180°]: east of the meridian positive.
    meridian_distance_degrees: float
    events: SolarEvents
    confidence: Confidence
    ephemeris: str

    @property
    def equation_of_time_minutes(self) -> float:
        return self.sun.equation_of_time_minutes

    @property
    def dst_minutes(self) -> float:
        return self.civil.dst_offset.total_seconds() / 60

    # Cached: the result, every text and every check read these (a frozen dataclass still has a __dict__).
    @functools.cached_property
    def total_difference_minutes(self) -> float:
        return self.equation_of_time_minutes + self.longitude_correction_minutes - self.dst_minutes

    @functools.cached_property
    def true_solar(self) -> dt.datetime:
        """The sundial's reading on the civil calendar (naive): civil date-time + total difference."""
        return self.civil.local + dt.timedelta(minutes=self.total_difference_minutes)


def _astimezone(instant: dt.datetime | None, zone: dt.tzinfo) -> dt.datetime | None:
    return None if instant is None else instant.astimezone(zone)
