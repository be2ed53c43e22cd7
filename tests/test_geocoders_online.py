"""The geopy-backed geocoders against a local Tornado server that speaks Nominatim's and Photon's
JSON on loopback. No test reaches the internet."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import email.utils
import http
import json
import logging
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
from typing import Any

import geopy.geocoders
import pytest
import tornado.httpserver
import tornado.iostream
import tornado.netutil
import tornado.web
from defaults import settings as default_settings
from servers import get_json, serving_in_thread

from solarserv import config
from solarserv.cli import main
from solarserv.errors import ApiError
from solarserv.geo import build_geocoder, online
from solarserv.geo.online import PROVIDER_THREADS, PROVIDERS, OnlineGeocoder, _population
from solarserv.models import SolarQuery
from solarserv.pipeline import Pipeline
from solarserv.web.app import Services

LICENCE = "Data © OpenStreetMap contributors, ODbL 1.0. http://osm.org/copyright"


def nominatim_place(name: str, lat: float, lon: float, country: str, code: str, state: str | None = None,
                    population: str | None = None, local_name: str | None = None,
                    addresstype: str = "city") -> dict[str, Any]:
    """One element of Nominatim's /search answer (format=json, addressdetails, extratags, namedetails)."""
    address = {"city": name, "state": state, "country": country, "country_code": code}
    return {
        "place_id": abs(hash((name, lat))) % 10**9, "licence": LICENCE, "osm_type": "relation",
        "osm_id": abs(hash((lat, lon))) % 10**7, "lat": str(lat), "lon": str(lon),
        "class": "boundary", "type": "administrative", "place_rank": 16, "importance": 0.7,
        "addresstype": addresstype, "name": name,
        "display_name": ", ".join(part for part in (name, state, country) if part),
        "address": {key: value for key, value in address.items() if value},
        "extratags": {"population": population} if population else {},
        "namedetails": {"name": local_name or name, "name:en": name},
        "boundingbox": [str(lat - 0.1), str(lat + 0.1), str(lon - 0.1), str(lon + 0.1)],
    }


PARIS_FR = nominatim_place("Paris", 48.8588897, 2.3200410, "France", "fr", "Ile-de-France", "2133111")
PARIS_TX = nominatim_place("Paris", 33.6617962, -95.5555130, "United States", "us", "Texas", "24171")
PARIS_TN = nominatim_place("Paris", 36.3020023, -88.3267064, "United States", "us", "Tennessee", "10156")
NOMINATIM_SEARCH = {
    "Paris": [PARIS_FR, PARIS_TX, PARIS_TN],
    "Paris, Texas": [PARIS_TX],
    "Paris Texas": [PARIS_TX],  # Nominatim reads a qualifier without a comma too
    "München": [nominatim_place("Munich", 48.1371079, 11.5753822, "Germany", "de", "Bavaria", "1512491",
                                local_name="München")],
    "Springfield, US": [
        nominatim_place("Springfield", 39.7990175, -89.6439575, "United States", "us", "Illinois", "114394"),
        nominatim_place("Springfield", 37.2081729, -93.2922715, "United States", "us", "Missouri", "169176"),
        nominatim_place("Springfield", 42.1018764, -72.5886727, "United States", "us", "Massachusetts",
                        "155 929"),
    ],
    # The provider's noise goes through the same rules: Lomé answers "Rome" only by another name.
    "Rome": [nominatim_place("Roma", 41.8933203, 12.4829321, "Italy", "it", "Lazio", "2761632",
                             local_name="Rome"),
             nominatim_place("Lomé", 6.130419, 1.215829, "Togo", "tg", "Maritime", "837437"),
             nominatim_place("Rome", 34.2570461, -85.1646734, "United States", "us", "Georgia", "37713")],
    "Springfield, US, unknown populations": [
        nominatim_place("Springfield", 39.7990175, -89.6439575, "United States", "us", "Illinois"),
        nominatim_place("Springfield", 37.2081729, -93.2922715, "United States", "us", "Missouri"),
    ],
    # featureType=settlement lets regions through: a state is no town, however populous.
    "New York": [nominatim_place("New York", 40.7127281, -74.0060152, "United States", "us", "New York",
                                 "8804190"),
                 nominatim_place("New York", 43.1561681, -75.8449946, "United States", "us", None, "20201249",
                                 addresstype="state")],
    "Victoria": [nominatim_place("Victoria", -36.5986096, 144.6780052, "Australia", "au", None, "6503491",
                                 addresstype="state"),
                 nominatim_place("Victoria", 48.4283182, -123.364953, "Canada", "ca", "British Columbia", "91867")],
    "Nowhere at all": [],
    # A provider's data is anyone's edit: hidden characters in names, codes that are not ISO 3166's.
    "Odd text": [nominatim_place("Odd\u202etown\x85", 45.0, 5.0, "Fr\x1bance", "f\u0131", "Rh\u2028\u00f4ne")],
    "Odd code": [nominatim_place("Oddville", 45.0, 5.0, "France", "fra")],
    # More than it was asked for: one town in each of 25 countries.
    "Everywhere": [nominatim_place("Everywhere", 10.0 + n, 5.0, f"Land {n}", chr(65 + n) + "X", None, str(1000 - n))
                   for n in range(25)],
    "Unreadable": [{"place_id": 1, "display_name": "Somewhere", "address": {"country_code": "fr"}}],
    # Points in no zone's boundaries: an uninhabited island far out at sea, and a namesake of a town that the
    # provider's data (anyone's edit) puts in mid-Atlantic.
    "Bouvet Island": [nominatim_place("Bouvet Island", -54.4207915, 3.3464497, "Bouvet Island", "bv",
                                      addresstype="island")],
    "Atlantis": [nominatim_place("Atlantis", 26.5909, -80.1009, "United States", "us", "Florida", "2142"),
                 nominatim_place("Atlantis", 30.0, -40.0, "Portugal", "pt", "Azores")],
    # A town 6 km from another country's clocks.
    "Badajoz": [nominatim_place("Badajoz", 38.8794, -6.9707, "Spain", "es", "Extremadura", "150702")],
}
# Reverse geocoding asks for the point to 3 decimals (TOWN_DECIMALS): these are the points asked.
NOMINATIM_REVERSE = {(48.858, 2.295): {**PARIS_FR, "type": "city"}}


def photon_feature(name: str, lat: float, lon: float, country: str, code: str, state: str | None,
                   kind: str = "city", key: str = "place", **more: str) -> dict[str, Any]:
    """One feature of Photon's GeoJSON answer: an OpenStreetMap object tagged key=kind, e.g. place=city."""
    properties = {"osm_id": abs(hash(name)) % 10**7, "osm_type": "R", "osm_key": key, "osm_value": kind,
                  "type": kind, "name": name, "country": country, "countrycode": code, **more}
    if state:
        properties["state"] = state
    return {"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]},
            "properties": properties}


