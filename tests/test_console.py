"""The operator console (DESIGN §8): login, session, XSRF, headers, and key management through its forms."""

from __future__ import annotations

import dataclasses
import datetime as dt
import email.utils
import hashlib
import html.parser
import ipaddress
import logging
import re
import socket
import sqlite3
import stat
import time
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urlsplit

import psutil
import pytest
import tornado.httpclient
import tornado.web
from servers import serving_in_thread
from writers import another_process_writing, overwritten_under_the_server

from solarserv.keys import SERVER_WAIT_FOR_WRITER_SECONDS, TIERS, KeyStore, Tier
from solarserv.ratelimit import RateLimiter
from solarserv.web import console
from solarserv.web.app import Services, make_app
from solarserv.web.console import (
    LOGIN_ATTEMPTS_PER_MINUTE,
    NEW_KEY_COOKIE,
    NEXT_PAGE_SECONDS,
    SESSION_COOKIE,
    Access,
    ConsoleSecrets,
    check_declared_access,
    local_path,
)

ADMIN_TOKEN = "test-admin-token-0123456789"
KEY = re.compile(r"tst_[A-Za-z0-9_-]{43}")


@pytest.fixture
def settings(base_settings, tmp_path):
    return dataclasses.replace(base_settings, data_dir=tmp_path, admin_token=ADMIN_TOKEN)


@pytest.fixture
def keys(settings):
    store = KeyStore.open(settings.data_dir, wait_for_writer=SERVER_WAIT_FOR_WRITER_SECONDS)  # as a server's
    yield store
    store.close()


@pytest.fixture
def app(settings, services, keys):
    """The real app on this test's data dir (key store, cookie secret) with fresh in-process counters."""
    return make_app(settings, Services(settings=settings, pipeline=services.pipeline, keys=keys,
                                       limiter=RateLimiter()))


class Browser:
    """Keeps cookies, does not follow redirects, and sends the XSRF token with forms, as a browser would."""

    def __init__(self, client) -> None:
        self.client = client
        self.cookies: dict[str, str] = {}

    async def get(self, path: str, **headers: str):
        return await self._fetch(path, "GET", None, headers)

    async def head(self, path: str):
        return await self._fetch(path, "HEAD", None, {})

    async def send(self, method: str, path: str):
        """A request with no form: an empty body where the method needs one (PUT, PATCH)."""
        return await self._fetch(path, method, "" if method in ("PUT", "PATCH") else None, {})

    async def post(self, path: str, form: dict | None = None, xsrf: bool = True):
        fields = {**(form or {}), **({"_xsrf": await self.form_token()} if xsrf else {})}
        return await self._fetch(path, "POST", urlencode(fields), {})

    async def create_key(self, form: dict):
        """The create form sent and its redirect followed, as a browser does: the page that shows the key."""
        created = await self.post("/console", form)
        assert (created.code, created.headers.get("Location")) == (303, "/console"), created.body
        return await self.get("/console")

    async def form_token(self) -> str:
        """The XSRF token the console's forms carry now, read from a rendered page as a browser has it."""
        page = await self.get("/console" if SESSION_COOKIE in self.cookies else "/console/login")
        return re.search(r'name="_xsrf" value="([^"]+)"', self.text(page))[1]

    async def log_in(self) -> None:
        reply = await self.get("/console/login?" + urlencode({"token": ADMIN_TOKEN}))
        assert reply.code == 303, reply.body

    async def _fetch(self, path, method, body, headers):
        if self.cookies:
            cookies = "; ".join(f"{name}={value}" for name, value in self.cookies.items())
            headers = {"Cookie": cookies, **headers}
        response = await self.client.fetch(path, method=method, body=body, headers=headers,
                                           follow_redirects=False, raise_error=False)
        for header in response.headers.get_list("Set-Cookie"):
            for name, morsel in SimpleCookie(header).items():
                if morsel.value:
                    self.cookies[name] = morsel.value
                else:  # clear_cookie: an empty, expired cookie
                    self.cookies.pop(name, None)
        return response

    def text(self, response) -> str:
        return response.body.decode()


@pytest.fixture
def browser(http_server_client):
    return Browser(http_server_client)


