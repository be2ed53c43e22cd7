"""PlaceDiscs, reverse geocoding's in-memory index, against a search of every place, on a small real
index: places clustered at both poles, astride the antimeridian and around a city, with places listed
twice at one spot. (The GeoNames data has no place nearer the poles than 78°N and 55°S.)"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from solarserv.geo import gazetteer
from solarserv.geo.discs import PlaceDiscs
from solarserv.geo.gazetteer import Gazetteer
from solarserv.geo.geometry import distance_and_bearing
from solarserv.geo.offline import EXTENT_TIERS_KM, LOCAL_RADIUS_KM, town_radius_km

# (latitudes, longitudes) of each cluster; a longitude past 180 wraps round.
CLUSTERS = [
    ((89.7, 90.0), (-180.0, 180.0)),  # the North Pole
    ((-90.0, -89.7), (-180.0, 180.0)),  # the South Pole
    ((-17.0, -16.6), (179.7, 180.3)),  # astride the antimeridian, by Fiji
    ((48.7, 49.0), (2.1, 2.6)),  # around Paris
]
# Hamlets (1.5 km), towns, and a city reaching past LOCAL_RADIUS_KM (the widest, 25 km).
POPULATIONS = (0, 0, 0, 800, 5_000, 150_000, 2_000_000, 9_000_000, 80_000_000)
ISOLATED = (30.0, 60.0, 150_000)  # a town with nothing within 100 km: where its disc ends


@dataclass(frozen=True)
class Town:
    place_id: int
    latitude: float
    longitude: float
    population: int


def _wrapped(longitude: float) -> float:
    return (longitude + 180.0) % 360.0 - 180.0


def _towns() -> list[Town]:
    draw = random.Random(20240621)
    towns = [Town(1, 90.0, 0.0, 5_000), Town(2, -90.0, 180.0, 0), Town(3, -16.8, 180.0, 800),
             Town(4, *ISOLATED)]
    for (south, north), (west, east) in CLUSTERS:
        for _ in range(60):
            towns.append(Town(len(towns) + 1, draw.uniform(south, north), _wrapped(draw.uniform(west, east)),
                              draw.choice(POPULATIONS)))
    # Places listed twice at one spot: the more populous answers, else the lower id.
    for twin in list(towns[4:60:3]):
        towns.append(Town(len(towns) + 1, twin.latitude, twin.longitude,
                          draw.choice((0, twin.population, twin.population + 100))))
    return towns


TOWNS = _towns()


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Gazetteer:
    path = gazetteer.index_path(tmp_path_factory.mktemp("discs"))
    gazetteer.build_index(path, [
        {"geonameid": town.place_id, "name": f"Town {town.place_id}", "latitude": town.latitude,
         "longitude": town.longitude, "countrycode": "FR", "population": town.population, "timezone": "UTC",
         "admin1code": "", "alternatenames": []} for town in TOWNS])
    index = Gazetteer(path)
    yield index
    index.close()


@pytest.fixture(scope="module")
def discs(index) -> PlaceDiscs:
    return PlaceDiscs.load(index, town_radius_km, EXTENT_TIERS_KM)


def _points() -> list[tuple[float, float]]:
    draw = random.Random(7)
    points = [(90.0, 0.0), (-90.0, 0.0), (90.0, -180.0), (-16.8, 180.0), (-16.8, -180.0), (0.0, 0.0)]
    points += [(town.latitude, town.longitude) for town in TOWNS]
    for (south, north), (west, east) in CLUSTERS:
        points += [(max(-90.0, min(90.0, draw.uniform(south - 0.3, north + 0.3))),
                    _wrapped(draw.uniform(west - 0.5, east + 0.5))) for _ in range(250)]
    return points


def _answer(hit) -> tuple[Town, float, float] | None:
    return hit and (TOWNS[hit.place_id - 1], hit.distance_km, hit.bearing)


def _searched(latitude: float, longitude: float) -> tuple[tuple | None, tuple | None]:
    """What the discs should answer, found by measuring every town: (the most populous town holding the
    point, the nearest within LOCAL_RADIUS_KM), each as (town, distance, bearing) or None."""
    measured = [(town, *distance_and_bearing(town.latitude, town.longitude, latitude, longitude)) for town in TOWNS]
    holding = [(town.population, -distance, -town.place_id, (town, distance, bearing))
               for town, distance, bearing in measured if distance <= town_radius_km(town.population)]
    within = [(distance, -town.population, town.place_id, (town, distance, bearing))
              for town, distance, bearing in measured if distance <= LOCAL_RADIUS_KM]
    return max(holding)[-1] if holding else None, min(within)[-1] if within else None


def test_the_discs_answer_as_a_search_of_every_place_does(discs):
    wrong = []
    for latitude, longitude in _points():
        holding, nearest = _searched(latitude, longitude)
        answers = (_answer(discs.most_populous_holding(latitude, longitude)),
                   _answer(discs.nearest(latitude, longitude, LOCAL_RADIUS_KM)))
        if answers != (holding, nearest):
            wrong.append(((latitude, longitude), answers, (holding, nearest)))
    assert wrong == []


def test_a_disc_ends_exactly_where_distance_and_bearing_says(discs):
    latitude, longitude, population = ISOLATED
    inside, outside = latitude, latitude + 1.0  # northwards from the centre, halved down to one float step
    while math.nextafter(inside, outside) != outside:
        middle = (inside + outside) / 2
        if distance_and_bearing(latitude, longitude, middle, longitude)[0] <= town_radius_km(population):
            inside = middle
        else:
            outside = middle
    assert discs.most_populous_holding(inside, longitude).place_id == 4
    assert discs.most_populous_holding(outside, longitude) is None
    assert discs.nearest(outside, longitude, LOCAL_RADIUS_KM).place_id == 4


def test_a_radius_beyond_the_last_tier_is_refused(index):
    # A town bigger than the tiers allow would be looked for in no tier, and never be found.
    with pytest.raises(ValueError, match=r"^a radius of 2\.0 km is beyond the last tier's 1\.0 km$"):
        PlaceDiscs.load(index, lambda population: 2.0, [1.0])