PHOTON_SEARCH = {
    "Paris": [photon_feature("Paris", 48.8534951, 2.3483915, "France", "FR", "Île-de-France"),
              photon_feature("Paris", 33.6617962, -95.555513, "United States", "US", "Texas", "town"),
              photon_feature("Paris", -3.55, 128.2, "Indonesia", "ID", None, "island")],
    "Berlin": [photon_feature("Berlin", 52.5170365, 13.3888599, "Germany", "DE", None)],
    "München": [photon_feature("Munich", 48.1371079, 11.5753822, "Germany", "DE", "Bavaria")],
    # Photon answers in English (lang=en) and gives no population: the city's own name is hidden, and its
    # namesakes look as big as it.
    "München, village too": [photon_feature("Munich", 48.1371079, 11.5753822, "Germany", "DE", "Bavaria"),
                             photon_feature("München", 50.75, 11.5, "Germany", "DE", "Thuringia", "village")],
    "Wien": [photon_feature("Vienna", 48.2083537, 16.3725042, "Austria", "AT", "Vienna"),
             photon_feature("Wien", 44.9, -89.9, "United States", "US", "Wisconsin", "village")],
    "Badajoz": [photon_feature("Badajoz", 38.8794, -6.9707, "Spain", "ES", "Extremadura")],
}
# Photon's reverse answers the nearest object: a street in a town, a place node, a track out in the country.
PHOTON_REVERSE = {
    (48.858, 2.295): photon_feature("Avenue Gustave Eiffel", 48.8584, 2.2946, "France", "FR", "Île-de-France",
                                      "pedestrian", "highway", city="Paris", district="Paris"),
    (48.853, 2.349): photon_feature("Paris", 48.8534951, 2.3483915, "France", "FR", "Île-de-France"),
    (44.1, 2.5): photon_feature("Chemin de la Croix", 44.1, 2.5, "France", "FR", "Occitanie", "track", "highway"),
    (-30.0, -120.0): photon_feature("", -30.0, -120.0, "", "", None, "buoy", "seamark"),  # nothing to name it by
}


# What a refusal ("busy …", HTTP 429) or an unavailable provider ("down …", 503) says in its Retry-After.
RETRY_AFTER = {"1 s": lambda: "1", "a day": lambda: "86400", "no pause": lambda: "0",
               "2 min": lambda: email.utils.formatdate(time.time() + 120, usegmt=True),
               "2 min in -0000": lambda: email.utils.formatdate(time.time() + 120),  # UTC, said not to be local
               "soon": lambda: "soon", "1.5 s": lambda: "1.5", "on 32 May": lambda: "Thu, 32 May 2030 10:00:00 GMT",
               "in the year 10^13": lambda: "Mon, 01 Jan 9999999999999 00:00:00 GMT"}


class FakeProvider(tornado.web.RequestHandler):
    """Answers by the query text; "slow" never answers in time, "drip" sends its answer a byte at a time (for 4 s;
    "drip for 40 s …" for 40), "drip headers …" its status line and headers (for 40 s), "moved to URL" redirects
    there (302), "moved on and on to URL" too, its body 2 MB and then 3 s of nothing, "broken" fails with HTTP
    500, "down" with 503, "gateway timeout" with a proxy's 504, "blocked" with 403 and a page saying why, "cut
    short" closes the connection in mid-body, "busy" refuses with 429; "busy" or "down" followed by one of
    RETRY_AFTER's names ("busy 1 s", "down, no pause") sends that Retry-After. While a test sets `odd["body"]` (the
    `odd_answer` fixture), every answer is that text, of `odd["content_type"]` when set; while it sets
    `odd["hanging"]` (the `hanging` fixture), no request is answered in time."""

    def initialize(self, answer: Any, requests: list, odd: dict) -> None:
        self.answer = answer
        self.requests = requests
        self.odd = odd

    async def get(self) -> None:
        self.requests.append((self.request.path, dict(self.request.query_arguments),
                              self.request.headers.get("User-Agent")))
        query = self.get_query_argument("q", "")
        if query == "slow" or self.odd.get("hanging"):
            await asyncio.sleep(3)
        if query.startswith("drip headers"):  # a byte every 0.2 s from the status line on: no single read waits long
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
            head += b"X-Padding: " + b"." * (196 - len(head)) + b"\r\n\r\n"
            stream = self.detach()
            with contextlib.suppress(tornado.iostream.StreamClosedError):  # the client stopped reading
                for byte in head + b"[]":
                    await stream.write(bytes([byte]))
                    await asyncio.sleep(0.2)
            stream.close()
            return
        if query.startswith("drip"):  # the headers at once, then a byte every 0.2 s: no single read waits long
            body = b" " * (198 if query.startswith("drip for 40 s") else 18) + b"[]"  # 4 s, or 40
            self.set_header("Content-Length", str(len(body)))
            with contextlib.suppress(tornado.iostream.StreamClosedError):  # the client stopped reading
                for byte in body:
                    self.write(bytes([byte]))
                    await self.flush()
                    await asyncio.sleep(0.2)
            return
        if query.startswith("moved to "):
            self.redirect(query.removeprefix("moved to "))
            return
        if query.startswith("moved on and on to "):
            self.set_status(302)
            self.set_header("Location", query.removeprefix("moved on and on to "))
            with contextlib.suppress(tornado.iostream.StreamClosedError):  # the client stopped reading
                self.write(b"x" * 2_000_000)
                await self.flush()
                await asyncio.sleep(3)
            return
        if query == "broken":
            raise tornado.web.HTTPError(500)
        if query == "gateway timeout":  # as a proxy says it, in front of a provider that does not answer
            self.set_status(504)
            self.finish("<html><head><title>504 Gateway Time-out</title></head><body><h1>504 Gateway Time-out</h1>"
                        "<hr>nginx</body></html>")
            return
        if query == "blocked":  # as Nominatim's public service tells a User-Agent it refuses
            self.set_status(403)
            self.finish("<html><head><title>Access blocked</title></head>\n<body><h1>Access blocked</h1><p>You have "
                        "been blocked because you have violated the usage policy of OSM's Nominatim "
                        "geocoding service.</p></body></html>")
            return
        if query == "cut short":  # the headers, the first bytes of the body, then the connection closed
            self.set_header("Content-Length", "1000")
            self.write('[{"lat": "4')
            await self.flush()
            self.request.connection.stream.close()
            return
        refusal, _, retry_after = query.partition(" ")
        if refusal.rstrip(",") in ("busy", "down"):
            self.set_status(429 if refusal.startswith("busy") else 503)
            if retry_after:
                self.set_header("Retry-After", RETRY_AFTER[retry_after]())
            self.finish(http.HTTPStatus(self.get_status()).phrase)
            return
        self.set_header("Content-Type", self.odd.get("content_type", "application/json"))
        self.write(self.odd["body"] if "body" in self.odd else json.dumps(self.answer(self)))


def nominatim_search(handler):
    return NOMINATIM_SEARCH.get(handler.get_query_argument("q"), [])


def nominatim_reverse(handler):
    point = (float(handler.get_query_argument("lat")), float(handler.get_query_argument("lon")))
    return NOMINATIM_REVERSE.get(point, {"error": "Unable to geocode"})


def photon_search(handler):
    return {"type": "FeatureCollection", "features": PHOTON_SEARCH.get(handler.get_query_argument("q"), [])}


def photon_reverse(handler):
    point = (float(handler.get_query_argument("lat")), float(handler.get_query_argument("lon")))
    feature = PHOTON_REVERSE.get(point)
    return {"type": "FeatureCollection", "features": [feature] if feature else []}


@contextlib.contextmanager
def serving(routes: list, ssl_options: ssl.SSLContext | None = None):
    """A Tornado server of `routes` on a loopback port (yielded), run from a thread."""
    started, state = threading.Event(), {}

    def serve() -> None:
        loop = asyncio.new_event_loop()

        async def start() -> None:
            sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
            state["server"] = tornado.httpserver.HTTPServer(tornado.web.Application(routes), ssl_options=ssl_options)
            state["server"].add_sockets(sockets)
            state["port"] = sockets[0].getsockname()[1]
            started.set()

        loop.run_until_complete(start())
        state["loop"] = loop
        loop.run_forever()
        loop.close()

    thread = threading.Thread(target=serve, name="fake-geocoder", daemon=True)
    thread.start()
    assert started.wait(10)
    yield state["port"]

    def stop() -> None:
        state["server"].stop()  # closes the listening socket, which the collector would otherwise find open
        state["loop"].stop()

    state["loop"].call_soon_threadsafe(stop)
    thread.join(5)