class ClientOf:
    """A fetch by path, as http_server_client's, for another server."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    async def fetch(self, path: str, **options):
        return await tornado.httpclient.AsyncHTTPClient().fetch(self.base_url + path, **options)


@pytest.fixture
def sibling(settings, services):
    """A second server on this test's data dir, with its own key store connection, as another process of
    `serve --processes N` has. Yields a Browser without cookies for it."""
    with serving_in_thread(settings, lambda: Services(settings=settings, pipeline=services.pipeline,
                                                      limiter=RateLimiter())) as base_url:
        yield Browser(ClientOf(base_url))


def set_cookie(response, name: str) -> str:
    return next(header for header in response.headers.get_list("Set-Cookie") if header.startswith(name + "="))


# Protection.


async def test_console_pages_send_no_store_frame_deny_and_a_content_security_policy(browser):
    login_page = await browser.get("/console/login")
    await browser.log_in()
    keys_page = await browser.get("/console")
    for response in (login_page, keys_page):
        assert response.code == 200
        assert response.headers["Cache-Control"] == "no-store"
        assert response.headers["X-Frame-Options"] == "DENY"
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert "script-src 'self'" in policy and "form-action 'self'" in policy


async def test_the_console_asks_for_a_login_first(browser):
    reply = await browser.get("/console")
    assert reply.code == 302 and reply.headers["Location"] == "/console/login?next=%2Fconsole"


def test_a_search_sent_unencoded_comes_back_after_the_login_as_sent(live_server):
    # curl sends "é" as its UTF-8 bytes, which Tornado reads as Latin-1 text: the login page was to return to "Ã©".
    server = urlsplit(live_server)
    with socket.create_connection((server.hostname, server.port), timeout=30) as client:
        client.sendall("GET /console?q=é HTTP/1.1\r\nHost: solarserv\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := client.recv(65536):
            received += chunk
    assert b"\r\nLocation: /console/login?next=%2Fconsole%3Fq%3D%C3%A9\r\n" in received


SAMPLE_PATHS = {  # one concrete path per console route
    "/console": "/console",
    "/console/login": "/console/login",
    "/console/logout": "/console/logout",
    r"/console/keys/([0-9]+)/(activate|deactivate)": "/console/keys/{id}/deactivate",
}


async def test_every_admin_handler_refuses_without_a_session(browser, keys):
    assert set(SAMPLE_PATHS) == {pattern for pattern, _ in console.routes}
    issued = keys.create("Acme", "free", by="a test")
    for pattern, handler in console.routes:
        if handler.access is not Access.ADMIN:
            continue
        path = SAMPLE_PATHS[pattern].format(id=issued.record.id)
        for method in ("GET", "POST"):
            if getattr(handler, method.lower()) is getattr(tornado.web.RequestHandler, method.lower()):
                continue  # not implemented: Tornado answers 405
            reply = await (browser.get(path) if method == "GET" else
                           browser.post(path, {"label": "x", "tier": "free"}))
            assert reply.code == (302 if method == "GET" else 403), (method, path)
    assert [key.status for key in keys.all()] == ["active"]  # nothing was changed or created


@pytest.mark.parametrize("logged_in", [False, True], ids=["no-session", "session"])
async def test_a_method_a_console_page_does_not_answer_is_405_naming_those_it_does(browser, logged_in):
    # Not 403 "no console session": there is nothing at that method for a session to unlock.
    if logged_in:
        await browser.log_in()
    for path, allowed in (("/console", "GET, HEAD, POST"), ("/console/logout", "GET, HEAD, POST")):
        for method in ("DELETE", "PUT", "PATCH", "OPTIONS"):
            reply = await browser.send(method, path)
            assert (reply.code, reply.headers.get("Allow")) == (405, allowed), (method, path)


def test_an_app_with_a_handler_that_does_not_declare_its_access_is_not_built(settings, services, monkeypatch):
    class Undeclared(console.ConsoleHandler):
        def get(self) -> None:
            self.write("secrets")

    class Inherited(console.KeysHandler):
        """Access inherited, not declared: refused too."""

    for handler in (Undeclared, Inherited):
        with pytest.raises(TypeError, match=f"{handler.__name__} .* must declare access"):
            check_declared_access([("/console/extra", handler)])
    monkeypatch.setattr(console, "routes", [*console.routes, ("/console/extra", Undeclared)])
    with pytest.raises(TypeError, match="Undeclared"):
        make_app(settings, Services(settings=settings, pipeline=services.pipeline))


def non_loopback_address(family: socket.AddressFamily = socket.AF_INET) -> str:
    """An address of this machine in ``family`` other than a loopback one (nor an IPv6 link-local one, which needs
    its interface named). A connection from it to 127.0.0.1 is what one from another machine looks like to the
    server: a peer that is neither a loopback address nor the address it reached."""
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family == family:
                ip = ipaddress.ip_address(address.address.split("%")[0])
                if not (ip.is_loopback or ip.is_link_local):
                    return str(ip)
    pytest.skip(f"this machine has no {family.name} address but loopback")


CONSOLE_PATHS = ("/console", "/console/login", f"/console/login?token={ADMIN_TOKEN}")


async def test_by_default_the_console_answers_only_connections_from_this_machine(browser, http_server_client):
    source = non_loopback_address()
    for path in CONSOLE_PATHS:
        reply = await http_server_client.fetch(path, network_interface=source, follow_redirects=False,
                                               raise_error=False)
        assert reply.code == 403 and "(<code>CONSOLE=local</code>)" in reply.body.decode(), path
        assert 'href="/console"' not in reply.body.decode(), path  # "Back to the console": this same 403
        assert "solarserv_console" not in str(reply.headers.get_list("Set-Cookie"))  # the link did not log in
    refused = await http_server_client.fetch("/console/login", method="POST", body=f"token={ADMIN_TOKEN}",
                                             network_interface=source, follow_redirects=False, raise_error=False)
    assert refused.code == 403 and "solarserv_console" not in str(refused.headers.get_list("Set-Cookie"))
    await browser.log_in()  # from loopback
    assert (await browser.get("/console")).code == 200


@pytest.mark.parametrize(("family", "loopback"), [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
async def test_a_connection_to_this_machines_own_address_from_itself_is_local(settings, services, family, loopback):
    source = non_loopback_address(family)

    def serving_on(host: str):
        return serving_in_thread(settings, lambda: Services(settings=settings, pipeline=services.pipeline,
                                                            limiter=RateLimiter()), host=host)

    with serving_on(source) as base_url:
        here = Browser(ClientOf(base_url))
        await here.log_in()  # peer and the address it reached are the same: this machine
        assert (await here.get("/console")).code == 200
    with serving_on(loopback) as base_url:  # that peer reaching another address looks like another machine
        refused = await ClientOf(base_url).fetch(f"/console/login?token={ADMIN_TOKEN}", network_interface=source,
                                                 follow_redirects=False, raise_error=False)
        assert refused.code == 403


async def test_console_any_answers_every_address_and_off_none(app, http_server_client):
    source = non_loopback_address()
    services = app.settings["services"]
    services.settings = dataclasses.replace(services.settings, console="any")
    reply = await http_server_client.fetch(f"/console/login?token={ADMIN_TOKEN}", network_interface=source,
                                           follow_redirects=False, raise_error=False)
    assert reply.code == 303 and reply.headers["Location"] == "/console"
    services.settings = dataclasses.replace(services.settings, console="off")
    for path in CONSOLE_PATHS:
        reply = await http_server_client.fetch(path, follow_redirects=False, raise_error=False)
        # It offered "Back to the console", the same 404, and no word of why.
        assert reply.code == 404 and "(<code>CONSOLE=off</code>)" in reply.body.decode(), path
        assert 'href="/console"' not in reply.body.decode(), path
    for path in ("/console/login", "/console/logout", "/console"):  # a form too, before its token is checked
        posted = await http_server_client.fetch(path, method="POST", body="token=x", raise_error=False)
        assert posted.code == 404, path
    assert (await http_server_client.fetch("/healthz", raise_error=False)).code == 200  # the rest is served


@pytest.mark.parametrize(("forwarded", "code"), [("198.51.100.7", 403), ("127.0.0.1", 303), (None, 303)])
async def test_behind_a_trusted_proxy_here_console_local_judges_the_client_it_reports(
        app, http_server_client, forwarded, code):
    # A proxy on this machine connects from loopback; with TRUST_PROXY the client it names is the one judged.
    services = app.settings["services"]
    services.settings = dataclasses.replace(services.settings, trust_proxy=True)
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    reply = await http_server_client.fetch(f"/console/login?token={ADMIN_TOKEN}", headers=headers,
                                           follow_redirects=False, raise_error=False)
    assert reply.code == code


@pytest.mark.parametrize("forwarded", ["127.0.0.1", "::1", "::ffff:127.0.0.1"])
async def test_with_a_trusted_proxy_a_client_elsewhere_cannot_pass_as_local_by_naming_a_local_address(
        app, http_server_client, forwarded):
    # A server with TRUST_PROXY that is reachable without its proxy (bound to every interface): a client connecting
    # to it directly writes X-Forwarded-For itself. It was let in as the loopback client it named.
    services = app.settings["services"]
    services.settings = dataclasses.replace(services.settings, trust_proxy=True)
    source = non_loopback_address()
    reply = await http_server_client.fetch(f"/console/login?token={ADMIN_TOKEN}", network_interface=source,
                                           headers={"X-Forwarded-For": forwarded}, follow_redirects=False,
                                           raise_error=False)
    assert reply.code == 403 and "solarserv_console" not in str(reply.headers.get_list("Set-Cookie"))


async def test_the_login_link_sets_a_session_and_keeps_the_token_out_of_urls_and_logs(browser, caplog):
    caplog.set_level(logging.INFO, logger="tornado.access")
    reply = await browser.get("/console/login?" + urlencode({"token": ADMIN_TOKEN}))
    assert reply.code == 303 and reply.headers["Location"] == "/console"
    cookie = set_cookie(reply, SESSION_COOKIE)
    # Lax, not Strict: a login link clicked in another site's page (a chat, a mail) must arrive logged in;
    # the browser would not send a Strict cookie along the redirect such a click starts. Other sites'
    # forms still cannot post with it, and the forms' tokens are bound to the session.
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert (await browser.get("/console")).code == 200
    assert caplog.records and not any(ADMIN_TOKEN in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(("trust_proxy", "forwarded", "secure"), [
    (False, "https", False),  # a client's header, not a proxy's: the socket is plain HTTP
    (True, "https", True),
    (True, "http, https", True),  # the last entry is what reached the nearest proxy, ours
    (True, "https, http", False),
])
async def test_console_cookies_are_secure_when_a_trusted_proxy_was_reached_over_https(
        browser, app, trust_proxy, forwarded, secure):
    services = app.settings["services"]
    services.settings = dataclasses.replace(services.settings, trust_proxy=trust_proxy)
    login_form = await browser.get("/console/login", **{"X-Forwarded-Proto": forwarded})
    assert ("Secure" in set_cookie(login_form, "_xsrf")) is secure  # Tornado's form token, before a session
    reply = await browser.get("/console/login?" + urlencode({"token": ADMIN_TOKEN}), **{"X-Forwarded-Proto": forwarded})
    assert ("Secure" in set_cookie(reply, SESSION_COOKIE)) is secure
    token = await browser.form_token()
    created = await browser._fetch("/console", "POST", urlencode({"label": "Acme", "tier": "free", "_xsrf": token}),
                                   {"X-Forwarded-Proto": forwarded})
    assert ("Secure" in set_cookie(created, NEW_KEY_COOKIE)) is secure


async def test_the_admin_token_stays_out_of_the_logs_on_mistyped_console_urls(browser, caplog):
    caplog.set_level(logging.INFO)
    token = urlencode({"token": ADMIN_TOKEN})
    for path in (f"/console/login/?{token}", f"/Console/login?{token}", f"/console/?{token}",
                 f"/api/v1/solar-time?{token}"):
        await browser.get(path)
    await browser.post(f"/console/login?{token}", xsrf=False)  # refused by the XSRF check, which logs it
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) >= 5 and not any(ADMIN_TOKEN in message for message in messages)


async def test_an_api_key_sent_in_the_query_stays_out_of_the_logs(browser, keys, caplog):
    caplog.set_level(logging.INFO)
    key = keys.create("Acme", "free", by="a test").key
    for query in (f"api_key={key}", f"X-API-Key={key}", f"k={key}", "api_key=%ff%fe-sent-bytes"):
        await browser.get(f"/api/v1/solar-time?date=2026-07-14&{query}")
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) >= 4 and not any(key in message or "sent-bytes" in message for message in messages)
    assert messages[-1].startswith("400 GET /api/v1/solar-time (")


async def test_an_api_key_sent_percent_encoded_in_the_query_stays_out_of_the_logs(browser, keys, caplog):
    # Read as "tst_…" (the X-API-Key-Status says ignored-in-url), and was written to the log as sent.
    caplog.set_level(logging.INFO)
    key = keys.create("Acme", "free", by="a test").key
    for sent in (f"%74st_{key[4:]}", f"tst%5F{key[4:]}", f"%74%73%74%5f{key[4:]}"):
        reply = await browser.get(f"/api/v1/solar-time?date=2026-07-14&k={sent}")
        assert reply.headers["X-API-Key-Status"] == "ignored-in-url"
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) >= 3 and not any(key[4:] in message for message in messages)


async def test_an_api_key_quoted_by_an_error_message_stays_out_of_the_logs(browser, keys, caplog):
    caplog.set_level(logging.INFO)
    key = keys.create("Acme", "free", by="a test").key
    # Sent where a value was meant: the answers quote it to the client, the log lines do not.
    place = await browser.get("/api/v1/solar-time?" + urlencode({"date": "2026-07-14", "local_time": "12:00",
                                                                  "place_name": key}))
    date = await browser.get("/api/v1/solar-time?" + urlencode({"date": key, "local_time": "12:00",
                                                                 "latitude": "1", "longitude": "1"}))
    assert place.code == 404 and key in browser.text(place) and date.code == 400
    messages = [record.getMessage() for record in caplog.records]
    assert any("PLACE_NOT_FOUND: No place found for 'tst_…'" in message for message in messages)
    assert not any(key[:12] in message for message in messages)


async def test_a_token_that_is_not_utf8_is_400_and_its_bytes_stay_out_of_the_logs(browser, caplog):
    caplog.set_level(logging.INFO)
    reply = await browser.get("/console/login?token=%ff%fesecret-bytes")
    assert reply.code == 400 and "400 Bad Request" in browser.text(reply)  # the console's own error page
    xsrf = await browser.form_token()
    reply = await browser._fetch("/console/login", "POST", f"_xsrf={xsrf}&token=%ffsecret-bytes", {})
    assert reply.code == 400 and SESSION_COOKIE not in browser.cookies
    messages = [record.getMessage() for record in caplog.records]
    assert sum("The argument token is not valid UTF-8." in message for message in messages) == 2
    assert not any("secret-bytes" in message or "\\xff" in message for message in messages)


async def test_a_login_link_that_fails_inside_the_server_logs_the_traceback_but_not_the_token(browser, keys, caplog):
    caplog.set_level(logging.INFO)
    keys.close()  # the session cannot be recorded: an exception no handler expects (a disk full, a broken store)
    reply = await browser.get("/console/login?" + urlencode({"token": ADMIN_TOKEN}))
    assert reply.code == 500
    assert ADMIN_TOKEN not in caplog.text
    [failure] = [record for record in caplog.records if record.exc_info]
    assert failure.exc_info[0] is sqlite3.ProgrammingError  # the traceback, for the operator
    assert failure.getMessage() == "Uncaught exception GET /console/login (127.0.0.1)"


async def test_the_session_cookie_holds_nothing_to_test_admin_token_guesses_on(browser, app):
    await browser.log_in()
    cookie_secret = app.settings["services"].console.cookie_secret
    signed = tornado.web.decode_signed_value(cookie_secret, SESSION_COOKIE, browser.cookies[SESSION_COOKIE])
    assert signed and hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest()[:32].encode() not in signed


@pytest.mark.parametrize("cookie", [SESSION_COOKIE, NEW_KEY_COOKIE, "solarserv_notice"])
async def test_a_cookie_in_tornados_first_signed_format_is_no_cookie_and_not_written_to_the_log(browser, caplog,
                                                                                               cookie):
    # Version 1 ("value|timestamp|signature"), which this console never sets: Tornado refuses one whose signature
    # fails, and wrote it whole at WARNING, unshortened, at every request a client sent it with.
    caplog.set_level(logging.INFO)
    await browser.log_in()
    forged = "QUFB" * 4000 + "|1795863300|" + "0" * 40
    reply = await browser.get("/console", Cookie="; ".join(
        f"{name}={value}" for name, value in {**browser.cookies, cookie: forged}.items()))
    assert reply.code == (302 if cookie == SESSION_COOKIE else 200)
    assert "QUFB" not in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.WARNING]


async def test_a_form_token_set_as_a_cookie_by_another_port_of_this_host_is_refused(browser, keys):
    # Cookies do not tell ports apart, so a page on another port can set this host's _xsrf cookie and post
    # a form carrying the same value; SameSite counts both ports as one site and sends the session too.
    issued = keys.create("Acme", "free", by="a test")
    await browser.log_in()
    tossed = "2|00000000|" + "41" * 16 + "|1795309073"
    browser.cookies["_xsrf"] = tossed
    reply = await browser._fetch(f"/console/keys/{issued.record.id}/deactivate", "POST",
                                 urlencode({"_xsrf": tossed}), {})
    assert reply.code == 403 and keys.find(str(issued.record.id)).status == "active"
    # The token the session's own page carries is accepted.
    assert (await browser.post(f"/console/keys/{issued.record.id}/deactivate")).code == 303
    assert keys.find(str(issued.record.id)).status == "inactive"


async def test_head_is_get_without_the_body_but_never_logs_in(browser, keys):
    for path in ("/console/login", "/console/login?next=%2Fconsole", "/console"):
        head = await browser.head(path)
        got = await browser.get(path)
        assert (head.code, head.body) == (got.code, b"") and head.headers.get("Location") == got.headers.get("Location")
    # A HEAD of the login link (a link checker's, a chat's preview) does not log in, nor spend an attempt.
    refused = await browser.head("/console/login?" + urlencode({"token": ADMIN_TOKEN}))
    assert refused.code == 405 and SESSION_COOKIE not in browser.cookies
    assert refused.headers["Allow"] == "GET, POST"
    await browser.log_in()
    head, got = await browser.head("/console"), await browser.get("/console")
    assert (head.code, got.code, head.body) == (200, 200, b"")
    assert head.headers["Content-Length"] == got.headers["Content-Length"] == str(len(got.body))
    assert head.headers["Content-Security-Policy"] == got.headers["Content-Security-Policy"]


async def test_the_login_form(browser):
    assert (await browser.post("/console/login", {"token": "wrong"})).code == 403
    assert SESSION_COOKIE not in browser.cookies
    reply = await browser.post("/console/login", {"token": ADMIN_TOKEN, "next": "/console?sorted=1"})
    assert reply.code == 303 and reply.headers["Location"] == "/console?sorted=1"
    assert SESSION_COOKIE in browser.cookies


async def test_a_wrong_token_is_told_and_gives_no_session(browser):
    reply = await browser.post("/console/login", {"token": ADMIN_TOKEN + "x"})
    assert reply.code == 403 and "That is not the admin token." in browser.text(reply)


async def test_a_login_link_of_an_earlier_run_says_that_each_start_makes_a_new_one(browser, app):
    services = app.settings["services"]
    services.console = dataclasses.replace(services.console, admin_token="generated-at-this-start-0123",
                                           token_generated=True)
    # Yesterday's link, kept in a browser's history: "That is not the admin token." and no word of why.
    reply = await browser.get("/console/login?" + urlencode({"token": "generated-at-an-earlier-start"}))
    assert reply.code == 403 and (
        "That is not the admin token. A login link works until the server stops: use the one it printed at its "
        "latest start.") in browser.text(reply)
    typed = await browser.post("/console/login", {"token": "generated-at-an-earlier-start"})
    assert "That is not the admin token.</p>" in browser.text(typed)
    assert SESSION_COOKIE not in browser.cookies


async def test_forms_without_the_xsrf_token_are_refused(browser, keys):
    assert (await browser.post("/console/login", {"token": ADMIN_TOKEN}, xsrf=False)).code == 403
    await browser.log_in()
    assert (await browser.post("/console", {"label": "Acme", "tier": "free"}, xsrf=False)).code == 403
    assert keys.all() == []


async def test_a_form_over_16_kib_is_refused_as_too_large_on_the_console_page(browser):
    reply = await browser.post("/console/login", {"token": ADMIN_TOKEN, "padding": "x" * 20_000})
    assert reply.code == 413 and "413 Request Entity Too Large" in browser.text(reply)  # its own error page
    assert SESSION_COOKIE not in browser.cookies


@pytest.mark.parametrize("body,told", [
    ("label=%ff&tier=free", "The argument label is not valid UTF-8."),
    ("padding=" + "x" * 20_000, "The request body is larger than 16384 bytes."),
])
async def test_the_console_error_page_says_what_was_wrong_with_a_form(browser, keys, body, told):
    # It said only "400 Bad Request" or "413 Request Entity Too Large", the reason of its status.
    await browser.log_in()
    reply = await browser._fetch("/console", "POST", f"_xsrf={await browser.form_token()}&{body}", {})
    assert reply.code in (400, 413) and f"<p>{told}</p>" in browser.text(reply)
    assert keys.all() == []


async def test_a_form_body_its_content_type_cannot_read_is_400_saying_why(browser, keys):
    await browser.log_in()
    reply = await browser._fetch("/console", "POST", f"_xsrf={await browser.form_token()}&label=x",
                                 {"Content-Type": "multipart/form-data"})
    assert reply.code == 400
    assert "<p>Invalid body: Invalid multipart/form-data: multipart boundary not found</p>" in browser.text(reply)
    assert keys.all() == []


async def test_login_attempts_are_limited_per_client(browser):
    for _ in range(LOGIN_ATTEMPTS_PER_MINUTE):
        assert (await browser.post("/console/login", {"token": "guess"})).code == 403
    reply = await browser.post("/console/login", {"token": ADMIN_TOKEN})  # even the right one, now
    assert reply.code == 429 and 1 <= int(reply.headers["Retry-After"]) <= 60
    assert "Too many login attempts" in browser.text(reply)
    # Said beside the token field, which is not marked wrong: the token may well be right.
    assert 'aria-describedby="token-hint login-error"' in browser.text(reply)
    assert "aria-invalid" not in browser.text(reply)
    assert SESSION_COOKIE not in browser.cookies


REFUSED_LOGINS = "solarserv.web.console"


def warnings_of(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]


async def test_each_refused_login_is_one_warning_naming_the_client_and_not_the_token(browser, caplog):
    caplog.set_level(logging.INFO)
    for _ in range(LOGIN_ATTEMPTS_PER_MINUTE):
        await browser.post("/console/login", {"token": "guess-s3cret"})
    # Over the limit the token is not compared: a 429, its access line alone.
    assert (await browser.get("/console/login?" + urlencode({"token": "link-s3cret"}))).code == 429
    # Said whole, so neither the token nor its length is in it.
    assert warnings_of(caplog) == ["Console login refused from 127.0.0.1: not the admin token"] * 10
    assert {record.name for record in caplog.records if record.levelno >= logging.WARNING} == {REFUSED_LOGINS}
    assert "s3cret" not in caplog.text


async def test_a_login_refused_behind_a_trusted_proxy_names_the_client_it_reports(browser, app, caplog):
    services = app.settings["services"]
    services.settings = dataclasses.replace(services.settings, trust_proxy=True, console="any")
    caplog.set_level(logging.INFO)
    reply = await browser._fetch("/console/login?" + urlencode({"token": "guess"}), "GET", None,
                                 {"X-Forwarded-For": "192.0.2.1, 203.0.113.9"})
    assert reply.code == 403
    assert warnings_of(caplog) == ["Console login refused from 203.0.113.9: not the admin token"]


async def test_a_login_logs_no_warning(browser, caplog):
    caplog.set_level(logging.INFO)
    await browser.log_in()
    assert warnings_of(caplog) == []


async def test_login_attempts_from_one_ipv6_64_share_one_count(browser, app):
    services = app.settings["services"]
    services.settings = dataclasses.replace(services.settings, trust_proxy=True, console="any")
    form = {"token": "guess", "_xsrf": await browser.form_token()}
    for host in range(LOGIN_ATTEMPTS_PER_MINUTE + 1):  # a fresh address in the /64 for every guess
        reply = await browser._fetch("/console/login", "POST", urlencode(form),
                                     {"X-Forwarded-For": f"2001:db8:5:6::{host + 1:x}"})
    assert reply.code == 429 and "Too many login attempts" in browser.text(reply)


@pytest.mark.parametrize(("target", "expected"), [
    ("/console?page=2", "/console?page=2"),
    (None, "/console"),
    ("", "/console"),
    ("https://evil.example/", "/console"),
    ("//evil.example/console", "/console"),
    ("/\\evil.example", "/console"),
    ("/\t/evil.example", "/console"),
    ("javascript:alert(1)", "/console"),
    ("console", "/console"),
])
def test_redirects_after_login_go_only_to_local_paths(target, expected):
    assert local_path(target) == expected


async def test_a_foreign_next_is_ignored_by_the_login(browser):
    reply = await browser.get("/console/login?" + urlencode({"token": ADMIN_TOKEN, "next": "//evil.example"}))
    assert reply.code == 303 and reply.headers["Location"] == "/console"


async def test_the_login_page_sends_a_logged_in_browser_on_to_next_or_the_console(browser):
    await browser.log_in()
    onward = await browser.get("/console/login?" + urlencode({"next": "/console?search=x"}))
    assert (onward.code, onward.headers["Location"]) == (302, "/console?search=x")
    home = await browser.get("/console/login")
    assert (home.code, home.headers["Location"]) == (302, "/console")


async def test_logging_out_ends_the_session(browser):
    await browser.log_in()
    reply = await browser.post("/console/logout")
    assert reply.code == 303 and reply.headers["Location"] == "/console/login?logged_out=1"
    assert (await browser.get("/console")).code == 302


async def test_a_logout_link_asks_with_the_logout_button_or_goes_to_the_login_page(browser):
    # A bookmarked /console/logout was a plain 405 page. A GET logs nobody out: another site could send one.
    reply = await browser.get("/console/logout")
    assert reply.code == 302 and reply.headers["Location"] == "/console/login?logged_out=1"
    await browser.log_in()
    asked = await browser.get("/console/logout")
    assert asked.code == 200 and '<form method="post" action="/console/logout">' in browser.text(asked)
    assert (await browser.get("/console")).code == 200  # still logged in
    form_token = re.search(r'name="_xsrf" value="([^"]+)"', browser.text(asked))[1]
    logged_out = await browser.post("/console/logout", {"_xsrf": form_token}, xsrf=False)
    assert logged_out.code == 303 and (await browser.get("/console")).code == 302


async def test_the_login_page_says_that_the_session_was_logged_out_or_has_ended(browser, keys):
    # It showed the bare login form after either, as if the operator had never logged in.
    await browser.log_in()
    logged_out = await browser.post("/console/logout")
    assert "You are logged out." in browser.text(await browser.get(logged_out.headers["Location"]))
    await browser.log_in()
    with sqlite3.connect(keys.path) as database:  # the session expires
        database.execute("update console_sessions set expires = 0")
    sent_to_log_in = await browser.get("/console?page=2")
    assert sent_to_log_in.code == 302
    page = browser.text(await browser.get(sent_to_log_in.headers["Location"]))
    assert ("Your session has ended: it expired (7 days after you logged in), was logged out in another window, or "
            "the admin token changed. Log in again.") in page
    assert SESSION_COOKIE not in browser.cookies  # said once
    again = browser.text(await browser.get("/console/login"))
    assert "session has ended" not in again and "logged out" not in again


async def test_logging_out_of_a_session_already_ended_goes_to_the_login_page(browser, keys):
    # A second tab's "Log out" after the first's, or one pressed after the session expired, was a 403 error page
    # ("sent without a valid session or XSRF token"), as if the logout had failed.
    await browser.log_in()
    form_token = await browser.form_token()  # the console page's forms, as the second tab holds them
    assert (await browser.post("/console/logout")).code == 303
    reply = await browser.post("/console/logout", {"_xsrf": form_token}, xsrf=False)
    assert reply.code == 303 and reply.headers["Location"] == "/console/login?logged_out=1"
    await browser.log_in()
    form_token = await browser.form_token()
    with sqlite3.connect(keys.path) as database:  # the session expires
        database.execute("update console_sessions set expires = 0")
    reply = await browser.post("/console/logout", {"_xsrf": form_token}, xsrf=False)
    assert reply.code == 303 and reply.headers["Location"] == "/console/login?logged_out=1"
    assert SESSION_COOKIE not in browser.cookies


async def test_logging_out_ends_the_session_for_every_copy_of_the_cookie_in_every_process(browser, sibling):
    await browser.log_in()
    copy = Browser(browser.client)
    for other in (copy, sibling):
        other.cookies = {SESSION_COOKIE: browser.cookies[SESSION_COOKIE]}
    assert (await copy.get("/console")).code == 200
    assert (await sibling.get("/console")).code == 200  # the other process admits the session
    assert (await browser.post("/console/logout")).code == 303
    assert (await copy.get("/console")).code == 302
    assert (await sibling.get("/console")).code == 302


async def test_changing_the_admin_token_ends_existing_sessions(browser, app):
    await browser.log_in()
    assert (await browser.get("/console")).code == 200
    services = app.settings["services"]
    services.console = dataclasses.replace(services.console, admin_token="a-new-token-after-a-leak")
    assert (await browser.get("/console")).code == 302  # the old, validly signed cookie no longer admits


def test_the_cookie_secret_is_kept_in_the_data_dir_so_sessions_survive_a_restart(settings):
    first, restarted = ConsoleSecrets.load(settings), ConsoleSecrets.load(settings)
    assert first.cookie_secret == restarted.cookie_secret and len(first.cookie_secret) >= 64
    secret_file = settings.data_dir / "cookie_secret"
    assert stat.S_IMODE(secret_file.stat().st_mode) == 0o600
    session = tornado.web.create_signed_value(first.cookie_secret, SESSION_COOKIE, "admin")
    assert tornado.web.decode_signed_value(restarted.cookie_secret, SESSION_COOKIE, session) == b"admin"


def test_an_admin_token_is_generated_when_none_is_set(settings):
    generated = ConsoleSecrets.load(dataclasses.replace(settings, admin_token=None))
    assert generated.token_generated and len(generated.admin_token) >= 43
    again = ConsoleSecrets.load(dataclasses.replace(settings, admin_token=None))
    assert generated.admin_token != again.admin_token
    assert generated.login_link("http://127.0.0.1:8000/") == (
        f"http://127.0.0.1:8000/console/login?token={generated.admin_token}")
    configured = ConsoleSecrets.load(settings)
    assert configured.admin_token == ADMIN_TOKEN and not configured.token_generated


# Managing keys.


def row_of(page: str, preview: str) -> list[str]:
    """The cells of the table row that lists the key with this preview."""
    row = next(row for row in page.split("<tr")[1:] if preview in row)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]


async def test_creating_a_key_shows_it_once_and_it_works_at_once(browser, api, keys):
    await browser.log_in()
    reply = await browser.create_key({"label": "Acme", "tier": "free"})
    page = browser.text(reply)
    assert reply.code == 200
    key = KEY.search(page).group()
    assert 'type="button" data-copy="new-key"' in page and "only time the full key is shown" in page
    listing = browser.text(await browser.get("/console"))  # a reload: the key is not shown again, nor made again
    assert key not in listing and "Key created" not in listing and len(keys.all()) == 1
    cells = row_of(listing, key[:8] + "…")
    assert cells[:4] == ["Acme", key[:8] + "…", "free", "10"] and cells[5:7] == ["active", "0"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", cells[4])
    answer = await api("/api/v1/solar-time", headers={"X-API-Key": key})  # a 400, counted against the key
    assert answer.headers["X-RateLimit-Limit"] == "10" and "X-API-Key-Status" not in answer.headers


async def test_a_create_form_sent_twice_creates_one_key_and_the_second_sending_says_which(browser, keys):
    # A browser without console.js sends the form again at a second click before the answer; it created a second
    # key, and the first one's only showing was in the answer the browser dropped.
    await browser.log_in()
    page = browser.text(await browser.get("/console"))
    form = {"label": "Acme", "tier": "free", **form_fields(page, "/console")}
    first, second = await browser.post("/console", form), await browser.post("/console", form)
    assert (first.code, second.code) == (303, 303)
    [record] = keys.all()
    shown = browser.text(await browser.get("/console"))
    assert notice_of(shown) == (
        f"This form had already been sent: it created key {record.id} ({record.preview}, “Acme”). A key is shown only "
        "in the answer to the sending that created it; if you did not copy it there, deactivate it and create "
        "another.")
    another = {"label": "Acme", "tier": "free", **form_fields(shown, "/console")}  # the page's form is sendable
    assert (await browser.post("/console", another)).code == 303 and len(keys.all()) == 2


async def test_the_new_key_reaches_its_page_in_a_signed_cookie_that_lives_a_minute(browser, keys, app):
    await browser.log_in()
    created = await browser.post("/console", {"label": "Acme", "tier": "free"})
    cookie = set_cookie(created, NEW_KEY_COOKIE)
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
    expires = email.utils.parsedate_to_datetime(re.search(r"expires=([^;]+)", cookie, re.IGNORECASE)[1])
    assert 0 < (expires - dt.datetime.now(dt.UTC)).total_seconds() <= NEXT_PAGE_SECONDS  # the browser drops it
    sent = browser.cookies.pop(NEW_KEY_COOKIE)
    secret = app.settings["cookie_secret"]
    key_id, key = tornado.web.decode_signed_value(secret, NEW_KEY_COOKIE, sent).decode().split(":")
    assert keys.find(key_id).preview == key[:8] + "…"
    browser.cookies[NEW_KEY_COOKIE] = sent[:-1] + ("0" if sent[-1] != "0" else "1")  # altered: not read
    assert "Key created" not in browser.text(await browser.get("/console"))
    browser.cookies[NEW_KEY_COOKIE] = tornado.web.create_signed_value(
        secret, NEW_KEY_COOKIE, f"{key_id}:{key}",
        clock=lambda: time.time() - NEXT_PAGE_SECONDS - 1).decode()
    assert "Key created" not in browser.text(await browser.get("/console"))  # too old
    assert len(keys.all()) == 1


async def test_a_new_key_whose_row_is_gone_is_not_shown_and_breaks_nothing(browser, keys):
    await browser.log_in()
    await browser.post("/console", {"label": "Acme", "tier": "free"})
    with sqlite3.connect(keys.path) as database:  # the store replaced between the form and its page
        database.execute("DELETE FROM keys")
    page = await browser.get("/console")
    assert page.code == 200 and "Key created" not in browser.text(page)


async def test_the_listing_shows_requests_in_the_current_window(browser, api, keys):
    issued = keys.create("Acme", "builder", by="a test")
    for _ in range(2):
        await api("/api/v1/solar-time", headers={"X-API-Key": issued.key})
    await browser.log_in()
    cells = row_of(browser.text(await browser.get("/console")), issued.record.preview)
    assert cells[3] == "60" and cells[6] == "2"


def labels_listed(page: str) -> list[str]:
    return [re.sub(r"<[^>]+>", "", row.split('<th scope="row" class="label">')[1].split("</th>")[0]).strip()
            for row in page.split("<tr")[1:] if '<th scope="row" class="label">' in row]


async def test_the_keys_are_listed_a_page_at_a_time_newest_first_and_can_be_found(browser, keys):
    for number in range(1, console.KEYS_PER_PAGE * 2 + 31):
        keys.create(f"Client {number}" if number != 7 else "Acme 100% sundials_co", "free", by="a test")
    await browser.log_in()
    first = browser.text(await browser.get("/console"))
    assert labels_listed(first)[:2] == ["Client 230", "Client 229"] and len(labels_listed(first)) == 100
    assert "Keys 1–100 of 230, newest first." in first and 'href="/console?page=2" rel="next"' in first
    assert 'rel="prev"' not in first
    last = browser.text(await browser.get("/console?page=3"))
    assert labels_listed(last)[-1] == "Client 1" and len(labels_listed(last)) == 30
    assert "Keys 201–230 of 230" in last and 'href="/console?page=2" rel="prev"' in last and 'rel="next"' not in last
    beyond = browser.text(await browser.get("/console?page=4"))
    assert labels_listed(beyond) == [] and "No keys on this page." in beyond
    # The text searched for is text: "%" and "_" are not patterns, case does not matter.
    found = browser.text(await browser.get("/console?" + urlencode({"q": "100% SUNDIALS_"})))
    assert labels_listed(found) == ["Acme 100% sundials_co"] and "Keys 1–1 of 1" in found
    clients_1 = browser.text(await browser.get("/console?q=Client+1"))  # 1, 10–19 and 100–199
    assert labels_listed(clients_1) == [f"Client {number}" for number in range(199, 99, -1)]
    assert "Keys 1–100 of 111, newest first (labels or previews holding “Client 1”)." in clients_1
    assert 'href="/console?q=Client+1&amp;page=2" rel="next"' in clients_1
    preview = keys.newest(1)[0][0].preview
    assert labels_listed(browser.text(await browser.get("/console?" + urlencode({"q": preview[:-1]})))) == [
        "Client 230"]
    # A whole key, as a client reports it, finds its own key, and only it: it was "No keys hold …".
    issued = keys.create("Reported by a client", "free", by="a test")
    whole = browser.text(await browser.get("/console?" + urlencode({"q": issued.key})))
    assert labels_listed(whole) == ["Reported by a client"]
    assert "Keys 1–1 of 1, newest first (the key searched for, given whole)." in whole
    another = issued.key[:-1] + ("A" if issued.key[-1] != "A" else "B")  # its preview, another key
    not_found = browser.text(await browser.get("/console?" + urlencode({"q": another})))
    assert labels_listed(not_found) == [] and "No key is the key searched for, given whole." in not_found
    nothing = browser.text(await browser.get("/console?q=nobody"))
    assert "No keys hold “nobody” in their label or preview." in nothing
    # A page number that is none (edited by hand, cut short in a copied link) was a bare "400 Bad Request".
    for page, said in (("0", "“0”"), ("-1", "“-1”"), ("abc", "“abc”"),
                       ("9" * 41, f"“{'9' * 20}”… (41 characters)")):
        reply = await browser.get("/console?" + urlencode({"q": "Client 1", "page": page}))
        assert reply.code == 200 and labels_listed(browser.text(reply)) == labels_listed(clients_1)
        assert f"{said} is not a page number: this is the first page." in browser.text(reply)
    assert "is not a page number" not in clients_1


async def test_a_pro_key_takes_its_rpm_and_needs_one(browser, keys):
    await browser.log_in()
    created = await browser.post("/console", {"label": "Big", "tier": "pro", "rpm": "250"})
    assert created.code == 303 and keys.all()[0].rpm == 250
    refused = await browser.post("/console", {"label": "Bigger", "tier": "pro", "rpm": ""})
    assert refused.code == 400 and "needs its rpm chosen, 120 to 300" in browser.text(refused)
    refused = await browser.post("/console", {"label": "Bigger", "tier": "pro", "rpm": "400"})
    assert refused.code == 400 and "120 to 300 requests per minute" in browser.text(refused)
    assert 'value="Bigger"' in browser.text(refused)  # the form keeps what was typed
    assert [key.label for key in keys.all()] == ["Big"]
    refused = await browser.post("/console", {"label": "Bigger", "tier": "pro", "rpm": "9" * 5000})
    assert refused.code == 400 and "RPM must be a whole number of requests per minute" in browser.text(refused)


class TierOptions(html.parser.HTMLParser):
    """The tier <select>'s options: value → attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.options: dict[str, dict] = {}

    def handle_starttag(self, tag, attrs):
        if tag == "option":
            self.options[dict(attrs)["value"]] = dict(attrs)


