"""The public page over HTTP (what the browser is sent) and the equation-of-time endpoint its chart reads.

What the page does with it in a real browser is tests/test_page_browser.py.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import html
import logging
import re
from html.parser import HTMLParser
from urllib.parse import urlencode

import pytest
from counters import UnusedMinuteClock

from solarserv.ratelimit import RateLimiter
from solarserv.solar import curves
from solarserv.solar.fast import FastEngine
from solarserv.web.app import Services, make_app
from solarserv.web.page import CalculatorPageHandler

SHARE_QUERY = {"date": "2026-07-14", "local_time": "14:30:00", "latitude": "39.47", "longitude": "75.99"}
# Tornado takes the type from Python's mimetypes, which names JavaScript either way depending on the system.
ASSET_TYPES = {".css": ("text/css",), ".js": ("text/javascript", "application/javascript"),
               ".svg": ("image/svg+xml",)}


class PageOutline(HTMLParser):
    """What a test needs to know of the page: assets, scripts, form controls and their labels, ids."""

    def __init__(self) -> None:
        super().__init__()
        self.assets: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.script_bodies: list[str] = []
        self.controls: list[dict[str, str | None]] = []
        self.label_targets: set[str] = set()
        self.ids: set[str] = set()
        self.described_by: list[str] = []
        self.attributes: list[str] = []
        self.style_elements = 0
        self._open_labels = 0
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.attributes.extend(attributes)
        if "id" in attributes:
            self.ids.add(attributes["id"])
        self.described_by.extend((attributes.get("aria-describedby") or "").split())
        if tag == "link":
            self.assets.append(attributes["href"])
        elif tag == "script":
            self.scripts.append(attributes)
            self.assets.append(attributes.get("src") or "")
            self._in_script = True
        elif tag == "style":
            self.style_elements += 1
        elif tag == "label":
            self._open_labels += 1
            if attributes.get("for"):
                self.label_targets.add(attributes["for"])
        elif tag in {"input", "select", "textarea"}:
            self.controls.append({**attributes, "inside_label": "yes" if self._open_labels else None})

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self._open_labels -= 1
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script_bodies.append(data)


@pytest.fixture
def anon_rpm() -> int:
    return 1_000_000  # as the session's settings: never refused (one test sets its own)


@pytest.fixture
def app(base_settings, services, anon_rpm):
    """The real app with this test's anonymous limit and a limiter of its own on a frozen clock."""
    settings = dataclasses.replace(base_settings, anon_rpm=anon_rpm)
    return make_app(settings, Services(settings=settings, pipeline=services.pipeline, keys=services.keys,
                                       limiter=RateLimiter(clock=UnusedMinuteClock()),
                                       console=services.console))


async def outline_of_page(api) -> PageOutline:
    reply = await api("/")
    assert reply.status == 200
    outline = PageOutline()
    outline.feed(reply.body.decode())
    return outline


def csp_directives(header: str) -> dict[str, list[str]]:
    directives = {}
    for directive in filter(None, (part.strip() for part in header.split(";"))):
        name, *sources = directive.split()
        directives[name] = sources
    return directives


async def test_page_is_html_with_a_strict_content_security_policy(api):
    reply = await api("/")
    assert reply.status == 200
    assert reply.headers["Content-Type"].startswith("text/html")
    policy = csp_directives(reply.headers["Content-Security-Policy"])
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
    assert policy["connect-src"] == ["'self'"]  # fetch reaches this site only
    assert policy["frame-ancestors"] == ["'none'"] and policy["object-src"] == ["'none'"]
    assert not any("unsafe" in source or "*" in source for sources in policy.values() for source in sources)
    assert reply.headers["X-Content-Type-Options"] == "nosniff"
    assert reply.headers["X-Frame-Options"] == "DENY"


async def test_the_example_for_readers_without_javascript_answers(api):
    page = (await api("/")).body.decode()
    notice = page[page.index("<noscript>"):page.index("</noscript>")]
    example = html.unescape(re.search(r"<code>(/api/v1/solar-time\?[^<]*)</code>", notice).group(1))
    reply = await api(example)
    assert reply.status == 200, reply.body
    assert reply.json()["timezone"] == "Europe/Paris"


async def test_share_link_is_served_the_same_page_for_its_script_to_read(api):
    plain, shared = await api("/"), await api("/?" + urlencode(SHARE_QUERY))
    assert shared.status == 200 and shared.body == plain.body


async def test_page_loads_only_this_sites_files_and_has_no_inline_script_or_style(api):
    outline = await outline_of_page(api)
    assert outline.scripts and all(script.get("src") for script in outline.scripts)
    assert not "".join(outline.script_bodies).strip()
    assert outline.style_elements == 0
    assert not [name for name in outline.attributes if name == "style" or name.startswith("on")]
    assert {asset.split("?")[0] for asset in outline.assets} == {
        "/static/page.css", "/static/page.js", "/static/page-icon.svg"}
    for asset in outline.assets:
        reply = await api(asset)
        assert reply.status == 200, asset
        suffix = asset.split("?")[0][asset.rfind("."):]
        assert reply.headers["Content-Type"].startswith(ASSET_TYPES[suffix]), asset
        assert b"http://" not in reply.body.replace(b"http://www.w3.org/2000/svg", b"")
        assert b"https://" not in reply.body and b"@import" not in reply.body