def provider_routes(requests: list, odd: dict) -> list:
    return [(path, FakeProvider, {"answer": answer, "requests": requests, "odd": odd}) for path, answer in (
        ("/nominatim/search", nominatim_search), ("/nominatim/reverse", nominatim_reverse),
        ("/photon/api", photon_search), ("/photon/reverse", photon_reverse))]


@pytest.fixture(scope="module")
def provider_server():
    """Nominatim at /nominatim/…, Photon at /photon/…, on a loopback port, served from a thread."""
    requests: list = []
    odd: dict = {}
    with serving(provider_routes(requests, odd)) as port:
        yield {"domain": f"127.0.0.1:{port}", "requests": requests, "odd": odd}


@pytest.fixture(scope="module")
def self_signed_provider(tmp_path_factory):
    """The provider over HTTPS, with a certificate of its own (made by openssl) that no authority signed."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command here to make the provider's certificate")
    folder = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-days", "1",
                    "-keyout", folder / "key.pem", "-out", folder / "cert.pem"], check=True, capture_output=True)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(folder / "cert.pem", folder / "key.pem")
    requests: list = []
    with serving(provider_routes(requests, {}), ssl_options=context) as port:
        yield {"domain": f"127.0.0.1:{port}", "requests": requests}


@pytest.fixture
def odd_answer(provider_server):
    """Makes the provider answer every request with the text given (and the Content-Type, if given), until the
    test ends."""
    odd = provider_server["odd"]
    yield lambda body, **content_type: odd.update(body=body, **content_type)
    odd.clear()


@pytest.fixture
def hanging(provider_server):
    """hanging(True) makes the provider answer no request in time, until hanging(False) or the test's end."""
    odd = provider_server["odd"]
    yield lambda hangs: odd.update(hanging=hangs)
    odd.clear()


def settings_for(provider_server, name: str, **changes: Any) -> Any:
    settings = dataclasses.replace(
        default_settings(), geocoder=name, geocoder_domain=f"{provider_server['domain']}/{name}",
        geocoder_scheme="http", geocoder_user_agent="solarserv-tests/1 (loopback)", geocoder_timeout=0.5)
    return dataclasses.replace(settings, **changes)


def geocoder_for(provider_server, name: str, **changes: Any) -> OnlineGeocoder:
    return build_geocoder(settings_for(provider_server, name, **changes))


@pytest.fixture
def nominatim(provider_server) -> OnlineGeocoder:
    return geocoder_for(provider_server, "nominatim")


@pytest.fixture
def photon(provider_server) -> OnlineGeocoder:
    return geocoder_for(provider_server, "photon")


def locate(geocoder: OnlineGeocoder, name: str):
    return asyncio.run(geocoder.locate(name))


