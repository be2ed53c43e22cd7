"""Fixed-window counters (DESIGN §8): the same tests for Redis and in-process counters, and the fallback
from Redis to in-process counters while Redis is down."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
import redis.asyncio
import redis.exceptions
from counters import RedisServer, UnusedMinuteClock, unused_port

from solarserv import config, ratelimit
from solarserv.ratelimit import REDIS_MAX_CONNECTIONS, WINDOW_SECONDS, MemoryCounters, RateLimiter, RedisCounters


def unique_name() -> str:
    return f"test:{uuid.uuid4().hex}"


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.redis)])
def counters(request, io_loop):
    if request.param == "memory":
        store = MemoryCounters()
    else:
        store = RedisCounters(request.getfixturevalue("redis_url"))
    yield store
    io_loop.run_sync(store.close)


@pytest.fixture
def clock():
    return UnusedMinuteClock()


async def test_counts_per_name_and_per_window(counters):
    alice, bob = unique_name(), unique_name()
    assert [await counters.increment(alice, 7) for _ in range(3)] == [1, 2, 3]
    assert await counters.increment(bob, 7) == 1
    assert await counters.peek([alice, bob, unique_name()], 7) == [3, 1, 0]
    assert await counters.increment(alice, 8) == 1  # a new minute starts from zero
    assert await counters.peek([alice], 8) == [1]


async def test_a_request_counted_after_its_minute_turned_leaves_the_new_minutes_counts_alone(counters):
    name = unique_name()
    assert [await counters.increment(name, 8) for _ in range(2)] == [1, 2]
    # Read the clock at hh:07:59.9 and counted at hh:08:00.2, after a Redis that did not answer in time.
    assert await counters.increment(name, 7) == 1
    assert await counters.increment(name, 8) == 3
    assert await counters.increment(name, 7) == 2  # the minute before the latest is kept, not started afresh
    assert await counters.peek([name], 8) == [3]


async def test_peek_counts_nothing(counters):
    name = unique_name()
    await counters.increment(name, 7)
    await counters.peek([name], 7)
    assert await counters.peek([name], 7) == [1]
    assert await counters.peek([], 7) == []


async def test_concurrent_requests_are_all_counted_once(counters):
    name = unique_name()
    counts = await asyncio.gather(*(counters.increment(name, 7) for _ in range(50)))
    assert sorted(counts) == list(range(1, 51))


async def test_limiter_allows_the_limit_then_refuses_until_the_next_minute(counters, clock):
    limiter = RateLimiter(counters, clock=clock)
    name = unique_name()
    decisions = [await limiter.hit(name, 3) for _ in range(4)]
    assert [decision.allowed for decision in decisions] == [True, True, True, False]
    assert [decision.remaining for decision in decisions] == [2, 1, 0, 0]
    window_end = (clock.now // 60 + 1) * 60
    assert {decision.reset for decision in decisions} == {window_end}
    assert decisions[-1].retry_after == 50  # the clock stands 10 s into its minute
    clock.advance(50)
    assert (await limiter.hit(name, 3)).remaining == 2
    assert (await limiter.current_counts([name])) == {name: 1}


async def test_windows_are_aligned_to_the_minute(clock):
    limiter = RateLimiter(MemoryCounters(), clock=clock)
    clock.now = 120 * 60 + 59.5
    late = await limiter.hit("late", 1)
    assert late.reset == 121 * 60 and late.retry_after == 1  # whole seconds, never 0
    clock.now = 121 * 60
    assert (await limiter.hit("late", 1)).allowed  # 0.5 s later a new window has begun
    assert (await limiter.hit("early", 1)).retry_after == 60


async def test_retry_after_rounds_a_part_of_a_second_up(clock):
    limiter = RateLimiter(MemoryCounters(), clock=clock)
    clock.advance(0.25)  # 10.25 s into the minute: 49.75 s left, which a client waiting 49 s would not wait out
    await limiter.hit("fraction", 1)
    assert (await limiter.hit("fraction", 1)).retry_after == 50


async def test_the_current_counts_start_from_zero_when_the_minute_turns(counters, clock):
    limiter = RateLimiter(counters, clock=clock)
    name = unique_name()
    await limiter.hit(name, 5)
    await limiter.hit(name, 5)
    assert await limiter.current_counts([name]) == {name: 2}
    clock.advance(60)
    assert await limiter.current_counts([name]) == {name: 0}


async def test_decision_headers(clock):
    decision = await RateLimiter(MemoryCounters(), clock=clock).hit("headers", 5)
    assert decision.headers() == {"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4",
                                  "X-RateLimit-Reset": str(decision.reset)}


@pytest.mark.redis
async def test_a_redis_count_expires_after_its_window_and_survives_a_flushed_script_cache(redis_url, clock):
    counters = RedisCounters(redis_url)
    inspector = redis.asyncio.Redis.from_url(redis_url)
    name, window = unique_name(), int(clock() // WINDOW_SECONDS)
    try:
        assert await counters.increment(name, window) == 1
        key = next(iter(await inspector.keys(f"*{name}")))
        assert WINDOW_SECONDS < await inspector.ttl(key) <= 2 * WINDOW_SECONDS
        await inspector.script_flush()  # as a Redis restart would leave it
        assert await counters.increment(name, window) == 2
    finally:
        await counters.close()
        await inspector.aclose()


@pytest.mark.redis
async def test_an_option_solarserv_takes_in_redis_url_reaches_redis(redis_url, clock):
    url = config.load(environ={"REDIS_URL": f"{redis_url}?client_name=solarserv-{unique_name()}"}).redis_url
    counters = RedisCounters(url)
    inspector = redis.asyncio.Redis.from_url(redis_url)
    try:
        assert await counters.increment(unique_name(), int(clock() // WINDOW_SECONDS)) == 1
        assert urlsplit(url).query.removeprefix("client_name=") in [client["name"] for client in
                                                                    await inspector.client_list()]
    finally:
        await counters.close()
        await inspector.aclose()


@pytest.mark.redis
async def test_two_limiters_on_one_redis_share_one_count(redis_url, clock):
    first = RateLimiter(RedisCounters(redis_url), clock=clock)
    second = RateLimiter(RedisCounters(redis_url), clock=clock)
    # A process that counted none of them, as a console's process may be: it shows the shared count too.
    onlooker = RateLimiter(RedisCounters(redis_url), clock=clock)
    name = unique_name()
    try:
        decisions = [await limiter.hit(name, 4) for limiter in (first, second, first, second, first)]
        # The second last heard 4 from Redis, the onlooker nothing: each shows what Redis holds, not what it saw.
        shown = [await limiter.current_counts([name]) for limiter in (first, second, onlooker)]
    finally:
        for limiter in (first, second, onlooker):
            await limiter.close()
    assert [decision.count for decision in decisions] == [1, 2, 3, 4, 5]
    assert not decisions[-1].allowed
    assert shown == [{name: 5}] * 3


@pytest.mark.redis
async def test_limiter_falls_back_to_memory_while_redis_is_down_and_returns_to_it(clock, caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="solarserv.ratelimit")
    # Stopped, Redis refuses connections at once; on a busy machine the command's own limit could run out first, and a
    # command that timed out is one Redis may yet count, which this test is not about.
    monkeypatch.setattr(ratelimit, "REDIS_COMMAND_TIMEOUT_SECONDS", 5.0)
    with RedisServer() as server:
        # No pause between attempts, so the test sees the return at once.
        limiter = RateLimiter(RedisCounters(server.url), clock=clock, recheck_interval=0)
        try:
            assert (await limiter.hit("client", 100)).count == 1
            assert limiter.health()["store"] == "redis" and not limiter.degraded

            server.stop()
            counts_while_down = [(await limiter.hit("client", 100)).count for _ in range(3)]
            assert counts_while_down == [2, 3, 4]  # in-process counters, on from Redis's count
            health = limiter.health()
            assert limiter.degraded and health["redis"] == "unreachable" and health["store"] == "in-process"
            lost = [record for record in caplog.records if "unreachable" in record.getMessage()]
            assert len(lost) == 1  # said once, not once per request

            server.start()  # a fresh, empty Redis on the same port
            # Not 1: the three counted in this process meanwhile still count (the one the new Redis never had
            # does not).
            assert (await limiter.hit("client", 100)).count == 4
            assert not limiter.degraded and limiter.health()["redis"] == "in use"
            assert any("reachable again" in record.getMessage() for record in caplog.records)
        finally:
            await limiter.close()



@pytest.mark.redis
async def test_a_process_that_loses_redis_counts_on_from_the_shared_count_it_last_saw(clock):
    with RedisServer() as server:
        processes = [RateLimiter(RedisCounters(server.url), clock=clock, recheck_interval=0) for _ in range(2)]
        try:
            counts = [(await processes[number % 2].hit("client", 5)).count for number in range(4)]
            assert counts == [1, 2, 3, 4]
            server.stop()
            # The first process last saw 3 of the 4, the second 4: each allows what was left of the limit when
            # it last heard from Redis, not the limit again (with its count started afresh, 5 more each).
            allowed = [[(await limiter.hit("client", 5)).allowed for _ in range(4)] for limiter in processes]
            assert allowed == [[True, True, False, False], [True, False, False, False]]
        finally:
            for limiter in processes:
                await limiter.close()


@pytest.mark.redis
async def test_requests_counted_in_the_process_while_redis_refused_it_count_on_when_it_accepts_again(clock):
    with RedisServer() as server:
        limiter = RateLimiter(RedisCounters(server.url), clock=clock, recheck_interval=0)
        operator = redis.Redis.from_url(server.url)
        try:
            assert [(await limiter.hit("client", 10)).count for _ in range(3)] == [1, 2, 3]
            operator.config_set("requirepass", "rotated")
            operator.client_kill_filter(_type="normal", skipme=True)  # the limiter's pooled connections
            assert [(await limiter.hit("client", 10)).count for _ in range(2)] == [4, 5]
            assert limiter.health()["redis"] == "misconfigured"
            operator.config_set("requirepass", "")
            # Redis kept its 3 and counts on (4, 5); the two counted in this process still count too.
            assert [(await limiter.hit("client", 10)).count for _ in range(2)] == [6, 7]
            assert limiter.health()["redis"] == "in use"
            assert await limiter.current_counts(["client"]) == {"client": 7}  # as the console shows it
        finally:
            operator.close()
            await limiter.close()


@contextlib.contextmanager
def dropping_connections(port: int):
    """A listener on ``port`` whose queue is full, so the kernel drops every further connection attempt and a
    client's connect times out: a Redis host gone from the network, or behind a firewall dropping packets."""
    with socket.create_server(("127.0.0.1", port), backlog=0):
        queued = [socket.socket() for _ in range(3)]
        try:
            for client in queued:
                client.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    client.connect(("127.0.0.1", port))
            yield
        finally:
            for client in queued:
                client.close()


