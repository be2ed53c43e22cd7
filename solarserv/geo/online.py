"""GEOCODER=nominatim or photon: place names answered by an online service through geopy.

The provider's hits go through the same rules as the gazetteer's (solarserv.geo.matching): several
countries → 409 with candidates, several in one country → the most populous, none → 404. A provider
that fails, times out or answers what cannot be read → 503 GEOCODER_UNAVAILABLE, logged. geopy's HTTP
adapters block, so every call runs in a worker thread (of the geocoder's own pool, under a deadline);
recent answers are remembered, so a repeated question does not reach the provider.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import datetime as dt
import email.utils
import functools
import http.client
import io
import json
import logging
import math
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

from geopy.adapters import AdapterHTTPError, URLLibAdapter
from geopy.exc import (
    ConfigurationError,
    GeocoderParseError,
    GeocoderServiceError,
    GeocoderTimedOut,
    GeocoderUnavailable,
    GeopyError,
)
from geopy.geocoders import Nominatim, Photon
from geopy.location import Location as GeopyLocation

import solarserv
from solarserv.config import SettingsError
from solarserv.errors import ApiError, geocoder_unavailable
from solarserv.geo import Located
from solarserv.geo.matching import MAX_CANDIDATES, Match, choose, fold, not_found, split_qualifiers, tidy
from solarserv.models import Place
from solarserv.text import without_hidden_characters

log = logging.getLogger("solarserv.geo")
# geopy logs each call's URL at DEBUG, the place name a client asked for in its query (and a provider's key, for
# those that take one): failures are logged here, in one line each, without it.
logging.getLogger("geopy").setLevel(logging.ERROR)

DEFAULT_USER_AGENT = f"solarserv/{solarserv.__version__}"
# Ask for more hits than a 409 shows, so the ambiguity rules see places beyond the provider's top few.
HITS_PER_QUERY = 2 * MAX_CANDIDATES
# Answers kept per process, of names and of points each: repeated questions (a popular place asked again,
# a page reloaded) do not reach the provider again, as Nominatim's usage policy asks.
REMEMBERED_ANSWERS = 1024
# For a day at most: a place the provider learns of, or an empty answer it gave by mistake, is asked again.
REMEMBERED_SECONDS = 24 * 3600
# A point's town is asked for, and remembered, to 3 decimals of a degree: at most 79 m off (56 m in each of
# latitude and longitude), well inside the town the provider names.
TOWN_DECIMALS = 3
# Provider calls running at once, per process. Each mostly waits on the network, so a few threads serve
# many requests; further calls queue, within their deadline.
PROVIDER_THREADS = 8
# After the provider refuses for its rate limit (HTTP 429), it is left alone for as long as its Retry-After
# asks, or this long when it does not say; so after an HTTP 503 whose Retry-After says when to come back (one
# without is an error like any other). Never longer than the cap, whatever a header says.
REFUSAL_PAUSE_SECONDS = 30
REFUSAL_PAUSE_MAX_SECONDS = 3600
# After a failed call, towns (for display only) are not asked for this long, nor place names not yet remembered
# after a call the provider did not answer (a timeout, no connection): a provider that hangs would hold every
# such request for GEOCODER_TIMEOUT. After a call it answered, even with an error, names are still asked.
FAILURE_PAUSE_SECONDS = 30
# The most of an answer read, in bytes: 20 hits with their names in every language come to a few hundred
# kilobytes at most. geopy reads a body whole, whatever its length (a 200 MB one took 400 MB of memory for a
# moment, in each of the geocoder's threads), and a call given up on at the deadline goes on reading.
MAX_ANSWER_BYTES = 1_000_000
Key = TypeVar("Key")
Result = TypeVar("Result")


class _PauseAsked(GeocoderServiceError):
    """The provider asked to be left alone: HTTP 429, or 503 with a Retry-After; ``seconds``: for how long, None
    when it did not say."""

    def __init__(self, status: int, seconds: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.seconds = seconds


class _BoundedURLLibAdapter(URLLibAdapter):
    """geopy's urllib adapter, reading at most MAX_ANSWER_BYTES of an answer (or of an error's page), within the
    call's timeout, and telling a pause the provider asks for (_PauseAsked) from other HTTP errors."""

    def __init__(self, *, proxies: Any, ssl_context: Any) -> None:
        super().__init__(proxies=proxies, ssl_context=ssl_context)
        # Each calling thread's: the time.monotonic() at which its call is over (it started its timeout before).
        self._call = threading.local()
        # geopy's opener (no other handlers), its connections given only what is left of the call's timeout, and
        # following redirects to HTTP(S) only.
        self.urlopen = urllib.request.build_opener(
            _HTTPHandlerInTime(self._seconds_left),
            _HTTPSHandlerInTime(self._seconds_left, context=ssl_context),
            urllib.request.ProxyHandler(proxies),
            _RedirectsToHTTPOnly(),
        ).open

    def get_text(self, url: str, *, timeout: float, headers: dict[str, str]) -> str:
        self._call.over_at = time.monotonic() + timeout
        try:
            return super().get_text(url, timeout=timeout, headers=headers)
        except AdapterHTTPError as error:
            # geopy reads Retry-After of a 429 only, and a date beyond the year 9999 there raised OverflowError
            # out of the call (a 500): the header is read here, of both.
            seconds = _retry_after(error.headers.get("retry-after"))
            if error.status_code == 429 or (error.status_code == 503 and seconds is not None):
                raise _PauseAsked(error.status_code, seconds) from error
            raise
        except GeopyError as error:
            # Connecting and each read are given what is left of the timeout (_InTime), so one timed out (urllib's
            # URLError has it as its reason) is the call's: told as the event loop's deadline of the call is
            # (OnlineGeocoder._call), whichever of the two comes first.
            under = error.__cause__ or error.__context__
            if isinstance(getattr(under, "reason", under), TimeoutError):
                raise TimeoutError("no answer within the call's timeout") from error
            raise

    def _seconds_left(self) -> float:
        """What is left of this thread's call; TimeoutError once it is over."""
        left = self._call.over_at - time.monotonic()
        if left <= 0:
            raise TimeoutError("the call's timeout is over")
        return left

    def _decode_page(self, page: Any) -> str:
        try:
            body = page.read(MAX_ANSWER_BYTES + 1)
            if len(body) <= MAX_ANSWER_BYTES and getattr(page, "length", None):
                # Bytes its Content-Length promised never came: a read of a length ends at a closed connection
                # without the IncompleteRead that a read of the whole raises.
                raise http.client.IncompleteRead(body, page.length)
        except Exception as exc:  # a reset or a cut in mid-body: what geopy's own reading raises
            raise GeocoderServiceError("Unable to read the response") from exc
        finally:
            page.close()  # an answer left unread holds its connection open
        if len(body) > MAX_ANSWER_BYTES:
            raise GeocoderParseError(f"an answer of more than {MAX_ANSWER_BYTES:,} bytes, not read further")
        charset = page.headers.get_content_charset() or "utf-8"
        try:
            return body.decode(charset)
        except (LookupError, ValueError) as exc:  # LookupError: a charset Python does not know
            raise GeocoderParseError(f"Unable to decode the response: {exc}") from None


