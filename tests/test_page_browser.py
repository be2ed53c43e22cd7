"""The public page in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright) against the
real app: a share link, the form in both modes, the ambiguity picker, errors, a phone-width screen.

One browser for the session, a fresh context per test. Screenshots go to test-artifacts/ (git-ignored).
Without Chromium these tests fail with instructions, unless SOLARSERV_SKIP_BROWSER=1 says to skip them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import re
import urllib.error
import urllib.request
from collections.abc import Collection, Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit
from zoneinfo import ZoneInfo

import pytest
from browsers import accessible, running_chromium
from counters import UnusedMinuteClock
from playwright.sync_api import Page
from servers import serving_in_thread

from solarserv.formatting import duration
from solarserv.pipeline import Pipeline
from solarserv.ratelimit import RateLimiter
from solarserv.timefmt import rounded_figure
from solarserv.web.app import Services

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parent.parent / "test-artifacts"
# The first answer of a session can wait for the gazetteer index to be built (about 15 s, longer on a busy
# machine); this bounds how long the browser waits, it measures nothing.
FIRST_ANSWER_MS = 90_000
KASHGAR_SHARE = {"date": "2026-07-14", "local_time": "14:30:00", "latitude": "39.47", "longitude": "75.99"}
# Chromium itself logs every non-2xx response of a fetch as a console error; the page cannot prevent that.
NETWORK_LOG = re.compile(r"Failed to load resource: the server responded with a status of (\d{3})\b")


@pytest.fixture(scope="module")
def browser():
    with running_chromium() as browser:
        yield browser


@dataclasses.dataclass
class Visit:
    """A page in a fresh browser context, with everything it did that a test checks afterwards."""

    page: Page
    base_url: str
    requests: list[str] = dataclasses.field(default_factory=list)
    console_errors: list[str] = dataclasses.field(default_factory=list)
    page_errors: list[str] = dataclasses.field(default_factory=list)

    def refused_statuses(self) -> set[int]:
        return {int(match.group(1)) for text in self.console_errors if (match := NETWORK_LOG.search(text))}

    def assert_clean(self, expected_statuses: Collection[int] = ()) -> None:
        """No script error, no console error but the browser's log of the statuses the test expected, and
        nothing fetched but this site's page, its static files and its public API."""
        assert self.page_errors == []
        assert [text for text in self.console_errors if not NETWORK_LOG.search(text)] == []
        assert self.refused_statuses() <= set(expected_statuses)
        for url in self.requests:
            parts = urlsplit(url)
            assert f"{parts.scheme}://{parts.netloc}" == self.base_url, url
            assert parts.path == "/" or parts.path.startswith(("/static/page", "/api/v1/")), url


@contextlib.contextmanager
def visiting(browser, base_url: str, width: int = 1100, height: int = 900, scripts: bool = True,
             color_scheme: str = "light") -> Iterator[Visit]:
    """A page in a browser context of its own (no cookies or cache from other tests), closed afterwards."""
    context = browser.new_context(viewport={"width": width, "height": height}, java_script_enabled=scripts,
                                  color_scheme=color_scheme)
    context.set_default_timeout(FIRST_ANSWER_MS)
    page = context.new_page()
    visit = Visit(page, base_url)
    page.on("request", lambda request: visit.requests.append(request.url))
    page.on("console", lambda message: message.type == "error" and visit.console_errors.append(message.text))
    page.on("pageerror", lambda error: visit.page_errors.append(str(error)))
    try:
        yield visit
    finally:
        context.close()


@pytest.fixture
def visit(browser, live_server) -> Iterator[Visit]:
    with visiting(browser, live_server) as visit:
        yield visit


def api_get(base_url: str, fields: dict) -> tuple[int, dict]:
    url = f"{base_url}/api/v1/solar-time?{urlencode(fields)}"
    try:
        with urllib.request.urlopen(url, timeout=FIRST_ANSWER_MS / 1000) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as refusal:
        with refusal:
            return refusal.code, json.load(refusal)


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def shown(page, selector: str) -> str:
    return page.locator(selector).inner_text().strip()


@pytest.fixture
def phone_visit(browser, live_server) -> Iterator[Visit]:
    with visiting(browser, live_server, width=390, height=844) as visit:
        yield visit


