"""The operator console at /console: log in with the admin token; list, create, deactivate and reactivate API keys.

How it is protected (the spec leaves it open):
- The admin token is ADMIN_TOKEN, or one generated at each start whose login link the server prints (as
  Jupyter does). The token travels in a URL only in that link, which sets the session and redirects at
  once; no log line shows the query string of a console page, or any holding a ``token`` parameter.
  Tokens are compared in constant time.
- The session is a signed cookie (HttpOnly, SameSite=Lax, Secure over HTTPS) naming a session that the
  key store records for SESSION_DAYS. Logging out deletes that record, so a copy of the cookie stops
  working too, in every process on the data dir. The signing secret is generated once and kept in
  DATA_DIR/cookie_secret. The cookie also signs a fingerprint of the admin token keyed with that secret,
  so changing ADMIN_TOKEN ends every session, and the cookie gives nothing to test guesses of it against.
- Every form carries an XSRF token bound to the session (``ConsoleSecrets.form_token``); login attempts
  are limited per client IP; every page is sent with no-store, frame-deny and a content security policy
  that allows only this site's own files.
- Every handler declares ``access = Access.ADMIN`` or ``Access.PUBLIC``; ``check_declared_access``
  refuses to build an application where one does not.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import tornado.httputil
import tornado.web

from solarserv.config import SettingsError
from solarserv.keys import (
    ACTIVE,
    INACTIVE,
    LABEL_MAX_LENGTH,
    SESSION_DAYS,
    TIERS,
    FormAlreadySent,
    KeyStoreBusy,
    KeyStoreError,
    KeyStoreUnusable,
    is_whole_key,
)
from solarserv.text import shortened
from solarserv.web.access import BUSY_RETRY_SECONDS, client_ip, counted_address, key_counter
from solarserv.web.base import BaseHandler, client_message
from solarserv.web.logs import CONSOLE_PATH, as_sent, client_shown

log = logging.getLogger("solarserv.web.console")

LOGIN_PATH = "/console/login"
LOGGED_OUT = "logged_out"  # the login page's query parameter after a logout: it says so
SESSION_COOKIE = "solarserv_console"
# A key just created, and what a form did otherwise, go to the page that shows them in these cookies, cleared
# there (ConsoleHandler.pass_to_next_page).
NEW_KEY_COOKIE = "solarserv_new_key"
NOTICE_COOKIE = "solarserv_notice"
NEXT_PAGE_SECONDS = 60
# Each form of a page that creates or changes a key carries an id of its own: the create form creates one key however
# often it is sent, and a status form sent twice is told that its first sending changed the key.
FORM_ID_BYTES = 16
_FORM_ID = re.compile(r"[A-Za-z0-9_-]{22}")  # token_urlsafe(FORM_ID_BYTES)
# A change that changed nothing was asked for by a button showing the other status: the page was stale.
STALE_PAGE = "its status changed after this page was shown (in another window, by another operator or the CLI)"
SENT_TWICE = "this form had already been sent, and its first sending changed it"
LOGIN_ATTEMPTS_PER_MINUTE = 10
_RPM_MAX_DIGITS = 6  # far above any tier's; a longer number is refused before it is converted
KEYS_PER_PAGE = 100
_PAGE_MAX_DIGITS = 6  # a hundred million keys; a longer page number is no page, refused before it is converted

# The format of Tornado's signed cookies that set_signed_cookie writes; ConsoleHandler.get_signed_cookie reads no other.
_SIGNED_COOKIE_VERSION = 2

SECURITY_HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                                "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
}



class Access(enum.Enum):
    ADMIN = "admin"  # needs a console session
    PUBLIC = "public"  # anyone: only the login page


@dataclass(frozen=True)
class ConsoleSecrets:
    admin_token: str
    token_generated: bool  # True: the server prints a login link, since nobody else knows the token
    cookie_secret: str

    @classmethod
    def load(cls, settings: Any) -> ConsoleSecrets:
        token = settings.admin_token or secrets.token_urlsafe(32)
        # A console that is off signs no cookie: its file is not read, so one it would refuse (emptied, another
        # user's) does not stop a server that will not use it.
        secret = (secrets.token_urlsafe(48) if settings.console == "off"
                  else persisted_secret(Path(settings.data_dir) / "cookie_secret"))
        return cls(admin_token=token, token_generated=not settings.admin_token, cookie_secret=secret)

    def session_cookie(self, session_id: str) -> bytes:
        """What the session cookie signs: the session's id and a fingerprint of the admin token, so
        changing ADMIN_TOKEN (after a leak, say) ends every session made with the old one. There is one
        operator role."""
        return f"{session_id}:".encode() + self._token_fingerprint()

    def session_id_in(self, cookie: bytes) -> str | None:
        """The session id a signed session cookie names, if it was made with the current admin token."""
        session_id, _, fingerprint = cookie.partition(b":")
        return session_id.decode() if hmac.compare_digest(fingerprint, self._token_fingerprint()) else None

    def _token_fingerprint(self) -> bytes:
        # Keyed with the cookie secret: a plain hash of the token would let whoever holds any session
        # cookie, even an expired one, test guesses at an operator-chosen token offline.
        return self._keyed_digest(b"admin-token:" + self.admin_token.encode())[:32].encode()

    def form_token(self, session_id: str) -> bytes:
        """The XSRF token of a session's forms. Tornado's own token only has to match the _xsrf cookie, and
        a page on another port of this host can set this host's cookies (cookies do not tell ports apart):
        it could set that cookie and post a form with the same value. It cannot know this one, which only
        the session's own pages show."""
        return self._keyed_digest(b"forms:" + session_id.encode()).encode()

    def _keyed_digest(self, message: bytes) -> str:
        return hmac.new(self.cookie_secret.encode(), message, hashlib.sha256).hexdigest()

    def login_link(self, base_url: str) -> str:
        """The login link printed at start (only for a generated token, which changes at every start)."""
        return f"{base_url.rstrip('/')}{LOGIN_PATH}?{urlencode({'token': self.admin_token})}"


