"""Zones from the tzdata package, their countries, and coordinates → zone with timezonefinder."""

from __future__ import annotations

import datetime as dt
import importlib.resources
import zoneinfo

import pytest
from timezonefinder import TimezoneFinder

from solarserv.errors import ApiError
from solarserv.geo.timezones import TimezoneLocator
from solarserv.geo.zones import (
    TZDATA_VERSION,
    canonical_zone,
    country_at,
    country_of_zone,
    has_zone,
    keeps_zone_unnamed,
    record_of_another_place,
    zone,
    zone_names,
)

# --- zones from the tzdata package -------------------------------------------------------------


def test_version_is_the_packages_release():
    compiled_from = (importlib.resources.files("tzdata.zoneinfo") / "tzdata.zi").read_text().splitlines()[0]
    assert compiled_from == f"# version {TZDATA_VERSION}"


def test_zone_ignores_system_zoneinfo_files(tmp_path):
    # A system directory whose "Europe/Paris" holds Tokyo's rules: zoneinfo.ZoneInfo prefers it,
    # zone() must not.
    (tmp_path / "Europe").mkdir()
    with (importlib.resources.files("tzdata.zoneinfo") / "Asia" / "Tokyo").open("rb") as tokyo:
        (tmp_path / "Europe" / "Paris").write_bytes(tokyo.read())
    noon = dt.datetime(2026, 1, 15, 12)
    zone.cache_clear()
    zoneinfo.reset_tzpath(to=[str(tmp_path)])
    try:
        from_system_path = zoneinfo.ZoneInfo.no_cache("Europe/Paris")
        assert noon.replace(tzinfo=from_system_path).utcoffset() == dt.timedelta(hours=9)
        assert noon.replace(tzinfo=zone("Europe/Paris")).utcoffset() == dt.timedelta(hours=1)
    finally:
        zoneinfo.reset_tzpath()
        zone.cache_clear()


def test_amsterdam_1935_is_the_packages_brussels_time():
    # The package's main data merged Amsterdam into Brussels; builds with "backzone" (Debian's
    # /usr/share/zoneinfo) give Amsterdam Mean Time, +01:19:32 in summer 1935.
    summer_1935 = dt.datetime(1935, 6, 1, 12, tzinfo=zone("Europe/Amsterdam"))
    assert (summer_1935.utcoffset(), summer_1935.tzname()) == (dt.timedelta(hours=1), "WEST")


def test_zone_is_loaded_once():
    assert zone("Asia/Kathmandu") is zone("Asia/Kathmandu")
    assert zone("Asia/Kathmandu").key == "Asia/Kathmandu"


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "../../etc/passwd", "", "europe/paris"])
def test_unknown_zone_is_a_clear_error(name):
    assert not has_zone(name)
    with pytest.raises(ApiError) as caught:
        zone(name)
    assert caught.value.code == "TIMEZONE_RESOLUTION_FAILED"
    assert repr(name) in caught.value.message and TZDATA_VERSION in caught.value.message


def test_zone_names_hold_canonical_zones_and_links():
    assert {"Europe/Paris", "Asia/Kathmandu", "Eire", "US/Eastern", "Etc/GMT+10"} <= zone_names()
    assert len(zone_names()) > 500


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("Europe/Amsterdam", "Europe/Brussels"),
        ("Europe/Vatican", "Europe/Rome"),
        ("Asia/Calcutta", "Asia/Kolkata"),
        ("Europe/Paris", "Europe/Paris"),
    ],
)
def test_canonical_zone_follows_links(name, target):
    assert canonical_zone(name) == target


@pytest.mark.parametrize(("name", "record_of"), [
    ("Europe/Amsterdam", "Europe/Brussels"),
    ("Europe/Oslo", "Europe/Berlin"),
    ("Asia/Vientiane", "Asia/Bangkok"),
    ("Europe/Busingen", "Europe/Zurich"),  # another country's zone, for a German enclave in Switzerland
    ("Europe/Brussels", None),
    ("Asia/Calcutta", None),  # the old spelling of Asia/Kolkata
    ("US/Eastern", None),
    ("Etc/Zulu", None),
])
def test_record_of_another_place_only_for_a_place_merged_into_another_zone(name, record_of):
    assert record_of_another_place(name) == record_of


def test_every_link_timezonefinder_gives_is_a_place_merged_into_another_zone():
    # The package cannot tell a merged place zone.tab no longer lists (America/Nipigon, now Toronto's) from
    # a renamed one (Asia/Calcutta); confidence relies on timezonefinder giving neither.
    links = {name for name in TimezoneFinder(in_memory=False).timezone_names if canonical_zone(name) != name}
    assert "Europe/Amsterdam" in links
    assert all(record_of_another_place(name) for name in links)


@pytest.mark.parametrize(
    ("name", "country"),
    [
        ("Europe/Paris", "FR"),
        ("Asia/Kathmandu", "NP"),
        ("Europe/Vatican", "VA"),  # a link with its own row in zone.tab
        ("Europe/Amsterdam", "NL"),  # a link whose target is another country's zone
        ("Eire", "IE"),  # a backward name, through its link
        ("Antarctica/McMurdo", "AQ"),
        ("Etc/UTC", None),
        ("Etc/GMT+10", None),
    ],
)
def test_country_of_zone(name, country):
    assert country_of_zone(name) == country


