"""Distances and bearings on the sphere (solarserv.geo.geometry)."""

from __future__ import annotations

import pytest

from solarserv.geo.geometry import KM_PER_DEGREE, distance_and_bearing


def test_distance_and_bearing():
    distance, bearing = distance_and_bearing(0.0, 0.0, 1.0, 0.0)
    assert distance == pytest.approx(111.195, abs=0.01) and bearing == pytest.approx(0.0)
    distance, bearing = distance_and_bearing(0.0, 179.5, 0.0, -179.5)  # across the antimeridian: due east
    assert distance == pytest.approx(111.195, abs=0.01) and bearing == pytest.approx(90.0)
    assert distance_and_bearing(10.0, 10.0, 9.0, 10.0)[1] == pytest.approx(180.0)


def test_a_degree_is_km_per_degree_along_a_meridian():
    assert distance_and_bearing(-30.0, 40.0, -29.0, 40.0)[0] == pytest.approx(KM_PER_DEGREE, abs=0.001)
