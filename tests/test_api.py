"""The solar-time API end to end over HTTP on loopback: both endpoints, every field, the calculation rules."""

from __future__ import annotations

import http.client
import json
import re
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

PARIS_SUMMER = {"date": "2026-07-14", "local_time": "14:30", "latitude": 48.8566, "longitude": 2.3522}
HHMMSS = re.compile(r"([01]\d|2[0-3]):[0-5]\d:[0-5]\d")


async def post(api, fields):
    return await api("/api/v1/solar-time", method="POST", body=fields)


async def get(api, fields):
    return await api("/api/v1/solar-time?" + urlencode(fields))


def seconds_of_day(text: str) -> int:
    hours, minutes, seconds = map(int, text.split(":"))
    return hours * 3600 + minutes * 60 + seconds


async def test_post_answers_every_field_of_the_spec_with_its_type(api):
    reply = await post(api, PARIS_SUMMER)
    assert reply.status == 200, reply.body
    assert reply.headers["Content-Type"].startswith("application/json")
    result = reply.json()
    for name in ("true_solar_time", "local_time", "utc_time"):
        assert HHMMSS.fullmatch(result[name]), name
    assert re.fullmatch(r"[+-]\d\d:\d\d", result["utc_offset"])
    assert result["utc_offset"] == "+02:00" and result["timezone"] == "Europe/Paris"
    assert result["dst"] is True and result["date"] == "2026-07-14" and result["local_time"] == "14:30:00"
    assert result["utc_time"] == "12:30:00"
    location = result["location"]
    assert set(location) >= {"place_name", "display_name", "latitude", "longitude", "country_code"}
    assert location["country_code"] == "FR"
    assert (location["latitude"], location["longitude"]) == (48.8566, 2.3522)
    for name in ("equation_of_time_minutes", "longitude_correction_minutes", "total_difference_minutes"):
        assert isinstance(result["calculation"][name], float)
    assert isinstance(result["solar_position"]["azimuth"], float)
    assert isinstance(result["solar_position"]["elevation"], float)
    assert result["confidence"] in {"HIGH", "MEDIUM", "LOW"}
    assert result["historical_context_status"] == "found"
    for text in ("summary", "historical_context", "solar_context", "validation"):
        assert isinstance(result[text], str) and len(result[text]) > 40, text
    assert "✓" in result["validation"]
    share = result["share"]
    assert parse_qs(share["url_params"]) == {"date": ["2026-07-14"], "local_time": ["14:30:00"],
                                             "latitude": ["48.8566"], "longitude": ["2.3522"]}
    assert share["url"] == "/?" + share["url_params"] and share["text"]
    assert result["true_solar_date"] == "2026-07-14"
    # Paris in July: EoT ≈ −6 min, longitude correction 4 × (2.3522 − 15) ≈ −50.6 min, DST −60 min.
    assert result["calculation"]["longitude_correction_minutes"] == pytest.approx(-50.5912, abs=1e-4)
    assert -6.5 < result["calculation"]["equation_of_time_minutes"] < -5.5
    assert result["true_solar_time"].startswith("12:3")


async def test_get_alias_gives_the_identical_result(api):
    by_post, by_get = await post(api, PARIS_SUMMER), await get(api, PARIS_SUMMER)
    assert by_get.status == 200
    assert by_get.json() == by_post.json()
    # Answers are not to be cached, so no ETag either (it would cost a hash of every GET's body).
    assert by_get.headers["Cache-Control"] == "no-store" and "Etag" not in by_get.headers


async def test_get_alias_ignores_parameters_it_does_not_know_however_they_are_given(api):
    tracked = await api("/api/v1/solar-time?" + urlencode(PARIS_SUMMER) + "&utm_source=a&utm_source=b&ref=%ff")
    assert tracked.status == 200, tracked.body
    assert tracked.json() == (await get(api, PARIS_SUMMER)).json()


