"""The Tornado application: services built once, routes joined from each handler module."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import tornado.httputil
import tornado.web

import solarserv
from solarserv.keys import SERVER_WAIT_FOR_WRITER_SECONDS, KeyStore
from solarserv.narration import Narrator
from solarserv.pipeline import Pipeline
from solarserv.ratelimit import RateLimiter
from solarserv.web import api, console, page
from solarserv.web.base import BaseHandler, NotFoundHandler
from solarserv.web.body import BodyReader
from solarserv.web.console import ConsoleSecrets
from solarserv.web.logs import log_request

if TYPE_CHECKING:  # the offline geocoder's, imported only when it is chosen (geo.build_geocoder)
    from solarserv.geo.discs import PlaceDiscs

WEB_DIR = Path(__file__).parent
# A request-target in absolute-form: its scheme and authority, before the path.
_ABSOLUTE_FORM = re.compile(r"https?://[^/]*", re.IGNORECASE)


class Application(tornado.web.Application):
    def find_handler(self, request: tornado.httputil.HTTPServerRequest, **kwargs: Any) -> Any:
        """A request-target in absolute-form (``http://host/path?query``, what a client sends to a proxy) is routed
        by its path, as RFC 9112 §3.2.2 asks of every server: Tornado took the whole of it for the path."""
        absolute = _ABSOLUTE_FORM.match(request.path)
        if absolute:
            request.path = request.path[absolute.end():] or "/"
        return super().find_handler(request, **kwargs)

    def get_handler_delegate(self, request: tornado.httputil.HTTPServerRequest, target_class: type,
                             target_kwargs: dict[str, Any] | None = None, path_args: list[bytes] | None = None,
                             path_kwargs: dict[str, bytes] | None = None) -> BodyReader:
        """Every request's body is read by a BodyReader, which starts the handler (solarserv.web.body)."""
        return BodyReader(super().get_handler_delegate(request, target_class, target_kwargs, path_args, path_kwargs),
                          request, reads_form=target_class.reads_form)


class StaticFiles(tornado.web.StaticFileHandler, BaseHandler):
    """/static/: Tornado's file serving, with this service's headers (nosniff, no Server) and error answers."""

    # The page's policy and framing: a 404 or 405 here is an HTML page too (BaseHandler.write_error). Not its
    # Cache-Control: Tornado gives a file whose URL names its version a year's.
    security_headers = {name: value for name, value in page.SECURITY_HEADERS.items() if name != "Cache-Control"}

    def validate_absolute_path(self, root: str, absolute_path: str) -> str | None:
        try:
            return super().validate_absolute_path(root, absolute_path)
        except ValueError:  # a path no file can have (an embedded NUL byte): os.path.realpath refuses it
            raise tornado.web.HTTPError(404) from None


@dataclass
class Services:
    """Everything handlers use, built once per application (never per request)."""

    settings: Any
    pipeline: Pipeline
    # Built from the settings when not given (tests pass their own).
    keys: KeyStore | None = None
    limiter: RateLimiter | None = None
    console: ConsoleSecrets | None = None

    def __post_init__(self) -> None:
        if self.keys is None:
            # Waits for another process's write lock stall the event loop: a server waits only briefly.
            self.keys = KeyStore.open(Path(self.settings.data_dir), wait_for_writer=SERVER_WAIT_FOR_WRITER_SECONDS)
        if self.limiter is None:
            self.limiter = RateLimiter.from_settings(self.settings)
        if self.console is None:
            self.console = ConsoleSecrets.load(self.settings)

    @classmethod
    def build(cls, settings: Any, console: ConsoleSecrets | None = None,
              towns: PlaceDiscs | None = None, narrator: Narrator | None = None) -> Services:
        """``console``: secrets made once before `serve --processes` forks, so one login link serves all;
        ``towns``: the gazetteer's places read before it too, so the workers share them; ``narrator``: the
        plugins loaded and templates compiled before it (serving.serve)."""
        return cls(settings=settings, pipeline=Pipeline.build(settings, towns, narrator), console=console)

    async def health(self) -> dict[str, Any]:
        await self.limiter.check_redis()
        return {
            # Degraded: Redis is configured but unreachable or refusing, so each process counts on its own.
            "status": "degraded" if self.limiter.degraded else "ok",
            "version": solarserv.__version__,
            "ephemeris": self.pipeline.engine.name,
            "geocoder": self.pipeline.geocoder.name,
            # False while the offline gazetteer builds its index on a first start (place names then wait),
            # and for good if that build, reading its places into memory or reading the index failed (see the
            # log); an online geocoder's is False while its provider's rate-limit refusal holds, and from a failed
            # call to the provider until one succeeds.
            "geocoder_ready": self.pipeline.geocoder.ready,
            "api_key_required": self.settings.api_key_required,
            "rate_limit_counters": self.limiter.health(),
            # Tells apart the workers of `solarserv serve --processes N`, which share one port.
            "process_id": os.getpid(),
        }


def make_app(settings: Any, services: Services | None = None) -> tornado.web.Application:
    services = services or Services.build(settings)
    console.check_declared_access(console.routes)
    return Application(
        [*api.routes, *console.routes, *page.routes],
        default_handler_class=NotFoundHandler,
        services=services,
        cookie_secret=services.console.cookie_secret,
        # For the console's forms; ApiHandler exempts the API, whose JSON clients have no XSRF token.
        xsrf_cookies=True,
        xsrf_cookie_kwargs={"httponly": True, "samesite": "Strict"},
        template_path=str(WEB_DIR / "templates"),
        static_path=str(WEB_DIR / "static"),
        static_handler_class=StaticFiles,
        log_function=log_request,
    )