async def test_every_form_control_has_a_label_and_every_description_exists(api):
    outline = await outline_of_page(api)
    assert len(outline.controls) >= 6  # two mode radios, place, latitude, longitude, date, time, share link
    unlabelled = [control for control in outline.controls
                  if not control["inside_label"] and control.get("id") not in outline.label_targets]
    assert unlabelled == []
    assert set(outline.described_by) <= outline.ids
    assert {"status", "problem"} <= outline.ids  # the live regions the script announces in


async def test_static_files_carry_the_services_headers(api):
    for path in ("/static/page.js", "/static/nothing.js"):
        reply = await api(path)
        assert reply.headers["X-Content-Type-Options"] == "nosniff", path
        assert reply.headers["Referrer-Policy"] == "no-referrer", path
        assert "Server" not in reply.headers, path


@pytest.mark.parametrize(("method", "path"), [("GET", "/static/nope.css"), ("POST", "/static/page.js"),
                                             ("GET", "/static/page.js")])
async def test_static_answers_and_their_error_pages_are_framed_by_no_site_as_the_page_is(api, method, path):
    # A 404 or 405 here is an HTML page (error.html) quoting the path, as the page's own errors are.
    reply = await api(path, method, "x=1" if method == "POST" else None)
    policy = csp_directives(reply.headers["Content-Security-Policy"])
    assert policy["frame-ancestors"] == ["'none'"] and policy["script-src"] == ["'self'"], path
    assert reply.headers["X-Frame-Options"] == "DENY", path


@pytest.mark.parametrize("path", ["/static/page.js%00.css", "/static/%00", "/static/" + "x" * 5000 + ".js",
                                  "/static/%ff.js", "/static/..%2f..%2fapp.py"])