@pytest.mark.redis
async def test_requests_counted_while_no_connection_to_redis_could_be_opened_count_on_when_it_returns(
        clock, monkeypatch):
    # Every connect times out, so no command reaches Redis: these requests are this process's alone, unlike one whose
    # command was sent and went unanswered (below). The command's own limit is out of the way: a connect's is at issue.
    monkeypatch.setattr(ratelimit, "REDIS_COMMAND_TIMEOUT_SECONDS", 5.0)
    server = RedisServer().start()
    limiter = RateLimiter(RedisCounters(server.url), clock=clock, recheck_interval=0)
    try:
        assert (await limiter.hit("client", 10)).count == 1
        server.stop()
        with dropping_connections(server.port):
            assert [(await limiter.hit("client", 10)).count for _ in range(3)] == [2, 3, 4]
            assert limiter.health()["reason"] == "Timeout connecting to server"
        server.start()  # a fresh, empty Redis on the same port
        # This one and the 3 counted here meanwhile, not 1 (the first, which the old Redis had, is gone with it).
        assert (await limiter.hit("client", 10)).count == 4
    finally:
        await limiter.close()
        server.stop()


@pytest.mark.redis
async def test_a_request_redis_counts_after_it_timed_out_is_not_counted_twice_when_redis_answers_again(clock):
    with RedisServer() as server:
        limiter = RateLimiter(RedisCounters(server.url), clock=clock, recheck_interval=0)
        try:
            assert [(await limiter.hit("client", 10)).count for _ in range(3)] == [1, 2, 3]
            server.pause()
            assert (await limiter.hit("client", 10)).count == 4  # sent to Redis, no answer in time
            server.resume()  # Redis reads the command it was sent, and counts it
            assert (await limiter.hit("client", 10)).count == 5  # not 6: counted in Redis, not here too
            server.pause()
            assert (await limiter.hit("client", 10)).count == 6  # the 5 Redis gave, and this one: the 4th not again
        finally:
            server.resume()
            await limiter.close()