class _InTime:
    """A urllib handler whose connections are given ``seconds_left()`` of the call to connect, and to each read of
    the answer, its status line and headers as its body. The timeout urllib passes on bounds each read alone (and
    each redirect's connection anew): an answer dripping in a byte at a time, headers or body, kept its thread for
    as long as it dripped, long after the call was given up on (every thread, after a few such answers)."""

    def __init__(self, seconds_left: Callable[[], float], **options: Any) -> None:
        super().__init__(**options)
        self._seconds_left = seconds_left

    def do_open(self, http_class: Any, request: urllib.request.Request, **connection_options: Any) -> Any:
        def connection(host: str, timeout: float, **options: Any) -> http.client.HTTPConnection:
            made = http_class(host, timeout=self._seconds_left(), **options)
            made.response_class = functools.partial(_AnswerInTime, seconds_left=self._seconds_left)
            return made

        return super().do_open(connection, request, **connection_options)


class _HTTPHandlerInTime(_InTime, urllib.request.HTTPHandler):
    pass


class _HTTPSHandlerInTime(_InTime, urllib.request.HTTPSHandler):
    pass


class _RedirectsToHTTPOnly(urllib.request.HTTPRedirectHandler):
    """urllib's following of redirects, refusing one to ftp: as one to file: (an HTTP error of the redirect's status),
    and leaving the body of one it follows unread. urllib's own followed one to ftp:, connecting by FTP wherever the
    provider said, out of the call's timeout; and it read a redirect's body whole before following it, whatever its
    length (MAX_ANSWER_BYTES is _decode_page's): an endless one filled the memory until the timeout."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any,
                         newurl: str) -> urllib.request.Request:
        if urllib.parse.urlsplit(newurl).scheme not in ("http", "https"):  # urllib has made it absolute
            raise urllib.error.HTTPError(req.full_url, code, f"{msg} - Redirection to url '{newurl}' is not allowed",
                                         headers, fp)
        followed = super().redirect_request(req, fp, code, msg, headers, newurl)  # a request, or it raises
        fp.close()  # what urllib reads of it then is nothing
        return followed


class _AnswerInTime(http.client.HTTPResponse):
    """An answer read from its socket with each read given what is left of the call (``seconds_left()``)."""

    def __init__(self, sock: Any, *args: Any, seconds_left: Callable[[], float], **options: Any) -> None:
        super().__init__(sock, *args, **options)
        self.fp = io.BufferedReader(_SocketReadInTime(self.fp.detach(), sock, seconds_left))


class _SocketReadInTime(io.RawIOBase):
    """A socket's reader (``raw``) setting the socket's timeout to what is left of the call before each read."""

    def __init__(self, raw: io.RawIOBase, sock: Any, seconds_left: Callable[[], float]) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._seconds_left = seconds_left

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(self._seconds_left())
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Nominatim(Nominatim):
    """geopy's Nominatim, taking for "nothing found" only Nominatim's own ways of saying it: geopy reads any empty
    JSON (null, {}, false: a proxy's or a broken server's) so, and that was a 404 remembered for a day."""

    def _parse_json(self, places: Any, exactly_one: bool) -> Any:
        # Asked as below: /search (exactly_one=False) answers a list, [] for none; /reverse an object, a place or
        # {"error": "Unable to geocode"}.
        if not isinstance(places, dict if exactly_one else list) or (exactly_one and not places):
            raise ValueError(f"no answer of Nominatim's /{'reverse' if exactly_one else 'search'}: "
                             f"{_one_line(json.dumps(places))}")
        return super()._parse_json(places, exactly_one)


class _Photon(Photon):
    """geopy's Photon, taking for "nothing found" only an empty list of features: geopy reads "features": null
    so, and that was a 404 remembered for a day."""

    def _parse_json(self, resources: Any, exactly_one: bool = True) -> Any:
        if not isinstance(resources, dict) or not isinstance(resources.get("features"), list):
            raise ValueError(f"no answer of Photon's: {_one_line(json.dumps(resources))}")
        return super()._parse_json(resources, exactly_one)


class NominatimProvider:
    """OpenStreetMap's Nominatim (/search and /reverse, format=json)."""

    name = "nominatim"
    default_domain = "nominatim.openstreetmap.org"
    # The public service's usage policy: "an absolute maximum of 1 request per second", from all users together.
    public_interval = 1.0

    def __init__(self, **connection: Any) -> None:
        self._geopy = _Nominatim(**connection)

    def search(self, query: str) -> list[GeopyLocation]:
        hits = self._geopy.geocode(query, exactly_one=False, limit=HITS_PER_QUERY, addressdetails=True,
                                   namedetails=True, extratags=True, language="en",
                                   featuretype="settlement") or []
        # featuretype=settlement is "any human inhabited feature from 'state' down to 'neighbourhood'":
        # its regions would compete with the towns (New York State, more populous than the city).
        return [hit for hit in hits if hit.raw.get("addresstype") not in _NOMINATIM_REGIONS]

    def town_at(self, latitude: float, longitude: float) -> Place | None:
        # zoom 10 = city level: the town the point is in, not the house.
        hit = self._geopy.reverse((latitude, longitude), exactly_one=True, addressdetails=True,
                                  language="en", zoom=10)
        return None if hit is None else self.place(hit)

    def place(self, hit: GeopyLocation) -> Place:
        raw = hit.raw
        address = raw.get("address", {})
        name = raw.get("name") or hit.address.split(",")[0]
        latitude, longitude = _on_the_globe(raw["lat"], raw["lon"])
        return Place(
            display_name=_display_name(name, address.get("state"), address.get("country")),
            latitude=latitude,
            longitude=longitude,
            country_code=_country_code(address.get("country_code")),
            population=_population((raw.get("extratags") or {}).get("population")),
        )

    def own_names(self, hit: GeopyLocation) -> set[str]:
        """The place's name in the answer's language and in its own (München for Munich)."""
        return {fold(hit.raw.get("name") or ""), fold((hit.raw.get("namedetails") or {}).get("name") or "")}


