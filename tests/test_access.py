"""API keys and rate limits over HTTP (spec: Authentication, Limits): every row of the enforcement table in
both modes, the rate-limit headers on every answer, shared counts across processes, and a Redis outage."""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import http.client
import json
import logging
import subprocess
import sys
import time
import urllib.error
import urllib.request
from email.message import Message
from urllib.parse import urlencode

import pytest
import tornado.httputil
from counters import RedisServer, UnusedMinuteClock
from servers import start_solarserv
from writers import overwritten_under_the_server

from solarserv.keys import KeyStore, KeyStoreBusy
from solarserv.ratelimit import RateLimiter, RedisCounters
from solarserv.web.app import Services, make_app

ANON_RPM = 3
PARIS = {"date": "2026-07-14", "local_time": "14:30", "latitude": 48.8566, "longitude": 2.3522}
PARIS_GET = "/api/v1/solar-time?" + urlencode(PARIS)
UNKNOWN_KEY = "tst_" + "x" * 43
LIMIT_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset")


@pytest.fixture
def overrides():
    """Settings a test changes (tests parametrize this fixture)."""
    return {}


@pytest.fixture
def settings(base_settings, overrides):
    return dataclasses.replace(base_settings, **{"anon_rpm": ANON_RPM, **overrides})


@pytest.fixture
def clock():
    return UnusedMinuteClock()


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def limiter(request, io_loop, clock):
    shared = RedisCounters(request.getfixturevalue("redis_url")) if request.param == "redis" else None
    limiter = RateLimiter(shared, clock=clock)
    yield limiter
    io_loop.run_sync(limiter.close)


@pytest.fixture
def keys(tmp_path):
    store = KeyStore.open(tmp_path)
    yield store
    store.close()


@pytest.fixture
def app(settings, services, keys, limiter):
    """The real app with this test's settings, key store and limiter (the pipeline is the session's)."""
    return make_app(settings, Services(settings=settings, pipeline=services.pipeline, keys=keys,
                                       limiter=limiter, console=services.console))


@pytest.fixture
def api(app, api):
    """conftest's fetch helper. Naming `app` here puts it, and the limiter it is parametrized by, in each
    test's fixture closure: pytest-tornasync asks for `app` only at run time, too late to parametrize."""
    return api


def limits(reply) -> tuple[int, int, int]:
    return tuple(int(reply.headers[name]) for name in LIMIT_HEADERS)


def key_for(keys: KeyStore, kind: str) -> str | None:
    """The X-API-Key a client of this kind sends: none, a valid key, an unknown one, a deactivated one."""
    if kind == "none":
        return None
    if kind == "unknown":
        return UNKNOWN_KEY
    issued = keys.create(f"{kind} key", "free", by="a test")
    if kind == "deactivated":
        keys.set_status(issued.record.id, "inactive", by="a test")
    return issued.key


# (API_KEY_REQUIRED, key sent, status, error code, limit applied, X-API-Key-Status): the spec's table.
ENFORCEMENT_TABLE = [
    (False, "none", 200, None, ANON_RPM, None),
    (False, "valid", 200, None, 10, None),
    (False, "unknown", 200, None, ANON_RPM, "invalid"),
    (False, "deactivated", 200, None, ANON_RPM, "invalid"),
    (True, "none", 401, "MISSING_API_KEY", ANON_RPM, None),
    (True, "unknown", 401, "INVALID_API_KEY", ANON_RPM, "invalid"),
    (True, "deactivated", 401, "INVALID_API_KEY", ANON_RPM, "invalid"),
    (True, "valid", 200, None, 10, None),
]


@pytest.mark.parametrize(("overrides", "kind", "status", "code", "limit", "key_status"), [
    ({"api_key_required": required}, kind, status, code, limit, key_status)
    for required, kind, status, code, limit, key_status in ENFORCEMENT_TABLE
], ids=[f"{'on' if row[0] else 'off'}-{row[1]}" for row in ENFORCEMENT_TABLE])
async def test_every_row_of_the_enforcement_table(api, keys, overrides, kind, status, code, limit,
                                                  key_status):
    key = key_for(keys, kind)
    reply = await api(PARIS_GET, headers={"X-API-Key": key} if key else None)
    assert reply.status == status, reply.body
    if code:
        assert reply.json() == {"error": {"code": code, "message": reply.json()["error"]["message"]}}
        assert "X-API-Key" in reply.json()["error"]["message"]
    assert limits(reply)[:2] == (limit, limit - 1)
    assert reply.headers.get("X-API-Key-Status") == key_status
    assert reply.headers.get("WWW-Authenticate") == ('ApiKey header="X-API-Key"' if status == 401 else None)