@pytest.mark.redis
async def test_a_burst_on_a_fresh_client_waits_for_a_few_connections_and_is_all_counted_in_redis(clock, caplog,
                                                                                               monkeypatch):
    caplog.set_level(logging.WARNING, logger="solarserv.ratelimit")
    # The limits that bound a hung Redis are wall-clock time, which a machine busy with other work can use up
    # for a burst of 300 while Redis is fine (README); this test holds the pool's bound and the counting.
    monkeypatch.setattr(ratelimit, "REDIS_CONNECT_TIMEOUT_SECONDS", 5.0)
    monkeypatch.setattr(ratelimit, "REDIS_COMMAND_TIMEOUT_SECONDS", 5.0)
    with RedisServer() as server:
        inspector = redis.asyncio.Redis.from_url(server.url)
        opened_before = (await inspector.info("stats"))["total_connections_received"]
        limiter = RateLimiter(RedisCounters(server.url), clock=clock)
        try:
            decisions = await asyncio.gather(*(limiter.hit("burst", 1000) for _ in range(300)))
            opened = (await inspector.info("stats"))["total_connections_received"] - opened_before
            in_redis = int(await inspector.get(f"solarserv:rate:{int(clock() // WINDOW_SECONDS)}:burst"))
        finally:
            await limiter.close()
            await inspector.aclose()
    # A connection of its own for each request in flight: redis-py 8 refused the 101st, and hundreds of connects
    # at once outlasted the connect timeout; either way requests were counted in this process, Redis "unreachable".
    assert sorted(decision.count for decision in decisions) == list(range(1, 301)) and in_redis == 300
    assert not limiter.degraded and not caplog.records
    assert opened <= REDIS_MAX_CONNECTIONS


