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
from browsers import running_chromium
from playwright.sync_api import Page
from servers import serving_in_thread

from solarserv.keys import KeyStore
from solarserv.ratelimit import RateLimiter
from solarserv.web.app import Services

pytestmark = pytest.mark.browser

ADMIN_TOKEN = "test-admin-token-0123456789"


@pytest.fixture(scope="module")
def browser():
    with running_chromium() as browser:
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
    keys.create("Observatory of the University of Applied Solar Horology", "free")
    with console_page(browser, console_url, width=320) as page:
        assert widths(page, "html") == (320, 320)
        # The table does not fit, and scrolls within its own box: every column stays reachable.
        table_width, shown_width = widths(page, ".table-wrap")
        assert table_width > shown_width