def refusal(geocoder: OnlineGeocoder, name: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        locate(geocoder, name)
    return caught.value


def test_nominatim_gets_the_configured_user_agent_and_asks_for_settlements(nominatim, provider_server):
    locate(nominatim, "Paris, Texas")
    path, query, user_agent = provider_server["requests"][-1]
    assert path == "/nominatim/search" and user_agent == "solarserv-tests/1 (loopback)"
    assert query["q"] == [b"Paris, Texas"] and query["format"] == [b"json"]
    assert query["featureType"] == [b"settlement"] and query["accept-language"] == [b"en"]


def test_the_urls_asked_are_not_logged_at_debug(provider_server, nominatim, photon, caplog):
    caplog.set_level(logging.DEBUG)  # as LOG_LEVEL=DEBUG sets the root logger
    locate(nominatim, "Paris, Texas")
    locate(photon, "Berlin")
    asyncio.run(nominatim.describe(48.858, 2.295))
    assert not [record.getMessage() for record in caplog.records if record.name.startswith("geopy")]
    assert provider_server["requests"][-1][0] == "/nominatim/reverse"  # the calls were made


def test_nominatim_one_place(nominatim):
    located = locate(nominatim, "Paris, Texas")
    place = located.place
    assert (place.display_name, place.country_code, place.population) == (
        "Paris, Texas, United States", "US", 24171)
    assert (place.latitude, place.longitude) == (33.6617962, -95.5555130)
    assert not located.chosen_among_several and located.notes == ()


def test_nominatim_qualifier_without_a_comma_leaves_the_own_name(nominatim):
    located = locate(nominatim, "Paris Texas")
    assert located.place.display_name == "Paris, Texas, United States" and located.notes == ()


def test_nominatim_places_in_several_countries_are_ambiguous(nominatim):
    error = refusal(nominatim, "Paris")
    assert (error.code, error.status) == ("AMBIGUOUS_LOCATION", 409)
    candidates = error.extra["candidates"]
    assert [(c["display_name"], c["recommended"]) for c in candidates] == [
        ("Paris, Ile-de-France, France", True), ("Paris, Texas, United States", False),
        ("Paris, Tennessee, United States", False)]
    assert candidates[0]["population"] == 2133111 and candidates[0]["country_code"] == "FR"


def test_hidden_characters_and_codes_other_than_two_letters_are_not_taken_from_the_provider(nominatim, photon,
                                                                                           provider_server):
    place = locate(nominatim, "Odd text").place
    assert (place.display_name, place.country_code) == ("Oddtown, Rhône, France", "")  # "fı": a dotless i
    assert locate(nominatim, "Odd code").place.country_code == ""
    PHOTON_SEARCH["Odd code"] = [photon_feature("Oddville", 45.0, 5.0, "France", "F1", None)]
    try:
        assert locate(photon, "Odd code").place.country_code == ""
    finally:
        del PHOTON_SEARCH["Odd code"]


def test_at_most_the_hits_asked_for_are_read(nominatim):
    error = refusal(nominatim, "Everywhere")
    assert error.message.startswith(f"'Everywhere' matches places in {online.HITS_PER_QUERY} countries")


def test_an_ambiguity_names_ten_countries_then_how_many_more(nominatim):
    error = refusal(nominatim, "Everywhere")
    assert error.message.startswith("'Everywhere' matches places in 20 countries (AX, BX, CX, DX, EX, FX, GX, HX, "
                                    "IX, JX and 10 more). ")
    assert len(error.extra["candidates"]) == 20  # one of every country, to resend


def test_nominatim_several_in_one_country_gives_the_most_populous(nominatim):
    located = locate(nominatim, "Springfield, US")
    assert located.place.display_name == "Springfield, Missouri, United States"
    assert located.chosen_among_several and "most populous" in located.notes[-1]


def test_nominatim_without_populations_says_its_order_ranked(nominatim):
    located = locate(nominatim, "Springfield, US, unknown populations")
    assert located.place.population is None and located.chosen_among_several
    assert located.notes[-1] == (
        "'Springfield, US, unknown populations' matches 2 places in US; with no populations given, the "
        "geocoder's order ranked them: its first was taken, Springfield, Illinois, United States.")


def test_nominatim_regions_do_not_compete_with_towns(nominatim):
    new_york = locate(nominatim, "New York")
    assert new_york.place.display_name == "New York, United States" and new_york.notes == ()
    assert (new_york.place.latitude, new_york.place.longitude) == (40.7127281, -74.0060152)
    assert locate(nominatim, "Victoria").place.display_name == "Victoria, British Columbia, Canada"


def test_nominatim_local_name_is_the_places_own_name(nominatim):
    located = locate(nominatim, "München")
    assert located.place.display_name == "Munich, Bavaria, Germany" and located.notes == ()


def test_nominatim_answers_go_through_the_alternate_name_rule(nominatim):
    candidates = refusal(nominatim, "Rome").extra["candidates"]
    assert [c["country_code"] for c in candidates] == ["IT", "US"]  # Lomé answered by another name


def test_nominatim_nothing_found_is_404(nominatim):
    error = refusal(nominatim, "Nowhere at all")
    assert (error.code, error.status) == ("PLACE_NOT_FOUND", 404)
    assert error.extra["suggestions"] == []  # an online provider names no close places


@pytest.mark.parametrize("query,said", [("slow", "no answer in time"), ("broken", "an error"),
                                        ("Unreadable", "an answer it could not read")])
def test_a_failing_provider_is_a_logged_503(nominatim, caplog, query, said):
    error = refusal(nominatim, query)
    assert (error.code, error.status) == ("GEOCODER_UNAVAILABLE", 503)
    assert f"The place-name geocoder (nominatim) gave {said}." in error.message
    assert "send latitude and longitude instead" in error.message
    assert "geocoder nominatim" in caplog.text


def test_a_provider_answering_503_at_once_is_an_error_not_a_timeout(nominatim, caplog):
    # geopy raises its GeocoderTimedOut for HTTP 503 (and 504, 408), which is also a TimeoutError.
    error = refusal(nominatim, "down")
    assert "The place-name geocoder (nominatim) gave an error." in error.message and error.extra == {}
    assert "HTTP Error 503" in caplog.text and "no answer" not in caplog.text
    # Without a Retry-After it asks for no pause: the next name is asked.
    assert locate(nominatim, "Paris, Texas").place.country_code == "US"


@pytest.mark.parametrize("query,logged", [
    ("blocked", "GeocoderInsufficientPrivileges: HTTP Error 403: Forbidden; it said: Access blocked Access blocked "
                "You have been blocked because you have violated the usage policy of OSM's Nominatim geocoding "
                "service."),
    ("cut short", "GeocoderServiceError: Unable to read the response (IncompleteRead: IncompleteRead(11 bytes read, "
                  "989 more expected))"),
])
def test_the_log_line_says_what_the_provider_did(nominatim, caplog, query, logged):
    assert refusal(nominatim, query).code == "GEOCODER_UNAVAILABLE"
    [record] = [record for record in caplog.records if record.name == "solarserv.geo"]
    assert record.getMessage() == f"geocoder nominatim failed: {logged}"


# 200 answers of JSON that geopy or our reading cannot use: geopy parses inside its call (AttributeError on
# [1, 2], KeyError on a Photon answer without "features", ValueError on a "lat" of "abc").
UNEXPECTED_SHAPES = [
    ("nominatim", "[1, 2]"), ("nominatim", '"hello"'), ("nominatim", '{"foo": 1}'),
    # Empty, but not Nominatim's empty answer ([]): geopy reads any of them as "nothing found".
    ("nominatim", "null"), ("nominatim", "{}"), ("nominatim", "false"),
    pytest.param("nominatim", json.dumps([{**PARIS_TX, "lat": "abc"}]), id="nominatim-lat-abc"),
    pytest.param("nominatim", json.dumps([{**PARIS_TX, "address": ["Texas"]}]), id="nominatim-address-list"),
    # Off the globe: geopy refuses a latitude of 91 but wraps a longitude of 200 to -160, another place.
    pytest.param("nominatim", json.dumps([{**PARIS_TX, "lon": "200"}]), id="nominatim-lon-200"),
    # Nested deeper than Python's recursion limit, in 200 kB: json.loads raises RecursionError, no ValueError.
    pytest.param("nominatim", "[" * 100_000 + "]" * 100_000, id="nominatim-nested-deeply"),
    ("photon", "[1, 2]"), ("photon", '"hello"'), ("photon", '{"foo": 1}'), ("photon", "[]"), ("photon", "null"),
    ("photon", '{"features": [1]}'), ("photon", '{"features": null}'),
    pytest.param("photon", json.dumps({"features": [{**PHOTON_SEARCH["Berlin"][0],
                                                     "geometry": {"coordinates": ["a", "b"]}}]}),
                 id="photon-coordinates-ab"),
    pytest.param("photon", json.dumps({"features": [{**PHOTON_SEARCH["Berlin"][0],
                                                     "geometry": {"coordinates": [200, 52.5]}}]}),
                 id="photon-lon-200"),
    pytest.param("photon", "[" * 100_000 + "]" * 100_000, id="photon-nested-deeply"),
]


@pytest.mark.parametrize("name,body", UNEXPECTED_SHAPES)
def test_an_answer_of_an_unexpected_shape_is_a_503_logged_in_one_line(provider_server, odd_answer, caplog, name,
                                                                       body):
    odd_answer(body)
    error = refusal(geocoder_for(provider_server, name), "Berlin")
    assert (error.code, error.status) == ("GEOCODER_UNAVAILABLE", 503)
    assert f"The place-name geocoder ({name}) gave an answer it could not read." in error.message
    [record] = caplog.records
    assert record.levelname == "WARNING" and record.exc_info is None and "\n" not in record.getMessage()


@pytest.mark.parametrize("name,body", UNEXPECTED_SHAPES)
def test_an_answer_of_an_unexpected_shape_leaves_coordinates_undescribed(provider_server, odd_answer, name, body):
    odd_answer(body)
    assert asyncio.run(geocoder_for(provider_server, name).describe(48.8584, 2.2946)) is None


@pytest.mark.parametrize("name", PROVIDERS)
def test_an_answer_in_a_character_set_python_does_not_know_is_unreadable(provider_server, odd_answer, caplog, name):
    odd_answer("[]", content_type="application/json; charset=x-unheard-of")
    geocoder = geocoder_for(provider_server, name)
    error = refusal(geocoder, "Berlin")
    assert (error.code, error.status) == ("GEOCODER_UNAVAILABLE", 503)
    assert f"The place-name geocoder ({name}) gave an answer it could not read." in error.message
    assert asyncio.run(geocoder.describe(48.8584, 2.2946)) is None  # a coordinate query goes on without a town
    assert "unknown encoding: x-unheard-of" in caplog.text


@pytest.mark.parametrize("name", PROVIDERS)
def test_an_answer_of_more_than_a_megabyte_is_not_read(provider_server, odd_answer, caplog, name):
    odd_answer("[" + " " * online.MAX_ANSWER_BYTES + "]")  # nothing found, at a length no provider sends
    geocoder = geocoder_for(provider_server, name)
    error = refusal(geocoder, "Berlin")
    assert f"The place-name geocoder ({name}) gave an answer it could not read." in error.message
    assert asyncio.run(geocoder.describe(48.8584, 2.2946)) is None
    assert "GeocoderParseError: an answer of more than 1,000,000 bytes" in caplog.text


def test_an_unreadable_body_is_logged_in_one_short_line(nominatim, odd_answer, caplog):
    odd_answer("<html>\n<body>\nMaintenance " + "x" * 5000 + "\n</body></html>")
    assert "gave an answer it could not read." in refusal(nominatim, "Berlin").message
    [record] = caplog.records
    assert "GeocoderParseError" in record.getMessage() and "Maintenance" in record.getMessage()
    assert "\n" not in record.getMessage() and len(record.getMessage()) < 500


def test_the_timeout_bounds_an_answer_that_drips_in(nominatim, caplog):
    started = time.monotonic()
    error = refusal(nominatim, "drip")  # no read waits 0.5 s, the whole answer takes 4 s
    assert error.code == "GEOCODER_UNAVAILABLE" and "gave no answer in time" in error.message
    assert time.monotonic() - started < 2.5
    assert "geocoder nominatim gave no answer in 0.5 s" in caplog.text


def test_a_flood_of_slow_calls_is_answered_at_the_timeout_and_leaves_other_work_alone(provider_server):
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_timeout=1.5)
    calls = 2 * PROVIDER_THREADS  # half of them queue behind the others

    async def flood() -> tuple[list, bool]:
        # Names of their own: one name asked by many at once shares one call.
        asked = [asyncio.ensure_future(geocoder.locate(f"drip {number}")) for number in range(calls)]
        await asyncio.sleep(0)  # every call is in the geocoder's hands
        # The event loop's shared executor (the equation of time's) is free while the geocoder waits.
        await asyncio.get_running_loop().run_in_executor(None, lambda: None)
        waited_for_the_geocoder = any(call.done() for call in asked)
        return await asyncio.gather(*asked, return_exceptions=True), waited_for_the_geocoder

    started = time.monotonic()
    answers, waited_for_the_geocoder = asyncio.run(flood())
    assert not waited_for_the_geocoder
    assert all(isinstance(answer, ApiError) and answer.code == "GEOCODER_UNAVAILABLE" for answer in answers)
    assert time.monotonic() - started < 3.5  # the queued calls too: 1.5 s, not 2 × 4 s of dripping