class CountingCounters(RedisCounters):
    """Redis counters that count how often they are asked."""

    attempts = 0

    async def increment(self, name: str, window: int) -> int:
        self.attempts += 1
        return await super().increment(name, window)  # a probe too counts, on a name of its own


async def test_an_unreachable_redis_is_tried_once_per_interval_not_per_request(clock):
    shared = CountingCounters(f"redis://127.0.0.1:{unused_port()}/0")  # nothing listens there
    limiter = RateLimiter(shared, clock=clock, recheck_interval=3600)
    try:
        decisions = [await limiter.hit("client", 100) for _ in range(20)]
    finally:
        await limiter.close()
    assert [decision.count for decision in decisions] == list(range(1, 21))
    assert shared.attempts == 1
    assert limiter.degraded


@pytest.mark.redis
async def test_a_check_finds_redis_gone_and_back_with_no_request_to_count(clock, caplog):
    caplog.set_level(logging.INFO, logger="solarserv.ratelimit")
    with RedisServer() as server:
        limiter = RateLimiter(RedisCounters(server.url), clock=clock, recheck_interval=0)
        try:
            assert limiter.health()["redis"] == "not asked yet"
            await limiter.check_redis()
            assert limiter.health() == {"store": "redis", "redis": "in use", "redis_url": server.url}
            server.stop()
            await limiter.check_redis()
            assert limiter.degraded and limiter.health()["redis"] == "unreachable"
            server.start()
            await limiter.check_redis()
            assert not limiter.degraded and limiter.health()["redis"] == "in use"
        finally:
            await limiter.close()
    said = [record.getMessage() for record in caplog.records]
    assert said[0] == f"Redis at {server.url} answers: rate-limit counts are shared with every process using it."
    assert said[1].startswith(f"Redis at {server.url} is unreachable (")
    assert said[2:] == [f"Redis at {server.url} is reachable again: rate-limit counts are shared again."]


@pytest.fixture(scope="module")
def redis_with_a_password():
    with RedisServer(password="s3cret") as server:
        yield server


@pytest.fixture(params=["no password", "wrong password", "database out of range"])
def refused(request) -> tuple[str, str]:
    """(REDIS_URL, part of Redis's answer) for each way a Redis that answers can refuse solarserv."""
    if request.param == "database out of range":
        return urlsplit(request.getfixturevalue("redis_url"))._replace(path="/99").geturl(), "DB index is out of range"
    port = request.getfixturevalue("redis_with_a_password").port
    if request.param == "no password":
        return f"redis://127.0.0.1:{port}/0", "authenticated"
    return f"redis://:wrong@127.0.0.1:{port}/0", "invalid username-password pair"


