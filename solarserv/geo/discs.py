"""Reverse geocoding's in-memory index: every place of the gazetteer as a disc on the globe (``PlaceDiscs``),
read from the index once per process (or once before `serve --processes` forks), searched in microseconds."""

from __future__ import annotations

import ctypes
import math
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from solarserv.geo.gazetteer import Gazetteer
from solarserv.geo.geometry import (
    EARTH_RADIUS_KM,
    KM_PER_DEGREE,
    distance_and_bearing,
    longitude_ranges,
    longitude_span,
)


class Hit(NamedTuple):
    """A place around a point: its id and population, and how far (km) and in which direction (degrees
    clockwise from north) the point lies from it."""

    place_id: int
    population: int
    distance_km: float
    bearing: float


# A tier's latitude stripes are this many times as tall as its widest disc reaches, so that a search for
# the discs holding a point mostly stays in one stripe: each stripe crossed costs two bisections, which
# outweigh the few more centres measured for nothing (measured on the HTTP benchmark's points: 2 to 8
# differ by less than 5 %).
STRIPE_HEIGHT_IN_REACHES = 4
# A search box is a hair wider than the circle searched, so that rounding never leaves a place out: the
# distance measured decides.
BOX_SLACK = 1.001
# A chord passes with a millionth to spare: far above rounding, far below a metre of a town's radius.
CHORD_SLACK = 1.000001
# `nearest` measures on the sphere every centre whose chord is within this of the shortest.
TIE_KM = 0.001


class PlaceDiscs:
    """Every place as a disc on the globe, held in memory: its centre, and a radius the caller gives
    (how far a town extends, by its population). Answers "which is the most populous place whose disc
    holds this point?" and "which centre is nearest?" in microseconds, where reverse geocoding by a box
    query of SQLite's R*Tree took 20 to 700 µs a point, most of it building a Place for each of the
    dozens of rows around the point only to throw them away.

    How. Nearly every place is a hamlet of the smallest radius, while a few cities reach ten times as
    far; so the discs are sorted into tiers by radius, and a tier is searched only as far as its widest
    disc reaches. In a tier, centres are kept in latitude stripes, each sorted by longitude: a search
    box crosses one stripe or two, and in each a bisection finds the run of centres inside the box's
    longitudes. Each of those is measured by its chord to the point: centres are also kept as points in
    space, and the straight line through the Earth is never longer than the way along its surface, so a
    chord longer than the radius rules a place out, in three subtractions and no trigonometry, with no
    special case at the poles or across the antimeridian. Only the place that answers (and any within a
    hair of it) is measured on the sphere, by `distance_and_bearing`, exactly as a place read from
    SQLite was: that answer counts, so a chord that passes by a hair decides nothing.

    The columns are `array`s (8 bytes a float, where a Python float takes 24): 13 MB for the 235,000
    places of the gazetteer. Reading them from the index takes about 0.3 s.
    """

    def __init__(self, tiers: Sequence[_Tier]) -> None:
        self._tiers = tiers

    @classmethod
    def load(cls, gazetteer: Gazetteer, radius_km: Callable[[int], float],
             tier_limits_km: Sequence[float]) -> PlaceDiscs:
        """The discs of every place of the gazetteer, of radius `radius_km(population)`, in tiers of
        radius up to each of the increasing `tier_limits_km`."""
        discs = cls(_read_tiers(gazetteer, radius_km, tier_limits_km))
        _return_freed_memory()  # the temporaries of the reading are gone
        return discs

    def most_populous_holding(self, latitude: float, longitude: float) -> Hit | None:
        """The most populous place whose disc holds the point (no farther from it than its radius); of
        places as populous, the nearest."""
        point = _in_space(latitude, longitude)
        # Most populous first; of places as populous, the nearest (shortest chord); of places listed twice
        # at one spot, the lower id (ids are unique: tiers are never compared).
        ranked = sorted(((population, -chord_squared, -place_id, tier, position) for tier in self._tiers
                         for population, chord_squared, place_id, position in tier.holding(point, latitude, longitude)),
                        reverse=True)
        for *_rank, tier, position in ranked:
            hit = tier.hit(position, latitude, longitude)
            if hit.distance_km <= tier.radius(position):  # the chord passed by less than a hair, if not
                return hit
        return None

    def nearest(self, latitude: float, longitude: float, radius_km: float) -> Hit | None:
        """The place whose centre is nearest the point, if within `radius_km`; of places as near, the most
        populous, then the lower id."""
        point = _in_space(latitude, longitude)
        within = [(chord_squared, tier, position) for tier in self._tiers
                  for chord_squared, position in tier.within(point, latitude, longitude, radius_km)]
        if not within:
            return None
        # Chords rank places as the sphere does, but for rounding: those within a hair of the best are measured.
        shortest = math.sqrt(min(chord_squared for chord_squared, _tier, _position in within))
        hits = [tier.hit(position, latitude, longitude) for chord_squared, tier, position in within
                if chord_squared <= (shortest + TIE_KM) ** 2]
        nearest = min(hits, key=lambda hit: (hit.distance_km, -hit.population, hit.place_id))
        return nearest if nearest.distance_km <= radius_km else None