def test_share_link_shows_the_apis_result_on_a_phone_screen(phone_visit, live_server):
    status, result = api_get(live_server, KASHGAR_SHARE)
    assert status == 200
    visit = phone_visit
    page = visit.page
    page.goto(f"{live_server}{result['share']['url']}")
    page.locator("#result").wait_for(state="visible")

    assert shown(page, "#true-solar-time") == result["true_solar_time"]
    assert shown(page, "#clock-time") == result["local_time"] == "14:30:00"
    assert shown(page, "#utc-time") == result["utc_time"]
    assert shown(page, "#result-heading") == result["location"]["display_name"]
    assert shown(page, "#summary") == result["summary"]
    assert shown(page, "#share-text") == result["share"]["text"]
    assert page.input_value("#share-link") == f"{live_server}{result['share']['url']}"
    assert page.input_value("#latitude") == "39.47" and page.is_checked("input[value=coordinates]")
    # −5 min 53 s of equation of time, −56 min 2 s of longitude, −1 h 1 min 56 s in all, as the API says.
    eot = result["calculation"]["equation_of_time_minutes"]
    assert shown(page, "#eot-value") == f"−{int(-eot)} min {round(-eot * 60) % 60} s"
    assert shown(page, "#total-value") == "−1 h 1 min 56 s"
    # Whole out of context (after going back, say): the clock time's date too, which the status line left out.
    answer, place = result["true_solar_time"], result["location"]["display_name"]
    assert shown(page, "#status") == f"Sundial time {answer} at {place}; clock time 14:30:00 on 14 July 2026."
    # The pictures: the Sun on the compass, and the year's curve from the equation-of-time endpoint.
    assert page.locator("#compass circle.sun").count() == 1
    page.locator("#eot-chart polyline.curve").wait_for()
    assert len(page.get_attribute("#eot-chart polyline.curve", "points").split()) == 365
    assert page.locator("#eot-chart .marker-dot").count() == 1
    # Phone width: nothing wider than the screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, "page-share-link-phone.png")
    visit.assert_clean()


# A real village's name, 58 letters without a break; the gazetteer knows it.
LLANFAIRPWLL = "Llanfairpwllgwyngyllgogerychwyrndrobwllllantysiliogogogoch"


@pytest.mark.parametrize("place_name", [LLANFAIRPWLL, LLANFAIRPWLL + "x"])  # a result, and a 404's message
def test_a_long_unbroken_name_wraps_on_a_phone_screen(phone_visit, place_name):
    page = phone_visit.page
    page.goto(phone_visit.base_url + "/?" + urlencode({"date": "2026-07-14", "local_time": "14:30",
                                                       "place_name": place_name}))
    page.locator("#result:visible, #problem:visible").first.wait_for()
    assert place_name in page.locator("main").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    screenshot(page, f"page-long-name-{len(place_name)}-phone.png")


@pytest.mark.parametrize("width", [320, 375])
def test_on_a_small_screen_nothing_scrolls_sideways_and_the_charts_words_do_not_overlap(browser, live_server, width):
    # 14 July: the date's label falls left of its marker, where the scale's numbers are.
    with visiting(browser, live_server, width=width, height=800) as visit:
        page = visit.page
        page.goto(f"{live_server}/?{urlencode(KASHGAR_SHARE)}")
        page.locator("#eot-chart polyline.curve").wait_for()
        boxes = page.evaluate("""[...document.querySelectorAll('#eot-chart text')].map((text) => {
            const box = text.getBoundingClientRect();
            return [text.textContent, box.left, box.right, box.top, box.bottom];
        })""")
        assert len(boxes) == 7 + 12 + 2 + 1
        overlapping = [(a[0], b[0]) for index, a in enumerate(boxes) for b in boxes[index + 1:]
                       if a[1] < b[2] and b[1] < a[2] and a[3] < b[4] and b[3] < a[4]]
        assert overlapping == []
        chart = page.locator("#eot-chart").bounding_box()
        assert all(chart["x"] <= left and right <= chart["x"] + chart["width"] for _, left, right, _, _ in boxes)
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        visit.assert_clean()


def test_a_screen_reader_reads_the_charts_figures_once_described_by_its_note(visit):
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(KASHGAR_SHARE)}")
    page.locator("#eot-chart polyline.curve").wait_for()
    note = shown(page, "#eot-chart-note")
    role, name, description = accessible(page, "#eot-chart")
    assert role == "image" and name == "Chart of the equation of time over 2026"
    # Its figures are the note's, read once after the chart; the chart's name was the note's first sentence.
    assert description == note and "16 min 27 s ahead" in note and name not in note
    visit.assert_clean()


def outline(page) -> list[tuple[str, str]]:
    """The landmarks (role, name) and headings ("h2", name) a screen reader lists, in the page's order."""
    cdp = page.context.new_cdp_session(page)
    nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
    by_id = {node["nodeId"]: node for node in nodes}
    found = []

    def walk(node: dict) -> None:
        role, name = node.get("role", {}).get("value"), node.get("name", {}).get("value", "")
        if not node.get("ignored") and role in ("banner", "main", "form", "contentinfo", "navigation", "search"):
            found.append((role, name))
        elif not node.get("ignored") and role == "heading":
            found.append((f"h{next(part['value']['value'] for part in node['properties'] if part['name'] == 'level')}",
                          name))
        for child in node.get("childIds", []):
            if child in by_id:
                walk(by_id[child])

    walk(nodes[0])
    return found


class HeldAnswers:
    """The page's questions to the service, held until the test releases them. A question's route reaches the test
    on a path of its own, which may come after the page has said it waits (aria-busy): one arriving after
    ``release`` goes on at once."""

    def __init__(self, page) -> None:
        self.routes = []
        self.released = False
        page.route("**/api/v1/solar-time?*", self._hold)

    def _hold(self, route) -> None:
        self.routes.append(route)
        if self.released:
            route.continue_()

    def release(self) -> None:
        self.released = True
        for route in self.routes:
            route.continue_()


