"""Fixed-window request counters: in Redis (shared by every process) or in this process.

A window is one clock minute, aligned to :00, so every process and machine agrees on it without
talking to the others; the count for (who, which minute) is all there is to store. ``RateLimiter``
turns counts into decisions and keeps answering on in-process counters while Redis is unreachable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import redis.asyncio
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from solarserv import config

log = logging.getLogger("solarserv.ratelimit")

WINDOW_SECONDS = 60
# What a process last learnt of Redis holds this long. While Redis is unreachable, one request per interval
# tries it again and the others go straight to the in-process counters, so an outage costs one failed connect
# per interval, not one per request; /healthz asks Redis only when nothing has within the interval, so a
# storm of /healthz requests costs Redis one probe (a count, as a request makes) per interval.
RECHECK_INTERVAL_SECONDS = 2.0
# A healthy Redis answers in well under a millisecond; these bound what a hung one can cost a request.
REDIS_CONNECT_TIMEOUT_SECONDS = 0.25
REDIS_COMMAND_TIMEOUT_SECONDS = 0.5
# Connections a process keeps to Redis. A burst waits for one of these rather than opening one per request in
# flight: hundreds of connects at once outlasted the connect timeout on a busy machine, and redis-py 8 refuses
# the 101st connection outright; either was a false outage. Ten serve a burst of 500 in 50-260 ms (README).
REDIS_MAX_CONNECTIONS = 10
REDIS_KEY_PREFIX = "solarserv:rate"


class Counters(Protocol):
    """Where counts live. ``name`` says whose requests (``ip:203.0.113.9``), ``window`` which minute."""

    where: str  # for logs and /healthz

    async def increment(self, name: str, window: int) -> int:
        """Count one request; return the count so far in that window, this one included."""

    async def peek(self, names: Sequence[str], window: int) -> list[int]:
        """The counts in that window, counting nothing."""

    async def probe(self) -> None:
        """Return if the store would count a request; raise as ``increment`` would if it would not."""

    async def close(self) -> None:
        """Release connections."""


class MemoryCounters:
    """This process's counters: the default without REDIS_URL; with it, they note the counts Redis gives this
    process (``follow``), and count on from them while Redis is down."""

    where = "this process"

    def __init__(self) -> None:
        self._minutes: dict[int, _Minute] = {}

    async def increment(self, name: str, window: int) -> int:
        minute = self._minute(window)
        minute.here[name] += 1
        return minute.count(name)

    async def peek(self, names: Sequence[str], window: int) -> list[int]:
        minute = self._minutes.get(window, _Minute())
        return [minute.count(name) for name in names]

    def alone(self, names: Sequence[str], window: int) -> list[int]:
        """The requests this process counted that Redis never saw (while it was down), per name."""
        minute = self._minutes.get(window, _Minute())
        return [minute.here[name] for name in names]

    def count_sent(self, name: str, window: int) -> int:
        """Count one request whose command to Redis timed out: Redis may yet carry it out (a hung Redis reads it
        when it resumes), so it counts here until Redis answers again, and then not twice."""
        minute = self._minute(window)
        minute.sent[name] += 1
        return minute.count(name)

    def follow(self, name: str, window: int, redis_count: int) -> int:
        """Note one request Redis counted as ``redis_count``; return the count to decide by. While Redis is down
        this process counts on from the highest count Redis gave it, not from zero (a client would get its limit
        again in the same minute); back on Redis, the requests counted here meanwhile, which Redis never saw,
        still count, while those it was sent are in its count. The highest, not the latest: concurrent replies
        arrive in any order."""
        minute = self._minute(window)
        minute.from_redis[name] = max(minute.from_redis[name], redis_count)
        minute.sent.pop(name, None)
        return redis_count + minute.here[name]

    def _minute(self, window: int) -> _Minute:
        minute = self._minutes.get(window)
        if minute is None:
            minute = self._minutes[window] = _Minute()
            # The minute before the latest is kept for a request that read the clock before the minute turned
            # and is counted after it (its try of Redis outlasted the turn): starting that minute afresh would
            # drop the new one's counts. Older minutes go, keeping memory bounded.
            latest = max(self._minutes)
            for old in [old for old in self._minutes if old < latest - 1]:
                del self._minutes[old]
        return minute

    async def probe(self) -> None:
        pass

    async def close(self) -> None:
        pass


# Count one request and, when the count is new, make it expire once its window is over: atomic in Redis,
# one command and one reply (a MULTI/INCR/EXPIRE/EXEC pipeline costs this process ~60 µs more a request).
# The key names its minute, so it is never reused: the expiry only has to outlive the window.
_INCREMENT_SCRIPT = """
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count
"""


class RedisCounters:
    """Counters every process shares. One round trip per request: a script that increments and expires."""

    def __init__(self, url: str) -> None:
        self.where = config.redis_url_shown(url)
        self._client = redis.asyncio.Redis.from_pool(_connection_pool(url))
        # Sent by its SHA1 (EVALSHA); redis-py loads it again when Redis has forgotten it (a restart).
        self._increment = self._client.register_script(_INCREMENT_SCRIPT)

    async def increment(self, name: str, window: int) -> int:
        return int(await self._answer(self._increment(keys=[_redis_key(name, window)], args=[2 * WINDOW_SECONDS])))

    async def peek(self, names: Sequence[str], window: int) -> list[int]:
        if not names:
            return []
        values = await self._answer(self._client.mget([_redis_key(name, window) for name in names]))
        return [int(value or 0) for value in values]

    async def probe(self) -> None:
        # Counts as a request does, not a PING: a Redis that answers a PING can still refuse to count (a user
        # whose access rules leave out the script or the keys, a read-only replica), and that is what matters.
        await self.increment(_PROBE_NAME, _PROBE_WINDOW)

    @staticmethod
    async def _answer(exchange: Awaitable[Any]) -> Any:
        """Await one exchange with Redis, the wait for a pooled connection included, for no longer than a hung
        Redis costs a request on a connection of its own: while a hung Redis holds every pooled connection, the
        requests queued behind them would otherwise wait out the command timeout once for the connection and
        once more on it."""
        try:
            async with asyncio.timeout(REDIS_COMMAND_TIMEOUT_SECONDS):
                return await exchange
        except TimeoutError as exc:
            raise redis.exceptions.TimeoutError(
                f"no answer from Redis within {REDIS_COMMAND_TIMEOUT_SECONDS:g} s") from exc
        except redis.exceptions.TimeoutError as exc:
            if str(exc) == _CONNECT_TIMED_OUT:
                # No connection, so no command sent: Redis is unreachable, as when it refuses the connection. A
                # timeout would say the command may yet be carried out, and the requests counted here meanwhile
                # would be forgotten when Redis answers again (RateLimiter._count).
                raise redis.exceptions.ConnectionError(str(exc)) from exc
            raise

    async def close(self) -> None:
        await self._client.aclose()


def _connection_pool(url: str) -> redis.asyncio.BlockingConnectionPool:
    return redis.asyncio.BlockingConnectionPool.from_url(
        url,
        max_connections=REDIS_MAX_CONNECTIONS,
        timeout=None,  # the wait for a connection is bounded by each exchange's deadline (RedisCounters._answer)
        socket_connect_timeout=REDIS_CONNECT_TIMEOUT_SECONDS,
        socket_timeout=REDIS_COMMAND_TIMEOUT_SECONDS,
        # One immediate retry replaces a pooled connection that died with a Redis restart; redis-py's
        # default (three retries with backoff) would make every request wait out an outage. Not after a
        # timeout, which would double what a hung Redis costs a request.
        retry=Retry(NoBackoff(), retries=1, supported_errors=(redis.exceptions.ConnectionError,)),
    )


def url_option_fault(url: str) -> str | None:
    """What is wrong with the options in ``url``'s query, naming the first such option and never its value (a query
    may hold a password), else None. redis-py passes an option it does not know to the connection as a text, and one
    it does know overrides what ``_connection_pool`` sets: either stopped `solarserv serve` with a traceback, made
    Redis look unreachable at every request, or undid the bounds README gives. So only the options an operator has
    reason to set are taken (``_URL_OPTIONS``), each with its value checked, and every other is refused by name."""
    parts = urlsplit(url)
    for name, values in parse_qs(parts.query).items():  # as redis-py reads it: options without a value left out
        if name in _SET_BY_SOLARSERV:
            return f"solarserv sets ?{name}= itself: {_SET_BY_SOLARSERV[name]}; see README"
        option = _URL_OPTIONS.get(name)
        if option is None:
            taken = ", ".join(f"?{taken}=" for taken, option in _URL_OPTIONS.items() if parts.scheme in option.schemes)
            return f"solarserv takes no option ?{name}= in a {parts.scheme}:// URL; it takes {taken}"
        if parts.scheme not in option.schemes:
            return f"solarserv takes ?{name}= only in a {' or '.join(f'{s}://' for s in option.schemes)} URL"
        if option.check is not None and not option.check(values[0]):  # redis-py reads the first
            return f"?{name}= must be {option.expected}"
    return None


@dataclass(frozen=True)
class _UrlOption:
    """A REDIS_URL option solarserv takes: in which schemes, and what its value must be."""

    schemes: tuple[str, ...]
    check: Callable[[str], bool] | None = None  # None: any text
    expected: str = ""  # what ``check`` takes, as a refusal says it


def _true_or_false(value: str) -> bool:
    # Not "on" and "off": redis-py reads every word but 0, f, false, n and no as true, "off" among them.
    return value.casefold() in {"true", "false", "yes", "no", "1", "0"}


def _readable_file(value: str) -> bool:
    return os.path.isfile(value) and os.access(value, os.R_OK)


_TLS = ("rediss",)
_EVERY_SCHEME = ("redis", "rediss", "unix")
# What solarserv lets through to redis-py, and why each is one an operator needs.
_URL_OPTIONS = {
    # The credentials, where a URL gives them as options rather than before the host (the latter win in redis-py).
    "username": _UrlOption(_EVERY_SCHEME),
    "password": _UrlOption(_EVERY_SCHEME),
    # Names these connections in Redis's CLIENT LIST, to tell solarserv's from others'. Redis refuses a name with a
    # space or a character outside printable ASCII, which would fail every connection.
    "client_name": _UrlOption(_EVERY_SCHEME, lambda value: all("!" <= char <= "~" for char in value),
                              "printable ASCII without spaces, as Redis takes a client name"),
    # A socket has no path left for the database. config._redis_url checks the number, and refuses ?db= elsewhere.
    "db": _UrlOption(("unix",)),
    # How a TLS connection checks Redis's certificate and shows its own: what a managed or self-run TLS Redis needs.
    "ssl_cert_reqs": _UrlOption(_TLS, lambda value: value in {"none", "optional", "required"},
                                "none, optional or required"),
    "ssl_ca_certs": _UrlOption(_TLS, _readable_file, "a file solarserv can read"),
    "ssl_ca_path": _UrlOption(_TLS, os.path.isdir, "a directory"),
    "ssl_certfile": _UrlOption(_TLS, _readable_file, "a file solarserv can read"),
    "ssl_keyfile": _UrlOption(_TLS, _readable_file, "a file solarserv can read"),
    "ssl_check_hostname": _UrlOption(_TLS, _true_or_false, "true or false"),
    # Python already refuses TLS before 1.2; 1.3 is the one left to require.
    "ssl_min_version": _UrlOption(_TLS, lambda value: value in {"771", "772"},
                                  "771 (TLS 1.2) or 772 (TLS 1.3), as Python's ssl.TLSVersion numbers them"),
}
# The options _connection_pool sets, which one in the URL would override, and what each setting keeps.
_RETRY = "one immediate retry replaces a connection a Redis restart dropped, and none follows a timeout"
_SET_BY_SOLARSERV = {
    "socket_timeout": f"{REDIS_COMMAND_TIMEOUT_SECONDS:g} s bounds each request's exchange with Redis",
    "socket_connect_timeout": f"{REDIS_CONNECT_TIMEOUT_SECONDS:g} s bounds each connect to Redis",
    "timeout": f"the wait for a pooled connection is within the {REDIS_COMMAND_TIMEOUT_SECONDS:g} s that bounds each "
               "request's exchange with Redis",
    "max_connections": f"each process keeps at most {REDIS_MAX_CONNECTIONS} connections to Redis",
    "retry": _RETRY,
    "retry_on_timeout": _RETRY,
    "retry_on_error": _RETRY,
    "health_check_interval": "a pooled connection that died is replaced by its one retry, not looked for by a PING "
                             "before each command",
}


# redis-py's TimeoutError when a connection could not be opened within socket_connect_timeout (a host gone, or
# a firewall dropping packets), where one timing out on a sent command says "Timeout reading from …".
_CONNECT_TIMED_OUT = "Timeout connecting to server"


# What probes count: a name no client has (those are ip:… and key:…), in a minute no request falls in (1970's first).
_PROBE_NAME = "probe"
_PROBE_WINDOW = 0


def _redis_key(name: str, window: int) -> str:
    return f"{REDIS_KEY_PREFIX}:{window}:{name}"


def _refusal_remedy(exc: Exception) -> str:
    """What to change when Redis refuses: the log line, and `solarserv serve`'s refusal to start, end with it."""
    if _read_only(exc):
        return "point REDIS_URL at the primary, which takes writes: this Redis is a read-only replica"
    return "fix the password, user or database in REDIS_URL, or Redis's access rules"