@pytest.mark.parametrize(
    ("country", "zone", "kept_unnamed"),
    [
        ("VN", "Asia/Bangkok", True),  # northern Vietnam; Vietnam's own zone is Asia/Ho_Chi_Minh, the south's
        ("TH", "Asia/Bangkok", False),  # the zone's own country
        ("LA", "Asia/Bangkok", False),  # keeps Bangkok's clocks under its own name, Asia/Vientiane
        ("VN", "Asia/Vientiane", False),  # only the zone timezonefinder gives northern Vietnam
        ("DK", "Europe/Berlin", False),  # Europe/Copenhagen, a link to it, is Denmark's own name
        ("CH", "Europe/Berlin", False),  # not among the zone's countries
    ],
)
def test_keeps_zone_unnamed(country, zone, kept_unnamed):
    assert keeps_zone_unnamed(country, zone) is kept_unnamed


@pytest.mark.parametrize(("latitude", "zone_name", "country"), [
    (-72.0, "Africa/Johannesburg", "AQ"),  # Queen Maud Land keeps South Africa's time
    (-60.5, "America/Argentina/Ushuaia", "AQ"),
    (-60.0, "America/Argentina/Ushuaia", "AR"),  # south of 60°S, not on it
    (-59.5, "America/Argentina/Ushuaia", "AR"),
])
def test_a_point_south_of_60_s_is_in_antarctica_whatever_time_it_keeps(latitude, zone_name, country):
    assert country_at(latitude, zone_name) == country


def test_the_zones_cover_every_country():
    countries = {country_of_zone(name) for name in zone_names()} - {None}
    assert len(countries) > 200


# --- coordinates → zone --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def locator() -> TimezoneLocator:
    return TimezoneLocator()


@pytest.mark.parametrize(
    ("latitude", "longitude", "expected"),
    [
        (48.8566, 2.3522, "Europe/Paris"),
        (27.7172, 85.3240, "Asia/Kathmandu"),
        (1.87, -157.40, "Pacific/Kiritimati"),
        (-90.0, 0.0, "Antarctica/McMurdo"),  # the South Pole station keeps New Zealand time
    ],
)
def test_zone_at(locator, latitude, longitude, expected):
    assert locator.zone_at(latitude, longitude) == expected


@pytest.mark.parametrize(("latitude", "longitude", "named"), [
    (0.0, -150.0, "0°, 150°W"),  # mid-Pacific
    (-0.0, -150.0, "0°, 150°W"),  # the same point, not "latitude -0.0"
    (90.0, 0.0, "90°N, 0°"),  # the North Pole (Arctic Ocean)
    (-45.0, -120.0, "45°S, 120°W"),  # the South Pacific
])
def test_international_waters_have_no_timezone(locator, latitude, longitude, named):
    with pytest.raises(ApiError) as caught:
        locator.zone_at(latitude, longitude)
    error = caught.value
    assert (error.code, error.status) == ("TIMEZONE_RESOLUTION_FAILED", 422)
    assert error.message == (f"{named} is in international waters, or on an uninhabited island outside every "
                             "time zone's boundaries, where no IANA timezone applies.")


def test_an_island_without_a_zone_is_not_said_to_be_at_sea(locator):
    # Bouvet Island (Norway's, uninhabited): land, which the boundary data leaves to the sea's Etc/GMT.
    with pytest.raises(ApiError) as caught:
        locator.zone_at(-54.42, 3.36)
    assert "or on an uninhabited island" in caught.value.message


def test_antarctic_land_without_a_zone_is_not_called_international_waters(locator):
    # The interior of West Antarctica (Marie Byrd Land): land, which timezonefinder gives no zone.
    with pytest.raises(ApiError) as caught:
        locator.zone_at(-83.8125, -96.389)
    assert caught.value.message == ("83.8125°S, 96.389°W is in Antarctica or its seas outside "
                                    "every station's time zone, where no IANA timezone applies.")


def test_every_land_zone_of_timezonefinder_is_in_tzdata():
    land_zones = [name for name in TimezoneFinder().timezone_names if not name.startswith("Etc/")]
    assert len(land_zones) > 300
    assert [name for name in land_zones if not has_zone(name)] == []


@pytest.mark.parametrize(
    ("place", "latitude", "longitude", "near"),
    [
        ("Hendaye, on the France/Spain border", 43.3589, -1.7747, True),
        ("Le Perthus, on the France/Spain border", 42.4650, 2.8647, True),
        ("central Paris", 48.8566, 2.3522, False),
        ("Nice: the sea and Monaco (a link to Europe/Paris) are no border", 43.7102, 7.2620, False),
        ("Rome: Vatican City is a link to Europe/Rome", 41.9028, 12.4964, False),
        ("the South Pole", -90.0, 0.0, False),
    ],
)
def test_near_border(locator, place, latitude, longitude, near):
    zone_name = locator.zone_at(latitude, longitude)
    assert locator.near_border(latitude, longitude, zone_name) is near, place


def test_a_point_just_outside_its_zone_is_near_the_border(locator):
    # Irun, Spain, 2 km from Hendaye across the Bidasoa: Madrid's zone, with France in reach.
    assert locator.zone_at(43.3390, -1.7896) == "Europe/Madrid"
    assert locator.near_border(43.3390, -1.7896, "Europe/Madrid")
    assert not locator.near_border(40.4168, -3.7038, "Europe/Madrid")  # Madrid itself