@pytest.mark.parametrize("authority", ["http://solarserv.example", "HTTPS://solarserv.example:8443",
                                       "http://127.0.0.1", "http://[::1]:80"])
def test_a_request_target_in_absolute_form_is_answered_as_its_path(live_server, authority):
    # RFC 9112 §3.2.2: a server must accept it (clients send it to a proxy). It was routed as a path: a 404 NOT_FOUND.
    connection = http.client.HTTPConnection(urlsplit(live_server).netloc, timeout=30)
    try:
        connection.request("GET", f"{authority}/api/v1/solar-time?{urlencode(PARIS_SUMMER)}")
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read())["timezone"] == "Europe/Paris"
        connection.request("GET", f"{authority}?year=2026")  # the path left out: "/", the page
        response = connection.getresponse()
        assert response.status == 200 and response.read().startswith(b"<!doctype html>")
    finally:
        connection.close()


async def test_share_url_reproduces_the_result(api):
    first = (await post(api, PARIS_SUMMER)).json()
    again = await api("/api/v1/solar-time?" + first["share"]["url_params"])
    assert again.json()["true_solar_time"] == first["true_solar_time"]


async def test_local_time_plus_total_difference_is_true_solar_time(api):
    result = (await post(api, PARIS_SUMMER)).json()
    total_seconds = result["calculation"]["total_difference_minutes"] * 60
    expected = (seconds_of_day(result["local_time"]) + round(total_seconds)) % 86400
    assert abs(seconds_of_day(result["true_solar_time"]) - expected) <= 1


async def test_kashgar_after_midnight_is_still_yesterday_on_the_sundial(api):
    # Kashgar (75.99°E): tzdata puts it in Asia/Urumqi, UTC+06 (meridian 90°E), so the sundial runs an
    # hour behind the clock and a civil time just after midnight is still the previous solar day.
    result = (await post(api, {"date": "2026-07-14", "local_time": "00:30", "latitude": 39.4704,
                               "longitude": 75.9898})).json()
    assert (result["timezone"], result["utc_offset"]) == ("Asia/Urumqi", "+06:00")
    assert result["true_solar_date"] == "2026-07-13"
    assert result["true_solar_time"].startswith("23:2")
    assert result["calculation"]["longitude_correction_minutes"] == pytest.approx(-56.0408, abs=1e-4)


async def test_kiritimati_correction_is_wrapped_across_the_date_line(api):
    result = (await post(api, {"date": "2026-07-14", "local_time": "14:30", "latitude": 1.87,
                               "longitude": -157.4})).json()
    assert result["timezone"] == "Pacific/Kiritimati" and result["utc_offset"] == "+14:00"
    assert result["calculation"]["longitude_correction_minutes"] == pytest.approx(-29.6, abs=1e-6)
    assert result["calculation"]["standard_meridian"] == -150.0
    assert result["true_solar_date"] == "2026-07-14"
    assert result["location"]["country_code"] == "KI"


@pytest.mark.parametrize("latitude,longitude,zone", [(-80, 0, "Africa/Johannesburg"),
                                                     (-75, -45, "America/Argentina/Ushuaia"),
                                                     (-77.85, 166.67, "Antarctica/McMurdo")])
async def test_a_point_in_antarctica_is_in_aq_whatever_zone_its_stations_keep(api, latitude, longitude, zone):
    result = (await post(api, {"date": "2026-07-14", "local_time": "12:00", "latitude": latitude,
                               "longitude": longitude})).json()
    assert (result["timezone"], result["location"]["country_code"]) == (zone, "AQ")


@pytest.mark.parametrize("latitude,longitude,country", [(21.0285, 105.8542, "VN"),  # Hanoi
                                                        (22.4856, 103.9707, "VN"),  # Lào Cai
                                                        (20.8449, 106.6881, "VN"),  # Haiphong
                                                        (13.7563, 100.5018, "TH"),  # Bangkok
                                                        (18.7883, 98.9853, "TH")])  # Chiang Mai
