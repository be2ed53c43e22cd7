"""IANA timezones, always from the ``tzdata`` PyPI package — never the system's zoneinfo files.

``zoneinfo.ZoneInfo(name)`` prefers ``/usr/share/zoneinfo`` when it exists, and system builds can
differ from the package: Debian's includes the "backzone" data, so Europe/Amsterdam in 1935 reads
Amsterdam Mean Time (+01:19:32 in summer) there and Brussels time (+01:00) in the package. Reading the
package's files directly makes every answer depend on one known release, ``TZDATA_VERSION``.

Everything is read once and cached: a ``ZoneInfo`` per name, and the package's zone list, its source
text (tzdata.zi: zone lines and links) and country tables.
"""

from __future__ import annotations

import functools
import importlib.resources
import io
from importlib.resources.abc import Traversable
from typing import NamedTuple
from zoneinfo import ZoneInfo

import tzdata

from solarserv.errors import ApiError, timezone_unresolved

#: The IANA release of the data every answer is computed from, e.g. "2026f".
TZDATA_VERSION: str = tzdata.IANA_VERSION

# South of it lies the Antarctic Treaty area, all of it ISO 3166-1's AQ.
ANTARCTIC_TREATY_LATITUDE = -60.0

_PACKAGE = importlib.resources.files("tzdata")
_ZONEINFO_DIR = importlib.resources.files("tzdata.zoneinfo")


def _read_text(resource: Traversable) -> str:
    return resource.read_text(encoding="utf-8")


@functools.cache
def zone_names() -> frozenset[str]:
    """Every name the package can load: canonical zones and their links (``Eire``, ``US/Eastern``…)."""
    return frozenset(_read_text(_PACKAGE / "zones").split())


def has_zone(name: str) -> bool:
    """Whether the tzdata package has a zone (or link) of this name."""
    return name in zone_names()


def unknown_zone(name: str) -> ApiError:
    """The error for a zone name the installed tzdata does not have.

    Zone names never come from the client directly: they come from the gazetteer or from
    timezonefinder, whose data can be newer than the tzdata package. Retrying cannot help, so this
    reports it as the timezone failing to resolve, naming the release that lacks it.
    """
    return timezone_unresolved(f"timezone {name!r} is not in the IANA tzdata release {TZDATA_VERSION} this service "
                               "uses.")


def zone_file(name: str) -> bytes:
    """The compiled (TZif) file of the zone or link ``name``. Raises ``unknown_zone(name)``."""
    # Checking the package's own list first also keeps names like "../x" away from the file system.
    if not has_zone(name):
        raise unknown_zone(name)
    return (_ZONEINFO_DIR / name).read_bytes()


@functools.cache
def zone(name: str) -> ZoneInfo:
    """The zone called ``name``, loaded from the tzdata package. Raises ``unknown_zone(name)``."""
    return ZoneInfo.from_file(io.BytesIO(zone_file(name)), key=name)


class _Source(NamedTuple):
    zone_lines: dict[str, list[list[str]]]  # zone name → the fields of each of its lines, name left out
    links: dict[str, str]  # link name → the name it points at


@functools.cache
def _source() -> _Source:
    """The package's tzdata.zi: tzdata's own source text, compacted (one ``Z NAME STDOFF RULES FORMAT
    [UNTIL]`` line per zone, its continuation lines after it; ``R`` rule lines; ``L TARGET LINK`` lines)."""
    zone_lines: dict[str, list[list[str]]] = {}
    links = {}
    lines: list[list[str]] | None = None  # the lines of the zone being read
    for line in _read_text(_ZONEINFO_DIR / "tzdata.zi").splitlines():
        fields = line.split()
        if line.startswith("Z "):
            lines = zone_lines[fields[1]] = [fields[2:]]
        elif line.startswith("L "):
            links[fields[2]] = fields[1]
            lines = None
        elif line.startswith(("R ", "#")):
            lines = None
        elif lines is not None and fields:
            lines.append(fields)
    return _Source(zone_lines, links)


def zone_lines(name: str) -> list[list[str]]:
    """The source lines of the zone ``name`` stands for, as fields: STDOFF RULES FORMAT [UNTIL…], e.g.
    ``["1", "c", "CE%sT", "1944", "Au", "25"]`` (tzdata.zi abbreviates month and weekday names)."""
    return _source().zone_lines[canonical_zone(name)]