@pytest.mark.redis
async def test_a_redis_that_refuses_the_url_is_misconfigured_not_unreachable(refused, clock, caplog):
    url, said = refused
    limiter = RateLimiter(RedisCounters(url), clock=clock, recheck_interval=0)
    try:
        await limiter.check_redis()
        assert [(await limiter.hit("client", 100)).count for _ in range(2)] == [1, 2]  # counted in this process
    finally:
        await limiter.close()
    health = limiter.health()
    assert limiter.degraded and health["store"] == "in-process" and health["redis"] == "misconfigured"
    assert said in health["reason"] and "misconfigured_since" in health
    logged = [record for record in caplog.records if record.name == "solarserv.ratelimit"]
    assert [record.levelname for record in logged] == ["ERROR"]  # once, though Redis was asked three times
    assert logged[0].getMessage().startswith(
        f"Redis at {config.redis_url_shown(url)} refuses solarserv ({health['reason']}): a configuration error, "
        "not an outage; "
        "fix the password, user or database in REDIS_URL, or Redis's access rules.")


@contextlib.contextmanager
def read_only_replica() -> Iterator[str]:
    """The URL of a Redis that is a replica, which refuses writes before any primary answers."""
    with RedisServer() as replica:
        with redis.Redis.from_url(replica.url) as client:
            client.replicaof("127.0.0.1", unused_port())
        yield replica.url


@pytest.fixture(params=["a user whose keys are others", "a user who may not run scripts", "a read-only replica"])
def answers_but_will_not_count(request, redis_with_a_password):
    """(REDIS_URL, part of Redis's answer) for a Redis that answers a PING and refuses to count: each is a
    mistake in the configuration an operator can make with a password that Redis accepts."""
    if request.param == "a read-only replica":
        with read_only_replica() as url:
            yield url, "READONLY"
        return
    user = f"test-{uuid.uuid4().hex[:8]}"
    commands, keys = (["+@all"], ["cache:*"]) if request.param == "a user whose keys are others" else (
        ["+ping", "+hello"], ["*"])
    with redis.Redis.from_url(redis_with_a_password.url) as client:
        client.acl_setuser(user, enabled=True, passwords=["+s3cret"], commands=commands, keys=keys)
    yield f"redis://{user}:s3cret@127.0.0.1:{redis_with_a_password.port}/0", "no permissions"


@pytest.mark.redis
def test_serve_will_not_start_on_a_redis_that_answers_but_will_not_count(answers_but_will_not_count):
    url, said = answers_but_will_not_count
    assert said in ratelimit.redis_refusal(url)


@pytest.mark.redis
async def test_a_redis_that_answers_but_will_not_count_is_misconfigured_from_the_first_check(answers_but_will_not_count,
                                                                                            clock):
    url, said = answers_but_will_not_count
    limiter = RateLimiter(RedisCounters(url), clock=clock, recheck_interval=0)
    try:
        for _ in range(2):  # a later check, as /healthz makes, finds it still refusing
            await limiter.check_redis()
            assert limiter.health()["redis"] == "misconfigured" and said in limiter.health()["reason"]
    finally:
        await limiter.close()


REPLICA_ADVICE = "point REDIS_URL at the primary, which takes writes: this Redis is a read-only replica"


@pytest.fixture
def replica_url() -> Iterator[str]:
    with read_only_replica() as url:
        yield url


@pytest.mark.redis
def test_serve_refusing_a_read_only_replica_says_to_point_redis_url_at_the_primary(replica_url):
    assert ratelimit.redis_refusal(replica_url).endswith(f"): {REPLICA_ADVICE}")


@pytest.mark.redis
async def test_a_server_finding_a_read_only_replica_logs_to_point_redis_url_at_the_primary(replica_url, clock,
                                                                                          caplog):
    limiter = RateLimiter(RedisCounters(replica_url), clock=clock, recheck_interval=0)
    try:
        await limiter.check_redis()
    finally:
        await limiter.close()
    logged = [record.getMessage() for record in caplog.records if record.name == "solarserv.ratelimit"]
    assert len(logged) == 1 and f"; {REPLICA_ADVICE}. Meanwhile" in logged[0]


