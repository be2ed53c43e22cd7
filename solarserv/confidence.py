"""How much to trust a result: HIGH, MEDIUM or LOW from explicit rules (README "Confidence").

Every rule that applies is reported with its level; the result's level is the lowest of them, HIGH
when none applies. The rules are about inputs we cannot be sure of (old or future civil-time rules,
town-centre coordinates, borders), never about the astronomy, which is exact to a second.
"""

from __future__ import annotations

import datetime as dt

from solarserv.geo.zones import record_of_another_place
from solarserv.models import CivilInstant, Confidence, Location

FUTURE_HORIZON_YEARS = 10
RELIABLE_TZDATA_FROM = dt.date(1970, 1, 1)
NEAR_POLE_LATITUDE = 89.0
_ORDER = {"LOW": 0, "MEDIUM": 1, "HIGH": 2}


def assess(location: Location, civil: CivilInstant, today: dt.date) -> Confidence:
    date = civil.local.date()
    rules: list[tuple[str, str]] = []
    if civil.no_local_time:
        rules.append(("LOW", "tzdata records no local time here on this date (none before the place was "
                             "inhabited), so the time given was read as UTC"))
    if civil.local_mean_time:
        rules.append(("LOW", "the zone was still on local mean time on this date; its offset is a "
                             "reconstruction by the tz database"))
    record_of = record_of_another_place(civil.zone)
    if record_of is not None and date < RELIABLE_TZDATA_FROM:
        rules.append(("LOW", f"tzdata keeps no record of its own for {civil.zone} before 1970; the clocks used "
                             f"are {record_of}'s"))
    if date > _years_after(today, FUTURE_HORIZON_YEARS):
        rules.append(("LOW", f"the date is more than {FUTURE_HORIZON_YEARS} years ahead; the zone's "
                             "civil-time rules may change before then"))
    if abs(location.latitude) >= NEAR_POLE_LATITUDE:
        rules.append(("LOW", f"within {90 - NEAR_POLE_LATITUDE:g}° of a pole, where the hour angle and "
                             "azimuth are ill-conditioned and the timezone is a convention"))
    if date < RELIABLE_TZDATA_FROM:
        rules.append(("MEDIUM", "the date is before 1970, where the tz database does not guarantee "
                                "offsets and DST dates"))
    if civil.ambiguous:
        rules.append(("MEDIUM", "the local time occurs twice on this date (clocks went back); the first "
                                "occurrence was used"))
    if location.source == "geocoded":
        rules.append(("MEDIUM", "the place name was geocoded to a town centre; a point elsewhere in the town "
                                "can differ by several seconds per kilometre east or west"))
    if location.chosen_among_several:
        rules.append(("MEDIUM", "the place name matched several places in one country; the most populous "
                                "was used (or, where the geocoder gives no populations, its first)"))
    if location.near_zone_border:
        rules.append(("MEDIUM", "the point is within about 10 km of a timezone border"))
    if not rules:
        return Confidence("HIGH", ("coordinates in a certain timezone on a date with reliable civil-time "
                                   "records",))
    level = min((level for level, _ in rules), key=_ORDER.__getitem__)
    return Confidence(level, tuple(f"{rule_level}: {text}" for rule_level, text in rules))


def _years_after(day: dt.date, years: int) -> dt.date:
    """The same date ``years`` later; 28 February for a 29 February whose year has none."""
    try:
        return day.replace(year=day.year + years)
    except ValueError:
        return day.replace(year=day.year + years, day=28)