class PhotonProvider:
    """Komoot's Photon (/api and /reverse, GeoJSON), an OpenStreetMap search without usage limits
    beyond fair use; it carries no population, so the provider's order ranks equal places."""

    name = "photon"
    default_domain = "photon.komoot.io"
    public_interval = 0.0  # fair use, with no number given

    def __init__(self, **connection: Any) -> None:
        self._geopy = _Photon(**connection)

    def search(self, query: str) -> list[GeopyLocation]:
        hits = self._geopy.geocode(query, exactly_one=False, limit=HITS_PER_QUERY, language="en",
                                   osm_tag="place") or []
        return [hit for hit in hits if hit.raw["properties"].get("osm_value") in _SETTLEMENT_KINDS]

    def town_at(self, latitude: float, longitude: float) -> Place | None:
        hit = self._geopy.reverse((latitude, longitude), exactly_one=True, language="en")
        if hit is None:
            return None
        # The nearest object is mostly a street or a building (geopy's reverse passes no osm_tag or layer
        # filter): its `city` is the town; with none (out in the country), region and country say where.
        properties = hit.raw["properties"]
        settlement = properties.get("osm_key") == "place" and properties.get("osm_value") in _SETTLEMENT_KINDS
        return self._named(hit, properties.get("name") if settlement else properties.get("city"))

    def place(self, hit: GeopyLocation) -> Place:
        properties = hit.raw["properties"]
        return self._named(hit, properties.get("name") or properties.get("city") or hit.address.split(",")[0])

    @staticmethod
    def _named(hit: GeopyLocation, name: str | None) -> Place:
        properties = hit.raw["properties"]
        longitude, latitude = hit.raw["geometry"]["coordinates"][:2]  # GeoJSON's order
        latitude, longitude = _on_the_globe(latitude, longitude)
        return Place(
            display_name=_display_name(name, properties.get("state"), properties.get("country")),
            latitude=latitude,
            longitude=longitude,
            country_code=_country_code(properties.get("countrycode")),
        )

    def own_names(self, hit: GeopyLocation) -> set[str]:
        return {fold(hit.raw["properties"].get("name") or "")}


