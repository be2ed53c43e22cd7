"""Distances on the globe, taken as a sphere: what the gazetteer's searches and the timezone border check
share. Pure functions of degrees and kilometres; importing this imports nothing of the offline geocoder."""

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