def asked_again_while_the_answer_is_held(visit):
    """The page showing Kashgar's answer for 14:30, asked for 15:00, whose answer is held: (the page, the
    HeldAnswers)."""
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(KASHGAR_SHARE)}")
    page.locator("#eot-chart polyline.curve").wait_for()
    held = HeldAnswers(page)
    page.get_by_label("Clock time").fill("15:00:00")
    page.get_by_label("Clock time").press("Enter")
    page.wait_for_function("document.getElementById('result').getAttribute('aria-busy') === 'true'")
    return page, held


def test_nothing_on_the_page_moves_so_reduced_motion_has_nothing_to_stop(visit):
    # README: no animation, transition or smooth scrolling, while an answer is awaited (dimmed) or shown.
    page, held = asked_again_while_the_answer_is_held(visit)
    moving = """() => [...document.querySelectorAll("*")].map((node) => getComputedStyle(node))
        .filter((style) => style.animationName !== "none" || style.transitionDuration.split(", ").some((time) =>
            time !== "0s") || style.scrollBehavior !== "auto").length + document.getAnimations().length"""
    assert page.evaluate(moving) == 0
    held.release()
    page.get_by_text("Sundial time 13:58").wait_for()
    assert page.evaluate(moving) == 0
    visit.assert_clean()


def test_a_screen_reader_finds_the_form_among_the_landmarks_and_headings_in_order(visit):
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(KASHGAR_SHARE)}")
    page.locator("#eot-chart polyline.curve").wait_for()
    # A form is a landmark only when it has a name: without one, a screen reader's list of them skipped it.
    assert outline(page) == [
        ("banner", ""), ("h1", "What does a sundial read?"), ("main", ""), ("form", "Sundial time calculator"),
        ("h2", shown(page, "#result-heading")), ("h3", "Why the sundial and the clock differ"),
        ("h3", "Where the Sun is"), ("h3", "The equation of time over 2026"), ("h3", "In words"),
        ("h4", "Civil time at this place"), ("h4", "Checks confidence HIGH"), ("h3", "Share"), ("contentinfo", "")]
    visit.assert_clean()


def test_a_screen_reader_is_told_the_breakdown_tables_name(visit):
    # A table without a name was announced as a bare "table, 3 columns".
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(KASHGAR_SHARE)}")
    page.locator("#result").wait_for(state="visible")
    assert accessible(page, ".breakdown")[:2] == ("table", "Why the sundial and the clock differ")
    visit.assert_clean()


def test_a_screen_reader_reads_each_sun_sketchs_figures_once(visit):
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(KASHGAR_SHARE)}")
    page.locator("#result").wait_for(state="visible")
    # Named by its title alone: named by it with aria-labelledby, the sketch was also described by it, so a screen
    # reader read "The Sun is in the south-west, azimuth …" twice over.
    assert [accessible(page, sketch) for sketch in ("#compass", "#altitude")] == [
        ("image", page.locator(f"{sketch} title").text_content(), "") for sketch in ("#compass", "#altitude")]
    assert accessible(page, "#compass")[1].startswith("The Sun is in the ")
    visit.assert_clean()


# Each shown text's colour (an SVG text's fill) and the background it is drawn on, the nearest ancestor's
# that is not transparent; a text field's placeholder and the field's own background.
TEXT_COLOURS = """() => {
  const background = (node) => {
    for (; node; node = node.parentElement) {
      const colour = getComputedStyle(node).backgroundColor;
      if (colour !== "rgba(0, 0, 0, 0)") return colour;
    }
    return "rgb(255, 255, 255)";
  };
  const texts = [...document.querySelectorAll("body *")]
    .filter((node) => node.getClientRects().length
      && [...node.childNodes].some((child) => child.nodeType === Node.TEXT_NODE && child.textContent.trim()))
    .map((node) => [node.tagName + "#" + node.id, getComputedStyle(node)[node instanceof SVGElement ? "fill" : "color"],
                    background(node)]);
  const placeholders = [...document.querySelectorAll("input[placeholder]")]
    .map((input) => [input.id + "::placeholder", getComputedStyle(input, "::placeholder").color, background(input)]);
  return [...texts, ...placeholders];
}"""