def _read_tiers(gazetteer: Gazetteer, radius_km: Callable[[int], float],
                tier_limits_km: Sequence[float]) -> list[_Tier]:
    """Every place's columns, read from the index, in the tiers that have any."""
    place_ids, latitudes, longitudes, populations = array("q"), array("d"), array("d"), array("q")
    for place_id, latitude, longitude, population in gazetteer.centres():
        place_ids.append(place_id)
        latitudes.append(latitude)
        longitudes.append(longitude)
        populations.append(population)
    radii = np.fromiter(map(radius_km, populations), float, len(populations))
    tiers = np.searchsorted(tier_limits_km, radii)  # the first limit at least as large as the radius
    if len(radii) and tiers.max() == len(tier_limits_km):
        raise ValueError(f"a radius of {radii.max()} km is beyond the last tier's {tier_limits_km[-1]} km")
    columns = (np.frombuffer(place_ids, np.int64), np.frombuffer(latitudes), np.frombuffer(longitudes),
               np.frombuffer(populations, np.int64), radii)
    members = [tiers == tier for tier in range(len(tier_limits_km))]
    return [_Tier(*(column[member] for column in columns)) for member in members if member.any()]


class _Tier:
    """The discs of one tier: columns in stripe-then-longitude order, and where each stripe starts."""

    def __init__(self, place_ids: np.ndarray, latitudes: np.ndarray, longitudes: np.ndarray,
                 populations: np.ndarray, radii: np.ndarray) -> None:
        self.reach_km = float(radii.max())  # how far a search for the discs holding a point must look
        self._stripe_degrees = STRIPE_HEIGHT_IN_REACHES * self.reach_km / KM_PER_DEGREE
        self._last_stripe = math.ceil(180 / self._stripe_degrees) - 1
        stripes = np.clip(((latitudes + 90.0) / self._stripe_degrees).astype(np.int64),  # as `_runs` does
                          0, self._last_stripe)
        order = np.lexsort((longitudes, stripes))
        # Stripe s holds positions _stripe_starts[s] to _stripe_starts[s + 1] - 1.
        self._stripe_starts = _column("q", np.searchsorted(stripes[order], np.arange(self._last_stripe + 2)))
        latitudes, longitudes = latitudes[order], longitudes[order]
        self._latitudes, self._longitudes = _column("d", latitudes), _column("d", longitudes)
        xs, ys, zs = _in_space(latitudes, longitudes, np)
        self._xs, self._ys, self._zs = _column("d", xs), _column("d", ys), _column("d", zs)
        self._radii = _column("d", radii[order])
        self._place_ids = _column("i", place_ids[order])
        self._populations = _column("i", populations[order])

    def holding(self, point: tuple[float, float, float], latitude: float,
                longitude: float) -> list[tuple[int, float, int, int]]:
        """(population, squared chord, place id, position) of the centres whose chords to the point are
        no longer than their radius."""
        x, y, z = point
        xs, ys, zs, radii = self._xs, self._ys, self._zs, self._radii
        found = []
        for start, stop in self._runs(latitude, longitude, self.reach_km):
            for position in range(start, stop):
                dx, dy, dz = xs[position] - x, ys[position] - y, zs[position] - z
                chord_squared = dx * dx + dy * dy + dz * dz
                radius = radii[position]
                if chord_squared <= radius * radius * CHORD_SLACK:
                    found.append((self._populations[position], chord_squared, self._place_ids[position], position))
        return found

    def within(self, point: tuple[float, float, float], latitude: float, longitude: float,
               radius_km: float) -> list[tuple[float, int]]:
        """(squared chord, position) of the centres whose chords to the point are no longer than `radius_km`."""
        x, y, z = point
        xs, ys, zs = self._xs, self._ys, self._zs
        limit = radius_km * radius_km * CHORD_SLACK
        found = []
        for start, stop in self._runs(latitude, longitude, radius_km):
            for position in range(start, stop):
                dx, dy, dz = xs[position] - x, ys[position] - y, zs[position] - z
                chord_squared = dx * dx + dy * dy + dz * dz
                if chord_squared <= limit:
                    found.append((chord_squared, position))
        return found

    def hit(self, position: int, latitude: float, longitude: float) -> Hit:
        distance, bearing = distance_and_bearing(self._latitudes[position], self._longitudes[position],
                                                 latitude, longitude)
        return Hit(self._place_ids[position], self._populations[position], distance, bearing)

    def radius(self, position: int) -> float:
        return self._radii[position]

    def _runs(self, latitude: float, longitude: float, search_km: float) -> list[tuple[int, int]]:
        """(start, stop) positions of the centres inside a box holding every point within `search_km` of
        the point: in each stripe the box crosses, those inside its longitudes (one or two runs)."""
        latitude_span = search_km / KM_PER_DEGREE * BOX_SLACK
        half_width = longitude_span(latitude, latitude_span)
        west_to_east = longitude_ranges(longitude - half_width, longitude + half_width)
        first_stripe = max(int((latitude - latitude_span + 90.0) / self._stripe_degrees), 0)
        last_stripe = min(int((latitude + latitude_span + 90.0) / self._stripe_degrees), self._last_stripe)
        starts, longitudes = self._stripe_starts, self._longitudes
        runs = []
        for stripe in range(first_stripe, last_stripe + 1):
            start, stop = starts[stripe], starts[stripe + 1]
            if start < stop:
                for west, east in west_to_east:
                    runs.append((bisect_left(longitudes, west, start, stop),
                                 bisect_right(longitudes, east, start, stop)))
        return runs


def _in_space(latitude: float | np.ndarray, longitude: float | np.ndarray, maths=math) -> tuple:
    """A point of the surface (km) in space: x, y, z from the Earth's centre on a sphere of
    EARTH_RADIUS_KM, z towards the North Pole. Of one point with `math`, of whole columns with `np`."""
    φ, λ = maths.radians(latitude), maths.radians(longitude)
    return (EARTH_RADIUS_KM * maths.cos(φ) * maths.cos(λ), EARTH_RADIUS_KM * maths.cos(φ) * maths.sin(λ),
            EARTH_RADIUS_KM * maths.sin(φ))


def _column(typecode: str, values: np.ndarray) -> array:
    """A numpy column as an `array` of the same type code ("d" float, "i" 32-bit or "q" 64-bit int),
    whose items are quicker to read one at a time."""
    return array(typecode, values.astype(np.dtype(typecode)).tobytes())


def _return_freed_memory() -> None:
    """Hand the heap pages freed by a load's temporaries back to the system. glibc's malloc keeps freed
    memory in the middle of its heap: after `PlaceDiscs.load` the process would hold ~20 MB more than
    the 13 MB of columns. (Elsewhere than glibc, nothing to do.)"""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
