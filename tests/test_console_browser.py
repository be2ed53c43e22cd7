"""The operator console in a real headless Chromium (Debian's /usr/bin/chromium driven by Playwright, as in
tests/test_page_browser.py): what small screens, keyboards and screen readers depend on, read from the page as
rendered — widths, focus, the attributes that tie an error to its field.

One browser for the module, a fresh context per test, a server per test on the test's own data dir.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from urllib.parse import urlencode

import pytest
from browsers import accessible, running_chromium
from playwright.sync_api import Page
from servers import serving_in_thread

from solarserv.keys import TIERS, KeyStore, Tier
from solarserv.ratelimit import RateLimiter
from solarserv.web.app import Services

pytestmark = pytest.mark.browser

ADMIN_TOKEN = "test-admin-token-0123456789"
# A name of another site that this browser resolves to loopback, as DNS rebinding makes an attacker's name do.
REBOUND_NAME = "evil.example"


@pytest.fixture(scope="module")
def browser():
    with running_chromium([f"--host-resolver-rules=MAP {REBOUND_NAME} 127.0.0.1"]) as browser:
        yield browser


@pytest.fixture
def settings(base_settings, tmp_path):
    return dataclasses.replace(base_settings, data_dir=tmp_path, admin_token=ADMIN_TOKEN)


@pytest.fixture
def keys(settings) -> Iterator[KeyStore]:
    """The test's key store, as the CLI or another process opens it beside the server."""
    store = KeyStore.open(settings.data_dir)
    yield store
    store.close()


@pytest.fixture
def console_url(settings, services) -> Iterator[str]:
    """The real app on the test's data dir, served from a thread of its own (servers.py)."""
    with serving_in_thread(settings, lambda: Services(settings=settings, pipeline=services.pipeline,
                                                      limiter=RateLimiter())) as url:
        yield url


@contextlib.contextmanager
def console_page(browser, console_url: str, width: int = 1100, logged_in: bool = True) -> Iterator[Page]:
    """The console in a browser context of its own: the key page reached by the login link, or the login page.
    Its script raises nothing."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(f"{console_url}/console/login" + (f"?{urlencode({'token': ADMIN_TOKEN})}" if logged_in else ""))
        yield page
        assert errors == []
    finally:
        context.close()


def widths(page: Page, selector: str) -> tuple[int, int]:
    """The element's content width and the width it shows: they differ when it scrolls sideways."""
    return tuple(page.eval_on_selector(selector, "(element) => [element.scrollWidth, element.clientWidth]"))


def test_the_key_list_fits_a_320_px_screen_only_the_table_scrolling(browser, console_url, keys):
    # 320 CSS px is a 1280 px window at 400 % zoom (WCAG 1.4.10); a long label, as at 200 % zoom.
    keys.create("Observatory of the University of Applied Solar Horology", "free", by="a test")
    with console_page(browser, console_url, width=320) as page:
        assert widths(page, "html") == (320, 320)
        # The table does not fit, and scrolls within its own box: every column stays reachable.
        table_width, shown_width = widths(page, ".table-wrap")
        assert table_width > shown_width


def test_a_screen_reader_is_told_the_key_lists_name_and_which_keys_it_holds(browser, console_url, keys):
    # A table without a name or description was announced as a bare "table, 8 columns".
    keys.create("Acme", "free", by="a test")
    with console_page(browser, console_url) as page:
        assert accessible(page, "table") == ("table", "All keys", "Keys 1–1 of 1, newest first.")
        page.get_by_label("Find keys by label or preview").fill("Ac")
        page.get_by_role("button", name="Find").click()
        page.wait_for_url("**/console?q=Ac")
        assert accessible(page, "table")[2] == "Keys 1–1 of 1, newest first (labels or previews holding “Ac”)."