# OpenStreetMap place=* values that are settlements (not a region, island, square or locality).
_SETTLEMENT_KINDS = {"city", "town", "village", "hamlet", "suburb", "quarter", "neighbourhood", "borough"}
# Nominatim's `addresstype`s (its address labels) above the municipality: what featuretype=settlement lets
# through that is not a settlement. A hit without the field (older servers) is kept.
_NOMINATIM_REGIONS = {"continent", "country", "region", "state", "province", "state_district", "county"}
PROVIDERS = {provider.name: provider for provider in (NominatimProvider, PhotonProvider)}


class OnlineGeocoder:

    def __init__(self, provider: NominatimProvider | PhotonProvider, timeout: float, interval: float = 0.0) -> None:
        """``interval``: the least seconds between two calls from this process."""
        self.provider = provider
        self.name = provider.name
        self.timeout = timeout
        self.interval = interval
        self._next_call = 0.0  # time.monotonic() from which the next call may start
        # The adapter bounds a call from when its thread takes it (_InTime); _ask puts its own deadline on the
        # whole call, queueing included. A call given up on keeps its thread until its own timeout is over, so
        # the calls run in a pool of their own: a flood of slow ones queues there (and is answered 503 at the
        # deadline) instead of taking the threads the rest of the service shares (the equation of time's).
        self._threads = concurrent.futures.ThreadPoolExecutor(PROVIDER_THREADS, f"geocoder-{self.name}")
        self._paused_until = 0.0  # time.monotonic() until which the pause the provider asked for holds
        self._paused_why = ""  # what the provider said, as the clients are told it
        # time.monotonic() of the provider's last call if it failed (a timeout, an error, an unreadable answer),
        # what it did as the clients are told it, whether it gave no answer at all, and whether the call after
        # the pause that followed is under way (_check_not_failing)
        self._failed_at: float | None = None
        self._failure_said = ""
        self._failure_holds_names = False
        self._probing = False
        # The provider's recent answers, read (a failure is not kept): by name, and by point to
        # TOWN_DECIMALS. Touched only from the event loop.
        self._names: collections.OrderedDict[str, tuple[list[Match], float]] = collections.OrderedDict()
        self._towns: collections.OrderedDict[tuple[float, float], tuple[Place | None, float]] = (
            collections.OrderedDict())
        # The calls under way, by the key of the answer they will keep (a name or a point): a question asked
        # again meanwhile waits for that call instead of making its own.
        self._asking: dict[Any, asyncio.Future[Any]] = {}
        # One future for each call waiting for its turn, given a result when a call fails (_wait_for_turn).
        self._waiting_turns: set[asyncio.Future[None]] = set()

    @classmethod
    def from_settings(cls, settings: Any) -> OnlineGeocoder:
        provider = PROVIDERS[settings.geocoder]  # config.load has checked the name and the scheme
        domain = settings.geocoder_domain or provider.default_domain
        interval = settings.geocoder_interval
        if interval is None:
            # The public service however it is written: geopy drops the slashes, and a host name has no case.
            public = domain.strip("/").lower() == provider.default_domain
            interval = provider.public_interval if public else 0.0
        user_agent = settings.geocoder_user_agent or DEFAULT_USER_AGENT
        try:
            connected = provider(
                # urllib: one attempt per call (geopy's requests adapter retries twice on a read timeout).
                adapter_factory=_BoundedURLLibAdapter,
                domain=domain,
                scheme=settings.geocoder_scheme,
                user_agent=user_agent,
                timeout=settings.geocoder_timeout,
            )
        except ConfigurationError:
            # geopy's one refusal left once config.load has checked the rest: its list of sample User-Agents
            # ("my-application", its own "geopy/VERSION") at the public Nominatim.
            raise SettingsError(f"GEOCODER_USER_AGENT={user_agent!r}: Nominatim's public service refuses a default "
                                "or sample User-Agent; its usage policy asks for one that names your application"
                                ) from None
        return cls(connected, timeout=settings.geocoder_timeout,
            # Each process spaces its own calls, so that the server's processes together keep the interval.
            interval=interval * settings.processes)

    @property
    def ready(self) -> bool:
        """Nothing to prepare, so ready unless the provider's last call failed (until one succeeds) or a pause it
        asked for (a rate-limit refusal, a 503 with Retry-After) still holds. Place names are answered 503 while
        such a pause holds, and for a while after a call the provider did not answer (``_check_not_failing``); the
        first call answered makes the geocoder ready again."""
        return self._failed_at is None and time.monotonic() >= self._paused_until

    async def locate(self, place_name: str) -> Located:
        asked = tidy(place_name)
        matches = await self._remembered(self._names, asked.casefold(), self._matches, asked)
        if not matches:
            raise not_found(asked)
        return choose(asked, matches)

    async def describe(self, latitude: float, longitude: float) -> Place | None:
        """The provider's town for the point; None when it has none or fails (display only: the
        request goes on with the coordinates)."""
        # The provider is asked for the rounded point, so a remembered answer is the one it would give.
        point = (round(latitude, TOWN_DECIMALS), round(longitude, TOWN_DECIMALS))
        try:
            town = await self._remembered(self._towns, point, self.provider.town_at, *point, may_wait=False)
        except ApiError:
            return None
        if town is None or not town.display_name:
            return None
        return Place(display_name=town.display_name, latitude=latitude, longitude=longitude,
                     country_code=town.country_code)

    def _matches(self, asked: str) -> list[Match]:
        # The provider applies qualifiers itself ("Paris, Texas"); the name before them decides
        # whether a hit matched a place's own name or another of its names.
        asked_name = fold(split_qualifiers(asked)[0])
        # However many the provider sends: it is asked for HITS_PER_QUERY.
        return [Match(self.provider.place(hit), by_own_name=_named(asked_name, self.provider.own_names(hit)))
                for hit in self.provider.search(asked)[:HITS_PER_QUERY]]

    async def _remembered(self, answers: collections.OrderedDict[Key, tuple[Result, float]], key: Key,
                          read: Callable[..., Result], *args: Any, may_wait: bool = True) -> Result:
        """The answer kept for `key` if younger than REMEMBERED_SECONDS, else `read(*args)` asked of the
        provider (``_ask``) and kept among the last REMEMBERED_ANSWERS, the least recently used dropped first.
        Questions for one key while its call is under way share that call, its answer or its failure: a new
        name asked by many clients at once (a link shared) would otherwise cost the provider as many calls, and
        take as many of its turns. An answer kept longer is still given when asking again fails: the provider's
        last word on the question beats a 503 while it is down."""
        kept = answers.get(key)
        if kept is not None and time.monotonic() - kept[1] < REMEMBERED_SECONDS:
            answers.move_to_end(key)
            return kept[0]
        asking = self._asking.get(key)
        if asking is None:
            asking = asyncio.ensure_future(self._ask_and_keep(answers, key, read, *args, may_wait=may_wait))
            self._asking[key] = asking
            asking.add_done_callback(lambda _: self._asking.pop(key))
        try:
            # Shielded: a request given up on does not cancel the call the others wait for.
            return await asyncio.shield(asking)
        except ApiError:  # the provider failed or refused (503): its answer of before, if there is one
            if kept is None:
                raise
            return kept[0]

    async def _ask_and_keep(self, answers: collections.OrderedDict[Key, tuple[Result, float]], key: Key,
                            read: Callable[..., Result], *args: Any, may_wait: bool) -> Result:
        answer = await self._ask(read, *args, may_wait=may_wait)
        answers[key] = (answer, time.monotonic())
        answers.move_to_end(key)
        if len(answers) > REMEMBERED_ANSWERS:
            answers.popitem(last=False)
        return answer

    async def _ask(self, read: Callable[..., Result], *args: Any, may_wait: bool) -> Result:
        """`read`, a provider call and the reading of its answer, in a worker thread, within the timeout, unless
        a pause the provider asked for still holds, the call follows a failed one too closely
        (``_check_not_failing``), or no turn is free in time (``may_wait``: see ``_take_turn``). Every refusal
        and failure is a 503 GEOCODER_UNAVAILABLE; a refusal's ``retry_after`` is the seconds after which the
        same call would be made."""
        queued_at = time.monotonic()
        self._check_not_paused()
        probe = self._check_not_failing(may_wait)
        wait = self._take_turn(may_wait)
        if probe:
            self._probing = True
        try:
            if wait:
                await self._wait_for_turn(queued_at, queued_at + wait, may_wait)
            return await self._call(read, *args, seconds=self.timeout - wait)
        finally:
            if probe:
                self._probing = False

    async def _wait_for_turn(self, queued_at: float, turn_at: float, may_wait: bool) -> None:
        """Until ``turn_at``, unless meanwhile the provider asks for a pause or fails in a way that holds this call:
        it is then refused at once, as a call made then is, instead of being sent at its turn."""
        while (left := turn_at - time.monotonic()) > 0:
            failed = asyncio.get_running_loop().create_future()
            self._waiting_turns.add(failed)
            try:
                await asyncio.wait([failed], timeout=left)
            finally:
                self._waiting_turns.discard(failed)
            self._check_not_paused()
            self._check_not_failing(may_wait, failed_since=queued_at)

    def _check_not_paused(self) -> None:
        """After the provider asked for a pause (_PauseAsked) it is not asked again until the pause is over."""
        paused = self._paused_until - time.monotonic()
        if paused > 0:
            raise _unavailable(self.name, self._paused_why, retry_after=paused)

    def _check_not_failing(self, may_wait: bool, failed_since: float = -math.inf) -> bool:
        """Within FAILURE_PAUSE_SECONDS of a failed call a town (``not may_wait``: the coordinates are shown) is
        not asked for, nor a place name after a call the provider did not answer. Once the pause is over one such
        call asks, the probe (True); the others are refused until it ends, which ends the pause when answered and
        starts another when not. ``failed_since``: only a call failed after that time.monotonic() counts (a call
        checked again after waiting for its turn: a failure before it queued was checked then)."""
        if (self._failed_at is None or self._failed_at < failed_since
                or (may_wait and not self._failure_holds_names)):
            return False
        left = self._failed_at + FAILURE_PAUSE_SECONDS - time.monotonic()
        if left <= 0 and not self._probing:
            return True
        # While the probe is under way, its answer comes within the timeout.
        raise _unavailable(self.name, f"is not asked for now: when last asked, it {self._failure_said}",
                           retry_after=left if left > 0 else self.timeout)

    def _take_turn(self, may_wait: bool) -> float:
        """Take this call's turn, and return the seconds until it comes. Calls start at least ``interval`` apart,
        each in the first free turn: a call that ``may_wait`` waits for its turn within the timeout; one that
        may not (a town, for display only) is refused unless its turn is now, so that names never wait
        behind towns."""
        now = time.monotonic()
        wait = max(0.0, self._next_call - now)
        longest_wait = self.timeout if may_wait else 0.0
        if wait and wait >= longest_wait:
            raise _unavailable(self.name, f"is asked at most once every {self.interval:g} s, and its turns for the "
                               f"next {math.ceil(wait):d} s are taken", retry_after=wait - longest_wait)
        self._next_call = now + wait + self.interval
        return wait

    async def _call(self, read: Callable[..., Result], *args: Any, seconds: float) -> Result:
        """`read(*args)` in a worker thread, given ``seconds``. Any failure becomes a 503, logged as one warning
        line: geopy parses the JSON inside the call, so an answer of an unexpected shape fails there as often
        as in our reading. A pause the provider asks for (_PauseAsked) holds for the calls after
        (``_check_not_paused``); any other failure leaves it not ``ready`` until a call succeeds, and pauses towns,
        and names too when the provider gave no answer (``_check_not_failing``)."""
        call = asyncio.get_running_loop().run_in_executor(self._threads, functools.partial(read, *args))
        try:
            answer = await asyncio.wait_for(call, seconds)
        except _PauseAsked as exc:
            # "Retry-After: 0", or a date gone by: a second then, not the pause of a refusal that says nothing.
            # Whole seconds, the ones the log and the clients are told.
            asked = REFUSAL_PAUSE_SECONDS if exc.seconds is None else max(1.0, exc.seconds)
            pause = math.ceil(min(asked, REFUSAL_PAUSE_MAX_SECONDS))
            self._paused_until = time.monotonic() + pause
            self._paused_why = ("gave a rate-limit refusal" if exc.status == 429
                                else "is unavailable for now (HTTP 503 Service Unavailable)")
            self._wake_waiting_turns()
            log.warning("geocoder %s %s: not asked again for %d s", self.name,
                        "refused for its rate limit" if exc.status == 429 else "answered 503 with a Retry-After",
                        pause)
            raise _unavailable(self.name, self._paused_why, retry_after=pause) from None
        except (GeopyError, *_UNEXPECTED_SHAPE, TimeoutError) as exc:
            self._failed_at = time.monotonic()
            self._failure_said = self._failure(exc)
            self._failure_holds_names = self._failure_said in _NOT_ANSWERED
            self._wake_waiting_turns()
            # Names are held for the pause: a client asking again sooner would get the same 503.
            pause = FAILURE_PAUSE_SECONDS if self._failure_holds_names else None
            raise _unavailable(self.name, self._failure_said, retry_after=pause) from None
        self._failed_at = None
        return answer

    def _wake_waiting_turns(self) -> None:
        """Each call waiting for its turn checks again, now, whether it may still be sent (_wait_for_turn)."""
        for waiting in self._waiting_turns:
            waiting.set_result(None)
        self._waiting_turns.clear()  # a second failure before they wake finds none to wake again

    def _failure(self, exc: Exception) -> str:
        """What a failed call did, as the clients are told it; logged."""
        if isinstance(exc, GeopyError):  # first: geopy's GeocoderTimedOut is a TimeoutError too
            log.warning("geocoder %s failed: %s", self.name, _what_happened(exc))
            return _failure_kind(exc)
        if isinstance(exc, TimeoutError):  # the deadline's
            log.warning("geocoder %s gave no answer in %g s", self.name, self.timeout)
            return _NO_ANSWER
        log.warning("geocoder %s answered in an unexpected shape: %s", self.name, _one_line(repr(exc)))
        return _UNREADABLE