@pytest.mark.parametrize("overrides", [{"api_key_required": False}, {"api_key_required": True}], ids=["off", "on"])
@pytest.mark.parametrize("parameter", ["api_key", "X-API-Key", "k"])
async def test_a_key_sent_in_the_url_is_not_read_and_the_answer_says_so(api, keys, overrides, parameter):
    # Keys travel in the header alone (URLs end up in logs): the request counts per client IP, as one without a
    # key, and the client is told why its key did not count, as when it mistyped one.
    key = key_for(keys, "valid")
    reply = await api(PARIS_GET + "&" + urlencode({parameter: key}))
    assert reply.status == (401 if overrides["api_key_required"] else 200), reply.body
    assert limits(reply)[:2] == (ANON_RPM, ANON_RPM - 1)
    assert reply.headers["X-API-Key-Status"] == "ignored-in-url"
    # With the header given, the header's key decides: the one in the URL is still not read.
    reply = await api(PARIS_GET + "&" + urlencode({parameter: UNKNOWN_KEY}), headers={"X-API-Key": key})
    assert reply.status == 200 and limits(reply)[0] == 10 and "X-API-Key-Status" not in reply.headers


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
async def test_a_key_in_two_x_api_key_headers_is_one_key_and_two_keys_are_told_apart(api, keys, overrides):
    # Tornado joins repeated headers with a comma: "key,key" was no key, a valid key sent twice a 401 "not recognised".
    key = key_for(keys, "valid")
    twice = tornado.httputil.HTTPHeaders()
    for _ in range(2):
        twice.add("X-API-Key", key)
    reply = await api(PARIS_GET, headers=twice)
    assert reply.status == 200 and limits(reply)[:2] == (10, 9), reply.body
    twice.add("X-API-Key", UNKNOWN_KEY)
    reply = await api(PARIS_GET, headers=twice)
    assert reply.status == 401 and reply.headers["X-API-Key-Status"] == "invalid"
    assert reply.json()["error"] == {"code": "INVALID_API_KEY", "message": "The X-API-Key header is given 2 different "
                                                                           "keys; send the one key to use."}
    reply = await api(PARIS_GET, headers={"X-API-Key": UNKNOWN_KEY})
    assert reply.json()["error"] == {"code": "INVALID_API_KEY", "message": "The API key in the X-API-Key header is "
                                                                           "not recognised or has been deactivated."}


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
@pytest.mark.parametrize("around", ["\xa0", "\x85"])
async def test_a_valid_key_with_characters_around_it_other_than_spaces_and_tabs_is_invalid(api, keys, overrides,
                                                                                           around):
    # Only SP and HTAB around a header's value are not part of it (RFC 9110 OWS); str.strip took these too.
    key = key_for(keys, "valid")
    reply = await api(PARIS_GET, headers={"X-API-Key": f"{around}{key}{around}"})
    assert reply.status == 401 and reply.headers["X-API-Key-Status"] == "invalid"
    assert reply.json()["error"]["code"] == "INVALID_API_KEY"
    reply = await api(PARIS_GET, headers={"X-API-Key": f" \t{key}\t "})
    assert reply.status == 200 and limits(reply)[:2] == (10, 9), reply.body