def contrast_ratio(foreground: str, background: str) -> float:
    """WCAG 2's contrast ratio of two opaque CSS colours written rgb(r, g, b)."""
    def luminance(colour: str) -> float:
        channels = [int(value) / 255 for value in re.findall(r"\d+", colour)[:3]]
        linear = [value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4 for value in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    darker, lighter = sorted([luminance(foreground), luminance(background)])
    return (lighter + 0.05) / (darker + 0.05)


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_text_and_placeholder_contrasts_at_least_4_5_to_1_with_its_background(browser, live_server, scheme):
    with visiting(browser, live_server, color_scheme=scheme) as visit:
        page = visit.page
        page.goto(f"{live_server}/?{urlencode(KASHGAR_SHARE)}")
        page.locator("#eot-chart polyline.curve").wait_for()
        page.get_by_label("By place name").check()  # its placeholder shown too
        colours = page.evaluate(TEXT_COLOURS)
        assert len(colours) > 50 and any(name == "place_name::placeholder" for name, _, _ in colours)
        low = [(name, foreground, background, round(contrast_ratio(foreground, background), 2))
               for name, foreground, background in colours if contrast_ratio(foreground, background) < 4.5]
        assert low == []
        visit.assert_clean()


def test_without_javascript_the_page_says_it_needs_it_and_where_the_api_is(browser, live_server):
    with visiting(browser, live_server, scripts=False) as visit:
        visit.page.goto(live_server + "/?" + urlencode(KASHGAR_SHARE))
        page = visit.page
        notice = page.locator(".noscript").inner_text()
        assert "needs JavaScript" in notice and "/api/v1/solar-time" in notice
        # No form that cannot work (sent, it reloaded this page with its fields in the address bar, and
        # nothing else), and the example is a link to the API's answer.
        assert page.locator("#calculator").is_hidden()
        page.locator(".noscript").get_by_role("link").click()
        page.wait_for_url("**/api/v1/solar-time?*")
        assert json.loads(page.locator("body").inner_text())["timezone"] == "Europe/Paris"


# Minutes whose parts are zero in every place: before, between and after the others, and all of them.
DURATIONS = [60 + 5 / 60, 120.5, -(3600 + 1 / 60), 1.0, -3.0, 3.2, 0.75, -172.3, 0.004, -0.004, 0.0,
             1.025, -1.025, 0.025, 0.0083]  # the JSON's figures on a half second: 61.5, 1.5 and 0.498 s
# Angles as the JSON gives them, ties of the tenth among them (0.15 is 0.1499… in binary).
ANGLES = [0.15, -0.15, 0.25, 12.645, 12.6449, 0.05, -0.04, 359.95, 359.9499, 180.0, 0.0]


def test_the_pages_durations_show_the_parts_the_texts_show(visit):
    page = visit.page
    page.goto(visit.base_url + "/")
    assert page.evaluate("(values) => values.map(duration)", DURATIONS) == [duration(value) for value in DURATIONS]
    assert duration(60 + 5 / 60) == "1 h 5 s"
    # Its own figures keep a typographic minus and a zero that takes no side (README "The calculator page").
    signed = page.evaluate("(values) => values.map(signedDuration)", [-(60 + 5 / 60), 3.0, 0.004, -0.004])
    assert signed == ["\u22121 h 5 s", "+3 min", "\u00b10 s", "\u00b10 s"]
    visit.assert_clean()


def test_the_pages_angles_round_the_jsons_figure_as_the_texts_do(visit):
    page = visit.page
    page.goto(visit.base_url + "/")
    shown = page.evaluate("(values) => values.map((value) => roundedFigure(value, 1))", ANGLES)
    assert shown == [rounded_figure(value, 1) for value in ANGLES]
    assert shown[:3] == ["0.2", "0.2", "0.3"]
    visit.assert_clean()


def test_a_sun_whose_elevation_reads_0_0_stands_on_the_horizon_as_in_the_summary(visit):
    # Paris at sunset, the centre 0.029° below the horizon: the page read "−0.0° (below the horizon)".
    page = visit.page
    page.goto(visit.base_url + "/?" + urlencode({"date": "2026-07-14", "local_time": "21:48:40",
                                                 "latitude": "48.8566", "longitude": "2.3522"}))
    page.locator("#result").wait_for(state="visible")
    assert shown(page, "#elevation-value") == "0.0° (on the horizon)"
    assert page.locator("#altitude title").text_content() == "The Sun is on the horizon"
    # Drawn as it reads, not hollow as a Sun below the horizon is: both sketches drew it so.
    assert [page.locator(f"#{sketch} circle.sun").get_attribute("class") for sketch in ("compass", "altitude")] == [
        "sun", "sun"]
    assert "The Sun stands on the horizon" in shown(page, "#summary")
    visit.assert_clean()


def paris_by_coordinates(visit: Visit) -> Page:
    """The page opened afresh, in coordinate mode, with a point in Paris typed in."""
    page = visit.page
    page.goto(visit.base_url + "/")
    page.get_by_label("By coordinates").check()
    page.get_by_label("Latitude").fill("48.85")
    page.get_by_label("Longitude").fill("2.3522")
    return page


def test_form_in_coordinate_mode_by_keyboard_matches_the_api(visit):
    page = paris_by_coordinates(visit)
    page.get_by_label("Date").fill("2026-03-29")  # the morning Paris moves its clocks forward
    page.get_by_label("Clock time").fill("09:15:00")
    page.get_by_label("Clock time").press("Enter")
    page.locator("#result").wait_for(state="visible")
    assert page.evaluate("document.activeElement.id") == "result-heading"  # the answer asked for

    status, result = api_get(visit.base_url, {"date": "2026-03-29", "local_time": "09:15:00",
                                              "latitude": "48.85", "longitude": "2.3522"})
    assert status == 200 and result["dst"] is True
    assert shown(page, "#true-solar-time") == result["true_solar_time"]
    # The point as the API writes it ("48.85°N", not "48.8500°N").
    assert shown(page, "#result-where").startswith(result["location"]["place_name"] + " · ")
    assert shown(page, "#dst-value") == "−1 h"
    assert parse_qs(urlsplit(page.url).query) == parse_qs(result["share"]["url_params"])
    # Every control has its label; focus is visible when moving by keyboard; the copy button copies.
    assert page.evaluate("[...document.querySelectorAll('input')].every((input) => input.labels.length)")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_label("Link to this result").focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "copy-link"
    assert page.evaluate("getComputedStyle(document.activeElement).outlineStyle") == "solid"
    page.keyboard.press("Enter")
    page.get_by_text("Link copied.").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == f"{visit.base_url}{result['share']['url']}"
    page.locator("#eot-chart polyline.curve").wait_for()
    screenshot(page, "page-coordinates-desktop.png")
    visit.assert_clean()


def test_back_to_the_empty_page_leaves_no_announcement_of_the_answer_it_hid(visit):
    page = paris_by_coordinates(visit)
    page.get_by_role("button", name="Show sundial time").click()
    page.locator("#result").wait_for(state="visible")
    assert shown(page, "#status").startswith("Sundial time")
    page.go_back()
    page.locator("#result").wait_for(state="hidden")
    assert urlsplit(page.url).query == "" and page.input_value("#latitude") == ""
    assert shown(page, "#status") == ""  # it still spoke of the answer no longer shown
    visit.assert_clean()


def test_an_answer_shown_while_a_new_question_waits_is_dimmed_as_out_of_date(visit):
    # A slow service: the clock time asked is 15:00, while the answer for 14:30 is still on screen.
    page, held = asked_again_while_the_answer_is_held(visit)
    assert shown(page, "#clock-time") == "14:30:00"
    assert float(page.evaluate("getComputedStyle(document.getElementById('result')).opacity")) < 1
    held.release()
    page.get_by_text("Sundial time 13:58").wait_for()
    assert len(held.routes) == 1  # by now its route has come, as the answer has
    assert shown(page, "#clock-time") == "15:00:00"
    assert page.evaluate("getComputedStyle(document.getElementById('result')).opacity") == "1"
    visit.assert_clean()


def test_place_name_with_empty_date_and_time_shows_now_at_the_place(visit):
    page = visit.page
    page.goto(visit.base_url + "/")
    page.get_by_label("Place name", exact=True).fill("Kashgar")
    asked_at = dt.datetime.now(dt.UTC)
    page.get_by_role("button", name="Show sundial time").click()
    page.locator("#result").wait_for(state="visible")

    assert shown(page, "#result-heading").startswith("Kashgar")
    # The address bar now holds the share link of the answer: the clock time it chose must be "now" in
    # Kashgar's zone, whatever this machine's own zone is.
    query = parse_qs(urlsplit(page.url).query)
    local = dt.datetime.fromisoformat(f"{query['date'][0]}T{query['local_time'][0]}")
    chosen = local.replace(tzinfo=ZoneInfo("Asia/Urumqi")).astimezone(dt.UTC)
    assert asked_at - dt.timedelta(seconds=5) <= chosen <= dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
    assert shown(page, "#clock-time") == query["local_time"][0]
    visit.assert_clean()


def test_ambiguous_place_offers_candidates_recommended_first_and_a_pick_resends_coordinates(visit):
    fields = {"place_name": "Springfield", "date": "2026-07-04", "local_time": "12:00:00"}
    status, refusal = api_get(visit.base_url, fields)
    assert status == 409, "place-name mode should find Springfield in several countries"
    recommended = next(candidate for candidate in refusal["error"]["candidates"] if candidate["recommended"])

    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(fields)}")
    page.locator("#candidates").wait_for(state="visible")
    names = page.locator(".candidate-name").all_inner_texts()
    assert names[0] == recommended["display_name"]
    assert sorted(names) == sorted(candidate["display_name"] for candidate in refusal["error"]["candidates"])
    # The page's own words: the API's message tells a client to resend the coordinates, which a person does
    # by choosing one.
    assert shown(page, "#candidates-message") == (
        "“Springfield” is the name of places in more than one country. Choose the one you mean, or add its "
        f"country or region to the name: “Springfield, {recommended['country_code']}”.")
    assert page.evaluate("document.activeElement.id") == "candidates-heading"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")  # the first, recommended candidate
    page.locator("#result").wait_for(state="visible")

    assert page.is_checked("input[value=coordinates]")
    assert float(page.input_value("#latitude")) == recommended["latitude"]
    _, result = api_get(visit.base_url, {"date": "2026-07-04", "local_time": "12:00:00",
                                         "latitude": recommended["latitude"],
                                         "longitude": recommended["longitude"]})
    assert shown(page, "#true-solar-time") == result["true_solar_time"]
    assert page.locator("#candidates").is_hidden()
    assert page.evaluate("document.activeElement.id") == "result-heading"  # not lost with the hidden button
    visit.assert_clean(expected_statuses={409})