async def test_the_tiers_that_take_a_chosen_rpm_come_from_the_tier_table(browser, keys, monkeypatch):
    monkeypatch.setitem(TIERS, "team", Tier("team", 20, 40))
    await browser.log_in()
    page = browser.text(await browser.get("/console"))
    tiers = TierOptions()
    tiers.feed(page)
    ranges = {name: (option.get("data-min-rpm"), option.get("data-max-rpm")) for name, option in tiers.options.items()}
    assert ranges == {"free": (None, None), "builder": (None, None), "pro": ("120", "300"), "team": ("20", "40")}
    assert "(pro: 120–300; team: 20–40)" in page
    created = await browser.post("/console", {"label": "Team", "tier": "team", "rpm": "30"})
    assert created.code == 303 and [(key.tier, key.rpm) for key in keys.all()] == [("team", 30)]
    fixed = await browser.post("/console", {"label": "Builder", "tier": "builder", "rpm": ""})
    assert fixed.code == 303 and keys.all()[-1].rpm == 60  # a fixed tier's rpm is not asked for
    # ... and another one is refused, as the CLI's --rpm is (the page disables the field for it).
    refused = await browser.post("/console", {"label": "Builder", "tier": "builder", "rpm": "30"})
    assert refused.code == 400
    assert "A builder key has 60 requests per minute; 30 is not allowed." in browser.text(refused)


