"""Coordinates → IANA zone, offline, with timezonefinder's polygons of the world's timezones."""

from __future__ import annotations

import math

from timezonefinder import TimezoneFinder

from solarserv.errors import timezone_unresolved
from solarserv.geo.geometry import KM_PER_DEGREE
from solarserv.geo.zones import ANTARCTIC_TREATY_LATITUDE, TZDATA_VERSION, canonical_zone, has_zone
from solarserv.timefmt import format_coordinates

_BORDER_RADIUS_KM = 10.0
_BORDER_SAMPLES = 8  # compass points on the circle; a border passing within the radius crosses it


class TimezoneLocator:
    """Finds the IANA zone at a point. Build one per process and keep it: importing timezonefinder
    takes ~0.15 s, building the finder ~20 ms.

    Not thread-safe (timezonefinder's rule): use it from the thread that runs the event loop.
    The polygon data stays memory-mapped rather than loaded (``in_memory=False``): lookups were as
    fast either way (≈ 2 µs), while loading took twice as long to build and added ~31 MiB of private
    memory per process; mapped pages are shared by every process on the machine.
    """

    def __init__(self) -> None:
        self._finder = TimezoneFinder(in_memory=False)

    @property
    def data_version(self) -> str:
        """The timezone-boundary-builder release of the polygons, e.g. "2026c"."""
        return self._finder.data_version

    def zone_at(self, latitude: float, longitude: float) -> str:
        """The IANA zone at the point. Raises TIMEZONE_RESOLUTION_FAILED (422) in international
        waters, where timezonefinder has only nautical ``Etc/GMT±N`` zones, and for a zone the
        tzdata package does not have (the two packages' releases drifting apart)."""
        name = self._finder.timezone_at_land(lng=longitude, lat=latitude)
        if name is None:
            # timezonefinder also leaves some land without a zone: islands no one lives on (Bouvet, Heard) and,
            # south of 60°S, Antarctica away from the stations whose zones it draws (Marie Byrd Land).
            where = ("in international waters, or on an uninhabited island outside every time zone's boundaries"
                     if latitude > ANTARCTIC_TREATY_LATITUDE
                     else "in Antarctica or its seas outside every station's time zone")
            raise timezone_unresolved(f"{format_coordinates(latitude, longitude)} is {where}, where no IANA "
                                      "timezone applies.")
        if not has_zone(name):
            # tzdata keeps every retired name as a link, so only a zone newer than the installed
            # tzdata lands here; there is nothing to map it to.
            raise timezone_unresolved(
                f"{format_coordinates(latitude, longitude)} is in timezone {name} (boundary data "
                f"{self.data_version}), which the IANA tzdata release {TZDATA_VERSION} this service "
                "uses does not have.")
        return name

    def near_border(self, latitude: float, longitude: float, zone: str) -> bool:
        """Whether land within ~10 km of the point keeps other clocks than ``zone``.

        Samples eight points on a 10 km circle. Zones that are links to the same zone count as one
        (Europe/Vatican inside Rome, Europe/Oslo and Europe/Berlin), and sea is ignored, so a coast
        is not a border.
        """
        home = canonical_zone(zone)
        for sample_latitude, sample_longitude in _circle(latitude, longitude, _BORDER_RADIUS_KM):
            other = self._finder.timezone_at_land(lng=sample_longitude, lat=sample_latitude)
            if other is not None and canonical_zone(other) != home:
                return True
        return False


def _circle(latitude: float, longitude: float, radius_km: float) -> list[tuple[float, float]]:
    """Points about ``radius_km`` from the point at the compass bearings N, NE, E, …

    A flat approximation, good enough at 10 km. Near a pole the east–west step is capped at half
    the globe and latitudes are clipped at ±90°.
    """
    step = radius_km / KM_PER_DEGREE
    east_west_scale = max(math.cos(math.radians(latitude)), step / 180)
    points = []
    for index in range(_BORDER_SAMPLES):
        bearing = 2 * math.pi * index / _BORDER_SAMPLES
        sample_latitude = min(90.0, max(-90.0, latitude + step * math.cos(bearing)))
        sample_longitude = longitude + step * math.sin(bearing) / east_west_scale
        points.append((sample_latitude, (sample_longitude + 180.0) % 360.0 - 180.0))
    return points