def test_an_unknown_places_close_names_are_buttons_that_ask_again_with_the_name(visit):
    fields = {"place_name": "Nairobbi", "date": "2026-07-14", "local_time": "14:30:00"}
    status, refusal = api_get(visit.base_url, fields)
    assert (status, refusal["error"]["suggestions"]) == (404, ["Nairobi"])

    page = visit.page
    page.goto(visit.base_url)
    page.get_by_label("Place name", exact=True).fill(fields["place_name"])
    page.get_by_label("Date").fill(fields["date"])
    page.get_by_label("Clock time").fill(fields["local_time"])
    page.get_by_label("Place name", exact=True).press("Enter")
    page.locator("#candidates").wait_for(state="visible")
    # The API's message still says why; the names are buttons, reached from the picker's heading by keyboard.
    assert shown(page, "#problem") == refusal["error"]["message"]
    assert page.get_attribute("#place_name", "aria-invalid") == "true"
    assert page.locator(".candidate-name").all_inner_texts() == ["Nairobi"]
    screenshot(page, "page-close-names-desktop.png")
    assert page.evaluate("document.activeElement.id") == "candidates-heading"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Nairobi"
    assert page.get_by_role("button", name="Nairobi", exact=True).is_visible()
    page.keyboard.press("Enter")
    page.locator("#result").wait_for(state="visible")

    assert page.input_value("#place_name") == "Nairobi" and page.is_checked("input[value=place]")
    _, result = api_get(visit.base_url, {**fields, "place_name": "Nairobi"})
    assert shown(page, "#result-heading") == result["location"]["display_name"]
    assert shown(page, "#true-solar-time") == result["true_solar_time"]
    assert page.locator("#candidates").is_hidden() and page.locator("#problem").is_hidden()
    assert page.get_attribute("#place_name", "aria-invalid") is None
    assert page.evaluate("document.activeElement.id") == "result-heading"
    assert page.url == visit.base_url + result["share"]["url"]
    visit.assert_clean(expected_statuses={404})