async def test_northern_vietnam_is_vn_though_its_zone_is_thailands(api, latitude, longitude, country):
    # timezonefinder gives northern Vietnam Asia/Bangkok, which zone.tab gives to Thailand; zone1970.tab
    # lists Vietnam among the countries keeping that zone, and Vietnam has no name of its own for it.
    result = (await post(api, {"date": "2026-07-14", "local_time": "12:00", "latitude": latitude,
                               "longitude": longitude})).json()
    assert (result["timezone"], result["location"]["country_code"]) == ("Asia/Bangkok", country)


@pytest.mark.parametrize("date,dst,offset", [("2026-01-15", False, "+00:00"), ("2026-07-15", True, "+01:00")])
async def test_dublin_reports_dst_as_people_know_it(api, date, dst, offset):
    # tzdata encodes Irish winter time as negative DST; the service reports summer time as DST.
    result = (await post(api, {"date": date, "local_time": "12:00", "latitude": 53.3498,
                               "longitude": -6.2603})).json()
    assert (result["dst"], result["utc_offset"]) == (dst, offset)
    assert result["calculation"]["standard_meridian"] == 0.0
    assert result["calculation"]["dst_minutes"] == (60.0 if dst else 0.0)
    assert result["calculation"]["longitude_correction_minutes"] == pytest.approx(-25.0412, abs=1e-4)


async def test_paris_1905_uses_the_exact_local_mean_time_offset(api):
    result = (await post(api, {"date": "1905-06-01", "local_time": "12:00", "latitude": 48.8566,
                               "longitude": 2.3522})).json()
    assert result["calculation"]["utc_offset_exact"] == "+00:09:21"
    assert result["utc_offset"] == "+00:09"
    assert result["utc_time"] == "11:50:39"
    assert result["confidence"] == "LOW"
    assert "+00:09:21" in result["summary"] + result["historical_context"] + result["solar_context"]


async def test_amsterdam_1900_is_low_on_brussels_record(api):
    # tzdata merged Amsterdam's zone into Brussels's (they agree since 1970): in 1900 it gives Brussels's
    # +00:00, while Amsterdam kept its own mean time, +00:19:32.
    result = (await post(api, {"date": "1900-06-01", "local_time": "12:00", "latitude": 52.3676,
                               "longitude": 4.9041})).json()
    assert (result["timezone"], result["utc_offset"]) == ("Europe/Amsterdam", "+00:00")
    assert result["confidence"] == "LOW"
    assert ("LOW: tzdata keeps no record of its own for Europe/Amsterdam before 1970; the clocks used are "
            "Europe/Brussels's") in result["validation"]


async def test_ambiguous_local_time_uses_the_first_occurrence_and_says_so(api):
    result = (await post(api, {"date": "2026-11-01", "local_time": "01:30", "latitude": 40.7128,
                               "longitude": -74.006})).json()
    assert result["utc_offset"] == "-04:00" and result["dst"] is True
    assert "first occurrence" in result["validation"]
    assert result["confidence"] == "MEDIUM"


async def test_polar_night_has_no_sunrise_and_is_not_an_error(api):
    result = (await post(api, {"date": "2026-12-21", "local_time": "12:00", "latitude": 78.2232,
                               "longitude": 15.6267})).json()
    events = result["solar_events"]
    assert events["state"] == "polar_night"
    assert events["sunrise"] is None and events["sunset"] is None
    assert result["solar_position"]["elevation"] < 0


async def test_solar_events_are_local_civil_times(api):
    result = (await post(api, PARIS_SUMMER)).json()
    events = result["solar_events"]
    assert events["state"] == "normal"
    assert events["sunrise"] < events["solar_noon"] < events["sunset"]
    # EoT −6 min, longitude 2.35°E, DST: ≈ 13:56 on the clock.
    assert events["solar_noon"].startswith("2026-07-14T13:5") and events["solar_noon"].endswith("+02:00")
    assert 15 * 60 < events["day_length_minutes"] < 16 * 60