def test_each_keys_row_is_headed_by_its_label_for_a_screen_reader(browser, console_url, keys):
    # Moving along a column, a screen reader names the row's header with each cell: with none, "Status, inactive"
    # said nothing of whose key it was.
    keys.create("Acme", "free", by="a test")
    with console_page(browser, console_url) as page:
        count = page.locator("tbody tr > *").count()
        cells = [accessible(page, f"tbody tr > :nth-child({number})")[:2] for number in range(1, count + 1)]
        assert cells[0] == ("rowheader", "Acme") and {role for role, _ in cells[1:]} == {"cell"}
        # Shown as the other cells are, not as the column headers.
        looks = "(cell) => ['fontSize', 'fontWeight', 'color'].map((name) => getComputedStyle(cell)[name])"
        assert page.locator("tbody tr > :first-child").evaluate(looks) == page.locator(
            "tbody tr > :nth-child(3)").evaluate(looks)


def test_the_longest_labels_leave_every_column_in_view_on_a_desktop_screen(browser, console_url, keys):
    # A label of 100 characters without a space pushed the status and the buttons out of the table's view, on
    # every row: the operator scrolled sideways to deactivate any key.
    keys.create("Wolfeschlegelsteinhausenbergerdorff" * 2 + "Wolfeschlegelsteinhausenberger", "free", by="a test")
    keys.create("Observatory " * 8, "free", by="a test")
    with console_page(browser, console_url) as page:
        table_width, shown_width = widths(page, ".table-wrap")
        assert table_width == shown_width


def test_the_rpm_field_is_enabled_for_the_tiers_that_take_one(browser, console_url, monkeypatch):
    """console.js: the field follows the data the page carries, for any tier table."""
    monkeypatch.setitem(TIERS, "team", Tier("team", 20, 40))
    with console_page(browser, console_url) as page:
        field = page.locator("#rpm")
        seen = {}
        for tier in ("pro", "free", "team", "builder"):
            page.select_option("#tier", tier)
            seen[tier] = (field.is_enabled(), field.get_attribute("min"), field.get_attribute("max"))
    assert seen["pro"] == (True, "120", "300") and seen["team"] == (True, "20", "40")
    assert not seen["free"][0] and not seen["builder"][0]


def focused_id(page: Page) -> str:
    return page.evaluate("document.activeElement.id")


def test_a_refused_key_is_told_at_the_field_it_is_about_which_takes_the_cursor(browser, console_url, keys):
    with console_page(browser, console_url) as page:
        page.get_by_label("Label", exact=True).fill("Observatory")
        page.get_by_label("Tier").select_option("pro")
        page.get_by_role("button", name="Create key").click()
        error = page.get_by_role("alert")
        assert error.inner_text() == "A pro key needs its rpm chosen, 120 to 300."
        assert page.title() == "Error: API keys · solarserv console"
        assert focused_id(page) == "rpm"
        rpm = page.locator("#rpm")
        assert rpm.get_attribute("aria-invalid") == "true"
        assert error.get_attribute("id") in rpm.get_attribute("aria-describedby").split()
        assert page.locator("[aria-invalid]").count() == 1
        # Asked again with the rpm but a blank label (which the browser lets through): the label is marked.
        page.get_by_label("Label", exact=True).fill("   ")
        page.get_by_label("RPM").fill("200")
        page.get_by_role("button", name="Create key").click()
        page.get_by_text("A key needs a label saying whose it is.").wait_for()
        assert focused_id(page) == "label" and page.locator("[aria-invalid]").count() == 1
    assert keys.all() == []


def focused_text(page: Page) -> str:
    return page.evaluate("document.activeElement.textContent").strip()


