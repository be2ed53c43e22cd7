"""Each confidence rule (README "Confidence") on its own, and the lowest level winning."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from solarserv import civil as civil_time
from solarserv.confidence import assess
from solarserv.models import Location

TODAY = dt.date(2026, 11, 21)
PARIS = Location(place_name="48.8566°N, 2.3522°E", display_name="Paris", latitude=48.8566, longitude=2.3522,
                 country_code="FR", timezone="Europe/Paris", source="coordinates")
AMSTERDAM = Location(place_name="52.3676°N, 4.9041°E", display_name="Amsterdam", latitude=52.3676,
                     longitude=4.9041, country_code="NL", timezone="Europe/Amsterdam", source="coordinates")


def level(location: Location, date: str, time: str = "12:00", zone: str = "Europe/Paris"):
    civil = civil_time.resolve(dt.date.fromisoformat(date), dt.time.fromisoformat(time), zone)
    return assess(location, civil, TODAY)


def test_coordinates_in_a_certain_zone_on_a_modern_date_are_high():
    confidence = level(PARIS, "2026-07-14")
    assert confidence.level == "HIGH" and len(confidence.reasons) == 1


@pytest.mark.parametrize("location,date,time,zone,expected,words", [
    (PARIS, "1905-06-01", "12:00", "Europe/Paris", "LOW", "local mean time"),
    (dataclasses.replace(PARIS, latitude=-72.0114, longitude=2.535, timezone="Antarctica/Troll"), "2000-01-10",
     "12:00", "Antarctica/Troll", "LOW", "no local time"),
    (PARIS, "2040-01-01", "12:00", "Europe/Paris", "LOW", "more than 10 years ahead"),
    (dataclasses.replace(PARIS, latitude=89.5), "2026-07-14", "12:00", "Europe/Paris", "LOW", "pole"),
    (AMSTERDAM, "1900-06-01", "12:00", "Europe/Amsterdam", "LOW", "tzdata keeps no record of its own for "
     "Europe/Amsterdam before 1970; the clocks used are Europe/Brussels's"),
    (PARIS, "1950-06-01", "12:00", "Europe/Paris", "MEDIUM", "before 1970"),
    (PARIS, "2026-10-25", "02:30", "Europe/Paris", "MEDIUM", "occurs twice"),
    (dataclasses.replace(PARIS, source="geocoded"), "2026-07-14", "12:00", "Europe/Paris", "MEDIUM",
     "town centre"),
    (dataclasses.replace(PARIS, source="geocoded", chosen_among_several=True), "2026-07-14", "12:00",
     "Europe/Paris", "MEDIUM", "several places in one country; the most populous was used (or, where the "
     "geocoder gives no populations, its first)"),
    (dataclasses.replace(PARIS, near_zone_border=True), "2026-07-14", "12:00", "Europe/Paris", "MEDIUM",
     "timezone border"),
])
def test_each_rule_sets_its_level_and_says_why(location, date, time, zone, expected, words):
    confidence = level(location, date, time, zone)
    assert confidence.level == expected
    assert any(words in reason and reason.startswith(expected) for reason in confidence.reasons)


def test_the_lowest_level_wins_and_every_rule_is_listed():
    confidence = level(dataclasses.replace(PARIS, source="geocoded"), "1905-06-01")
    assert confidence.level == "LOW"
    # Local mean time, before 1970, geocoded: the local-mean-time era is also before 1970, and says so.
    assert [reason.split(":")[0] for reason in confidence.reasons] == ["LOW", "MEDIUM", "MEDIUM"]
    assert "before 1970" in confidence.reasons[1]


def test_ten_years_ahead_to_the_day_is_still_not_low():
    assert level(PARIS, "2036-11-21").level == "HIGH"  # ten years after TODAY, 3,653 days with 3 leap days
    assert level(PARIS, "2036-11-22").level == "LOW"
    leap_day = civil_time.resolve(dt.date(2038, 2, 28), dt.time(12), "Europe/Paris")
    assert assess(PARIS, leap_day, dt.date(2028, 2, 29)).level == "HIGH"
    assert assess(PARIS, leap_day, dt.date(2028, 2, 28)).level == "HIGH"


@pytest.mark.parametrize("latitude,expected", [(89.0, "LOW"), (-89.0, "LOW"), (-89.5, "LOW"), (88.99, "HIGH"),
                                               (-88.99, "HIGH")])
def test_within_a_degree_of_either_pole_is_low(latitude, expected):
    confidence = level(dataclasses.replace(PARIS, latitude=latitude), "2026-07-14")
    assert confidence.level == expected
    if expected == "LOW":
        assert any("within 1° of a pole" in reason for reason in confidence.reasons)


def test_1970_is_reliable_and_the_day_before_is_not():
    assert level(PARIS, "1970-01-01").level == "HIGH"
    assert level(PARIS, "1969-12-31").level == "MEDIUM"


def test_a_place_merged_into_another_zone_is_low_only_before_1970():
    assert level(AMSTERDAM, "1969-12-31", zone="Europe/Amsterdam").level == "LOW"
    assert level(AMSTERDAM, "1970-01-01", zone="Europe/Amsterdam").level == "HIGH"


# Other names of one zone (old spellings, renamed cities, US/…, Etc/…) are the same place's record.
@pytest.mark.parametrize("alias,zone", [("US/Eastern", "America/New_York"), ("Asia/Calcutta", "Asia/Kolkata"),
                                        ("Europe/Kiev", "Europe/Kyiv"), ("Etc/Zulu", "Etc/UTC"),
                                        ("Eire", "Europe/Dublin")])
def test_another_name_for_the_same_zone_keeps_its_confidence(alias, zone):
    assert level(PARIS, "1950-06-01", zone=alias) == level(PARIS, "1950-06-01", zone=zone)