async def test_day_length_keeps_the_decimals_of_the_other_minute_figures(api):
    # DESIGN §3: minute figures keep at least three decimals. Paris's day is 948 min 18.7 s long; two
    # decimals wrote 948.31, 0.13 s short, where the events themselves are found within 0.1 s.
    events = (await post(api, PARIS_SUMMER)).json()["solar_events"]
    assert events["day_length_minutes"] == pytest.approx(948.3122, abs=0.001)


async def test_health_answers_when_ready(api):
    reply = await api("/healthz")
    assert reply.status == 200 and reply.json()["status"] == "ok"
    assert reply.json()["geocoder"] == "offline" and reply.json()["geocoder_ready"] is True


async def test_result_reports_tzdata_and_ephemeris(api):
    calculation = (await post(api, PARIS_SUMMER)).json()["calculation"]
    import tzdata

    assert calculation["tzdata_version"] == tzdata.IANA_VERSION
    assert "DE421" in calculation["ephemeris"]



async def test_a_sunset_after_midnight_carries_its_own_date(api):
    # Tromsø, 16 May 2024: the Sun sets at about 00:12 on the 17th, still the 16th's sunset.
    events = (await post(api, {"date": "2024-05-16", "local_time": "12:00", "latitude": 69.6492,
                               "longitude": 18.9553})).json()["solar_events"]
    assert events["state"] == "normal"
    assert events["sunset"].startswith("2024-05-17T00:")
    assert events["day_length_minutes"] > 20 * 60


async def test_on_the_day_the_midnight_sun_begins_the_day_length_is_null(api):
    # Tromsø, 17 May 2024: the Sun rises at about 01:08 and does not set again until July.
    events = (await post(api, {"date": "2024-05-17", "local_time": "12:00", "latitude": 69.6492,
                               "longitude": 18.9553})).json()["solar_events"]
    assert (events["state"], events["sunset"], events["day_length_minutes"]) == ("normal", None, None)
    assert events["sunrise"].startswith("2024-05-17T01:")


# Where GeoNames' zone for a town is not the zone at its coordinates, the coordinates' zone holds (DESIGN §5:
# timezonefinder), so that a place and its share link, which names its coordinates, give one answer.
@pytest.mark.parametrize(("place_name", "zone"), [
    ("Vincennes, Indiana", "America/Indiana/Vincennes"),  # GeoNames: America/Chicago, an hour behind in July
    ("Ciudad Rio Bravo", "America/Matamoros"),  # GeoNames: America/Monterrey, without the US border's summer time
    ("Kampong Ayer", "Asia/Brunei"),  # GeoNames: Asia/Pontianak, Indonesia's
])
async def test_a_named_place_and_its_share_link_give_one_answer(api, place_name, zone):
    named = (await post(api, {"date": "2026-07-14", "local_time": "14:30", "place_name": place_name})).json()
    assert named["timezone"] == zone
    shared = (await api("/api/v1/solar-time?" + named["share"]["url_params"])).json()
    assert (shared["timezone"], shared["true_solar_time"]) == (zone, named["true_solar_time"])


@pytest.mark.parametrize(("place_name", "zone"), [
    ("La Aguada, Venezuela", "America/Caracas"),  # its point lies in the sea
    ("Liberpolis", "Europe/Zagreb"),  # its point lies in land between Croatia and Serbia that no zone's polygon holds
])
async def test_a_named_place_whose_coordinates_have_no_zone_keeps_its_gazetteer_zone_in_its_share_link_too(
        api, place_name, zone):
    named = await post(api, {"date": "2026-07-14", "local_time": "14:30", "place_name": place_name})
    assert (named.status, named.json()["timezone"]) == (200, zone)
    # Its share link is its coordinates, which no zone's polygon holds: the town whose extent holds them gives the zone.
    shared = await api("/api/v1/solar-time?" + named.json()["share"]["url_params"])
    assert (shared.status, shared.json()["timezone"], shared.json()["true_solar_time"]) == (
        200, zone, named.json()["true_solar_time"])