@pytest.mark.redis
async def test_a_full_redis_is_full_not_misconfigured_and_serve_starts_on_it(clock, caplog):
    with RedisServer() as server, redis.Redis.from_url(server.url) as client:
        client.config_set("maxmemory", 1)  # reached at once; the policy is noeviction, Redis's default
        assert await asyncio.to_thread(ratelimit.redis_refusal, server.url) is None  # not a mistake in REDIS_URL
        limiter = RateLimiter(RedisCounters(server.url), clock=clock, recheck_interval=0)
        try:
            await limiter.check_redis()
            assert [(await limiter.hit("client", 100)).count for _ in range(2)] == [1, 2]  # counted in this process
            health = limiter.health()
            assert health["store"] == "in-process" and health["redis"] == "full" and "OOM" in health["reason"]
            assert "full_since" in health
            client.config_set("maxmemory", 0)
            await limiter.check_redis()
            assert limiter.health()["redis"] == "in use"
        finally:
            await limiter.close()
    logged = [record for record in caplog.records if record.name == "solarserv.ratelimit"]
    assert [record.levelname for record in logged] == ["WARNING", "WARNING"]  # full once, then room again
    assert logged[0].getMessage().startswith(f"Redis at {server.url} is full ({health['reason']}): ")


@pytest.mark.redis
async def test_redis_with_the_right_password_is_in_use(redis_with_a_password, clock):
    limiter = RateLimiter(RedisCounters(redis_with_a_password.url), clock=clock)
    try:
        await limiter.check_redis()
    finally:
        await limiter.close()
    assert limiter.health()["redis"] == "in use"


async def test_a_storm_of_checks_asks_an_unreachable_redis_once_per_interval(clock):
    shared = CountingCounters(f"redis://127.0.0.1:{unused_port()}/0")  # nothing listens there
    limiter = RateLimiter(shared, clock=clock, recheck_interval=3600)
    try:
        await asyncio.gather(*(limiter.check_redis() for _ in range(20)))
        await limiter.hit("client", 100)
        await limiter.check_redis()
    finally:
        await limiter.close()
    assert shared.attempts == 1
    assert limiter.health()["redis"] == "unreachable"


@pytest.mark.redis
async def test_requests_that_reach_redis_spare_it_the_checks(redis_url, clock):
    shared = CountingCounters(redis_url)
    limiter = RateLimiter(shared, clock=clock, recheck_interval=3600)
    try:
        await limiter.check_redis()
        await limiter.hit(unique_name(), 100)
        await asyncio.gather(*(limiter.check_redis() for _ in range(20)))
    finally:
        await limiter.close()
    assert shared.attempts == 2  # the first check, and the request
    assert limiter.health()["redis"] == "in use"


@pytest.mark.redis
async def test_a_request_that_reaches_redis_spares_it_the_checks_that_follow(redis_url, clock):
    shared = CountingCounters(redis_url)
    limiter = RateLimiter(shared, clock=clock, recheck_interval=3600)
    try:
        await limiter.hit(unique_name(), 100)  # no check before it: the request alone tells what Redis is
        await asyncio.gather(*(limiter.check_redis() for _ in range(20)))
    finally:
        await limiter.close()
    assert shared.attempts == 1


@pytest.mark.redis
async def test_a_redis_that_comes_back_refusing_the_url_is_misconfigured_not_still_unreachable(clock, caplog):
    with RedisServer(password="s3cret") as server:
        limiter = RateLimiter(RedisCounters(f"redis://127.0.0.1:{server.port}/0"), clock=clock, recheck_interval=0)
        try:
            server.stop()
            await limiter.check_redis()
            assert limiter.health()["redis"] == "unreachable"
            server.start()
            await limiter.check_redis()
            assert limiter.health()["redis"] == "misconfigured"
        finally:
            await limiter.close()
    assert [record.levelname for record in caplog.records if record.name == "solarserv.ratelimit"] == [
        "WARNING", "ERROR"]


async def test_a_hung_redis_costs_a_request_one_command_timeout_not_two():
    # The kernel accepts connections to this socket and nobody answers on them: Redis stopped with SIGSTOP.
    with socket.create_server(("127.0.0.1", 0)) as hung:
        counters = RedisCounters(f"redis://127.0.0.1:{hung.getsockname()[1]}/0")
        try:
            with pytest.raises(redis.exceptions.TimeoutError):
                await counters.increment(unique_name(), 7)
        finally:
            await counters.close()
        hung.setblocking(False)
        connections = 0
        with contextlib.suppress(BlockingIOError):
            while True:
                hung.accept()[0].close()
                connections += 1
    assert connections == 1  # not tried again on a fresh connection once the command timed out


def test_memory_only_limiter_reports_no_redis():
    assert RateLimiter().health() == {"store": "in-process", "redis": "not configured"}
    assert not RateLimiter().degraded