@pytest.mark.parametrize("dripping", ["drip for 40 s", "drip headers"])
def test_answers_dripping_in_give_their_threads_back_at_the_timeout(provider_server, monkeypatch, caplog, dripping):
    # Its body or its headers: each thread stayed for the 40 s of its dripping, and later names found none free.
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_timeout=0.5)
    monkeypatch.setattr(online, "FAILURE_PAUSE_SECONDS", 0)  # the next name asks as soon as it can

    async def every_thread_dripping() -> list:
        names = [f"{dripping}, {number}" for number in range(PROVIDER_THREADS)]
        return await asyncio.gather(*(geocoder.locate(name) for name in names), return_exceptions=True)

    assert all("gave no answer in time" in answer.message for answer in asyncio.run(every_thread_dripping()))
    assert {record.getMessage() for record in caplog.records} == {"geocoder nominatim gave no answer in 0.5 s"}
    # Its turn within the timeout: the threads are free by then.
    assert locate(geocoder, "Paris, Texas").place.country_code == "US"


def test_a_redirect_is_followed_to_http_or_https_only(nominatim, caplog):
    assert locate(nominatim, "moved to /nominatim/search?q=Paris+Texas").place.country_code == "US"
    with socket.socket() as ftp_server:
        ftp_server.bind(("127.0.0.1", 0))
        ftp_server.listen()
        ftp_server.setblocking(False)
        url = f"ftp://127.0.0.1:{ftp_server.getsockname()[1]}/search"
        error = refusal(nominatim, f"moved to {url}")
        with pytest.raises(BlockingIOError):
            ftp_server.accept()  # no connection was made
    assert "The place-name geocoder (nominatim) gave an error." in error.message  # an answer: names are still asked
    assert f"HTTP Error 302: Found - Redirection to url '{url}' is not allowed" in caplog.text


def test_a_redirect_is_followed_without_reading_its_body(nominatim):
    # urllib read a redirect's body whole before following it, however long, past MAX_ANSWER_BYTES: one that never
    # ended was read into memory until the timeout (3 GB in 3 s on loopback), and the call failed.
    assert locate(nominatim, "moved on and on to /nominatim/search?q=Paris+Texas").place.country_code == "US"


def test_an_unreachable_provider_is_503(provider_server):
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_domain=f"127.0.0.1:{port}")
    assert refusal(geocoder, "Paris").code == "GEOCODER_UNAVAILABLE"


def test_a_certificate_that_does_not_verify_is_no_connection_and_the_next_names_are_answered_at_once(
        self_signed_provider, caplog):
    # The handshake's failure, not the timeout, is tested: on a busy machine it took longer than the tests' 0.5 s.
    geocoder = geocoder_for(self_signed_provider, "nominatim", geocoder_scheme="https", geocoder_timeout=30)
    assert "The place-name geocoder (nominatim) could not be reached." in refusal(geocoder, "Paris, Texas").message
    assert "CERTIFICATE_VERIFY_FAILED" in caplog.text
    assert "is not asked for now: when last asked, it could not be reached." in refusal(geocoder, "Rome").message
    assert asyncio.run(geocoder.describe(48.8584, 2.2946)) is None
    assert self_signed_provider["requests"] == []  # no request got through the handshake


def test_nominatim_reverse_geocodes_for_display(nominatim):
    place = asyncio.run(nominatim.describe(48.8584, 2.2946))
    assert (place.display_name, place.country_code) == ("Paris, Ile-de-France, France", "FR")
    assert (place.latitude, place.longitude) == (48.8584, 2.2946)
    assert asyncio.run(nominatim.describe(0.0, -140.0)) is None  # Nominatim: "Unable to geocode"


def test_reverse_geocoding_never_fails_a_request(provider_server):
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_domain=f"127.0.0.1:{port}")
    assert asyncio.run(geocoder.describe(48.8584, 2.2946)) is None


def test_after_a_failed_call_towns_are_not_asked_for_a_while(provider_server, odd_answer, monkeypatch):
    # A provider that hangs would hold every coordinate request for the timeout, for a town shown for display.
    nominatim = geocoder_for(provider_server, "nominatim")
    requests = provider_server["requests"]
    odd_answer("<html>Maintenance</html>")
    assert asyncio.run(nominatim.describe(48.8584, 2.2946)) is None
    asked_before = len(requests)
    assert asyncio.run(nominatim.describe(48.8534, 2.3488)) is None  # another point: its coordinates, unasked
    assert len(requests) == asked_before
    provider_server["odd"].clear()
    monkeypatch.setattr(online, "FAILURE_PAUSE_SECONDS", 0)  # the pause is over
    assert asyncio.run(nominatim.describe(48.8584, 2.2946)).display_name == "Paris, Ile-de-France, France"
    assert len(requests) == asked_before + 1


def test_while_the_provider_hangs_new_names_are_answered_at_once_and_remembered_ones_still_are(
        provider_server, hanging):
    nominatim = geocoder_for(provider_server, "nominatim")
    requests = provider_server["requests"]
    locate(nominatim, "Paris, Texas")
    hanging(True)
    # The first new name waits for the timeout; the next 19, each of another place, are not sent.
    error = refusal(nominatim, "Town 0")
    assert "gave no answer in time. Try again in 30 seconds" in error.message and error.extra == {"retry_after": 30}
    asked_before = len(requests)
    for number in range(1, 20):
        error = refusal(nominatim, f"Town {number}")
        assert (error.code, error.status) == ("GEOCODER_UNAVAILABLE", 503)
        assert error.message.startswith("The place-name geocoder (nominatim) is not asked for now: when last asked, "
                                        "it gave no answer in time. Try again in ")
        assert 1 <= error.extra["retry_after"] <= online.FAILURE_PAUSE_SECONDS
    assert len(requests) == asked_before
    assert asyncio.run(nominatim.describe(48.8584, 2.2946)) is None  # towns, as before
    assert locate(nominatim, "Paris, Texas").place.country_code == "US"  # remembered
    assert len(requests) == asked_before and not nominatim.ready