def _refuses(exc: Exception) -> bool:
    """Whether Redis answered with a refusal: the password or user in REDIS_URL, a database it does not have,
    its access rules (NOPERM) or a read-only replica. Waiting does not mend these; changing the configuration
    does. Anything else (no connection, a timeout, Redis still loading its data, Redis full) is an outage."""
    return isinstance(exc, redis.exceptions.AuthenticationError | redis.exceptions.AuthorizationError
                      | redis.exceptions.ResponseError) and not _full(exc)


def _read_only(exc: Exception) -> bool:
    """Whether Redis refused the count as a replica, which takes no writes."""
    return _redis_answered(exc, redis.exceptions.ReadOnlyError, "READONLY")


def _full(exc: Exception) -> bool:
    """Whether Redis refused the count for want of memory: maxmemory reached, with the noeviction policy. Not
    REDIS_URL's fault, and it may pass (keys expire), so an outage."""
    return _redis_answered(exc, redis.exceptions.OutOfMemoryError, "OOM")


def _redis_answered(exc: Exception, kind: type[Exception], code: str) -> bool:
    """Whether ``exc`` is Redis's error ``code``, which redis-py raises as ``kind``: Redis 6 wraps it in the
    script's error, where redis-py sees only a ResponseError holding " -CODE "."""
    return isinstance(exc, kind) or f" -{code} " in str(exc)