def test_errors_are_shown_in_the_page(visit):
    page = visit.page
    page.goto(visit.base_url + "/?" + urlencode({**KASHGAR_SHARE, "latitude": "95"}))
    page.locator("#problem").wait_for(state="visible")
    status, refusal = api_get(visit.base_url, {**KASHGAR_SHARE, "latitude": "95"})
    assert status == 400
    assert shown(page, "#problem") == refusal["error"]["message"]
    assert page.get_attribute("#problem", "role") == "alert"
    assert page.locator("#result").is_hidden()
    # The field the message is about is marked, and described by it.
    assert page.get_attribute("#latitude", "aria-invalid") == "true"
    assert page.get_attribute("#latitude", "aria-describedby") == "latitude-hint problem"

    page.get_by_label("By place name").check()
    page.get_by_label("Place name", exact=True).fill("Qqzzxv Nowhere")
    page.get_by_role("button", name="Show sundial time").click()
    page.get_by_text("No place found").wait_for()
    assert "Qqzzxv Nowhere" in shown(page, "#problem")
    assert page.get_attribute("#latitude", "aria-invalid") is None  # cleared when asked again
    assert page.get_attribute("#latitude", "aria-describedby") == "latitude-hint"
    assert page.get_attribute("#place_name", "aria-invalid") == "true"
    assert page.evaluate("document.activeElement.id") == "place_name"  # to correct it
    visit.assert_clean(expected_statuses={400, 404})


def test_a_marked_field_stands_out_in_forced_colours_too(visit):
    # Windows high contrast paints every edge in its one text colour and drops shadows: the red edge and its
    # shadow were all that marked the field, which then looked like every other.
    page = visit.page
    page.emulate_media(forced_colors="active")
    page.goto(visit.base_url + "/?" + urlencode({**KASHGAR_SHARE, "latitude": "95"}))
    page.locator("#problem").wait_for(state="visible")
    assert page.get_attribute("#latitude", "aria-invalid") == "true"
    edges = "(field) => ['borderTopWidth', 'borderTopColor', 'boxShadow'].map((name) => getComputedStyle(field)[name])"
    marked, unmarked = page.eval_on_selector("#latitude", edges), page.eval_on_selector("#longitude", edges)
    assert marked[1] == unmarked[1] and marked[2] == unmarked[2] == "none"  # what forced colours leave alike
    assert float(marked[0].removesuffix("px")) >= 2 * float(unmarked[0].removesuffix("px"))
    # Its box keeps its size: the thicker edge takes its room from the padding.
    boxes = [page.locator(field).bounding_box() for field in ("#latitude", "#longitude")]
    assert boxes[0]["height"] == boxes[1]["height"]
    visit.assert_clean(expected_statuses={400})