def test_when_the_pause_is_over_one_name_asks_and_its_answer_ends_the_pause(provider_server, hanging, monkeypatch):
    nominatim = geocoder_for(provider_server, "nominatim")
    requests = provider_server["requests"]
    hanging(True)
    refusal(nominatim, "Town 0")
    monkeypatch.setattr(online, "FAILURE_PAUSE_SECONDS", 0)  # the pause is over

    async def two_names() -> list:
        return await asyncio.gather(nominatim.locate("Town 1"), nominatim.locate("Town 2"), return_exceptions=True)

    asked_before = len(requests)
    probe, held = asyncio.run(two_names())
    assert "gave no answer in time" in probe.message  # asked, and not answered: a new pause
    assert "is not asked for now" in held.message and held.extra == {"retry_after": 1}  # the probe's timeout
    assert len(requests) == asked_before + 1
    hanging(False)  # the provider answers again
    assert locate(nominatim, "München").place.country_code == "DE"
    assert nominatim.ready
    assert locate(nominatim, "New York").place.country_code == "US"  # asked as any name is
    assert len(requests) == asked_before + 3


def test_a_proxys_gateway_timeout_is_no_answer_and_the_next_names_are_answered_at_once(nominatim, provider_server,
                                                                                         caplog):
    # The proxy answers at once, here; a real one after its own timeout, which each new name would wait.
    error = refusal(nominatim, "gateway timeout")
    assert "The place-name geocoder (nominatim) gave no answer in time." in error.message
    assert "HTTP Error 504: Gateway Timeout; it said:" in caplog.text
    asked_before = len(provider_server["requests"])
    assert "is not asked for now" in refusal(nominatim, "Paris, Texas").message
    assert len(provider_server["requests"]) == asked_before


def test_an_unreachable_provider_answers_the_next_names_at_once(provider_server):
    with socket.socket() as unused:  # a port nothing listens on
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_domain=f"127.0.0.1:{port}")
    assert "The place-name geocoder (nominatim) could not be reached." in refusal(geocoder, "Paris").message
    assert "is not asked for now: when last asked, it could not be reached." in refusal(geocoder, "Rome").message


def test_photon_ambiguity_keeps_the_providers_order_and_only_settlements(photon, provider_server):
    candidates = refusal(photon, "Paris").extra["candidates"]
    assert [(c["display_name"], c["recommended"]) for c in candidates] == [
        ("Paris, Île-de-France, France", True), ("Paris, Texas, United States", False)]
    path, query, _ = provider_server["requests"][-1]
    assert path == "/photon/api" and query["osm_tag"] == [b"place"] and query["lang"] == [b"en"]


@pytest.mark.parametrize("name,zones_and_populations", [
    ("nominatim", [("Europe/Paris", 2133111), ("America/Chicago", 24171), ("America/Chicago", 10156)]),
    ("photon", [("Europe/Paris", None), ("America/Chicago", None)]),  # Photon gives no population
])
def test_409_candidates_carry_their_zone_and_no_population_the_provider_does_not_give(provider_server, name,
                                                                                       zones_and_populations):
    pipeline = Pipeline.build(settings_for(provider_server, name))
    with pytest.raises(ApiError) as refused:
        asyncio.run(pipeline.locate(SolarQuery(dt.date(2026, 7, 14), dt.time(14, 30), place_name="Paris")))
    candidates = refused.value.extra["candidates"]
    assert [(c["timezone"], c["population"]) for c in candidates] == zones_and_populations


@contextlib.contextmanager
def serving_with(provider_server, name: str, data_dir):
    """The real app with GEOCODER=`name` asking the provider server, served from a thread. Yields the base URL."""
    settings = settings_for(provider_server, name, data_dir=data_dir)
    with serving_in_thread(settings, lambda: Services.build(settings)) as url:
        yield url


SOLAR_TIME_OF = "/api/v1/solar-time?date=2026-07-14&local_time=14:30&place_name="


def test_a_place_whose_point_lies_in_no_zone_is_a_422_naming_the_place_found_and_its_point(provider_server, tmp_path):
    with serving_with(provider_server, "nominatim", tmp_path) as url:
        status, body = get_json(url, SOLAR_TIME_OF + "Bouvet%20Island")
    assert (status, body["error"]["code"]) == (422, "TIMEZONE_RESOLUTION_FAILED")
    # It named only a point the client never sent, as if coordinates had been asked for.
    assert body["error"]["message"] == (
        "'Bouvet Island' was found as Bouvet Island: 54.4208°S, 3.3464°E is in international waters, or on an "
        "uninhabited island outside every time zone's boundaries, where no IANA timezone applies.")


def test_a_409_candidate_whose_point_lies_in_no_zone_has_a_null_timezone(provider_server, tmp_path):
    with serving_with(provider_server, "nominatim", tmp_path) as url:
        status, body = get_json(url, SOLAR_TIME_OF + "Atlantis")
    assert (status, body["error"]["code"]) == (409, "AMBIGUOUS_LOCATION")
    assert [(c["display_name"], c["timezone"]) for c in body["error"]["candidates"]] == [
        ("Atlantis, Florida, United States", "America/New_York"), ("Atlantis, Azores, Portugal", None)]


@pytest.mark.parametrize("name", ["nominatim", "photon"])
def test_a_place_near_a_zone_border_is_answered_in_its_zone_with_medium_confidence_saying_why(provider_server,
                                                                                              tmp_path, name):
    with serving_with(provider_server, name, tmp_path) as url:
        status, body = get_json(url, SOLAR_TIME_OF + "Badajoz")
    assert (status, body["timezone"], body["confidence"]) == (200, "Europe/Madrid", "MEDIUM")
    assert "  – MEDIUM: the point is within about 10 km of a timezone border" in body["validation"].splitlines()


def test_photon_one_place_and_an_exonym(photon):
    berlin = locate(photon, "Berlin").place
    assert (berlin.display_name, berlin.country_code, berlin.population) == ("Berlin, Germany", "DE", None)
    assert (berlin.latitude, berlin.longitude) == (52.5170365, 13.3888599)
    assert locate(photon, "München").notes == ("'München' is another name of Munich, Bavaria, Germany.",)


def test_photon_first_place_named_otherwise_is_not_set_aside_for_a_namesake(photon):
    munich = locate(photon, "München, village too")
    assert munich.place.display_name == "Munich, Bavaria, Germany" and munich.chosen_among_several
    assert munich.notes[-1].endswith("the geocoder's order ranked them: its first was taken, Munich, Bavaria, "
                                     "Germany.")


def test_photon_first_place_named_otherwise_stands_beside_a_namesake_abroad(photon):
    candidates = refusal(photon, "Wien").extra["candidates"]
    assert [(c["display_name"], c["recommended"]) for c in candidates] == [
        ("Vienna, Austria", True), ("Wien, Wisconsin, United States", False)]


# The pauses a provider asks for: refusing for its rate limit (429), or unavailable and saying when to come back
# (503 with a Retry-After).
PAUSES = pytest.mark.parametrize("refused", ["busy", "down"])
PAUSE_SAID = {"busy": ("gave a rate-limit refusal", "refused for its rate limit"),
              "down": ("is unavailable for now (HTTP 503 Service Unavailable)", "answered 503 with a Retry-After")}


@PAUSES
def test_a_pause_the_provider_asks_for_holds_for_as_long_as_it_asks(provider_server, caplog, refused):
    nominatim = geocoder_for(provider_server, "nominatim")
    requests = provider_server["requests"]
    said, logged = PAUSE_SAID[refused]
    error = refusal(nominatim, f"{refused} 1 s")
    assert (error.code, error.status, error.extra) == ("GEOCODER_UNAVAILABLE", 503, {"retry_after": 1})
    assert f"{said}. Try again in 1 second, or send latitude" in error.message
    assert f"geocoder nominatim {logged}: not asked again for 1 s" in caplog.text
    assert not nominatim.ready  # /healthz's geocoder_ready
    asked_before = len(requests)
    error = refusal(nominatim, "Paris, Texas")  # answered without asking
    assert error.extra == {"retry_after": 1} and f"{said}. Try again in 1 second" in error.message
    assert asyncio.run(nominatim.describe(48.8584, 2.2946)) is None
    assert len(requests) == asked_before
    time.sleep(1.05)
    assert nominatim.ready
    assert locate(nominatim, "Paris, Texas").place.country_code == "US"
    assert len(requests) == asked_before + 1


