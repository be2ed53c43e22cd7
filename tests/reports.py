"""Real ``Report`` objects for the narrative and plugin tests.

They take the path the API takes once the place is found (``Pipeline.calculate``), with the reference
skyfield engine, so the texts are tested against real numbers, not invented ones.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

from solarserv.models import Location, Report, SolarQuery
from solarserv.pipeline import Pipeline
from solarserv.solar.reference import SkyfieldEngine

# "Today" for the confidence rules, fixed so the texts do not change with the calendar.
TODAY = dt.date(2026, 1, 1)
# The places are given (PLACES), not found: no geocoder or timezone finder is asked, and the tests narrate
# with narrators of their own.
PIPELINE = Pipeline(geocoder=None, timezones=None, engine=SkyfieldEngine(), narrator=None, today=lambda: TODAY)

# Town centres as the gazetteer gives them. Kashgar keeps Beijing time (Asia/Shanghai), the official
# time of all China, and so shows a longitude correction of almost three hours.
PLACES: dict[str, Location] = {
    location.place_name: location
    for location in (
        Location("Paris", "Paris, Île-de-France, France", 48.8566, 2.3522, "FR", "Europe/Paris", "geocoded"),
        Location("Dublin", "Dublin, Leinster, Ireland", 53.3498, -6.2603, "IE", "Europe/Dublin", "geocoded"),
        Location("Kashgar", "Kashgar, Xinjiang, China", 39.4704, 75.9898, "CN", "Asia/Shanghai", "geocoded"),
        Location("Kiritimati", "Kiritimati, Line Islands, Kiribati", 1.87, -157.4, "KI", "Pacific/Kiritimati",
                 "geocoded"),
        Location("Tromsø", "Tromsø, Troms, Norway", 69.6489, 18.9551, "NO", "Europe/Oslo", "geocoded"),
        Location("Madrid", "Madrid, Community of Madrid, Spain", 40.4168, -3.7038, "ES", "Europe/Madrid",
                 "geocoded"),
        Location("UTC", "Greenwich meridian", 0.0, 0.0, "", "Etc/UTC", "geocoded"),
    )
}


def report_at(place: str, date: str, local_time: str, **location_changes) -> Report:
    """The Report for a place of PLACES at an ISO date and HH:MM[:SS] civil time.

    ``location_changes`` replace Location fields, e.g. ``source="coordinates"`` or ``notes=(...)``.
    """
    location = dataclasses.replace(PLACES[place], **location_changes)
    date_, time_ = dt.date.fromisoformat(date), dt.time.fromisoformat(local_time)
    if location.source == "geocoded":
        query = SolarQuery(date_, time_, place_name=place)
    else:
        query = SolarQuery(date_, time_, latitude=location.latitude, longitude=location.longitude)
    return PIPELINE.calculate(query, location)
