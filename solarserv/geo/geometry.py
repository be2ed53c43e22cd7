"""Distances on the globe, taken as a sphere, and the boxes of latitude and longitude that hold a circle
around a point: what the gazetteer's searches (geo/gazetteer.py, geo/discs.py) and the timezone border check
(geo/timezones.py) share. Pure functions of degrees and kilometres; importing this imports nothing of the
offline geocoder."""

from __future__ import annotations

import math

EARTH_RADIUS_KM = 6371.0
KM_PER_DEGREE = 111.195  # of latitude, or of longitude at the equator, on a sphere of radius EARTH_RADIUS_KM


def distance_and_bearing(from_lat: float, from_lon: float,
                         to_lat: float, to_lon: float) -> tuple[float, float]:
    """Great-circle distance (km) and initial bearing (degrees from north) from one point to another."""
    phi1, phi2 = math.radians(from_lat), math.radians(to_lat)
    d_lambda = math.radians(to_lon - from_lon)
    haversine = (math.sin((phi2 - phi1) / 2) ** 2
                 + math.cos(phi1) * math.cos(phi2) * math.sin(d_lambda / 2) ** 2)
    distance = 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(haversine)))
    bearing = math.degrees(math.atan2(
        math.sin(d_lambda) * math.cos(phi2),
        math.cos(phi1) * math.sin(phi2) - math.sin(phi1) * math.cos(phi2) * math.cos(d_lambda)))
    return distance, bearing % 360


def longitude_span(latitude: float, latitude_span: float) -> float:
    """Half the width in longitude of a box reaching `latitude_span` degrees north and south of a point
    at `latitude`: measured at the box's edge nearer the pole, where a degree of longitude is shortest;
    the whole circle once the box reaches a pole."""
    return min(180.0, latitude_span / max(math.cos(math.radians(min(abs(latitude) + latitude_span, 90))), 1e-6))


def longitude_ranges(west: float, east: float) -> list[tuple[float, float]]:
    """A longitude span as one or two ranges inside [-180, 180] (split at the antimeridian)."""
    if east - west >= 360:
        return [(-180.0, 180.0)]
    if west < -180:
        return [(west + 360, 180.0), (-180.0, east)]
    if east > 180:
        return [(west, 180.0), (-180.0, east - 360)]
    return [(west, east)]