async def test_labels_are_escaped(browser, keys):
    keys.create('<script>alert("x")</script>', "free", by="a test")
    await browser.log_in()
    page = browser.text(await browser.get("/console"))
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


async def test_deactivating_and_reactivating_a_key_counts_at_once(browser, api, keys):
    issued = keys.create("Acme", "free", by="a test")
    await browser.log_in()
    reply = await browser.post(f"/console/keys/{issued.record.id}/deactivate")
    assert reply.code == 303 and reply.headers["Location"] == "/console"
    answer = await api("/api/v1/solar-time", headers={"X-API-Key": issued.key})
    assert answer.headers["X-API-Key-Status"] == "invalid"
    assert row_of(browser.text(await browser.get("/console")), issued.record.preview)[5] == "inactive"
    await browser.post(f"/console/keys/{issued.record.id}/activate")
    answer = await api("/api/v1/solar-time", headers={"X-API-Key": issued.key})
    assert "X-API-Key-Status" not in answer.headers and answer.headers["X-RateLimit-Limit"] == "10"
    # 10**20 is beyond any id SQLite can hold; 5,000 digits beyond what Python converts to an int (a 500 it was).
    for unknown in (issued.record.id + 1, 10**20, "9" * 5000):
        assert (await browser.post(f"/console/keys/{unknown}/deactivate")).code == 404
    assert (await browser.post("/console/keys/999/deactivate")).code == 404