@pytest.mark.parametrize(("url", "shown"), [
    ("redis://:s3cret@127.0.0.1:6379/15", "redis://127.0.0.1:6379/15"),
    ("rediss://user:s3cret@cache.example:6380/0", "rediss://cache.example:6380/0"),
    ("redis://[::1]:7000/2", "redis://[::1]:7000/2"),
    ("redis://127.0.0.1", "redis://127.0.0.1"),
    ("unix:///run/redis.sock?db=2&password=s3cret", "unix:///run/redis.sock?db=2"),  # a socket's database
    ("redis://user:9999%2Fs3cret@cache.example:6379/0", "redis://cache.example:6379/0"),  # a "/" in a password
    ("rediss://cache.example:6380/0?ssl_cert_reqs=required&ssl_check_hostname=yes&ssl_min_version=772"
     "&client_name=solarserv", "rediss://cache.example:6380/0"),  # options solarserv takes
])
def test_logged_redis_urls_hold_no_password_and_name_the_database_used(url, shown):
    assert config.load(environ={"REDIS_URL": url}).redis_url == url
    assert config.redis_url_shown(url) == shown


SCHEME = "must start with redis://, rediss:// or unix:// (e.g. redis://127.0.0.1:6379/0)"
PORT = "the port must be a number from 1 to 65535"
SLASH = "a '/' in the user or password must be written %2F (it ended the host early)"


# Each refused URL is echoed as the logs show one (config.redis_url_shown): a password it holds, never.
@pytest.mark.parametrize(("url", "shown", "problem"), [
    ("http://127.0.0.1:6379", "http://127.0.0.1:6379", SCHEME),
    ("localhost:6379", "localhost:6379", SCHEME),
    ("redis://127.0.0.1:notaport/0", "redis://127.0.0.1:notaport/0", PORT),
    ("redis://127.0.0.1:99999/0", "redis://127.0.0.1:99999/0", PORT),
    # redis-py would use database 0 and 5 while the logs showed /abc and /3.
    ("redis://127.0.0.1:6379/abc", "redis://127.0.0.1:6379/abc",
     "the database (the URL's path) must be a number, got '/abc'"),
    ("redis://127.0.0.1:6379/3?db=5", "redis://127.0.0.1:6379/3?db=5",
     "give the database as the path (redis://host:port/N), not as ?db="),
    ("unix:///run/redis.sock?db=two", "unix:///run/redis.sock?db=two", "?db= must be a database number, got 'two'"),
    ("redis://:s3cret@127.0.0.1:notaport/0", "redis://127.0.0.1:notaport/0", PORT),
    ("redis://user:s3@cret@127.0.0.1:6379/abc", "redis://127.0.0.1:6379/abc",
     "the database (the URL's path) must be a number, got '/abc'"),
    ("user:s3cret@127.0.0.1:6379", "127.0.0.1:6379", SCHEME),
    # A mistyped scheme is shown as written: shown as the host alone, a URL missing its "://" looked right.
    ("redis//:s3cret@127.0.0.1:6379/0", "redis//127.0.0.1:6379/0", SCHEME),
    ("redis:/user:s3cret@127.0.0.1:6379/0", "redis:/127.0.0.1:6379/0", SCHEME),
    ("reddis//user:s3cret@127.0.0.1:6379/0", "reddis//127.0.0.1:6379/0", SCHEME),
    ("reddis://:s3cret@127.0.0.1:6379/0", "reddis://127.0.0.1:6379/0", SCHEME),
    ("unix:///run/redis.sock?password=s3cret&db=two", "unix:///run/redis.sock?db=two",
     "?db= must be a database number, got 'two'"),
    # A "/" in the password: what comes before it reads as the host and port, the rest as the database.
    ("redis://user:9999/s3cret@127.0.0.1:6379/0", "redis://127.0.0.1:6379/0", SLASH),
    ("redis://:my/s3cret@127.0.0.1:6379/0", "redis://127.0.0.1:6379/0", SLASH),
    ("redis://user/name:s3cret@127.0.0.1/0", "redis://127.0.0.1/0", SLASH),
])
def test_a_redis_url_redis_py_would_refuse_or_misread_is_a_settings_error_without_its_password(url, shown, problem):
    with pytest.raises(config.SettingsError) as refused:
        config.load(environ={"REDIS_URL": url})
    assert str(refused.value) == f"REDIS_URL={shown!r}: {problem}"
    assert "s3" not in str(refused.value)