@pytest.mark.parametrize("failing", ["broken", "slow", "Unreadable"])
def test_healthz_reports_the_geocoder_not_ready_while_its_provider_fails(nominatim, monkeypatch, failing):
    assert nominatim.ready
    refusal(nominatim, failing)
    assert not nominatim.ready  # /healthz's geocoder_ready, as every place name is a 503
    monkeypatch.setattr(online, "FAILURE_PAUSE_SECONDS", 0)  # the pause after no answer ("slow") is over
    with contextlib.suppress(ApiError):
        locate(nominatim, "Nowhere at all")  # a 404 is an answer: the provider answers again
    assert nominatim.ready


def test_a_refusal_without_retry_after_pauses_the_provider_for_the_default(provider_server):
    nominatim = geocoder_for(provider_server, "nominatim")
    assert refusal(nominatim, "busy").extra == {"retry_after": 30}  # README: 30 s when it says nothing
    assert refusal(nominatim, "Paris, Texas").extra["retry_after"] <= 30


@PAUSES
def test_a_pause_asked_for_a_day_lasts_an_hour_at_most(provider_server, caplog, refused):
    nominatim = geocoder_for(provider_server, "nominatim")
    assert refusal(nominatim, f"{refused} a day").extra == {"retry_after": 3600}
    assert "not asked again for 3600 s" in caplog.text


@PAUSES
def test_a_pause_asked_for_no_time_lasts_a_second(provider_server, caplog, refused):
    nominatim = geocoder_for(provider_server, "nominatim")
    assert refusal(nominatim, f"{refused}, no pause").extra == {"retry_after": 1}  # Retry-After: 0, or a date gone by
    assert "not asked again for 1 s" in caplog.text


@PAUSES
@pytest.mark.parametrize("until", ["2 min", "2 min in -0000"])
def test_a_pause_until_a_date_logs_the_seconds_clients_are_told(provider_server, caplog, refused, until):
    nominatim = geocoder_for(provider_server, "nominatim")
    retry_after = refusal(nominatim, f"{refused} {until}").extra["retry_after"]  # Retry-After: an HTTP-date
    assert 119 <= retry_after <= 120
    assert f"not asked again for {retry_after} s" in caplog.text


@pytest.mark.parametrize("retry_after", ["soon", "1.5 s", "on 32 May", "in the year 10^13"])
def test_a_retry_after_that_is_no_delay_nor_date_is_taken_as_none(provider_server, caplog, retry_after):
    # Neither delay-seconds nor an HTTP-date of the calendar (RFC 9110): a refusal pauses the provider for the
    # default, a 503 is an error like any other, and the next name is asked.
    nominatim = geocoder_for(provider_server, "nominatim")
    assert refusal(nominatim, f"busy {retry_after}").extra == {"retry_after": 30}
    nominatim = geocoder_for(provider_server, "nominatim")
    error = refusal(nominatim, f"down {retry_after}")
    assert "gave an error. Try again later" in error.message and error.extra == {}
    assert locate(nominatim, "Paris, Texas").place.country_code == "US"


def test_calls_start_an_interval_apart_and_a_name_waits_for_its_turn(provider_server):
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_interval=0.3, geocoder_timeout=2)

    async def three_names() -> list:
        return await asyncio.gather(*(geocoder.locate(name) for name in ("Paris, Texas", "New York", "München")))

    started = time.monotonic()
    located = asyncio.run(three_names())
    assert [found.place.country_code for found in located] == ["US", "US", "DE"]
    assert time.monotonic() - started >= 0.6  # the second call started 0.3 s after the first, the third 0.6 s


@pytest.mark.parametrize("failing,refused", [
    pytest.param("gateway timeout", "is not asked for now: when last asked, it gave no answer in time. Try again in "
                 "30 seconds", id="no-answer"),
    pytest.param("busy", "gave a rate-limit refusal. Try again in 30 seconds", id="rate-limit-refusal"),
])
def test_a_name_waiting_for_its_turn_is_not_sent_once_the_provider_failed_meanwhile(provider_server, failing,
                                                                                      refused):
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_interval=10, geocoder_timeout=20)
    requests = provider_server["requests"]

    async def two_names() -> list:  # the second waits 10 s for its turn; the first fails at once
        return await asyncio.gather(geocoder.locate(failing), geocoder.locate("Paris, Texas"), return_exceptions=True)

    asked_before = len(requests)
    started = time.monotonic()
    first, second = asyncio.run(two_names())
    assert time.monotonic() - started < 10  # refused when the provider failed, not at its turn
    assert first.code == second.code == "GEOCODER_UNAVAILABLE"
    assert refused in second.message and second.extra == {"retry_after": 30}  # as a name sent then is answered
    assert len(requests) == asked_before + 1


def test_a_name_waiting_for_its_turn_after_an_error_answered_is_still_sent_at_its_turn(provider_server):
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_interval=0.3, geocoder_timeout=2)

    async def two_names() -> list:  # an HTTP 500 is an answer: names are still asked, in their turns
        return await asyncio.gather(geocoder.locate("broken"), geocoder.locate("Paris, Texas"), return_exceptions=True)

    started = time.monotonic()
    error, located = asyncio.run(two_names())
    assert "gave an error" in error.message and located.place.country_code == "US"
    assert time.monotonic() - started >= 0.3  # the second call started its interval after the first


def test_a_name_whose_turn_comes_after_the_timeout_is_a_503_without_asking(provider_server):
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_interval=5, geocoder_timeout=0.5)
    requests = provider_server["requests"]
    locate(geocoder, "Paris, Texas")
    asked_before = len(requests)
    error = refusal(geocoder, "Rome")
    assert (error.code, error.status) == ("GEOCODER_UNAVAILABLE", 503)
    assert error.message.startswith("The place-name geocoder (nominatim) is asked at most once every 5 s, and its "
                                    "turns for the next 5 s are taken. Try again in ")
    assert 4 <= error.extra["retry_after"] <= 5  # when a turn within the timeout will be free
    assert len(requests) == asked_before


def test_a_town_for_display_never_waits_for_a_turn(provider_server):
    # A place name would wait for a turn 5 s away within this timeout; a town does not.
    geocoder = geocoder_for(provider_server, "nominatim", geocoder_interval=5, geocoder_timeout=10)
    requests = provider_server["requests"]
    locate(geocoder, "Paris, Texas")
    asked_before = len(requests)
    assert asyncio.run(geocoder.describe(48.8584, 2.2946)) is None  # the coordinates are shown instead
    assert len(requests) == asked_before