def test_what_a_click_did_takes_the_cursor_on_the_page_it_returns_to(browser, console_url, keys):
    # Each form answers with a redirect to a new page, where a status line is not announced (it is there from the
    # start) and the cursor was at the top: a screen reader said only "API keys", not whether the click worked.
    with console_page(browser, console_url) as page:
        page.get_by_label("Label", exact=True).fill("Observatory")
        page.get_by_role("button", name="Create key").click()
        page.get_by_role("heading", name="Key created for “Observatory”").wait_for()
        assert focused_text(page) == "Key created for “Observatory”"
        preview = keys.all()[0].preview
        page.get_by_role("button", name=f"Deactivate key Observatory ({preview})").click()
        page.get_by_role("button", name=f"Activate key Observatory ({preview})").wait_for()
        assert focused_text(page) == f"Key 1 ({preview}, “Observatory”) is now inactive."
        assert page.evaluate("document.activeElement.getAttribute('role')") == "status"
        page.reload()  # nothing to tell, and the cursor where a page starts it
        assert focused_id(page) == ""
        page.get_by_role("button", name="Log out").click()  # the login page it returns to tells it before the field
        page.wait_for_url("**/console/login?*")
        assert focused_text(page) == "You are logged out."


def test_a_wrong_admin_token_is_told_at_the_token_field_which_keeps_the_cursor(browser, console_url):
    with console_page(browser, console_url, logged_in=False) as page:
        assert page.title() == "Log in · solarserv console" and focused_id(page) == "token"
        assert page.get_attribute("#token", "aria-invalid") is None
        page.get_by_label("Admin token").fill(ADMIN_TOKEN + "x")
        page.get_by_label("Admin token").press("Enter")
        error = page.get_by_role("alert")
        assert error.inner_text() == "That is not the admin token."
        assert page.title() == "Error: Log in · solarserv console"
        assert focused_id(page) == "token"
        assert page.get_attribute("#token", "aria-invalid") == "true"
        assert page.get_attribute("#token", "aria-describedby").split() == ["token-hint", error.get_attribute("id")]