def persisted_secret(path: Path) -> str:
    """The secret in ``path``, created on first use, readable by the owner only.

    Written to a temporary file and linked into place, so processes starting together all read the one
    that won, never a half-written file.
    """
    try:
        return _secret_in(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(secrets.token_urlsafe(48))
    try:
        os.link(draft, path)
    except FileExistsError:
        pass  # another process got there first; use its secret
    finally:
        draft.unlink()
    return _secret_in(path)


def _secret_in(path: Path) -> str:
    remade = "delete it, and a new secret is made at the next start (ending every console session)"
    try:
        secret = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        raise  # persisted_secret makes one
    except OSError as exc:  # one left by another user (`sudo solarserv serve`), mode 0600; a directory
        raise SettingsError(f"{path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:  # bytes written in its place (`head -c 32 /dev/urandom > cookie_secret`)
        raise SettingsError(f"{path} is not text (UTF-8): {remade}") from None
    if not secret:  # Tornado would refuse it at every console page, a 500 each
        raise SettingsError(f"{path} is empty: {remade}")
    return secret


class ConsoleHandler(BaseHandler):
    """HTML pages with XSRF-checked forms. Subclasses must set ``access`` (see check_declared_access)."""

    access: Access
    security_headers = SECURITY_HEADERS

    def get_current_user(self) -> str | None:
        """The id of the session the cookie names, when it is live and made with the current admin token."""
        cookie = self.get_signed_cookie(SESSION_COOKIE, max_age_days=SESSION_DAYS)
        session_id = self.services.console.session_id_in(cookie) if cookie is not None else None
        return session_id if session_id is not None and self.services.keys.session_is_live(session_id) else None

    @property
    def xsrf_token(self) -> bytes:
        """The token the forms carry: bound to the session once there is one (ConsoleSecrets.form_token);
        before it (the login form), Tornado's."""
        if self.current_user:
            return self.services.console.form_token(self.current_user)
        return super().xsrf_token

    def check_form_token(self) -> None:
        """A form posted with a session must carry that session's token; one without a session (logging
        in) is checked as Tornado does, against the _xsrf cookie."""
        if not self.current_user:
            super().check_form_token()
            return
        sent = self.get_argument("_xsrf", None) or ""
        if not hmac.compare_digest(sent.encode(), self.xsrf_token):
            raise tornado.web.HTTPError(403, "the form's XSRF token is not this session's")

    def check_xsrf_cookie(self) -> None:
        # Tornado checks a form before prepare: a console that is off, or not served to this client, says so
        # first (a POST to it was a 403 for its form).
        self._refuse_unless_served()
        super().check_xsrf_cookie()

    def prepare(self) -> None:
        super().prepare()
        self._refuse_unless_served()
        # A method this page does not answer is 405 naming those it does, session or not (BaseHandler
        # .check_xsrf_cookie): Tornado would answer it only after prepare, which refuses one without a session.
        if ("GET" if self.request.method == "HEAD" else self.request.method) not in self.defined_methods():
            raise tornado.web.HTTPError(405)
        if self.access is Access.ADMIN and not self.current_user:
            if self.request.method in ("GET", "HEAD"):
                self.redirect(f"{LOGIN_PATH}?{urlencode({'next': as_sent(self.request.uri)})}")
                return
            raise tornado.web.HTTPError(403, "no console session")

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exception, message = kwargs.get("exc_info", (None, None))[1], client_message(kwargs)
        if isinstance(exception, KeyStoreBusy):
            status_code = 503
            self.set_status(status_code)
            self.set_header("Retry-After", str(BUSY_RETRY_SECONDS))
        elif isinstance(exception, KeyStoreUnusable):  # until the operator restores it: no Retry-After
            status_code = 503
            self.set_status(status_code)
            # Its file and SQLite's reason go to the log alone, as the API's 503 says: the page is also shown to a
            # client with no session (the sessions are in the store), maybe remote.
            message = "The key store cannot be read; the server has logged why for its operator. Nothing was changed."
        self.set_allow_header(status_code)
        # The error page shows no session; looking it up again could meet the busy store again.
        self.current_user = None
        self.render("console_error.html", status=status_code,
                    reason=tornado.httputil.responses.get(status_code, "Error"),
                    remote=status_code == 403 and self._refused_as_remote(),
                    off=self.services.settings.console == "off", message=message)

    def operator(self) -> str:
        """Who changes a key from this page, as the key store's audit line names them: the console, and its client
        as the access log shows it."""
        return f"the console ({client_shown(self)})"

    def _refuse_unless_served(self) -> None:
        """CONSOLE=off: 404 on every console path; CONSOLE=local: 403 to a client elsewhere."""
        if self.services.settings.console == "off":
            raise tornado.web.HTTPError(404)
        if self._refused_as_remote():
            raise tornado.web.HTTPError(403, "CONSOLE=local: the client is not on this machine")

    def _refused_as_remote(self) -> bool:
        """CONSOLE=local and the connection, or with TRUST_PROXY the client the proxy reports, is from elsewhere.
        Both are judged: X-Forwarded-For is whatever the connecting client wrote, so one reaching the server
        without the proxy (bound to every interface) could name 127.0.0.1; behind a proxy on this machine only
        the proxy's own local clients are let through, not everyone it serves."""
        if self.services.settings.console != "local":
            return False
        reached = self.request.connection.stream.socket.getsockname()[0]
        clients = {self.request.remote_ip, client_ip(self.request, self.services.settings.trust_proxy)}
        return not all(_from_this_machine(client, reached) for client in clients)

    def set_cookie(self, name: str, value: str | bytes, *args: Any, **kwargs: Any) -> None:
        """Every console cookie (the session, a new key, a status change, Tornado's _xsrf) is Secure when the browser
        reached us over HTTPS: a browser then never sends it over plain HTTP, where it would cross the network."""
        super().set_cookie(name, value, *args, **{**kwargs, "secure": self._over_https()})

    def get_signed_cookie(self, name: str, value: str | None = None, max_age_days: float = 31) -> bytes | None:
        """Only cookies in the format set_signed_cookie writes (Tornado's version 2). A client can send one in
        version 1, which Tornado still reads and, when its signature fails, logs whole at WARNING: tens of kilobytes
        of log at every request, shortened nowhere."""
        return super().get_signed_cookie(name, value, max_age_days, min_version=_SIGNED_COOKIE_VERSION)

    def pass_to_next_page(self, cookie: str, value: str) -> None:
        """``value`` for the page a form redirects to (Post/Redirect/Get), in a signed, HttpOnly cookie that lives
        a minute: reloading that page shows it no more (taken_once)."""
        self.set_signed_cookie(cookie, value, expires_days=NEXT_PAGE_SECONDS / 86400, path=CONSOLE_PATH,
                               httponly=True, samesite="Strict")

    def taken_once(self, cookie: str) -> str | None:
        """The value pass_to_next_page sent, if any; its cookie is cleared."""
        value = self.get_signed_cookie(cookie, max_age_days=NEXT_PAGE_SECONDS / 86400)
        if value is None:
            return None
        self.clear_cookie(cookie, path=CONSOLE_PATH)
        return value.decode()

    def sent_form_id(self) -> str | None:
        """The id the form sent carries (see FORM_ID_BYTES), if it has one of the shape this console gives."""
        form_id = self.get_body_argument("form_id", "")
        return form_id if _FORM_ID.fullmatch(form_id) else None

    def _over_https(self) -> bool:
        if self.services.settings.trust_proxy:
            # Each proxy on the way appends its own; the last is what reached the nearest one, ours.
            forwarded = self.request.headers.get("X-Forwarded-Proto", self.request.protocol)
            return forwarded.split(",")[-1].strip().lower() == "https"
        return self.request.protocol == "https"


def _from_this_machine(client: str, reached: str) -> bool:
    """Whether ``client`` is this machine: a loopback address, or the very address its connection reached (this
    machine connecting to one of its own addresses; a packet from elsewhere claiming it cannot complete the
    handshake, whose answer goes here)."""
    return ipaddress.ip_address(client).is_loopback or client == reached


class LoginHandler(ConsoleHandler):
    access = Access.PUBLIC

    async def get(self) -> None:
        token = self.get_query_argument("token", None)
        if token is not None:  # the one-time login link
            await self._log_in(token, by_link=True)
        elif self.current_user:
            self.redirect(local_path(self.get_query_argument("next", None)))
        else:
            self._login_page(ended=self._how_the_session_ended())

    async def head(self) -> None:
        """As GET without the body, except for the login link: HEAD is meant to change nothing (link
        checkers and previewers send it), so it never logs in, nor spends a login attempt."""
        if self.get_query_argument("token", None) is not None:
            # No log message: Tornado would log it with the request's URI, which holds the token.
            raise tornado.web.HTTPError(405)
        await self.get()

    async def post(self) -> None:
        await self._log_in(self.get_body_argument("token", ""))

    async def _log_in(self, token: str, by_link: bool = False) -> None:
        attempts = await self.services.limiter.hit(
            f"console-login:{counted_address(client_ip(self.request, self.services.settings.trust_proxy))}",
            LOGIN_ATTEMPTS_PER_MINUTE)
        if not attempts.allowed:
            self.set_header("Retry-After", str(attempts.retry_after))
            self._login_page(f"Too many login attempts from your address; try again in "
                             f"{attempts.retry_after} seconds.", status=429)
        elif not hmac.compare_digest(token.encode(), self.services.console.admin_token.encode()):
            # A line of its own at WARNING, where the 403's access line is INFO, to tell guessing from a mistyped
            # link and to ban by (fail2ban). Bounded by the limit above: a token sent past it is not compared.
            log.warning("Console login refused from %s: not the admin token", client_shown(self))
            # A link kept from an earlier run (a browser's history) holds a token generated for that run alone.
            stale_link = by_link and self.services.console.token_generated
            self._login_page("That is not the admin token." + (
                " A login link works until the server stops: use the one it printed at its latest start."
                if stale_link else ""), status=403, token_refused=True)
        else:
            session_id = self.services.keys.start_session(SESSION_DAYS * 24 * 3600)
            self.set_signed_cookie(SESSION_COOKIE, self.services.console.session_cookie(session_id),
                                   expires_days=SESSION_DAYS, httponly=True, samesite="Lax")
            # Also drops the token from the address bar: the browser lands on a clean URL.
            self.redirect(local_path(self.get_argument("next", None)), status=303)

    def _how_the_session_ended(self) -> str | None:
        """What the login page tells a browser whose session ended: logged out (LogoutHandler), or its cookie came
        back without a live session. That cookie is cleared, so that it is said once."""
        ended_elsewhere = self.get_cookie(SESSION_COOKIE) is not None
        if ended_elsewhere:
            self.clear_cookie(SESSION_COOKIE)
        if self.get_query_argument(LOGGED_OUT, None) is not None:
            return "You are logged out."
        if not ended_elsewhere:
            return None
        return (f"Your session has ended: it expired ({SESSION_DAYS} days after you logged in), was logged out in "
                "another window, or the admin token changed. Log in again.")

    def _login_page(self, message: str | None = None, status: int = 200, token_refused: bool = False,
                    ended: str | None = None) -> None:
        """``message``: why a login was refused, with ``token_refused`` when the token field is to be marked invalid
        (a refusal for too many attempts is not its fault); ``ended``: how the session before ended."""
        self.set_status(status)
        self.render("console_login.html", message=message, token_refused=token_refused, ended=ended,
                    next_path=local_path(self.get_argument("next", None)))


class LogoutHandler(ConsoleHandler):
    # Public: a session already ended (by another tab's logout, or its expiry) is logged out of as one that is
    # live, to the login page; as admin-only, its button answered 403 as if the logout had failed. Without a
    # session it changes nothing, so its form's token is checked only with one.
    access = Access.PUBLIC

    def check_form_token(self) -> None:
        if self.current_user:
            super().check_form_token()

    def get(self) -> None:
        """A logout link (bookmarked, typed): a GET logs nobody out, as a page on another site could send one, so
        it asks, with the logout button; without a session there is nothing to log out of."""
        if self.current_user:
            self.render("console_logout.html")
        else:
            self.redirect(f"{LOGIN_PATH}?{LOGGED_OUT}=1")

    def post(self) -> None:
        if self.current_user:
            # Ended in the store, not just forgotten by this browser: a copy of the cookie no longer admits.
            self.services.keys.end_session(self.current_user)
        # Only a cookie that came with the form: another site's form comes without the session's (SameSite=Lax), and
        # is checked for no XSRF token, having no session; clearing it there logged the operator out.
        if self.get_cookie(SESSION_COOKIE) is not None:
            self.clear_cookie(SESSION_COOKIE)
        self.redirect(f"{LOGIN_PATH}?{LOGGED_OUT}=1", status=303)


class KeysHandler(ConsoleHandler):
    """The console's one page: the keys, with the form that creates one."""

    access = Access.ADMIN

    async def get(self) -> None:
        await self._keys_page(**self._key_just_created(), notice=self.taken_once(NOTICE_COOKIE))

    async def post(self) -> None:
        form = {name: self.get_body_argument(name, "").strip() for name in ("label", "tier", "rpm")}
        try:
            rpm = _form_rpm(form["rpm"])
            issued = self.services.keys.create(form["label"], form["tier"], rpm, by=self.operator(),
                                               form=self.sent_form_id())
        except KeyStoreError as exc:
            self.set_status(400)
            await self._keys_page(error=str(exc), error_field=exc.field, form=form)
            return
        except FormAlreadySent as sent:  # a second click before the answer, without console.js
            self.pass_to_next_page(NOTICE_COOKIE, (
                f"This form had already been sent: it created {sent.key.described()}. A key is shown only in the "
                "answer to the sending that created it; if you did not copy it there, deactivate it and create "
                "another."))
            self.redirect(CONSOLE_PATH, status=303)
            return
        # Post/Redirect/Get: the page that shows the key is a GET, so reloading it cannot create another key.
        self.pass_to_next_page(NEW_KEY_COOKIE, f"{issued.record.id}:{issued.key}")
        self.redirect(CONSOLE_PATH, status=303)

    def _key_just_created(self) -> dict[str, Any]:
        """The key the last form created and its record, once."""
        value = self.taken_once(NEW_KEY_COOKIE)
        if value is None:
            return {}
        key_id, key = value.split(":", 1)
        try:
            return {"new_key": key, "new_record": self.services.keys.find(key_id)}
        except KeyStoreError:  # its row is gone (the store was replaced meanwhile)
            return {}

    async def _keys_page(self, **shown: Any) -> None:
        """The page: a key just created or a form refused, and one page of the keys, newest first (a store of
        thousands would otherwise be one page of megabytes, built while the process answers nothing else)."""
        search = _search(self.get_query_argument("q", ""))
        asked = self.get_query_argument("page", "1")
        number, not_a_page = _page_number(asked), None
        if number is None:  # edited by hand, or cut short in a copied link: the first page, saying so
            number, not_a_page = 1, shortened(asked, lambda text: f"“{text}”")
        keys, total = self.services.keys.newest(KEYS_PER_PAGE, (number - 1) * KEYS_PER_PAGE, search)
        counts = await self.services.limiter.current_counts([key_counter(key) for key in keys])
        page = {"error": None, "error_field": None, "form": {"label": "", "tier": "free", "rpm": ""},
                "new_key": None, "new_record": None, "notice": None, **shown}
        self.render("console.html", keys=keys, counts=[counts[key_counter(key)] for key in keys],
                    form_id=_new_form_id(), status_form_ids=[_new_form_id() for _ in keys], tiers=TIERS.values(),
                    search=search, whole_key=is_whole_key(search), page_number=number,
                    not_a_page=not_a_page, total=total, first=(number - 1) * KEYS_PER_PAGE + 1,
                    newer=_page_link(number - 1, search) if number > 1 else None,
                    older=_page_link(number + 1, search) if number * KEYS_PER_PAGE < total else None, **page)


class KeyStatusHandler(ConsoleHandler):
    access = Access.ADMIN

    def post(self, key_id: str, action: str) -> None:
        try:
            # Found by the store, which takes an id of any length (beyond SQLite's integers, or Python's conversion).
            key = self.services.keys.find(key_id)
            change = self.services.keys.set_status(key.id, ACTIVE if action == "activate" else INACTIVE,
                                                   by=self.operator(), form=self.sent_form_id())
        except KeyStoreError:
            raise tornado.web.HTTPError(404) from None
        told = change.told()
        if not change.changed:
            told = f"{told[:-1]}: {SENT_TWICE if change.form_sent_before else STALE_PAGE}."
        self.pass_to_next_page(NOTICE_COOKIE, told)
        # Back to the page of keys the form was on (its search and page travel in the form), not the first of all.
        search = _search(self.get_body_argument("q", ""))
        number = _page_number(self.get_body_argument("page", "1")) or 1
        self.redirect(_page_link(number, search) if search or number > 1 else CONSOLE_PATH, status=303)


def _new_form_id() -> str:
    return secrets.token_urlsafe(FORM_ID_BYTES)


def _search(text: str) -> str:
    return text.strip()[:LABEL_MAX_LENGTH]  # none longer can match a label


def _page_number(text: str) -> int | None:
    """A page of keys' number, or None when ``text`` is not one."""
    if text.isascii() and text.isdigit() and 0 < len(text) <= _PAGE_MAX_DIGITS and int(text) > 0:
        return int(text)
    return None


def _page_link(number: int, search: str) -> str:
    return f"{CONSOLE_PATH}?{urlencode({'q': search, 'page': number} if search else {'page': number})}"


def _form_rpm(rpm: str) -> int | None:
    """The RPM field as a number; left empty, None: the tier's fixed rpm, or the store asks for one. Checked
    by the store as the CLI's --rpm is, so a fixed tier refuses another rpm in both."""
    if not rpm:
        return None
    if not (rpm.isascii() and rpm.isdigit()) or len(rpm) > _RPM_MAX_DIGITS:
        raise KeyStoreError(f"RPM must be a whole number of requests per minute (at most {_RPM_MAX_DIGITS} "
                            f"digits), not {shortened(rpm, repr)}.", field="rpm")
    return int(rpm)


def local_path(target: str | None) -> str:
    """``target`` if it is a path on this site, else the console: a login never redirects elsewhere."""
    if (target and target.startswith("/") and not target.startswith("//") and "\\" not in target
            # Browsers drop tabs and newlines from URLs: "/\t/evil.example" would become "//evil.example".
            and not any(character.isspace() or ord(character) < 32 for character in target)):
        return target  # a scheme starts with a letter and a host with "//": this names neither
    return CONSOLE_PATH


def check_declared_access(routes: list[tuple[str, type]]) -> None:
    """Deny by default: refuse to build an app in which a console handler leaves its access unsaid."""
    for pattern, handler in routes:
        if not isinstance(vars(handler).get("access"), Access):
            raise TypeError(f"{handler.__name__} (route {pattern}) must declare access = Access.ADMIN or "
                            "Access.PUBLIC.")


routes = [
    (CONSOLE_PATH, KeysHandler),
    (LOGIN_PATH, LoginHandler),
    (r"/console/logout", LogoutHandler),
    (r"/console/keys/([0-9]+)/(activate|deactivate)", KeyStatusHandler),
]