@pytest.mark.parametrize("name,domain,interval,processes,expected", [
    ("nominatim", None, None, 1, 1.0),  # the public service: its usage policy
    ("nominatim", "nominatim.openstreetmap.org", None, 1, 1.0),
    ("nominatim", "nominatim.openstreetmap.org/", None, 1, 1.0),  # geopy asks the same service
    ("nominatim", "Nominatim.OpenStreetMap.org", None, 1, 1.0),
    ("nominatim", None, None, 3, 3.0),  # three processes each ask once every 3 s
    ("nominatim", "localhost:8080", None, 1, 0.0),  # an instance of one's own
    ("photon", None, None, 1, 0.0),  # fair use, no number
    ("nominatim", None, 0.0, 2, 0.0),  # GEOCODER_INTERVAL given
    ("photon", "localhost:2322", 0.25, 2, 0.5),
])
def test_the_interval_keeps_the_public_services_policy_across_processes(name, domain, interval, processes,
                                                                         expected):
    settings = config.load(environ={"GEOCODER": name, **({"GEOCODER_DOMAIN": domain} if domain else {})})
    settings = dataclasses.replace(settings, geocoder_interval=interval, processes=processes)
    assert build_geocoder(settings).interval == expected


@pytest.mark.parametrize("user_agent", [geopy.geocoders.options.default_user_agent, "my-application"])
def test_a_user_agent_the_public_nominatim_refuses_stops_the_command_in_one_line(capsys, tmp_path, monkeypatch,
                                                                                 user_agent):
    monkeypatch.setenv("GEOCODER", "nominatim")  # at its public address, by default
    monkeypatch.setenv("GEOCODER_USER_AGENT", user_agent)
    status = main(["calc", "--place", "Paris", "--date", "2026-07-14", "--time", "14:30", "--data-dir", str(tmp_path)])
    assert (status, capsys.readouterr().err) == (2, (
        f"solarserv: error: GEOCODER_USER_AGENT={user_agent!r}: Nominatim's public service refuses a default or "
        "sample User-Agent; its usage policy asks for one that names your application\n"))


def test_repeated_questions_are_answered_from_memory(nominatim, provider_server):
    requests = provider_server["requests"]
    asked_before = len(requests)
    for name in ("Paris, Texas", " paris,  TEXAS ", "Nowhere at all", "nowhere AT all"):
        with contextlib.suppress(ApiError):  # a 404 is an answer too
            locate(nominatim, name)
    for latitude, longitude in ((48.8584, 2.2946), (48.8581, 2.2954)):  # one point to 3 decimals
        assert asyncio.run(nominatim.describe(latitude, longitude)).display_name == "Paris, Ile-de-France, France"
    asked = [(path, query.get("q"), query.get("lat"), query.get("lon")) for path, query, _ in requests[asked_before:]]
    assert asked == [("/nominatim/search", [b"Paris, Texas"], None, None),
                     ("/nominatim/search", [b"Nowhere at all"], None, None),
                     ("/nominatim/reverse", None, [b"48.858"], [b"2.295"])]


def test_failures_are_not_remembered_and_old_answers_make_way(nominatim, provider_server, monkeypatch):
    requests = provider_server["requests"]
    asked_before = len(requests)
    for _ in range(2):
        assert refusal(nominatim, "broken").code == "GEOCODER_UNAVAILABLE"
    monkeypatch.setattr(online, "REMEMBERED_ANSWERS", 2)
    for name in ("Paris, Texas", "Berlin", "München", "Paris, Texas"):  # Paris, Texas made way for München
        with contextlib.suppress(ApiError):
            locate(nominatim, name)
    assert [query["q"][0].decode() for _, query, _ in requests[asked_before:]] == [
        "broken", "broken", "Paris, Texas", "Berlin", "München", "Paris, Texas"]


@pytest.mark.parametrize("name,answered", [("Paris, Texas", "US"), ("broken", "GEOCODER_UNAVAILABLE")])
def test_simultaneous_questions_for_one_new_name_share_one_call(nominatim, provider_server, name, answered):
    requests = provider_server["requests"]
    asked_before = len(requests)

    async def ten_at_once() -> list:
        return await asyncio.gather(*(nominatim.locate(name) for _ in range(10)), return_exceptions=True)

    answers = asyncio.run(ten_at_once())
    assert [getattr(answer, "code", None) or answer.place.country_code for answer in answers] == [answered] * 10
    assert len(requests) == asked_before + 1
    with contextlib.suppress(ApiError):  # a failure is not kept: the next question asks again
        locate(nominatim, name)
    assert len(requests) == asked_before + (1 if answered == "US" else 2)


def test_answers_are_remembered_for_a_while(nominatim, provider_server, monkeypatch):
    requests = provider_server["requests"]
    locate(nominatim, "Paris, Texas")
    monkeypatch.setattr(online, "REMEMBERED_SECONDS", 0)  # every answer kept is now too old
    asked_before = len(requests)
    locate(nominatim, "Paris, Texas")
    assert len(requests) == asked_before + 1


def test_an_answer_older_than_a_day_still_answers_while_the_provider_does_not(nominatim, provider_server, hanging,
                                                                              monkeypatch):
    requests = provider_server["requests"]
    locate(nominatim, "Paris, Texas")
    asyncio.run(nominatim.describe(48.8584, 2.2946))
    monkeypatch.setattr(online, "REMEMBERED_SECONDS", 0)  # every answer kept is now too old
    hanging(True)
    asked_before = len(requests)
    assert locate(nominatim, "Paris, Texas").place.country_code == "US"  # asked again, no answer: the old one
    assert len(requests) == asked_before + 1
    assert locate(nominatim, "Paris, Texas").place.country_code == "US"  # not asked, the provider paused
    town = asyncio.run(nominatim.describe(48.8584, 2.2946))
    assert town.display_name == "Paris, Ile-de-France, France"
    assert len(requests) == asked_before + 1
    assert "gave no answer in time" in refusal(nominatim, "München").message  # never answered: the 503


def test_photon_reverse_geocodes_the_town_for_display(photon):
    place = asyncio.run(photon.describe(48.8584, 2.2946))  # the street's town, not the street
    assert (place.display_name, place.country_code) == ("Paris, Île-de-France, France", "FR")
    assert (place.latitude, place.longitude) == (48.8584, 2.2946)
    assert asyncio.run(photon.describe(48.8534, 2.3488)).display_name == "Paris, Île-de-France, France"
    assert asyncio.run(photon.describe(44.1, 2.5)).display_name == "Occitanie, France"  # no town: the region
    assert asyncio.run(photon.describe(0.0, -140.0)) is None
    assert asyncio.run(photon.describe(-30.0, -120.0)) is None  # an object with no name, town, region or country


def test_build_geocoder_picks_the_geocoder_the_settings_name():
    settings = config.load(environ={})
    for name in ("nominatim", "photon"):
        geocoder = build_geocoder(dataclasses.replace(settings, geocoder=name))
        assert isinstance(geocoder, OnlineGeocoder) and geocoder.name == name
    assert config.GEOCODERS == ("offline", *PROVIDERS)  # the names config.load accepts


def test_a_pipeline_with_an_online_geocoder_imports_nothing_of_the_offline_one(tmp_path):
    # The gazetteer and rapidfuzz (its suggestions' fuzzy matching) are the offline geocoder's: every process
    # would carry them for nothing.
    offline_only = ("solarserv.geo.offline", "solarserv.geo.gazetteer", "solarserv.geo.discs", "rapidfuzz")
    probe = ("import sys, solarserv.cli, solarserv.serving, solarserv.pipeline, solarserv.web.app; "
             "from solarserv import config; "
             "settings = config.load(environ={'GEOCODER': 'photon', 'SOLARSERV_DATA_DIR': sys.argv[1]}); "
             "solarserv.pipeline.Pipeline.build(settings); "
             f"print([name for name in {offline_only!r} if name in sys.modules])")
    imported = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "[]"


@pytest.mark.parametrize("tag,population", [("2133111", 2133111), ("2 165 423", 2165423),
                                            ("155,929", 155929), ("~500", 500), (None, None), ("unknown", None)])
def test_the_population_tag_is_read_as_a_number(tag, population):
    assert _population(tag) == population