def canonical_zone(name: str) -> str:
    """The zone a link stands for (``Europe/Amsterdam`` → ``Europe/Brussels``); other names unchanged.

    Two names with the same canonical zone follow the same clock rules in tzdata's main data
    (which merges zones that have agreed since 1970).
    """
    links = _source().links
    while name in links:
        name = links[name]
    return name


def record_of_another_place(name: str) -> str | None:
    """The zone whose clocks tzdata gives the place called ``name`` before 1970, when it is another
    place's (``Europe/Amsterdam`` → ``Europe/Brussels``); None for a zone with a record of its own and for
    another name of one (``US/Eastern``, ``Asia/Calcutta``, ``Etc/Zulu``)."""
    return canonical_zone(name) if name in _merged_places() else None


@functools.cache
def _merged_places() -> frozenset[str]:
    """The links zone.tab lists. zone.tab names each region of a country with clocks of its own, and keeps
    a region's name after tzdata merged its zone into another's that agreed since 1970 (the Netherlands'
    Europe/Amsterdam, Brussels's record). Other names of one place (old spellings, renamed cities, US/…,
    Etc/…) are never in it. A few merged regions left it too (America/Nipigon, now Toronto's); the
    package cannot tell them from renames, but neither timezonefinder nor the gazetteer gives them."""
    links = _source().links
    return frozenset(row[2] for row in _tab_rows("zone.tab") if row[2] in links)


def _tab_rows(file_name: str) -> list[list[str]]:
    """The tab-separated rows of one of the package's .tab files, comments left out."""
    text = _read_text(_ZONEINFO_DIR / file_name)
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


@functools.cache
def _zone1970_countries() -> dict[str, tuple[str, ...]]:
    """zone1970.tab: every canonical zone's countries, most populous first (Asia/Bangkok: TH CX KH LA VN)."""
    return {row[2]: tuple(row[0].split(",")) for row in _tab_rows("zone1970.tab")}


@functools.cache
def _zone_countries() -> dict[str, str]:
    # zone.tab gives one country per zone (including links such as Europe/Vatican → VA); zone1970.tab's
    # first country only fills names zone.tab lacks.
    countries = {zone: codes[0] for zone, codes in _zone1970_countries().items()}
    countries.update({row[2]: row[0] for row in _tab_rows("zone.tab")})
    return countries


def country_at(latitude: float, zone: str) -> str | None:
    """Two-letter country code of a point in `zone`: the zone's country, except south of 60°S, which
    ISO 3166-1 codes AQ whatever time a station there keeps (timezonefinder gives much of Queen Maud
    Land South Africa's zone, Africa/Johannesburg, and part of the Weddell Sea coast Argentina's)."""
    return "AQ" if latitude < ANTARCTIC_TREATY_LATITUDE else country_of_zone(zone)


def country_of_zone(name: str) -> str | None:
    """Two-letter country code of a zone (``Asia/Kathmandu`` → ``NP``), following links
    (``Eire`` → ``IE``); None for zones of no country (``Etc/UTC``, ocean zones)."""
    countries = _zone_countries()
    return countries.get(name) or countries.get(canonical_zone(name))


@functools.cache
def _unnamed_keepers() -> dict[str, frozenset[str]]:
    """Per canonical zone, the countries zone1970.tab lists for it that have no zone.tab name standing for it."""
    own_zones: dict[str, set[str]] = {}
    for row in _tab_rows("zone.tab"):
        own_zones.setdefault(row[0], set()).add(canonical_zone(row[2]))
    return {zone: frozenset(code for code in codes if zone not in own_zones.get(code, ()))
            for zone, codes in _zone1970_countries().items()}


def keeps_zone_unnamed(country_code: str, zone: str) -> bool:
    """Whether the country keeps the zone's clocks somewhere tzdata gives no name of the country's own.

    zone1970.tab lists Vietnam under Asia/Bangkok (northern Vietnam), while Vietnam's only zone in zone.tab
    is Asia/Ho_Chi_Minh, the south's: timezonefinder gives Hanoi Asia/Bangkok, Thailand's zone. Laos keeps
    Bangkok's clocks too, but under a name of its own (Asia/Vientiane), and that is what its land is given."""
    return country_code in _unnamed_keepers().get(zone, frozenset())