def redis_refusal(url: str) -> str | None:
    """Ask Redis at ``url`` once (`solarserv serve` does, before it binds the port or forks): what is wrong
    when it refuses, else None. An unreachable Redis passes: it may come up after this service, which counts
    in each process meanwhile. The client lives in an event loop of its own, closed before the fork."""

    async def ask() -> str | None:
        counters = RedisCounters(url)
        try:
            await counters.probe()
        except (redis.exceptions.RedisError, OSError) as exc:
            if _refuses(exc):
                return f"Redis at {counters.where} refuses solarserv ({exc}): {_refusal_remedy(exc)}"
        finally:
            await counters.close()
        return None

    return asyncio.run(ask())


@dataclass(frozen=True)
class Decision:
    """The outcome of counting one request against a limit."""

    limit: int
    count: int
    reset: int  # Unix time at which the window ends
    now: float

    @property
    def allowed(self) -> bool:
        return self.count <= self.limit

    @property
    def remaining(self) -> int:
        return max(0, self.limit - self.count)

    @property
    def retry_after(self) -> int:
        """Whole seconds until the window resets, at least 1 (a client retrying after 0 s would fail)."""
        return max(1, math.ceil(self.reset - self.now))

    def headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }


class RateLimiter:
    """Counts requests per name in one-minute windows and says whether each is within its limit.

    With ``shared`` counters (Redis) every process sees one count. When they fail, requests are counted
    in this process instead, on from the counts it last had from Redis (each process then enforces the limit
    alone), the log says so once, and ``health()`` reports it; every ``RECHECK_INTERVAL_SECONDS`` one request
    tries Redis again.
    ``check_redis`` asks Redis without a request to count: at start, and for /healthz.
    """

    def __init__(self, shared: Counters | None = None, clock: Callable[[], float] = time.time,
                 recheck_interval: float = RECHECK_INTERVAL_SECONDS) -> None:
        self._shared = shared
        self._local = MemoryCounters()
        self._clock = clock
        self._recheck_interval = recheck_interval
        self._answered = False  # Redis has answered this process at least once
        self._failure: _Failure | None = None  # why requests are counted in this process, for /healthz
        self._next_check = 0.0  # monotonic time until which what was last learnt of Redis holds

    @classmethod
    def from_settings(cls, settings: Any) -> RateLimiter:
        return cls(RedisCounters(settings.redis_url) if settings.redis_url else None)

    @property
    def degraded(self) -> bool:
        """Redis is configured but unreachable, refusing or full: counting in-process."""
        return self._failure is not None

    async def hit(self, name: str, limit: int) -> Decision:
        """Count one request by ``name`` and decide it against ``limit`` requests per window."""
        now = self._clock()
        window = int(now // WINDOW_SECONDS)
        count = await self._count(name, window)
        return Decision(limit=limit, count=count, reset=(window + 1) * WINDOW_SECONDS, now=now)

    async def current_counts(self, names: Sequence[str]) -> dict[str, int]:
        """Requests counted so far in the current window, per name."""
        window = int(self._clock() // WINDOW_SECONDS)
        counts = None
        if self._redis_due():
            with self._learning_about_redis():
                in_redis, alone = await self._shared.peek(names, window), self._local.alone(names, window)
                counts = [shared + here for shared, here in zip(in_redis, alone, strict=True)]
        if counts is None:
            counts = await self._local.peek(names, window)
        return dict(zip(names, counts, strict=True))

    async def check_redis(self) -> None:
        """Ask Redis whether it answers, unless this process learnt that within the recheck interval (while
        requests flow, they keep it known). At start, so the log says at once whether Redis answers, and for
        /healthz, which so tells the truth while no API request comes in. Bounded by the client's timeouts."""
        if self._shared is not None and self._due_for_check():
            with self._learning_about_redis():
                await self._shared.probe()

    def health(self) -> dict[str, Any]:
        if self._shared is None:
            return {"store": "in-process", "redis": "not configured"}
        if self._failure is not None:
            since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self._failure.since))
            return {"store": "in-process", "redis": self._failure.state, "redis_url": self._shared.where,
                    "reason": self._failure.reason, f"{self._failure.state}_since": since}
        # Not asked yet: only while the first check_redis is under way (or before it, in tests).
        return {"store": "redis", "redis": "in use" if self._answered else "not asked yet",
                "redis_url": self._shared.where}

    async def close(self) -> None:
        if self._shared is not None:
            await self._shared.close()

    async def _count(self, name: str, window: int) -> int:
        """Count one request in Redis, or in this process when Redis fails; return the count to decide by."""
        if self._redis_due():
            with self._learning_about_redis() as exchange:  # when Redis fails, this goes on to count here
                return self._local.follow(name, window, await self._shared.increment(name, window))
            if exchange.timed_out:
                return self._local.count_sent(name, window)
        return await self._local.increment(name, window)

    def _redis_due(self) -> bool:
        return self._shared is not None and (not self.degraded or self._due_for_check())

    def _due_for_check(self) -> bool:
        now = time.monotonic()
        if now < self._next_check:
            return False
        # Set before asking, so the requests and probes arriving while Redis is asked do not each ask too.
        self._next_check = now + self._recheck_interval
        return True

    @contextlib.contextmanager
    def _learning_about_redis(self) -> Iterator[_Exchange]:
        """Around one exchange with Redis: note whether it answered, and swallow its failure."""
        exchange = _Exchange()
        try:
            yield exchange
        except (redis.exceptions.RedisError, OSError) as exc:
            exchange.timed_out = isinstance(exc, redis.exceptions.TimeoutError)
            self._lost_redis(exc)
        else:
            self._found_redis()

    def _found_redis(self) -> None:
        self._next_check = time.monotonic() + self._recheck_interval
        if self.degraded:
            log.warning("Redis at %s is reachable again: rate-limit counts are shared again.", self._shared.where)
        elif not self._answered:
            log.info("Redis at %s answers: rate-limit counts are shared with every process using it.",
                     self._shared.where)
        self._answered, self._failure = True, None

    def _lost_redis(self, exc: Exception) -> None:
        self._next_check = time.monotonic() + self._recheck_interval
        state = "full" if _full(exc) else "misconfigured" if _refuses(exc) else "unreachable"
        if self._failure is not None and self._failure.state == state:
            return  # said already
        if state == "misconfigured":
            log.error("Redis at %s refuses solarserv (%s): a configuration error, not an outage; %s. Meanwhile "
                      "requests are counted in this process (each process enforces the limits on its own) and "
                      "Redis is asked again every %g s.", self._shared.where, exc, _refusal_remedy(exc),
                      self._recheck_interval)
        elif state == "full":
            log.warning("Redis at %s is full (%s): it stores no new count until it has memory again (its maxmemory "
                        "is reached and its policy evicts nothing); counting requests in this process meanwhile, so "
                        "each process enforces the limits on its own.", self._shared.where, exc)
        else:
            log.warning("Redis at %s is unreachable (%s): counting requests in this process until it "
                        "returns; meanwhile each process enforces the limits on its own.",
                        self._shared.where, exc)
        self._failure = _Failure(state, str(exc), time.time())


@dataclass
class _Exchange:
    """How one exchange with Redis ended, for what comes after it."""

    timed_out: bool = False  # a command sent that Redis may yet carry out


@dataclass
class _Minute:
    """One minute's counts in this process."""

    from_redis: Counter[str] = field(default_factory=Counter)  # the highest count Redis gave, per name
    here: Counter[str] = field(default_factory=Counter)  # the requests counted in this process alone, per name
    sent: Counter[str] = field(default_factory=Counter)  # those counted here whose command Redis may yet count

    def count(self, name: str) -> int:
        return self.from_redis[name] + self.here[name] + self.sent[name]


@dataclass(frozen=True)
class _Failure:
    state: str  # as /healthz says it: "unreachable", "misconfigured" or "full"
    reason: str  # Redis's or the connection's error
    since: float  # wall-clock time