def notice_of(page: str) -> str | None:
    found = re.search(r'<p class="notice info" role="status"[^>]*>(.*?)</p>', page, re.DOTALL)
    return html.unescape(" ".join(found[1].split())) if found else None


async def test_a_change_from_a_page_gone_stale_under_another_operator_says_the_key_already_had_that_status(
        browser, keys, sibling):
    # Two operators at once: each page's button shows the status of when it was shown. The second to deactivate was
    # sent back to the list without a word, as if their click had done it.
    issued = keys.create("Acme", "free", by="a test")
    named = f"Key {issued.record.id} ({issued.record.preview}, “Acme”)"
    other = sibling  # another process, another session
    await browser.log_in()
    await other.log_in()
    action = f"/console/keys/{issued.record.id}/deactivate"
    stale = browser.text(await browser.get("/console"))
    assert f'action="{action}"' in stale
    assert (await other.post(action)).code == 303
    assert notice_of(other.text(await other.get("/console"))) == f"{named} is now inactive."
    reply = await browser.post(action, form_fields(stale, action))
    assert reply.code == 303
    assert notice_of(browser.text(await browser.get("/console"))) == (
        f"{named} was already inactive: its status changed after this page was shown (in another window, "
        "by another operator or the CLI).")
    assert notice_of(browser.text(await browser.get("/console"))) is None  # said once
    assert [key.status for key in keys.all()] == ["inactive"]