async def test_a_static_path_no_file_can_have_is_refused_not_a_server_error(api, caplog, path):
    reply = await api(path)
    assert reply.status in {400, 403, 404}, path
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize("path", ["/", "/static/page.js"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
async def test_a_method_the_page_and_its_files_do_not_answer_is_405_naming_those_they_do(api, path, method):
    reply = await api(path, method, None if method == "DELETE" else "x=1")
    assert reply.status == 405  # not the 403 of a form without its XSRF token: no form posts here
    assert reply.headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize(("method", "path", "heading"), [("POST", "/", "405 Method Not Allowed"),
                                                       ("GET", "/static/nope.css", "404 Not Found")])
async def test_the_page_and_its_files_answer_an_error_with_a_page_of_the_services_own(api, method, path, heading):
    reply = await api(path, method, "x=1" if method == "POST" else None)
    page = reply.body.decode()
    assert reply.status == int(heading[:3]) and reply.headers["Content-Type"].startswith("text/html")
    assert '<html lang="en">' in page and "<main>" in page
    assert re.findall(r"<title>(.*?)</title>", page) == [f"{heading} · solarserv"]
    assert re.findall(r"<h1>(.*?)</h1>", page) == [heading]
    assert '<a href="/">' in page  # a way back


async def test_a_failure_inside_the_page_shows_no_traceback_even_with_tornados_debug_setting(api, app, monkeypatch):
    def fail(handler):
        raise RuntimeError("a detail for the server's log only")

    monkeypatch.setattr(CalculatorPageHandler, "get", fail)
    app.settings["serve_traceback"] = True  # Tornado's own error page would then show the traceback
    reply = await api("/")
    page = reply.body.decode()
    assert reply.status == 500 and re.findall(r"<h1>(.*?)</h1>", page) == ["500 Internal Server Error"]
    assert "Traceback" not in page and "a detail" not in page


async def test_head_of_the_page_is_its_get_without_the_body(api):
    got, head = await api("/"), await api("/", "HEAD")
    assert head.status == 200 and head.body == b""
    for name in ("Content-Type", "Content-Length", "Content-Security-Policy", "Cache-Control", "Etag"):
        assert head.headers[name] == got.headers[name], name
    assert int(head.headers["Content-Length"]) == len(got.body)


async def test_unknown_paths_beside_the_page_stay_json_404s(api):
    reply = await api("/calculator")
    assert reply.status == 404 and reply.json()["error"]["code"] == "NOT_FOUND"


# ---------------------------------------------------------------- GET /api/v1/equation-of-time


async def equation_of_time(api, year: str):
    return await api("/api/v1/equation-of-time?" + urlencode({"year": year}))


@pytest.mark.parametrize(("year", "days"), [("2026", 365), ("2024", 366)])
async def test_equation_of_time_has_one_value_per_day_of_the_year(api, services, year, days):
    reply = await equation_of_time(api, year)
    assert reply.status == 200, reply.body
    body = reply.json()
    assert body["year"] == int(year) and body["utc_time"] == "12:00:00"
    assert body["ephemeris"] == services.pipeline.engine.name
    dates = [dt.date.fromisoformat(day["date"]) for day in body["days"]]
    first = dt.date(int(year), 1, 1)
    assert dates == [first + dt.timedelta(days=index) for index in range(days)]
    assert {name for name in reply.headers if name.startswith("X-Ratelimit")} == {
        "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"}


async def test_equation_of_time_has_its_known_extremes(api):
    days = (await equation_of_time(api, "2026")).json()["days"]
    lowest = min(days, key=lambda day: day["equation_of_time_minutes"])
    highest = max(days, key=lambda day: day["equation_of_time_minutes"])
    # The almanac's shape: about −14.2 min in mid-February, about +16.4 min in early November.
    assert "2026-02-09" <= lowest["date"] <= "2026-02-14"
    assert -14.4 < lowest["equation_of_time_minutes"] < -14.0
    assert "2026-10-31" <= highest["date"] <= "2026-11-06"
    assert 16.3 < highest["equation_of_time_minutes"] < 16.6


@pytest.mark.parametrize("place", [
    # Both clocks read 12:00 UTC: the equation of time is the same everywhere at one instant.
    {"date": "2026-01-15", "local_time": "12:00", "latitude": "51.5072", "longitude": "-0.1276"},
    {"date": "2026-07-14", "local_time": "18:00", "latitude": "39.47", "longitude": "75.99"},
], ids=["london-winter", "kashgar-summer"])
async def test_equation_of_time_is_the_solar_time_apis_value_at_noon_utc(api, place):
    result = (await api("/api/v1/solar-time?" + urlencode(place))).json()
    assert result["utc_time"] == "12:00:00"
    days = (await equation_of_time(api, place["date"][:4])).json()["days"]
    (that_day,) = [day for day in days if day["date"] == place["date"]]
    assert that_day["equation_of_time_minutes"] == result["calculation"]["equation_of_time_minutes"]


@pytest.mark.parametrize("year", ["1900", "2050"])
async def test_equation_of_time_answers_the_first_and_last_supported_years(api, year):
    reply = await equation_of_time(api, year)
    assert reply.status == 200 and reply.json()["days"][-1]["date"] == f"{year}-12-31"


@pytest.mark.parametrize(("query", "words"), [
    ("", "year is required"),
    ("?year=", "four-digit year"),
    ("?year=abc", "four-digit year"),
    ("?year=20260", "four-digit year"),
    ("?year=%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96", "four-digit year"),  # ２０２６, full-width digits
    ("?year=1899", "supported range 1900 to 2050"),
    ("?year=2051", "supported range 1900 to 2050"),
    # Read as the solar-time GET alias reads its fields: once, as sent, and in UTF-8.
    ("?year=abc&year=2026", "given 2 times"),
    ("?year=%202026%20", "got ' 2026 '"),
    ("?year=20%0026", "got '20\\x0026'"),
    ("?year=%ff", "year is not valid UTF-8"),
])
async def test_equation_of_time_refuses_a_bad_year_with_the_envelope(api, query, words):
    reply = await api("/api/v1/equation-of-time" + query)
    assert reply.status == 400
    error = reply.json()["error"]
    assert error["code"] == "INVALID_REQUEST" and words in error["message"]


@pytest.mark.parametrize("anon_rpm", [2])
async def test_equation_of_time_is_rate_limited_like_every_api_request(api, anon_rpm):
    replies = [await equation_of_time(api, "2026") for _ in range(anon_rpm + 1)]
    assert [reply.status for reply in replies] == [200, 200, 429]
    assert {reply.headers["X-RateLimit-Limit"] for reply in replies} == {str(anon_rpm)}
    refused = replies[-1]
    assert refused.json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert refused.json()["error"]["retry_after"] == int(refused.headers["Retry-After"]) == 50


def test_the_curve_of_a_year_is_fitted_a_month_at_a_time():
    # The year's days in one skyfield evaluation peaked at 55 MB, a month's at 6 MB.
    class Recording(FastEngine):
        def prepare(self, first_unix_seconds: float, last_unix_seconds: float) -> None:
            spans.append((last_unix_seconds - first_unix_seconds) / 86400 + 1)
            super().prepare(first_unix_seconds, last_unix_seconds)

    spans: list[float] = []
    curve = curves.equation_of_time_by_day(Recording(), 2024)
    assert len(curve) == 366 and max(spans) <= 31 and sum(spans) == 366


def test_the_curve_of_a_year_is_computed_once(services):
    engine = services.pipeline.engine
    assert curves.equation_of_time_by_day(engine, 2026) is curves.equation_of_time_by_day(engine, 2026)
    with pytest.raises(ValueError, match="1899"):
        curves.equation_of_time_by_day(engine, 1899)
