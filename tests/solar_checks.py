"""What the solar tests check the engines against: NREL SPA through pvlib at one instant, the cases both
engines are held to, and the checks of sunrise, noon and sunset (tests/test_solar_*.py share them).

SPA gets a time stamp equal to the instant's UT1 and ΔT = TT − UT1 as skyfield has it at that instant, so
that both compare one physical instant.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pvlib

from solarserv.civil import day_bounds_utc
from solarserv.geo.zones import zone
from solarserv.models import SolarEvents
from solarserv.solar import wrap_seconds_of_day
from solarserv.solar.ephemeris import skyfield_time, ut1_minus_utc_seconds
from solarserv.solar.events import STANDARD_ALTITUDE_DEGREES, solar_events
from solarserv.solar.reference import SkyfieldEngine

REFERENCE_ENGINE = SkyfieldEngine()

# README (Solar events): every sunrise and sunset lands within 0.1 s of the crossing. Written out, not
# imported: a looser search tolerance must fail the tests, not loosen them.
EVENT_TOLERANCE_SECONDS = 0.1

SPA_PRESSURE_PA = 101000  # the engine's 1010 hPa
SPA_TEMPERATURE_C = 10
SPA_REFRACTION_CUTOFF = -(0.26667 + 0.5667)  # SPA refracts only when its geometric elevation is above this


@dataclass(frozen=True)
class Case:
    label: str
    zone: str
    local: str  # civil date-time in the zone, ISO format
    latitude: float
    longitude: float

    @property
    def instant(self) -> dt.datetime:
        naive = dt.datetime.fromisoformat(self.local)
        return naive.replace(tzinfo=zone(self.zone)).astimezone(dt.UTC)


CASES = [
    Case("Paris, summer time", "Europe/Paris", "2026-07-14T14:30", 48.8566, 2.3522),
    Case("Paris, winter", "Europe/Paris", "2026-01-15T09:00", 48.8566, 2.3522),
    Case("Kashgar on Beijing time", "Asia/Shanghai", "2026-07-14T14:30", 39.4704, 75.9898),
    Case("Kathmandu +05:45", "Asia/Kathmandu", "2024-03-01T12:00", 27.7172, 85.3240),
    Case("Kathmandu near midnight", "Asia/Kathmandu", "2024-11-03T23:55", 27.7172, 85.3240),
    Case("Delhi +05:30", "Asia/Kolkata", "2024-06-21T12:00", 28.6139, 77.2090),
    Case("Mumbai 1950", "Asia/Kolkata", "1950-02-12T18:30", 19.0760, 72.8777),
    Case("Adelaide +10:30 summer time", "Australia/Adelaide", "2025-01-10T07:15", -34.9285, 138.6007),
    Case("Adelaide +09:30 winter", "Australia/Adelaide", "2025-06-20T16:40", -34.9285, 138.6007),
    Case("Chatham +13:45 summer time", "Pacific/Chatham", "2025-12-20T05:30", -43.9535, -176.5597),
    Case("Chatham +12:45 winter", "Pacific/Chatham", "2025-07-01T13:00", -43.9535, -176.5597),
    Case("St John's −02:30 summer time", "America/St_Johns", "2024-07-01T20:00", 47.5615, -52.7126),
    Case("St John's just after midnight", "America/St_Johns", "2024-01-15T00:10", 47.5615, -52.7126),
    Case("Kiritimati +14 after midnight", "Pacific/Kiritimati", "2024-03-01T00:20", 1.8721, -157.4278),
    Case("Kiritimati at noon", "Pacific/Kiritimati", "2024-11-03T12:00", 1.8721, -157.4278),
    Case("Apia before midnight", "Pacific/Apia", "2024-01-10T23:50", -13.8333, -171.7667),
    Case("Fiji near the date line", "Pacific/Fiji", "2024-09-15T06:00", -18.1416, 178.4419),
    Case("Tromsø midnight sun", "Europe/Oslo", "2024-06-21T00:30", 69.6492, 18.9553),
    Case("Tromsø polar night", "Europe/Oslo", "2024-12-21T12:00", 69.6492, 18.9553),
    Case("Longyearbyen midnight sun", "Arctic/Longyearbyen", "2025-06-21T23:59", 78.2232, 15.6267),
    Case("Longyearbyen polar night", "Arctic/Longyearbyen", "2025-12-21T11:00", 78.2232, 15.6267),
    Case("McMurdo midnight sun", "Antarctica/McMurdo", "2024-12-21T00:00", -77.8460, 166.6760),
    Case("McMurdo polar night", "Antarctica/McMurdo", "2024-06-21T12:00", -77.8460, 166.6760),
    Case("Greenwich, first supported day", "Europe/London", "1900-01-01T12:00", 51.4769, -0.0005),
    Case("New York 1905", "America/New_York", "1905-07-04T17:00", 40.7128, -74.0060),
    Case("Buenos Aires 1950", "America/Argentina/Buenos_Aires", "1950-12-25T10:00", -34.6037, -58.3816),
    Case("Honolulu at the 1972 leap second", "Pacific/Honolulu", "1972-06-30T13:59", 21.3069, -157.8583),
    Case("Dublin, negative-DST zone, summer", "Europe/Dublin", "2024-07-01T12:00", 53.3498, -6.2603),
    Case("Reykjavik sunrise", "Atlantic/Reykjavik", "2024-06-21T03:00", 64.1466, -21.9426),
    Case("Quito on the equator", "America/Guayaquil", "2024-03-20T12:00", -0.1807, -78.4678),
    Case("Cape Town sunset", "Africa/Johannesburg", "2030-09-23T18:10", -33.9249, 18.4241),
    Case("Tokyo 2040", "Asia/Tokyo", "2040-08-15T15:00", 35.6762, 139.6503),
    Case("Sydney 2045, summer time", "Australia/Sydney", "2045-03-10T08:00", -33.8688, 151.2093),
    Case("Los Angeles, last supported day", "America/Los_Angeles", "2050-12-31T23:59", 34.0522, -118.2437),
]


@dataclass(frozen=True)
class Spa:
    true_solar_seconds: float  # from SPA's own geocentric hour angle: apparent sidereal time + lon − RA
    true_solar_seconds_by_eot: float  # UT1 + longitude/15 h + SPA's equation of time
    equation_of_time_minutes: float
    azimuth: float
    apparent_elevation: float
    geometric_elevation: float


def spa_at(instant: dt.datetime, latitude: float, longitude: float) -> Spa:
    ut1 = instant + dt.timedelta(seconds=ut1_minus_utc_seconds(instant))
    delta_t = float(skyfield_time(instant).delta_t)  # TT − UT1
    frame = pvlib.solarposition.spa_python(
        pd.DatetimeIndex([ut1]),
        latitude,
        longitude,
        altitude=0,
        pressure=SPA_PRESSURE_PA,
        temperature=SPA_TEMPERATURE_C,
        delta_t=delta_t,
    ).iloc[0]
    sidereal, right_ascension, _ = pvlib.spa.solar_position(
        np.array([ut1.timestamp()]),
        latitude,
        longitude,
        0,
        SPA_PRESSURE_PA / 100,
        SPA_TEMPERATURE_C,
        delta_t,
        0.5667,
        sst=True,
    )
    hour_angle_degrees = sidereal[0] + longitude - right_ascension[0]
    # SPA's E = M − 0.0057183° − α + Δψ·cos ε is apparent minus mean solar time, where mean time is
    # UT1-based (the time stamp SPA was given), so TST = UT1 + longitude/15 h + E. Its mean longitude M
    # runs on TT, which puts E ≈ 0.986°/day × ΔT (0.2 s today) away from the sidereal-time hour angle.
    ut1_seconds = ut1.hour * 3600 + ut1.minute * 60 + ut1.second + ut1.microsecond / 1e6
    return Spa(
        true_solar_seconds=wrap_seconds_of_day((hour_angle_degrees / 15 + 12) * 3600),
        true_solar_seconds_by_eot=wrap_seconds_of_day(
            ut1_seconds + longitude * 240 + frame["equation_of_time"] * 60
        ),
        equation_of_time_minutes=float(frame["equation_of_time"]),
        azimuth=float(frame["azimuth"]),
        apparent_elevation=float(frame["apparent_elevation"]),
        geometric_elevation=float(frame["elevation"]),
    )


def degrees_apart(a: float, b: float) -> float:
    return abs((a - b + 180) % 360 - 180)


# --- sunrise, noon and sunset


def civil_day(zone: str, date: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """Local midnight to the next local midnight, in UTC, as the service computes it (tzdata package)."""
    return day_bounds_utc(date, zone)


def events_for(zone: str, date: str, latitude: float, longitude: float, engine=REFERENCE_ENGINE) -> SolarEvents:
    start, end = civil_day(zone, dt.date.fromisoformat(date))
    return solar_events(engine, start, end, latitude, longitude)


# (zone, civil date, latitude, longitude): ordinary days where SPA's rise/set algorithm is at its best.
MID_LATITUDE_DAYS = [
    ("Europe/Paris", "2024-06-21", 48.8566, 2.3522),
    ("Europe/Paris", "2024-03-31", 48.8566, 2.3522),  # 23-hour day (spring forward)
    ("Europe/Paris", "2024-10-27", 48.8566, 2.3522),  # 25-hour day (fall back)
    ("Asia/Kathmandu", "2024-03-01", 27.7172, 85.3240),
    ("Asia/Shanghai", "2026-07-14", 39.4704, 75.9898),  # Kashgar: noon near 15:00 on the clock
    ("Pacific/Kiritimati", "2024-03-01", 1.8721, -157.4278),
    ("Pacific/Apia", "2024-01-10", -13.8333, -171.7667),
    ("Australia/Adelaide", "2025-01-10", -34.9285, 138.6007),
    ("America/St_Johns", "2024-11-03", 47.5615, -52.7126),
    ("America/Guayaquil", "2024-03-20", -0.1807, -78.4678),
    ("America/New_York", "1905-07-04", 40.7128, -74.0060),
    ("Asia/Tokyo", "2045-12-21", 35.6762, 139.6503),
]


def standard_altitude_height(engine, unix_seconds: float, latitude: float, longitude: float) -> float:
    """sin(altitude) − sin(−0.8333°) from the engine's hour angle and declination: > 0 above it."""
    hour_angle, declination = engine.hour_angle_and_declination(unix_seconds, longitude)
    phi = math.radians(latitude)
    sin_altitude = math.sin(phi) * math.sin(declination) + math.cos(phi) * math.cos(declination) * math.cos(
        hour_angle
    )
    return sin_altitude - math.sin(math.radians(STANDARD_ALTITUDE_DEGREES))


def assert_events_within_tolerance(engine, events: SolarEvents, latitude: float, longitude: float) -> None:
    """Each sunrise and sunset lies within 0.1 s of the crossing of −0.8333° (the Sun is on opposite sides
    of it 0.1 s before and after), and solar noon within 0.01 s of the hour angle's zero."""
    for event in (events.sunrise, events.sunset):
        if event is not None:
            before, after = (standard_altitude_height(engine, event.timestamp() + delta, latitude, longitude)
                             for delta in (-EVENT_TOLERANCE_SECONDS, EVENT_TOLERANCE_SECONDS))
            assert before * after < 0, (event, before, after)
    noon = events.solar_noon.timestamp()
    hour_angle_before, _ = engine.hour_angle_and_declination(noon - 0.01, longitude)
    hour_angle_after, _ = engine.hour_angle_and_declination(noon + 0.01, longitude)
    assert hour_angle_before < 0 < hour_angle_after