def test_a_refused_question_stays_in_the_address_bar_for_reload_and_back(visit):
    # A question the service refused (an unknown place) or answered with candidates (409) is in the address
    # bar, as an answer's share link is: reload asks it again; back returns to the answer before it.
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(KASHGAR_SHARE)}")
    page.locator("#result").wait_for(state="visible")
    answer_url = page.url
    for place_name, shown_after in [("Qqzzxv Nowhere", "#problem"), ("Springfield", "#candidates")]:
        page.get_by_label("By place name").check()
        page.get_by_label("Place name", exact=True).fill(place_name)
        page.get_by_role("button", name="Show sundial time").click()
        page.locator(shown_after).wait_for(state="visible")
        assert parse_qs(urlsplit(page.url).query) == {"place_name": [place_name], "date": ["2026-07-14"],
                                                      "local_time": ["14:30:00"]}
        shown_before = shown(page, shown_after)
        page.reload()
        page.locator(shown_after).wait_for(state="visible")
        assert shown(page, shown_after) == shown_before
        assert page.input_value("#place_name") == place_name and page.locator("#result").is_hidden()
    page.go_back()
    page.locator("#problem").wait_for(state="visible")
    assert "Qqzzxv Nowhere" in shown(page, "#problem")
    page.go_back()
    page.locator("#result").wait_for(state="visible")
    assert page.url == answer_url and page.locator("#problem").is_hidden()
    visit.assert_clean(expected_statuses={404, 409})


def test_the_page_title_names_what_the_page_shows_for_the_history_and_a_screen_reader(visit):
    # A screen reader reads the title on going back or forward, and the history lists its entries by their titles:
    # every answer, refusal and list of candidates was "Sundial time · solarserv", as the empty page is.
    page = paris_by_coordinates(visit)
    assert page.title() == "Sundial time · solarserv"
    page.get_by_label("Date").fill("2026-07-14")
    page.get_by_label("Clock time").fill("14:30:00")
    page.get_by_role("button", name="Show sundial time").click()
    page.locator("#result").wait_for(state="visible")
    answered = f"{shown(page, '#true-solar-time')} at {shown(page, '#result-heading')} · Sundial time · solarserv"
    assert page.title() == answered
    asked = {"Qqzzxv Nowhere": "Error: Sundial time · solarserv",
             "Springfield": "Which place did you mean? · Sundial time · solarserv"}
    page.get_by_label("By place name").check()
    for place_name, title in asked.items():
        page.get_by_label("Place name", exact=True).fill(place_name)
        page.get_by_role("button", name="Show sundial time").click()
        page.wait_for_function("(title) => document.title === title", arg=title)
    page.go_back()
    page.wait_for_function("(title) => document.title === title", arg=asked["Qqzzxv Nowhere"])
    page.go_back()
    page.wait_for_function("(title) => document.title === title", arg=answered)
    page.go_back()
    page.locator("#result").wait_for(state="hidden")
    assert page.title() == "Sundial time · solarserv"
    visit.assert_clean(expected_statuses={404, 409})


@pytest.mark.parametrize(("latitude", "longitude", "missing"), [("10", "", "longitude"), ("", "10", "latitude"),
                                                                 ("", "", "latitude")])
def test_a_coordinate_left_out_is_the_field_marked_and_focused(visit, latitude, longitude, missing):
    # The messages name both coordinates, or place_name first ("Give either place_name, or latitude and
    # longitude."), a field hidden in this mode: the one to correct is the one left empty.
    page = visit.page
    page.goto(visit.base_url + "/")
    page.get_by_label("By coordinates").check()
    page.get_by_label("Latitude").fill(latitude)
    page.get_by_label("Longitude").fill(longitude)
    page.get_by_label("Date").fill("2026-07-14")
    page.get_by_label("Clock time").fill("14:30:00")
    page.get_by_label("Clock time").press("Enter")
    page.locator("#problem").wait_for(state="visible")
    status, refusal = api_get(visit.base_url, {"date": "2026-07-14", "local_time": "14:30:00",
                                               **({"latitude": latitude} if latitude else {}),
                                               **({"longitude": longitude} if longitude else {})})
    assert status == 400 and shown(page, "#problem") == refusal["error"]["message"]
    invalid = page.evaluate("[...document.querySelectorAll('[aria-invalid=true]')].map((field) => field.id)")
    assert invalid == [missing]
    assert page.get_attribute(f"#{missing}", "aria-describedby") == f"{missing}-hint problem"
    assert page.evaluate("document.activeElement.id") == missing
    visit.assert_clean(expected_statuses={400})


def test_a_date_or_time_the_browser_cannot_read_is_refused_not_taken_for_now(visit):
    # A date input with its year left out has the value "", which the page otherwise reads as "today".
    page = paris_by_coordinates(visit)
    page.get_by_label("Date").click()
    page.keyboard.type("0714")  # month and day, no year
    page.get_by_label("Clock time").fill("14:30")
    asked = len(visit.requests)
    page.get_by_role("button", name="Show sundial time").click()
    page.locator("#problem").wait_for(state="visible")
    assert shown(page, "#problem").startswith("The date is incomplete or not a real date")
    assert page.get_attribute("#date", "aria-invalid") == "true"
    assert page.evaluate("document.activeElement.id") == "date"
    assert len(visit.requests) == asked and page.locator("#result").is_hidden()  # nothing was asked
    page.get_by_label("Date").fill("2026-07-14")
    page.get_by_role("button", name="Show sundial time").click()
    page.locator("#result").wait_for(state="visible")
    assert page.locator("#problem").is_hidden() and page.get_attribute("#date", "aria-invalid") is None
    visit.assert_clean()