async def test_a_status_form_sent_twice_says_its_first_sending_changed_the_key(browser, keys):
    # A browser without console.js sends the form again at a second click before the answer; the second answer, the
    # one shown, said another window, operator or the CLI had changed the key, when this very form had.
    issued = keys.create("Acme", "free", by="a test")
    named = f"Key {issued.record.id} ({issued.record.preview}, “Acme”)"
    await browser.log_in()
    action = f"/console/keys/{issued.record.id}/deactivate"
    form = form_fields(browser.text(await browser.get("/console")), action)
    first, second = await browser.post(action, form), await browser.post(action, form)
    assert (first.code, second.code) == (303, 303)
    assert notice_of(browser.text(await browser.get("/console"))) == (
        f"{named} was already inactive: this form had already been sent, and its first sending changed it.")
    assert [key.status for key in keys.all()] == ["inactive"]


async def test_each_change_of_a_key_in_the_console_is_one_audit_line_naming_the_client_as_the_access_log_does(
        browser, app, keys, caplog):
    # The access line alone said "POST /console/keys/1/deactivate": not which key, nor that it was the key 1 of then.
    services = app.settings["services"]
    services.settings = dataclasses.replace(services.settings, console="any", trust_proxy=True)
    await browser.log_in()
    caplog.set_level(logging.INFO, logger="solarserv.keys")
    caplog.set_level(logging.INFO, logger="tornado.access")

    async def post_through_the_proxy(path: str, form: dict):
        fields = urlencode({**form, "_xsrf": await browser.form_token()})
        return await browser._fetch(path, "POST", fields, {"X-Forwarded-For": "198.51.100.7"})

    assert (await post_through_the_proxy("/console", {"label": "", "tier": "free"})).code == 400  # no change, no line
    label = 'O\'Brien & "Sons"\u00a0Ltd'
    assert (await post_through_the_proxy("/console", {"label": label, "tier": "pro", "rpm": "200"})).code == 303
    key = KEY.search(browser.text(await browser.get("/console"))).group()
    record = keys.find(key)
    for action in ("deactivate", "deactivate", "activate", "activate"):
        assert (await post_through_the_proxy(f"/console/keys/{record.id}/{action}", {})).code == 303
    named, by = f"Key {record.id} ({record.preview}, “O'Brien & \"Sons\"\\xa0Ltd”)", "by the console (198.51.100.7)"
    assert [(line.levelname, line.getMessage()) for line in caplog.records if line.name == "solarserv.keys"] == [
        ("INFO", f"{named} created {by}: pro, 200 requests per minute"),
        ("INFO", f"{named} deactivated {by}"),
        ("INFO", f"{named} left inactive {by}: it already was"),
        ("INFO", f"{named} reactivated {by}"),
        ("INFO", f"{named} left active {by}: it already was"),
    ]
    assert f"303 POST /console/keys/{record.id}/activate (198.51.100.7)" in caplog.text  # the client, named alike
    assert key not in caplog.text and hashlib.sha256(key.encode()).hexdigest() not in caplog.text