async def test_anonymous_clients_get_anon_rpm_then_429_until_the_minute_turns(api, clock):
    replies = [await api(PARIS_GET) for _ in range(ANON_RPM + 1)]
    assert [reply.status for reply in replies] == [200, 200, 200, 429]
    window_end = int(clock.now // 60 + 1) * 60
    assert [limits(reply) for reply in replies] == [(3, remaining, window_end) for remaining in (2, 1, 0, 0)]
    refused = replies[-1]
    assert refused.json() == {"error": {
        "code": "RATE_LIMIT_EXCEEDED", "retry_after": 50,
        "message": "Rate limit of 3 requests per minute exceeded; retry in 50 seconds."}}
    assert refused.headers["Retry-After"] == "50"  # the clock stands 10 s into its minute
    assert "Retry-After" not in replies[0].headers
    clock.advance(50)
    assert (await api(PARIS_GET)).status == 200


async def test_a_429_in_the_last_second_of_the_minute_says_one_second(api, clock):
    clock.advance(49.5)  # 59.5 s into the minute
    refused = [await api(PARIS_GET) for _ in range(ANON_RPM + 1)][-1]
    assert refused.json()["error"]["message"] == "Rate limit of 3 requests per minute exceeded; retry in 1 second."
    assert refused.headers["Retry-After"] == "1"


async def test_a_valid_key_has_its_own_count_and_rpm(api, keys):
    key = keys.create("Acme", "free", by="a test").key
    statuses = [(await api(PARIS_GET, headers={"X-API-Key": key})).status for _ in range(11)]
    assert statuses == [200] * 10 + [429]
    anonymous = await api(PARIS_GET)
    assert anonymous.status == 200 and limits(anonymous)[:2] == (ANON_RPM, ANON_RPM - 1)


async def test_each_key_is_counted_on_its_own_under_the_first_16_hex_digits_of_its_digest(api, keys, limiter):
    # README (Rate limits): the counter is `key:` + 16 hex digits of the key's SHA-256, not one count for all keys.
    first, second = (keys.create(label, "free", by="a test").key for label in ("Acme", "Globex"))
    statuses = [(await api(PARIS_GET, headers={"X-API-Key": first})).status for _ in range(11)]
    assert statuses == [200] * 10 + [429]
    assert (await api(PARIS_GET, headers={"X-API-Key": second})).status == 200
    counters = [f"key:{hashlib.sha256(key.encode()).hexdigest()[:16]}" for key in (first, second)]
    assert await limiter.current_counts(counters) == dict(zip(counters, [11, 1], strict=True))


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
async def test_rate_limit_headers_are_on_every_api_answer(api, keys, overrides):
    key = keys.create("Acme", "free", by="a test").key
    with_key = {"X-API-Key": key}
    replies = [
        await api(PARIS_GET, headers=with_key),  # 200
        await api("/api/v1/solar-time", "POST", PARIS, headers=with_key),  # 200, and no XSRF token needed
        await api("/api/v1/solar-time?date=2026-07-14", headers=with_key),  # 400
        await api("/api/v1/solar-time", "POST", {**PARIS, "latitude": 91}, headers=with_key),  # 422
        await api("/api/v1/solar-time", "POST", "x" * 20_000, headers=with_key),  # 413
        await api("/api/v1/solar-time?" + urlencode({**PARIS, "local_time": "25:00"}), headers=with_key),
        await api(PARIS_GET),  # 401
    ]
    assert [reply.status for reply in replies] == [200, 200, 400, 422, 413, 400, 401]
    assert [limits(reply)[1] for reply in replies] == [9, 8, 7, 6, 5, 4, ANON_RPM - 1]
    for _ in range(4 + 1):  # the four left, then one too many
        refused = await api("/api/v1/solar-time", "POST", PARIS, headers=with_key)
    assert refused.status == 429 and limits(refused)[:2] == (10, 0)
    assert refused.headers["X-RateLimit-Reset"] == replies[0].headers["X-RateLimit-Reset"]


@pytest.mark.parametrize("overrides", [{"api_key_required": False}, {"api_key_required": True}],
                         ids=["enforcement-off", "enforcement-on"])
async def test_unknown_paths_are_counted_and_carry_the_rate_limit_headers(api, limiter, overrides):
    probes = [await api(path) for path in ("/admin", "/.env", "/api/v2/solar-time")]
    # 404 even with enforcement on: a 401 would suggest something is there for a client with a key.
    assert [reply.status for reply in probes] == [404, 404, 404]
    assert [reply.json()["error"]["code"] for reply in probes] == ["NOT_FOUND"] * 3
    assert [limits(reply)[:2] for reply in probes] == [(ANON_RPM, 2), (ANON_RPM, 1), (ANON_RPM, 0)]
    over = await api("/wp-login.php", "POST", "log=admin")
    assert over.status == 429 and over.json()["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert int(over.headers["Retry-After"]) == over.json()["error"]["retry_after"]
    assert (await api(PARIS_GET)).status == 429  # one count per client, whatever it asks for
    assert await limiter.current_counts(["ip:127.0.0.1"]) == {"ip:127.0.0.1": ANON_RPM + 2}


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
async def test_refusals_leave_a_keep_alive_connection_open_for_the_next_request(api, keys, http_server_port,
                                                                                 overrides):
    key = keys.create("Acme", "free", by="a test").key
    requests = [("POST", {}), ("GET", {}), ("POST", {}), ("POST", {}), ("POST", {"X-API-Key": key})]

    def on_one_connection() -> list[tuple[int, str | None, tuple]]:
        connection = http.client.HTTPConnection("127.0.0.1", http_server_port[1], timeout=30)
        answers = []
        try:
            for method, headers in requests:
                if method == "POST":
                    connection.request("POST", "/api/v1/solar-time", body=json.dumps(PARIS),
                                       headers={"Content-Type": "application/json", **headers})
                else:
                    connection.request("GET", PARIS_GET, headers=headers)
                address = connection.sock.getsockname()
                response = connection.getresponse()
                response.read()
                answers.append((response.status, response.getheader("Connection"), address))
        finally:
            connection.close()
        return answers

    answers = await asyncio.get_running_loop().run_in_executor(None, on_one_connection)
    assert [status for status, _, _ in answers] == [401, 401, 401, 429, 200]
    assert {closing for _, closing, _ in answers} == {None}
    assert len({address for _, _, address in answers}) == 1  # every request went over the first connection


async def test_head_is_get_without_the_body_and_counts_like_it(api, keys):
    key = keys.create("Acme", "free", by="a test").key
    got = await api(PARIS_GET, headers={"X-API-Key": key})
    head = await api(PARIS_GET, "HEAD", headers={"X-API-Key": key})
    assert head.status == 200 and head.body == b""
    assert head.headers["Content-Length"] == got.headers["Content-Length"] == str(len(got.body))
    assert head.headers["Content-Type"] == got.headers["Content-Type"]
    assert limits(head)[:2] == (10, 8)
    refused = await api("/api/v1/solar-time?date=2026-07-14", "HEAD", headers={"X-API-Key": key})
    assert refused.status == 400 and refused.body == b"" and limits(refused)[1] == 7
    health = await api("/healthz", "HEAD")
    assert health.status == 200 and int(health.headers["Content-Length"]) > 0


async def test_a_key_store_too_busy_to_look_up_the_key_is_503_counted_per_client_ip(api, keys, limiter, monkeypatch,
                                                                                     caplog):
    # In WAL mode a read waits for no writer; it meets a busy database only in rare moments (another
    # process recovering the log after a crash) that a test cannot bring about, so the store says so here.
    def busy(key: str) -> None:
        raise KeyStoreBusy(f"The key store {keys.path} is locked by another process's write; try again in a "
                           "moment.")

    monkeypatch.setattr(keys, "active_key", busy)
    with_key = {"X-API-Key": UNKNOWN_KEY}
    replies = [await api(PARIS_GET, headers=with_key),
               await api("/api/v1/solar-time", "POST", PARIS, headers=with_key),
               await api("/nope", headers=with_key),  # 404 whatever the key, as always
               await api(PARIS_GET, headers=with_key)]
    assert [reply.status for reply in replies] == [503, 503, 404, 429]
    for reply in replies[:2]:
        assert reply.json()["error"]["code"] == "SERVICE_BUSY"
        assert reply.headers["Retry-After"] == str(reply.json()["error"]["retry_after"]) == "1"
    assert [limits(reply)[:2] for reply in replies] == [(ANON_RPM, 2), (ANON_RPM, 1), (ANON_RPM, 0), (ANON_RPM, 0)]
    assert not any("X-API-Key-Status" in reply.headers for reply in replies)  # not known to be invalid
    assert await limiter.current_counts(["ip:127.0.0.1"]) == {"ip:127.0.0.1": 4}
    assert "locked by another process's write" in caplog.text and "Traceback" not in caplog.text


@pytest.mark.parametrize("overrides", [{}, {"api_key_required": True}], ids=["optional", "required"])
async def test_a_key_store_that_cannot_be_read_is_503_counted_per_client_ip_and_logged_in_one_line(
        api, keys, limiter, caplog, overrides):
    # It was a 500 CALCULATION_FAILED, the store's error logged with a traceback as a fault of the code.
    key = keys.create("Acme", "free", by="a test").key
    overwritten_under_the_server(keys.path)
    replies = [await api(PARIS_GET, headers={"X-API-Key": key}),
               await api("/api/v1/solar-time", "POST", PARIS, headers={"X-API-Key": key})]
    assert [reply.status for reply in replies] == [503, 503]
    for reply in replies:
        assert reply.json()["error"] == {
            "code": "KEY_STORE_UNAVAILABLE",
            "message": "The API key store cannot be read, so the key cannot be checked; the server has logged why "
                       "for its operator."}
        assert "X-API-Key-Status" not in reply.headers  # not known to be invalid
    assert [limits(reply)[:2] for reply in replies] == [(ANON_RPM, 2), (ANON_RPM, 1)]
    assert await limiter.current_counts(["ip:127.0.0.1"]) == {"ip:127.0.0.1": 2}
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR
              and record.name == "solarserv.web"]
    assert errors == [f"{method} /api/v1/solar-time: The key store {keys.path} cannot be used: file is not a "
                      "database." for method in ("GET", "POST")]
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
async def test_over_the_limit_bad_keys_get_429_before_401(api, overrides):
    replies = [await api(PARIS_GET, headers={"X-API-Key": UNKNOWN_KEY}) for _ in range(ANON_RPM + 1)]
    assert [reply.status for reply in replies] == [401] * ANON_RPM + [429]


async def test_a_key_created_or_deactivated_by_another_process_counts_at_once(api, keys, tmp_path):
    other_process = KeyStore.open(tmp_path)
    try:
        issued = other_process.create("Acme", "free", by="a test")
        assert limits(await api(PARIS_GET, headers={"X-API-Key": issued.key}))[0] == 10
        other_process.set_status(issued.record.id, "inactive", by="a test")
        reply = await api(PARIS_GET, headers={"X-API-Key": issued.key})
    finally:
        other_process.close()
    assert reply.headers["X-API-Key-Status"] == "invalid" and limits(reply)[0] == ANON_RPM


async def test_proxy_headers_are_ignored_unless_trusted(api, limiter):
    for forwarded in ("203.0.113.1", "203.0.113.2"):
        await api(PARIS_GET, headers={"X-Forwarded-For": forwarded, "X-Real-IP": forwarded})
    counts = await limiter.current_counts(["ip:127.0.0.1", "ip:203.0.113.1", "ip:203.0.113.2"])
    assert counts == {"ip:127.0.0.1": 2, "ip:203.0.113.1": 0, "ip:203.0.113.2": 0}


@pytest.mark.parametrize("overrides", [{"trust_proxy": True}])
async def test_trusted_proxy_headers_name_the_client(api, limiter, overrides):
    await api(PARIS_GET, headers={"X-Real-IP": "203.0.113.1"})
    # Only the last X-Forwarded-For entry was added by our proxy; the earlier ones are the client's word.
    await api(PARIS_GET, headers={"X-Forwarded-For": "198.51.100.7, 203.0.113.2"})
    await api(PARIS_GET, headers={"X-Forwarded-For": "not an address"})
    await api(PARIS_GET, headers={"X-Real-IP": "2001:DB8::0001"})
    # A client-sent X-Real-IP passed through a proxy that appends X-Forwarded-For picks no fresh quota.
    await api(PARIS_GET, headers={"X-Forwarded-For": "203.0.113.2", "X-Real-IP": "192.0.2.99"})
    counts = await limiter.current_counts(["ip:203.0.113.1", "ip:203.0.113.2", "ip:198.51.100.7",
                                           "ip:127.0.0.1", "ip:2001:db8::/64", "ip:192.0.2.99"])
    assert counts == {"ip:203.0.113.1": 1, "ip:203.0.113.2": 2, "ip:198.51.100.7": 0, "ip:127.0.0.1": 1,
                      "ip:2001:db8::/64": 1, "ip:192.0.2.99": 0}


@pytest.mark.parametrize("overrides", [{"trust_proxy": True}])
async def test_an_ipv6_client_is_counted_by_its_64_and_a_mapped_ipv4_one_as_ipv4(api, limiter, overrides):
    # One subscriber is given a whole /64 and can send each request from a fresh address in it.
    for address in ("2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:3::1", "::ffff:203.0.113.7",
                    "203.0.113.7"):
        await api(PARIS_GET, headers={"X-Forwarded-For": address})
    counts = await limiter.current_counts(["ip:2001:db8:1:2::/64", "ip:2001:db8:1:3::/64", "ip:203.0.113.7",
                                           "ip:2001:db8:1:2::1", "ip:::ffff:203.0.113.7"])
    assert counts == {"ip:2001:db8:1:2::/64": 2, "ip:2001:db8:1:3::/64": 1, "ip:203.0.113.7": 2,
                      "ip:2001:db8:1:2::1": 0, "ip:::ffff:203.0.113.7": 0}


@pytest.mark.parametrize("overrides", [{"trust_proxy": True}])
@pytest.mark.parametrize("header", ["X-Forwarded-For", "X-Real-IP"])
async def test_a_proxy_header_that_is_not_a_plain_address_is_ignored(api, limiter, caplog, overrides, header):
    caplog.set_level(logging.INFO, logger="tornado.access")
    # A scope id is free text of the client's choosing: a fresh quota per name, and text for the log.
    for sent in ("fe80::1%eth0", "fe80::1%\x9b31mred", "203.0.113.9 x", "203.0.113.9/24"):
        await api(PARIS_GET, headers={header: sent})
    counts = await limiter.current_counts(["ip:127.0.0.1", "ip:fe80::1%eth0", "ip:203.0.113.9"])
    assert counts == {"ip:127.0.0.1": 4, "ip:fe80::1%eth0": 0, "ip:203.0.113.9": 0}
    assert [record.getMessage().split(" (")[1][:10] for record in caplog.records] == ["127.0.0.1)"] * 4


@pytest.mark.parametrize(("overrides", "sent", "client"), [({"trust_proxy": True}, "203.0.113.5", "203.0.113.5"),
                                                        ({"trust_proxy": True}, "::ffff:203.0.113.5", "203.0.113.5"),
                                                        ({}, "203.0.113.5", "127.0.0.1")])
async def test_the_access_log_names_the_client_the_limits_count(api, caplog, overrides, sent, client):
    caplog.set_level(logging.INFO, logger="tornado.access")
    for _ in range(ANON_RPM + 1):
        await api(PARIS_GET, headers={"X-Forwarded-For": sent})
    # The operator sees whom the 429 refused: behind a proxy, it used to be the proxy; an IPv4-mapped address
    # was written in hex (::ffff:cb00:7105), neither as sent nor as counted.
    assert caplog.records[-1].getMessage().startswith(f"429 GET {PARIS_GET} ({client}) ")


async def test_access_lines_are_info_below_500_and_error_for_a_5xx(api, keys, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="tornado.access")
    await api(PARIS_GET)
    await api("/api/v1/solar-time?date=2026-07-14")  # 400: no local_time

    def busy(key: str) -> None:
        raise KeyStoreBusy("The key store is locked by another process's write; try again in a moment.")

    monkeypatch.setattr(keys, "active_key", busy)
    await api(PARIS_GET, headers={"X-API-Key": UNKNOWN_KEY})  # 503
    lines = [(record.getMessage().split()[0], record.levelname) for record in caplog.records
             if record.name == "tornado.access"]
    assert lines == [("200", "INFO"), ("400", "INFO"), ("503", "ERROR")]


async def test_a_client_sending_bad_requests_and_on_past_its_limit_writes_no_warning(api, caplog):
    # A warning line for each of them was one client's megabytes of warnings a minute.
    caplog.set_level(logging.INFO)
    replies = [await api("/console", method="POST", body="label=x"),  # no session, no form token
               await api("/api/v1/solar-time?date=2026-07-14"),  # no local_time
               await api("/api/v1/nothing-here"),
               await api(PARIS_GET, method="DELETE"),
               *[await api(PARIS_GET) for _ in range(5)]]  # past ANON_RPM
    assert [reply.status for reply in replies] == [403, 400, 404, 405, *[429] * 5]
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []
    assert len([record for record in caplog.records if record.name == "tornado.access"]) == len(replies)


async def test_a_request_refused_for_its_rate_limit_is_logged_in_its_access_line_alone(api, caplog):
    caplog.set_level(logging.INFO)
    for _ in range(ANON_RPM):
        await api(PARIS_GET)
    caplog.clear()
    replies = [await api(PARIS_GET) for _ in range(5)]
    assert [reply.status for reply in replies] == [429] * 5
    lines = [(record.name, record.getMessage().split()[0]) for record in caplog.records]
    assert lines == [("tornado.access", "429")] * 5


@pytest.mark.parametrize("path", ["/CONSOLE/login?s3cret", "/nope?TOKEN=s3cret"])
async def test_a_token_in_a_mistyped_console_url_stays_out_of_the_access_line(api, caplog, path):
    caplog.set_level(logging.INFO, logger="tornado.access")
    await api(path)
    logged = [record.getMessage() for record in caplog.records if record.name == "tornado.access"]
    assert logged and not any("s3cret" in line for line in logged)


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
async def test_health_is_neither_keyed_nor_limited(api, limiter, overrides):
    for _ in range(ANON_RPM + 1):
        reply = await api("/healthz")
        assert reply.status == 200
    assert not any(name in reply.headers for name in LIMIT_HEADERS)
    assert await limiter.current_counts(["ip:127.0.0.1"]) == {"ip:127.0.0.1": 0}
    health = reply.json()
    assert health["api_key_required"] is True
    assert health["rate_limit_counters"]["store"] in {"redis", "in-process"}


class TestRedisOutage:
    """Redis in use, lost and regained while serving: this class's app counts on a Redis of its own."""

    @pytest.fixture
    def redis_server(self):
        with RedisServer() as server:
            yield server

    @pytest.fixture
    def limiter(self, redis_server, io_loop, clock):
        # Tries Redis on every request while it is down, so the test sees its return at once.
        limiter = RateLimiter(RedisCounters(redis_server.url), clock=clock, recheck_interval=0)
        yield limiter
        io_loop.run_sync(limiter.close)

    @pytest.mark.redis
    @pytest.mark.parametrize("overrides", [{"anon_rpm": 100}])
    async def test_requests_are_answered_through_a_redis_outage(self, api, redis_server, caplog, overrides):
        caplog.set_level(logging.WARNING, logger="solarserv.ratelimit")
        assert (await api(PARIS_GET)).status == 200
        assert (await api("/healthz")).json()["rate_limit_counters"]["store"] == "redis"

        redis_server.stop()
        during = [await api(PARIS_GET) for _ in range(3)]
        assert [reply.status for reply in during] == [200, 200, 200]
        assert [limits(reply)[1] for reply in during] == [98, 97, 96]  # counted on in this process
        health = (await api("/healthz")).json()
        assert health["status"] == "degraded"
        assert health["rate_limit_counters"]["redis"] == "unreachable"
        assert len([record for record in caplog.records if "unreachable" in record.getMessage()]) == 1

        redis_server.start()
        back = await api(PARIS_GET)
        # The new, empty Redis counts this one; the three counted in this process meanwhile still count.
        assert back.status == 200 and limits(back)[1] == 96
        health = (await api("/healthz")).json()
        assert health["status"] == "ok" and health["rate_limit_counters"]["redis"] == "in use"


    @pytest.mark.redis
    async def test_a_client_at_its_limit_stays_refused_when_redis_goes_away(self, api, redis_server):
        assert [(await api(PARIS_GET)).status for _ in range(ANON_RPM)] == [200] * ANON_RPM
        redis_server.stop()
        refused = await api(PARIS_GET)
        assert refused.status == 429 and limits(refused)[:2] == (ANON_RPM, 0)

    @pytest.mark.redis
    async def test_health_finds_redis_gone_and_back_while_no_api_request_comes_in(self, api, limiter,
                                                                                   redis_server):
        redis_server.stop()
        health = (await api("/healthz")).json()
        assert health["status"] == "degraded" and health["rate_limit_counters"]["redis"] == "unreachable"
        redis_server.start()
        health = (await api("/healthz")).json()
        assert health["status"] == "ok" and health["rate_limit_counters"]["redis"] == "in use"
        assert await limiter.current_counts(["ip:127.0.0.1"]) == {"ip:127.0.0.1": 0}


# Two real `solarserv serve` processes on one Redis and one data dir.


def start_server(data_dir, redis_url: str, log_path) -> tuple[subprocess.Popen, str, list[str]]:
    """Start `solarserv serve --port 0`; return the process, its base URL and the lines it printed."""
    process = start_solarserv(["--port", "0", "--data-dir", str(data_dir), "--redis-url", redis_url], log_path)
    printed = []
    for line in process.stdout:
        printed.append(line.strip())
        if line.startswith("Console"):
            return process, printed[0].rsplit(" ", 1)[1].rstrip("/"), printed
    raise AssertionError(f"the server stopped before it was ready: {printed}; see {log_path}")


def fetch(url: str, key: str) -> tuple[int, Message]:
    request = urllib.request.Request(url, headers={"X-API-Key": key})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers


def cli(data_dir, *args: str) -> str:
    return subprocess.run([sys.executable, "-m", "solarserv", "keys", *args, "--data-dir", str(data_dir)],
                          check=True, capture_output=True, text=True).stdout


@pytest.mark.slow
@pytest.mark.redis
def test_two_server_processes_share_one_limit_and_one_key_store(redis_url, data_dir, tmp_path):
    servers = [start_server(data_dir, redis_url, tmp_path / f"server{number}.log") for number in (1, 2)]
    try:
        for _, _, printed in servers:
            assert printed[0].startswith("solarserv ") and " ready at http://127.0.0.1:" in printed[0]
            assert "/console/login?token=" in printed[1]  # ADMIN_TOKEN unset: a login link is printed
        urls = [url + PARIS_GET for _, url, _ in servers]
        # Created by the CLI while both servers run: it must work at once in both.
        created = json.loads(cli(data_dir, "create", "--label", "two processes", "--tier", "free", "--json"))
        seconds_into_minute = time.time() % 60
        if seconds_into_minute > 50:  # keep the twelve requests inside one window
            time.sleep(60.5 - seconds_into_minute)
        answers = [fetch(urls[number % 2], created["key"]) for number in range(12)]
        assert [status for status, _ in answers] == [200] * 10 + [429, 429]
        remaining = [int(headers["X-RateLimit-Remaining"]) for _, headers in answers]
        assert remaining == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0]
        cli(data_dir, "deactivate", created["preview"])
        for url in urls:
            status, headers = fetch(url, created["key"])
            assert status == 200 and headers["X-API-Key-Status"] == "invalid"
    finally:
        for process, _, _ in servers:
            process.terminate()
            process.wait(timeout=10)
            process.stdout.close()


