"""Debian's headless Chromium for the tests that drive a real browser (scripts/test installs it)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def launch_chromium(playwright: Playwright, extra_args: Sequence[str] = ()) -> Browser:
    """Headless Chromium, with ``extra_args`` after CHROMIUM_ARGS; without it the test fails saying how to install
    it, or is skipped when SOLARSERV_SKIP_BROWSER=1."""
    if not CHROMIUM.exists():
        if os.environ.get("SOLARSERV_SKIP_BROWSER") == "1":
            pytest.skip("SOLARSERV_SKIP_BROWSER=1 and no /usr/bin/chromium")
        pytest.fail("The browser tests need Debian's Chromium at /usr/bin/chromium: run `apt-get install "
                    "-y chromium` (scripts/test does when apt-get is usable), or set "
                    "SOLARSERV_SKIP_BROWSER=1 to skip them.")
    return playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=[*CHROMIUM_ARGS, *extra_args])


@contextlib.contextmanager
def running_chromium(extra_args: Sequence[str] = ()) -> Iterator[Browser]:
    """Headless Chromium for a test module's tests (launch_chromium). For a module, not the session: Playwright's
    sync API keeps an asyncio loop running in this thread while it is open, and the Tornado tests in later
    modules need to run their own."""
    with sync_playwright() as playwright:
        browser = launch_chromium(playwright, extra_args)
        yield browser
        browser.close()


def accessible(page: Page, selector: str) -> tuple[str, str, str]:
    """The role, name and description a screen reader is given for the element ``selector`` finds, as Chromium
    computes them ("" for a name or description it has none of)."""
    cdp = page.context.new_cdp_session(page)
    root = cdp.send("DOM.getDocument")["root"]["nodeId"]
    element = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    node = cdp.send("Accessibility.getPartialAXTree", {"nodeId": element, "fetchRelatives": False})["nodes"][0]
    return tuple(node.get(part, {}).get("value", "") for part in ("role", "name", "description"))
