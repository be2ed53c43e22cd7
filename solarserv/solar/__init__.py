"""Astronomy as pure functions of (instant, latitude, longitude): no HTTP, no civil time, no I/O per call.

A ``SunEngine`` answers one instant and place with a ``SunState``, and answers the cheaper question the
search for sunrise, solar noon and sunset asks many times: the Sun's hour angle and declination. The
reference engine is per-call skyfield with JPL DE421; faster engines must agree with it (tests hold the
bounds).
"""

from __future__ import annotations

import datetime as dt
from typing import Protocol

from solarserv.models import SunState


class SunEngine(Protocol):
    name: str  # shown in the result's calculation block, e.g. "JPL DE421 via skyfield"

    def sun_state(self, instant: dt.datetime, latitude: float, longitude: float) -> SunState:
        """The Sun at an aware UTC instant, seen from a place at sea level on the WGS84 ellipsoid."""
        ...

    def hour_angle_and_declination(self, unix_seconds: float, longitude: float) -> tuple[float, float]:
        """The geocentric part of ``sun_state`` at an instant given in Unix seconds (UTC, days of 86400 s):
        the Sun's local apparent hour angle, wrapped into [−π, π] (true solar time − 12 h), and its
        apparent declination, both in radians. No topocentric work: it depends on the longitude only."""
        ...

    def prepare(self, first_unix_seconds: float, last_unix_seconds: float) -> None:
        """Calls for instants between these two follow: do now, at once, what they would each do alone
        (the fast engine fits the UTC days of the span in one evaluation). Answers stay the same, to
        rounding; only the time they take changes."""
        ...
