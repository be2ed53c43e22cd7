"""The numbers of a result, from a located place and a resolved civil instant (DESIGN §3).

Pure: no I/O, no HTTP. The engine gives the Sun; this module adds the standard meridian and the longitude
correction, the confidence, and the solar day's events on the zone's clocks. The summer time, the total
difference and the sundial's reading follow from these as properties of ``Report`` (models.py).
"""

from __future__ import annotations

import datetime as dt

from solarserv import civil as civil_time
from solarserv import confidence
from solarserv.geo.zones import zone as zone_info
from solarserv.models import CivilInstant, Location, Report, SolarEvents, SolarQuery
from solarserv.solar import MINUTES_PER_DEGREE, SECONDS_PER_DEGREE, SunEngine
from solarserv.solar.events import solar_events


def wrap_degrees(angle: float) -> float:
    """Into (−180°, 180°]."""
    wrapped = (angle + 180.0) % 360.0 - 180.0
    return 180.0 if wrapped == -180.0 else wrapped


def standard_meridian(standard_offset: dt.timedelta) -> float:
    """15° per hour of the zone's standard offset, as a longitude in (−180°, 180°]."""
    return wrap_degrees(standard_offset.total_seconds() / SECONDS_PER_DEGREE)


def meridian_distance(longitude: float, meridian: float) -> float:
    """Degrees east (+) or west (−) of the standard meridian. Wrapped, so a place east of the date line on
    its zone's clocks (Kiritimati, 157.4°W on UTC+14, meridian 150°W) lies 7.4° west, not 352.6° east."""
    return wrap_degrees(longitude - meridian)


def calculate(query: SolarQuery, location: Location, civil: CivilInstant, engine: SunEngine,
              today: dt.date) -> Report:
    # The events first: the engine prepares their solar day at once, which usually holds the instant too.
    events = _events(location, civil, engine)
    sun = engine.sun_state(civil.utc, location.latitude, location.longitude)
    meridian = standard_meridian(civil.standard_offset)
    distance = meridian_distance(location.longitude, meridian)
    return Report(
        query=query,
        location=location,
        civil=civil,
        sun=sun,
        longitude_correction_minutes=MINUTES_PER_DEGREE * distance,
        standard_meridian=meridian,
        meridian_distance_degrees=distance,
        events=events,
        confidence=confidence.assess(location, civil, today),
        ephemeris=engine.name,
    )


def _events(location: Location, civil: CivilInstant, engine: SunEngine) -> SolarEvents:
    """The solar day of the civil date, its events in local civil time."""
    start, end = civil_time.day_bounds_utc(civil.local.date(), civil.zone)
    in_utc = solar_events(engine, start, end, location.latitude, location.longitude)
    return in_utc.astimezone(zone_info(civil.zone))
