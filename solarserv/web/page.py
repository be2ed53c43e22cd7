"""The public calculator page at ``/``.

The page is one static HTML document plus its own script and style sheet from /static/. Everything it
shows comes from the public API (``fetch`` to /api/v1/...), exactly as any other client would get it:
the handler below only serves the document, with a content security policy that allows nothing but this
site's own files (no inline script, no third-party host). A share link (``/?date=…&local_time=…&latitude=…
&longitude=…``) is read by the script, which asks the API for that result.
"""

from __future__ import annotations

from solarserv.web.base import BaseHandler

SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                "connect-src 'self'; object-src 'none'; form-action 'self'; "
                                "frame-ancestors 'none'; base-uri 'none'"),
    "X-Frame-Options": "DENY",
    # The document is the same for everyone; revalidate so a new release's asset hashes arrive at once.
    "Cache-Control": "no-cache",
}


class CalculatorPageHandler(BaseHandler):
    """Serves page.html. Its query string (the share link) is for the page's script, not for the server."""

    security_headers = SECURITY_HEADERS

    def get(self) -> None:
        self.render("page.html")


routes = [
    (r"/", CalculatorPageHandler),
]