# Scripts on other sites (CORS).

EXPOSED = {"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-API-Key-Status"}


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
async def test_any_site_may_call_the_api_and_read_its_limits_and_refusals(api, keys):
    key = keys.create("Widget", "free", by="a test").key
    answered = await api("/api/v1/solar-time", "POST", PARIS, {"X-API-Key": key, "Origin": "https://example.org"})
    refused = await api("/api/v1/solar-time", "POST", PARIS, {"Origin": "https://example.org"})
    for reply, status in ((answered, 200), (refused, 401)):
        assert reply.status == status and reply.headers["Access-Control-Allow-Origin"] == "*"
        assert set(reply.headers["Access-Control-Expose-Headers"].split(", ")) == EXPOSED
        assert "Access-Control-Allow-Credentials" not in reply.headers  # no cookie is read: none is asked for


@pytest.mark.parametrize("overrides", [{"api_key_required": True}])
async def test_a_preflight_needs_no_key_is_not_counted_and_names_what_a_script_may_send(api, keys):
    key = keys.create("Widget", "free", by="a test").key
    before = await api("/api/v1/solar-time?" + urlencode(PARIS), headers={"X-API-Key": key})
    for _ in range(3):
        preflight = await api("/api/v1/solar-time", "OPTIONS", headers={
            "Origin": "https://example.org", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-api-key"})
        assert preflight.status == 204 and preflight.body == b""
        assert preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, POST"
        assert preflight.headers["Access-Control-Allow-Headers"] == "Content-Type, X-API-Key"
        assert preflight.headers["Access-Control-Allow-Origin"] == "*"
        assert int(preflight.headers["Access-Control-Max-Age"]) > 0
        assert "X-RateLimit-Remaining" not in preflight.headers
    after = await api("/api/v1/solar-time?" + urlencode(PARIS), headers={"X-API-Key": key})
    assert limits(after)[1] == limits(before)[1] - 1  # only the two GETs counted
    chart = await api("/api/v1/equation-of-time?year=2026", "OPTIONS")
    assert chart.status == 204 and chart.headers["Access-Control-Allow-Methods"] == "GET, HEAD"