def test_a_coordinate_with_a_decimal_comma_is_refused_in_the_page_saying_to_write_a_point(visit):
    # "2,35" is how German, French and many other languages write a decimal. The API's refusal ("must be a
    # number of decimal degrees, got '2,35'") does not say that the comma is what is wrong.
    page = paris_by_coordinates(visit)
    page.get_by_label("Longitude").fill("2,35")
    page.get_by_label("Date").fill("2026-07-14")
    page.get_by_label("Clock time").fill("14:30")
    asked = len(visit.requests)
    page.get_by_role("button", name="Show sundial time").click()
    page.locator("#problem").wait_for(state="visible")
    assert shown(page, "#problem") == "Write the longitude with a decimal point: 2.35, not 2,35."
    assert page.get_attribute("#longitude", "aria-invalid") == "true"
    assert page.evaluate("document.activeElement.id") == "longitude"
    assert len(visit.requests) == asked  # nothing was asked
    page.get_by_label("Longitude").fill("2.35")
    page.get_by_role("button", name="Show sundial time").click()
    page.locator("#result").wait_for(state="visible")
    assert page.locator("#problem").is_hidden()
    visit.assert_clean()


@pytest.fixture
def limited_server(base_settings) -> Iterator[str]:
    """A second real app allowing 2 anonymous requests a minute, counted on a clock that stands still (so a
    minute turning mid-test cannot reset the count), served from a thread of its own like live_server.
    Built inside that thread: the key store's SQLite connection belongs to the thread that opens it."""
    settings = dataclasses.replace(base_settings, anon_rpm=2)

    def services() -> Services:
        return Services(settings=settings, pipeline=Pipeline.build(settings),
                        limiter=RateLimiter(clock=UnusedMinuteClock()))

    with serving_in_thread(settings, services) as url:
        yield url


@pytest.fixture
def limited_visit(browser, limited_server) -> Iterator[Visit]:
    with visiting(browser, limited_server) as visit:
        yield visit


def test_rate_limit_refusals_are_shown_in_the_page(limited_visit):
    # 2 requests a minute: the share link's answer and the chart's curve; the next question is refused.
    visit = limited_visit
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode(KASHGAR_SHARE)}")
    page.locator("#eot-chart polyline.curve").wait_for()
    page.get_by_label("Clock time").fill("15:00:00")
    page.get_by_label("Clock time").press("Enter")
    page.locator("#problem").wait_for(state="visible")
    assert re.fullmatch(r"Rate limit of 2 requests per minute exceeded; retry in \d+ seconds\.",
                        shown(page, "#problem"))
    visit.assert_clean(expected_statuses={429})


def test_a_script_on_another_site_can_call_the_api_with_a_key_and_read_its_limits(visit):
    # A document at 127.0.0.1 and the API asked at localhost are two origins: the browser sends a preflight
    # (a JSON body, an X-API-Key header) and lets the script read only the headers the API exposes. The
    # document is /healthz: the calculator page's own policy lets it fetch from its origin alone.
    page = visit.page
    page.goto(f"{visit.base_url}/healthz")
    api = visit.base_url.replace("127.0.0.1", "localhost") + "/api/v1/solar-time"
    status, remaining, key_status, solar_time = page.evaluate("""async ([url, fields]) => {
        const reply = await fetch(url, {method: "POST", body: JSON.stringify(fields),
            headers: {"Content-Type": "application/json", "X-API-Key": "tst_" + "x".repeat(43)}});
        return [reply.status, reply.headers.get("X-RateLimit-Remaining"), reply.headers.get("X-API-Key-Status"),
                (await reply.json()).true_solar_time];
    }""", [api, {**KASHGAR_SHARE, "latitude": 39.47, "longitude": 75.99}])
    assert status == 200 and int(remaining) >= 0 and key_status == "invalid"  # enforcement off: counted per IP
    assert re.fullmatch(r"\d{2}:\d{2}:\d{2}", solar_time)
    assert visit.page_errors == []


def test_a_refusal_after_a_pick_takes_the_focus_from_the_hidden_picker(limited_visit):
    # 2 requests a minute: the 409 of a share link and of its reload; the candidate picked is refused (429),
    # a refusal about no field, while the button the keyboard was on is hidden with its picker.
    visit = limited_visit
    page = visit.page
    page.goto(f"{visit.base_url}/?{urlencode({'place_name': 'Springfield', 'date': '2026-07-04'})}")
    page.locator("#candidates").wait_for(state="visible")
    page.reload()
    page.locator("#candidates").wait_for(state="visible")
    assert page.evaluate("document.activeElement.id") == "candidates-heading"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.locator("#problem").wait_for(state="visible")
    assert shown(page, "#problem").startswith("Rate limit of 2 requests per minute exceeded")
    assert page.locator("#candidates").is_hidden()
    assert page.evaluate("document.activeElement.id") == "problem"  # it was lost, on the body
    visit.assert_clean(expected_statuses={409, 429})