def form_fields(page: str, action: str) -> dict[str, str]:
    """The hidden fields, but the XSRF token, of the page's form that posts to ``action``, as a browser sends them."""
    form = page.split(f'action="{action}"', 1)[1].split("</form>", 1)[0]
    return {name: html.unescape(value) for name, value in re.findall(r'type="hidden" name="([^"]+)" value="([^"]*)"',
                                                                     form) if name != "_xsrf"}


async def test_a_change_returns_to_the_page_of_keys_it_was_made_on(browser, keys):
    issued = [keys.create(f"Client {number}", "free", by="a test") for number in range(1, console.KEYS_PER_PAGE + 31)]
    await browser.log_in()
    search = "/console?" + urlencode({"q": "client", "page": 2})  # keys 101–130 of those found: Client 30 to 1
    oldest = issued[0].record
    action = f"/console/keys/{oldest.id}/deactivate"
    reply = await browser.post(action, form_fields(browser.text(await browser.get(search)), action))
    # It went back to the first page of all keys, where the key just changed is not even shown.
    assert reply.code == 303 and reply.headers["Location"] == search
    assert row_of(browser.text(await browser.get(search)), oldest.preview)[5] == "inactive"
    # The first page of all keys is the console itself; a page that is no page number goes there too.
    newest = issued[-1].record.id
    assert form_fields(browser.text(await browser.get("/console")), f"/console/keys/{newest}/deactivate").keys() == {
        "form_id"}  # no search, no page
    for returning_to in ({}, {"page": "-1"}, {"page": "abc"}):
        reply = await browser.post(f"/console/keys/{newest}/deactivate", returning_to)
        assert reply.headers["Location"] == "/console"