# What reading JSON of another shape than expected raises, in geopy's parsing or ours: [1, 2] has no
# .get, {"foo": 1} no "features", a "lat" of "abc" is no float, a hit without coordinates no Location;
# arrays nested deeper than Python's recursion limit, json.loads's RecursionError (not a ValueError).
_UNEXPECTED_SHAPE = (AttributeError, IndexError, KeyError, RecursionError, TypeError, ValueError)
# Enough of a failure's text to tell what went wrong; geopy puts a whole unreadable body (an HTML
# page) into its message.
_LOGGED_CHARACTERS = 300


def _named(asked_name: str, own_names: set[str]) -> bool:
    """Whether a hit bears the asked name as its own: alone, or followed by words the provider took as
    qualifiers, as it reads "Paris Texas" like "Paris, Texas" (both folded)."""
    return any(own and (asked_name == own or asked_name.startswith(f"{own} ")) for own in own_names)


def _unavailable(provider: str, why: str, retry_after: float | None = None) -> ApiError:
    seconds = None if retry_after is None else max(1, math.ceil(retry_after))
    when = "later" if seconds is None else f"in {seconds} second{'' if seconds == 1 else 's'}"
    return geocoder_unavailable(f"The place-name geocoder ({provider}) {why}. Try again {when}, or send latitude "
                                "and longitude instead of place_name.", retry_after=seconds)