def contrast(one: str, other: str) -> float:
    """WCAG's contrast ratio of two computed colours, "rgb(r, g, b)"."""

    def luminance(colour: str) -> float:
        channels = [int(part) / 255 for part in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3]]
        linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    lighter, darker = sorted((luminance(one), luminance(other)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_the_edges_of_the_form_fields_stand_out_from_the_card(browser, console_url):
    with console_page(browser, console_url) as page:
        card = page.eval_on_selector(".card", "(card) => getComputedStyle(card).backgroundColor")
        for field in ("#label", "#tier", "#rpm"):
            edge = page.eval_on_selector(field, "(field) => getComputedStyle(field).borderTopColor")
            assert contrast(edge, card) >= 3, field  # WCAG 1.4.11, non-text contrast


def test_the_create_button_keeps_its_text_contrast_when_hovered(browser, console_url):
    with console_page(browser, console_url) as page:
        button = page.get_by_role("button", name="Create key")
        colours = "(button) => ['color', 'backgroundColor', 'filter'].map((name) => getComputedStyle(button)[name])"
        text, background, effect = button.evaluate(colours)
        button.hover()
        hovered_text, hovered_background, hovered_effect = button.evaluate(colours)
    # No filter over the colours (a brightness filter lightened the hovered button to 4.2:1): they are as shown.
    assert effect == hovered_effect == "none"
    assert contrast(text, background) >= 4.5 and contrast(hovered_text, hovered_background) >= 4.5  # WCAG 1.4.3
    assert hovered_background != background  # hovering still shows


def test_a_create_form_sent_twice_by_a_double_click_creates_one_key(browser, console_url, keys):
    with console_page(browser, console_url) as page:
        page.get_by_label("Label", exact=True).fill("Observatory")
        sent = []
        page.on("request", lambda request: sent.append(request.method))
        # The second click a millisecond after the first, before the answer: Playwright's own double click comes
        # too soon to tell (Chromium sends only the last of two submissions in one task).
        page.evaluate("""() => {
            const button = document.querySelector("form.create button[type=submit]");
            button.click();
            setTimeout(() => button.click(), 1);
        }""")
        page.get_by_role("heading", name="Key created for “Observatory”").wait_for()
        shown = page.locator("#new-key").input_value()
    assert sent.count("POST") == 1
    assert [key.label for key in keys.all()] == ["Observatory"] and keys.active_key(shown) is not None


def test_a_status_form_sent_twice_by_a_double_click_is_sent_once(browser, console_url, keys):
    issued = keys.create("Acme", "free", by="a test")
    with console_page(browser, console_url) as page:
        sent = []
        page.on("request", lambda request: sent.append(request.method))
        # As for the create form: the second click a millisecond after the first, before the answer.
        page.evaluate("""(name) => {
            const button = document.querySelector(`button[aria-label="${name}"]`);
            button.click();
            setTimeout(() => button.click(), 1);
        }""", f"Deactivate key Acme ({issued.record.preview})")
        page.get_by_role("button", name=f"Activate key Acme ({issued.record.preview})").wait_for()
        told = page.get_by_role("status").inner_text()
    assert sent.count("POST") == 1
    assert told == f"Key {issued.record.id} ({issued.record.preview}, “Acme”) is now inactive."


def test_two_operators_at_once_each_told_what_their_click_did(browser, console_url, keys):
    issued = keys.create("Acme", "free", by="a test")
    named = f"Key {issued.record.id} ({issued.record.preview}, “Acme”)"
    deactivate = f"Deactivate key Acme ({issued.record.preview})"
    with console_page(browser, console_url) as first, console_page(browser, console_url) as second:
        second.get_by_role("button", name=deactivate).click()
        assert second.get_by_role("status").inner_text() == f"{named} is now inactive."
        first.get_by_role("button", name=deactivate).click()  # its page still shows the key active
        assert first.get_by_role("status").inner_text() == (
            f"{named} was already inactive: its status changed after this page was shown (in another window, by "
            "another operator or the CLI).")
        first.reload()
        assert first.get_by_role("status").count() == 0
    assert [key.status for key in keys.all()] == ["inactive"]


def test_a_page_of_another_site_whose_name_is_rebound_to_loopback_gets_no_session(browser, console_url, keys):
    # DNS rebinding: CONSOLE=local lets the requests of a page on evil.example in (they come from loopback), and they
    # are that page's own origin, whose answers it reads. The session cookie belongs to 127.0.0.1.
    issued = keys.create("Acme", "free", by="a test")
    rebound = console_url.replace("127.0.0.1", REBOUND_NAME)
    with console_page(browser, console_url) as page:  # the operator is logged in, in this browser
        page.goto(f"{rebound}/console")
        assert page.url.startswith(f"{rebound}/console/login?") and "Acme" not in page.content()
        # The attacker's script, on a page of that origin without the console's content security policy, with the
        # login form's XSRF token read as its own: the change is refused for want of a session.
        page.goto(f"{rebound}/healthz")
        refused = page.evaluate("""async (action) => {
            const login = await (await fetch("/console/login")).text();
            const token = login.match(/name="_xsrf" value="([^"]+)"/)[1];
            const reply = await fetch(action, {method: "POST", body: new URLSearchParams({_xsrf: token})});
            return reply.status;
        }""", f"/console/keys/{issued.record.id}/deactivate")
        assert refused == 403
    assert [key.status for key in keys.all()] == ["active"]


def test_a_form_of_another_site_posted_to_the_logout_leaves_the_operator_logged_in(browser, console_url):
    # The session cookie is SameSite=Lax, so another site's form posted here arrives without it: no session, no
    # XSRF token checked. Its answer cleared the cookie all the same, and the browser dropped it: logged out.
    with console_page(browser, console_url) as page:
        page.goto(f"{console_url.replace('127.0.0.1', REBOUND_NAME)}/healthz")
        with page.expect_navigation():
            page.evaluate("""(action) => {
                const form = document.createElement("form");
                form.method = "post";
                form.action = action;
                document.body.append(form);
                form.submit();
            }""", f"{console_url}/console/logout")
        page.goto(f"{console_url}/console")
        assert page.url == f"{console_url}/console"