async def test_a_change_is_refused_with_503_while_another_process_holds_the_write_lock(browser, keys, caplog):
    issued = keys.create("Acme", "free", by="a test")
    await browser.log_in()
    await browser.get("/console")  # the page with the forms, and their XSRF cookie
    with another_process_writing(keys.path):
        refused = await browser.post("/console", {"label": "Beta", "tier": "free"})
        assert refused.code == 503 and refused.headers["Retry-After"] == "1"
        assert "another process is writing to the key store" in browser.text(refused)
        refused = await browser.post(f"/console/keys/{issued.record.id}/deactivate")
        assert refused.code == 503
        assert (await browser.get("/console")).code == 200  # reading goes on
    assert [key.label for key in keys.all()] == ["Acme"]
    assert "locked by another process's write" in caplog.text and "Traceback" not in caplog.text
    assert (await browser.post("/console", {"label": "Beta", "tier": "free"})).code == 303


async def test_a_key_store_overwritten_under_the_server_is_a_503_page_saying_so_in_one_log_line(browser, keys,
                                                                                                caplog):
    # It was a 500 page, the store's error logged with a traceback as a fault of the code.
    await browser.log_in()
    form = {"label": "Beta", "tier": "free", "_xsrf": await browser.form_token()}  # a page shown before
    overwritten_under_the_server(keys.path)
    told = "The key store cannot be read; the server has logged why for its operator. Nothing was changed."
    for refused in (await browser.get("/console"), await browser.post("/console", form, xsrf=False)):
        assert refused.code == 503 and "Retry-After" not in refused.headers
        assert told in html.unescape(browser.text(refused))
        # Not to whoever asks, logged in or not: the page showed the data dir's path and SQLite's reason.
        assert str(keys.path) not in html.unescape(browser.text(refused))
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR
              and record.name == "solarserv.web"]
    assert len(errors) == 2 and all(error.endswith(f"→ 503: The key store {keys.path} cannot be used: file is not "
                                                   "a database.") for error in errors)
    assert "Traceback" not in caplog.text


class FormAudit(html.parser.HTMLParser):
    """Collects what keyboard and screen-reader use depends on: labelled inputs, real buttons."""

    def __init__(self) -> None:
        super().__init__()
        self.input_ids: list[str | None] = []
        self.label_targets: set[str] = set()
        self.buttons: list[dict] = []
        self.clickable_non_buttons = 0

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag in {"input", "select", "textarea"} and attributes.get("type") != "hidden":
            self.input_ids.append(attributes.get("id"))
        elif tag == "label" and attributes.get("for"):
            self.label_targets.add(attributes["for"])
        elif tag == "button":
            self.buttons.append(attributes)
        elif "onclick" in attributes or attributes.get("role") == "button":
            self.clickable_non_buttons += 1


async def test_every_input_is_labelled_and_every_action_is_a_button(browser, keys):
    keys.create("Acme", "free", by="a test")
    login_page = browser.text(await browser.get("/console/login"))
    await browser.log_in()
    fresh_key_page = browser.text(await browser.create_key({"label": "Beta", "tier": "free"}))
    for page in (login_page, fresh_key_page):
        audit = FormAudit()
        audit.feed(page)
        assert audit.input_ids and None not in audit.input_ids
        assert set(audit.input_ids) <= audit.label_targets
        assert audit.buttons and all(button.get("type") in {"submit", "button"} for button in audit.buttons)
        assert audit.clickable_non_buttons == 0


async def test_the_login_and_key_pages_each_have_one_main_heading(browser):
    login_page = browser.text(await browser.get("/console/login"))
    await browser.log_in()
    keys_page = browser.text(await browser.get("/console"))
    for page, heading in ((login_page, "Log in"), (keys_page, "API keys")):
        assert re.findall(r"<h1[^>]*>(.*?)</h1>", page) == [heading]


async def test_the_console_files_are_served_from_the_service(browser):
    page = browser.text(await browser.get("/console/login"))
    # The icon is linked, so a browser does not ask for /favicon.ico (an unknown path, which counts
    # against the client's quota like any other).
    for asset, content_type in ((r"/static/console\.css\?v=\w+", "text/css"),
                                (r"/static/console\.js\?v=\w+", "javascript"),
                                (r"/static/page-icon\.svg\?v=\w+", "image/svg+xml")):
        path = re.search(asset, page).group()
        reply = await browser.get(path)
        assert reply.code == 200 and content_type in reply.headers["Content-Type"]
    assert re.search(r'<link rel="icon" type="image/svg\+xml" href="/static/page-icon\.svg\?v=\w+">', page)
    links = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert links and all(link.startswith("/") and not link.startswith("//") for link in links)  # no CDN