def _retry_after(value: str | None) -> float | None:
    """The seconds a Retry-After header asks for, as delay-seconds or an HTTP-date (RFC 9110 10.2.3), at least 0;
    None without one, or for one that is neither."""
    value = (value or "").strip()
    if value.isascii() and value.isdigit():
        return float(value)  # however many digits: float, unlike int, takes them all (as inf, at worst)
    try:
        date = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # not a date, or one the calendar has not (32 Jan, year 99999)
        return None
    if date.tzinfo is None:  # "-0000": UTC, said not to be local
        date = date.replace(tzinfo=dt.UTC)
    return max(0.0, (date - dt.datetime.now(dt.UTC)).total_seconds())


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LOGGED_CHARACTERS else text[:_LOGGED_CHARACTERS] + " …"


def _what_happened(exc: GeopyError) -> str:
    """geopy's error in one line, with what it leaves out: the page of an HTTP error (where a provider says why,
    as Nominatim does to a User-Agent it blocks), and the network's error under its own ("Unable to read the
    response" of an answer cut short, "104" of a connection reset)."""
    said = f"{type(exc).__name__}: {exc}"
    under = exc.__cause__ or exc.__context__
    if isinstance(under, AdapterHTTPError) and under.text:
        said += f"; it said: {re.sub(r'<[^>]*>', ' ', under.text)}"
    elif isinstance(under, OSError | http.client.HTTPException):
        reason = getattr(under, "reason", under)  # urllib's URLError wraps the socket's error
        if str(reason) not in said:
            said += f" ({type(reason).__name__}: {reason})"
    return _one_line(said)


