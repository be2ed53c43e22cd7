"""query → location (geo) → civil instant → calculation (solar) → texts (plugins) → result JSON.

The one path every answer takes, for the HTTP API and the CLI alike. Knows nothing of HTTP.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from solarserv import calculation, geo
from solarserv import civil as civil_time
from solarserv.errors import ApiError, timezone_unresolved
from solarserv.geo.timezones import TimezoneLocator
from solarserv.geo.zones import country_at, has_zone, keeps_zone_unnamed
from solarserv.models import Location, Place, Report, SolarQuery
from solarserv.narration import Narrator
from solarserv.result import equation_of_time_json, numbers_json, result_json
from solarserv.solar import SunEngine, curves
from solarserv.solar.fast import FastEngine
from solarserv.timefmt import format_coordinates

if TYPE_CHECKING:  # the offline geocoder's, imported only when it is chosen (geo.build_geocoder)
    from solarserv.geo.discs import PlaceDiscs


class Pipeline:
    def __init__(self, geocoder: geo.Geocoder, timezones: TimezoneLocator, engine: SunEngine,
                 narrator: Narrator, today: Callable[[], dt.date] = dt.date.today) -> None:
        self.geocoder = geocoder
        self.timezones = timezones
        self.engine = engine
        self.narrator = narrator
        self.today = today
        # The chart's years are computed one at a time, in a thread of their own: a year's skyfield evaluation
        # takes megabytes at its peak, and the memory a thread frees stays in its malloc arena. Six years at once
        # in the default executor's threads made each process keep 250-350 MB more.
        self._chart_thread = concurrent.futures.ThreadPoolExecutor(1, "equation-of-time")

    @classmethod
    def build(cls, settings: Any, towns: PlaceDiscs | None = None, narrator: Narrator | None = None) -> Pipeline:
        """``towns``: the offline gazetteer's places already read (`geo.offline.read_towns`); ``narrator``: one
        already built (`solarserv serve` builds it before it forks)."""
        return cls(
            geocoder=geo.build_geocoder(settings, towns),
            timezones=TimezoneLocator(),
            engine=FastEngine(),
            narrator=narrator or Narrator.build(settings),
        )

    async def run(self, query: SolarQuery) -> dict[str, Any]:
        """The result JSON: the report, and the texts the plugins write about it."""
        report = await self.report(query)
        numbers = numbers_json(report)  # before any plugin sees the report (numbers_json)
        return result_json(numbers, await self.narrator.narrate_in_time(report))

    async def report(self, query: SolarQuery) -> Report:
        """Every number of the answer: the query located, then calculated there."""
        return self.calculate(query, await self.locate(query))

    def calculate(self, query: SolarQuery, location: Location) -> Report:
        """The query's civil instant resolved in the location's zone, and the calculation on it."""
        civil = civil_time.resolve(query.date, query.local_time, location.timezone)
        return calculation.calculate(query, location, civil, self.engine, self.today())

    async def equation_of_time(self, year: int) -> dict[str, Any]:
        """The equation of time on each day of a year (the calculator page's chart)."""
        # A year computed before is answered at once, not queued behind the years being computed. One not yet computed
        # takes about 0.1 s: off the event loop, so other requests keep flowing.
        days = curves.computed_equation_of_time_by_day(self.engine, year)
        if days is None:
            days = await asyncio.get_running_loop().run_in_executor(
                self._chart_thread, curves.equation_of_time_by_day, self.engine, year)
        return equation_of_time_json(year, days, self.engine.name)

    async def locate(self, query: SolarQuery) -> Location:
        if query.place_name is not None:
            return await self._locate_name(query.place_name)
        return await self._locate_coordinates(query.latitude, query.longitude)

    async def _locate_name(self, name: str) -> Location:
        try:
            located = await self.geocoder.locate(name)
        except ApiError as error:
            if error.code == "AMBIGUOUS_LOCATION":
                self._give_zones(error.extra["candidates"])
            raise
        place = located.place
        try:
            zone = self._zone_of(place.timezone, place.latitude, place.longitude)
        except ApiError as unresolved:
            # Its message names only the point, which the client never sent: say it is where the name was found.
            raise timezone_unresolved(f"'{name}' was found as {place.display_name}: {unresolved.message}") from None
        return Location(
            place_name=name,
            display_name=place.display_name,
            latitude=place.latitude,
            longitude=place.longitude,
            country_code=place.country_code,
            timezone=zone,
            source="geocoded",
            near_zone_border=self.timezones.near_border(place.latitude, place.longitude, zone),
            chosen_among_several=located.chosen_among_several,
            notes=located.notes,
        )

    def _zone_of(self, given: str | None, latitude: float, longitude: float) -> str:
        """The zone at the place's coordinates, found as in coordinate mode, so that a place and its share
        link (its coordinates) give one answer. The geocoder's own zone (the gazetteer's) only where the
        coordinates have none, a town whose point lies on water: GeoNames' zones are wrong for over a
        hundred towns (Vincennes, Indiana on Chicago's clocks; Mexico's border towns off US daylight time)."""
        try:
            return self.timezones.zone_at(latitude, longitude)
        except ApiError:
            if given and has_zone(given):
                return given
            raise

    def _give_zones(self, candidates: list[dict[str, Any]]) -> None:
        """Each 409 candidate's zone, as the chosen place's would be; None for one at sea (no zone)."""
        for candidate in candidates:
            try:
                candidate["timezone"] = self._zone_of(candidate["timezone"], candidate["latitude"],
                                                      candidate["longitude"])
            except ApiError:
                candidate["timezone"] = None

    async def _locate_coordinates(self, latitude: float, longitude: float) -> Location:
        described = await self.geocoder.describe(latitude, longitude)
        # The zone of the town holding the point where no zone's polygon does (an island the boundaries leave out), as
        # for the town by name: a place found by name and its share link, its coordinates, then give one answer.
        zone = self._zone_of(described.timezone if described else None, latitude, longitude)
        coordinates = format_coordinates(latitude, longitude)
        return Location(
            place_name=coordinates,
            display_name=described.display_name if described else coordinates,
            latitude=latitude,
            longitude=longitude,
            country_code=self._country_of_point(latitude, zone, described),
            timezone=zone,
            source="coordinates",
            near_zone_border=self.timezones.near_border(latitude, longitude, zone),
        )

    def _country_of_point(self, latitude: float, zone: str, described: Place | None) -> str:
        """The country a point is in: its zone's, as the nearest town may lie across a border. Where the zone
        also covers a country that has no name of its own for it, the described town's country: Hanoi is in
        Asia/Bangkok, Thailand's zone in zone.tab, and in Vietnam."""
        country = country_at(latitude, zone)
        if not described:
            return country or ""
        if described.country_code not in ("", country) and keeps_zone_unnamed(described.country_code, zone):
            return described.country_code
        return country or described.country_code