# What a failed call did, as the clients are told it ("The place-name geocoder (nominatim) gave no answer in
# time."); the first two are no answer at all, which pauses place names (_check_not_failing).
_NO_ANSWER = "gave no answer in time"
_UNREACHABLE = "could not be reached"
_NOT_ANSWERED = (_NO_ANSWER, _UNREACHABLE)
_UNREADABLE = "gave an answer it could not read"
_ERROR = "gave an error"


def _failure_kind(exc: GeopyError) -> str:
    under = exc.__cause__ or exc.__context__
    # geopy's GeocoderTimedOut is also its reading of an answer of HTTP 503, 504 or 408: an answer, given at once,
    # but a 504 is a proxy's saying that the provider behind it did not answer (within the proxy's timeout, which
    # each call would wait). (A timeout of our connections is no GeopyError: the adapter tells it as a TimeoutError.)
    http_status = under.status_code if isinstance(under, AdapterHTTPError) else None
    if isinstance(exc, GeocoderTimedOut) and http_status in (None, 504):
        return _NO_ANSWER
    # No connection (refused, a name that does not resolve, a TLS handshake that fails: urllib's URLError, but
    # not its HTTPError, an answer), or one closed before any answer.
    if (isinstance(exc, GeocoderUnavailable)
            or isinstance(under, urllib.error.URLError | http.client.RemoteDisconnected)
            and not isinstance(under, urllib.error.HTTPError)):
        return _UNREACHABLE
    # Not JSON (a captive portal's page), too long, or in a charset that cannot be decoded.
    return _UNREADABLE if isinstance(exc, GeocoderParseError) else _ERROR


def _display_name(name: str | None, region: str | None, country: str | None) -> str:
    """"Paris, Île-de-France, France", leaving out parts that repeat the one before, and any control, bidirectional
    or other hidden character the provider's data holds (it is shown, and sent on to plugins, as it is)."""
    parts: list[str] = []
    for part in (without_hidden_characters(part or "") for part in (name, region, country)):
        if part and (not parts or fold(part) != fold(parts[-1])):
            parts.append(part)
    return ", ".join(parts)


def _on_the_globe(latitude: Any, longitude: Any) -> tuple[float, float]:
    """A hit's coordinates as the provider wrote them; off the globe, an answer that cannot be read (ValueError).
    geopy refuses a latitude of 91 but wraps a longitude of 200 to -160, another place; taken as written, 200
    failed the time-zone lookup with a 500."""
    latitude, longitude = float(latitude), float(longitude)
    if not (-90 <= latitude <= 90 and -180 <= longitude <= 180):  # NaN is in no range
        raise ValueError(f"coordinates off the globe: {latitude}, {longitude}")
    return latitude, longitude


def _country_code(code: Any) -> str:
    """The provider's country code, "FR"; "" for anything but two letters A-Z (as for a point at sea)."""
    return code.upper() if isinstance(code, str) and re.fullmatch("[A-Za-z]{2}", code) else ""


def _population(tag: str | None) -> int | None:
    """OpenStreetMap's population tag is free text ("2165423", "2 165 423", "~500"): its first number;
    None without one (unknown, not 0)."""
    found = re.search(r"\d[\d ,.]*", tag or "")
    return int(re.sub(r"\D", "", found.group())) if found else None
