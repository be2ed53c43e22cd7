"""The benchmark scripts' own logic (scripts/bench_calc.py, scripts/bench_http.py, scripts/bench_stages.py), without
real loads."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime as dt
import json
import os
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from solarserv.request import parse_json_fields
from solarserv.solar import fast
from solarserv.web.api import decode_json

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))
import bench_calc  # noqa: E402
import bench_http  # noqa: E402
import bench_stages  # noqa: E402

ONE_FIT = ((0.0, 0.0, 1.0),)  # equation of time 0, declination 0, distance 1 au all day
OK_ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


def test_the_warm_core_fits_no_day_while_timed_with_more_days_than_the_services_cache(monkeypatch):
    fitted: list[int] = []

    def instant_fits(days):  # thousands of days fitted in no time
        fitted.extend(days)
        return dict.fromkeys(days, ONE_FIT)

    monkeypatch.setattr(fast, "_fit_days", instant_fits)
    samples = bench_calc.random_samples(fast.CACHED_DAYS + 300, seed=1)
    days = {(sample.instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).days for sample in samples}
    assert len(days) > fast.CACHED_DAYS

    row = bench_calc.warm_core(samples)

    assert len(row.answers) == len(samples)
    assert sorted(fitted) == sorted(days)  # each day once, in the warm-up


# --- the load clients against servers that misbehave, and what counts as failed ---------------------------


@contextlib.contextmanager
def tcp_server(handle: Callable[[socket.socket], None]) -> Iterator[str]:
    """A TCP server on loopback treating each connection with `handle` (then closing it); yields its URL."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            handle(self.request)

    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as server:
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


def answer_once_then_hang_up(connection: socket.socket) -> None:
    connection.recv(65536)
    connection.sendall(OK_ANSWER)
    connection.recv(65536)


def never_answer(connection: socket.socket) -> None:
    while connection.recv(65536):  # until the client gives up
        pass


def answer_every_request(status_line: bytes) -> Callable[[socket.socket], None]:
    def handle(connection: socket.socket) -> None:
        with connection.makefile("rb") as received:
            for line in received:
                if line == b"\r\n":  # the end of a request (GET: no body)
                    connection.sendall(status_line + b"\r\nContent-Length: 0\r\n\r\n")

    return handle


def record_and_answer(asked: list[bytes]) -> Callable[[socket.socket], None]:
    """Answers 200 to every GET and keeps its path in `asked`."""
    def handle(connection: socket.socket) -> None:
        with connection.makefile("rb") as received:
            for line in received:
                if line.startswith(b"GET "):
                    asked.append(line.split()[1])
                elif line == b"\r\n":
                    connection.sendall(OK_ANSWER)

    return handle


def asyncio_load(base_url: str, seconds: float) -> bench_http.Load:
    return bench_http.asyncio_load(base_url, [bench_http.Request("GET", "/")], 2, seconds, Path("unused"))


@pytest.mark.parametrize("client", ["asyncio", "wrk"])
@pytest.mark.parametrize("status_line", [b"HTTP/1.1 302 Found", b"HTTP/1.1 503 Service Unavailable"])
def test_answers_that_are_not_2xx_count_as_failed_and_not_as_throughput(client, status_line, tmp_path):
    if client == "wrk" and not shutil.which("wrk"):
        pytest.skip("wrk is not installed (apt-get install wrk)")
    with tcp_server(answer_every_request(status_line)) as base_url:
        load = bench_http.CLIENTS[client](base_url, [bench_http.Request("GET", "/")], 2, 1, tmp_path)
    assert load.answered > 0
    assert load.failed == load.answered
    assert load.requests_per_second == 0


def test_the_goal_is_not_met_with_failures_whatever_the_rate():
    hello_world = bench_http.Load(requests_per_second=1000, p50_ms=1, p99_ms=2, answered=10_000, failed=0,
                                  repeated=9_999)
    fast = bench_http.Load(requests_per_second=500, p50_ms=5, p99_ms=10, answered=5_000, failed=0, repeated=0)
    assert bench_http.goal_met(bench_http.Row("coordinates, POST", 1, fast, hello_world))
    failing = dataclasses.replace(fast, failed=1)
    assert not bench_http.goal_met(bench_http.Row("coordinates, POST", 1, failing, hello_world))


def test_the_asyncio_client_counts_a_closed_connection_as_failed_and_connects_again():
    with tcp_server(answer_once_then_hang_up) as base_url:
        load = asyncio_load(base_url, seconds=0.5)
    assert load.failed > 0
    assert load.answered > 2  # more than one answer on each of the two connections: it reconnected


@pytest.mark.timeout(60)
def test_the_asyncio_client_counts_an_answer_that_never_comes_as_failed(monkeypatch):
    monkeypatch.setattr(bench_http, "REQUEST_TIMEOUT_SECONDS", 0.2)
    with tcp_server(never_answer) as base_url:
        load = asyncio_load(base_url, seconds=0.5)
    assert load.answered == 0
    assert load.failed >= 2  # each connection's first request timed out


# --- servers that fail to start --------------------------------------------------------------------------


def test_a_server_that_exits_before_it_is_ready_is_reported_with_the_end_of_its_log(tmp_path):
    log = tmp_path / "servers.log"
    log.write_text("an earlier server's line\n")
    failing = [sys.executable, "-c", "import sys; print('starting', file=sys.stderr); sys.exit('no such port')"]
    with pytest.raises(SystemExit) as stopped, bench_http.running(failing, dict(os.environ), log):
        pytest.fail("it never became ready")
    message = str(stopped.value)
    assert "exited (1); the end of its log:\nstarting\nno such port" in message
    assert "earlier" not in message


@pytest.mark.slow
@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_to_the_benchmark_stops_its_servers(signal_number):
    benchmark = subprocess.Popen([sys.executable, str(SCRIPTS / "bench_http.py"), "--duration", "1"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started: list[psutil.Process] = []
    try:
        # Its first server said it was ready once the benchmark sends it the first request.
        while not psutil.Process(benchmark.pid).net_connections("tcp"):
            assert benchmark.poll() is None, "the benchmark ended before sending a request"
            time.sleep(0.01)
        started = psutil.Process(benchmark.pid).children(recursive=True)
        started += [process for child in started for process in child.children(recursive=True)]
        assert any("serve" in process.cmdline() for process in started)

        benchmark.send_signal(signal_number)
        benchmark.wait(timeout=60)
        _, alive = psutil.wait_procs(started, timeout=30)
        assert not alive
        assert benchmark.returncode == 128 + signal_number  # it ended through its own handler
    finally:
        benchmark.kill()
        benchmark.wait()
        for process in started:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()


@pytest.mark.parametrize(("arguments", "refusal"), [
    (["--profile", "--client", "asyncio"], "--duration 2.5: whole seconds only (py-spy)"),
    (["--client", "wrk"], "--duration 2.5: whole seconds only (wrk)"),
    (["--profile", "--client", "wrk"], "--duration 2.5: whole seconds only (wrk and py-spy)"),
])
def test_a_duration_in_fractions_of_a_second_is_refused_before_any_load_where_wrk_or_py_spy_runs(
        monkeypatch, capsys, arguments, refusal):
    monkeypatch.setattr(bench_http, "run_profile", lambda *_: pytest.fail("it profiled"))
    monkeypatch.setattr(bench_http, "run_benchmark", lambda *_: pytest.fail("it benchmarked"))
    with pytest.raises(SystemExit) as stopped:
        bench_http.main([*arguments, "--duration", "2.5"])
    assert stopped.value.code == 2
    assert refusal in capsys.readouterr().err


# --- what the load asks -----------------------------------------------------------------------------------


def test_queries_never_give_a_point_twice():
    queries = bench_http.Queries()
    pool = bench_http.dates(3, seed=1)
    first, second = queries.coordinates(pool, 20_000), queries.coordinates(pool, 20_000)
    points = [(query["latitude"], query["longitude"]) for query in first + second]
    assert len(set(points)) == len(points) == 40_000
    assert {query["date"] for query in first} == set(pool)


def test_warm_ups_and_measured_runs_on_one_server_never_ask_for_a_point_twice(tmp_path):
    queries, pool, asked = bench_http.Queries(), bench_http.dates(3, seed=1), []
    bench = bench_http.Bench("asyncio", 4, 0.2, tmp_path)  # far from 20,000 requests in 0.2 s
    with tcp_server(record_and_answer(asked)) as base_url:
        server = bench_http.Server(process=None, base_url=base_url, ready_seconds=0)
        loads = [bench.measure(server, lambda: bench_http.as_gets(queries.coordinates(pool, 20_000)))
                 for _scenario in range(2)]
    assert [load.repeated for load in loads] == [0, 0]
    assert len(asked) > 2 * 20_000 // bench_http.CHECK_EVERY  # the loads' requests, besides the checked ones
    assert len(set(asked)) == len(asked)


@pytest.mark.parametrize("client", ["asyncio", "wrk"])
def test_a_run_that_sends_more_requests_than_its_list_holds_says_how_many(client, tmp_path):
    if client == "wrk" and not shutil.which("wrk"):
        pytest.skip("wrk is not installed (apt-get install wrk)")
    three = [bench_http.Request("GET", f"/{number}") for number in range(3)]
    with tcp_server(record_and_answer([])) as base_url:
        load = bench_http.CLIENTS[client](base_url, three, 2, 1, tmp_path)
    assert load.answered > 3
    assert load.repeated >= load.answered - 3  # and the requests sent but not answered when the run ended


def test_the_two_process_scaling_of_the_api_and_of_hello_world_is_printed():
    def load(rate: float) -> bench_http.Load:
        return bench_http.Load(requests_per_second=rate, p50_ms=1, p99_ms=2, answered=1, failed=0, repeated=0)

    line = bench_http._scaling_line(api=(load(1_017), load(1_956)), hello_world=(load(6_975), load(11_129)))
    assert line == ("Two processes against one: 1.92 × for coordinates, POST with Redis counters; "
                    "1.60 × for hello-world")


# --- the profile's stages ---------------------------------------------------------------------------------


def test_a_profile_sample_counts_for_the_stage_of_its_innermost_recognised_frame():
    loop = "_run (/usr/lib/python3.11/asyncio/events.py:80);post (api.py:40)"
    raw = [f"{loop};admit (access.py:12);hit (/repo/solarserv/ratelimit.py:90) 3",
           f"{loop};log_request (logs.py:20);info (/usr/lib/python3.11/logging/__init__.py:1) 2",
           f"{loop};log_request (logs.py:20);request_summary (logs.py:30) 1",
           f"{loop};solar_events (/repo/solarserv/solar/events.py:10);sun_state (/repo/solarserv/solar/fast.py:1) 4",
           f"{loop};helper (/repo/solarserv/unknown.py:1) 1"]
    stages, _, total = bench_http._stage_shares(raw)
    assert stages == {"admission (API key, rate limit)": 3, "access log": 3, "sun position (engine)": 4,
                      "Tornado HTTP, asyncio event loop, handlers": 1}
    assert total == 11


def test_the_readme_profile_table_names_the_scripts_stages():
    readme = (SCRIPTS.parent / "README.md").read_text()
    table = readme.split("#### Where a request spends its time")[1].split("| stage | share of busy time |")[1]
    rows = [line.split("|")[1].strip() for line in table.split("\n\n")[0].splitlines()[2:]]
    assert len(rows) > 10
    assert set(rows) <= {stage for stage, _ in bench_http.STAGES} | {"other", bench_http.NO_PYTHON_FRAME}


def test_the_stages_timed_one_by_one_give_the_services_own_answers(services):
    # What scripts/bench stages times is the work of a request: a stage the pipeline gains would change the answer.
    bodies = [request.body for request in bench_http.as_posts(bench_http.Queries().coordinates(
        bench_http.dates(3, bench_http.SEED), 6))]
    timings, answers = bench_stages.stage_table(services.pipeline, bodies)
    assert next(iter(timings)) == bench_stages.REFERENCE and len(timings) == 7
    assert answers == [json.dumps(asyncio.run(services.pipeline.run(parse_json_fields(decode_json(body)))),
                                  ensure_ascii=False) for body in bodies]


def test_one_request_at_a_time_gives_the_answers_the_stages_give(services):
    # The row compares the same work in another order: any other work would make its time say nothing of order.
    bodies = [request.body for request in bench_http.as_posts(bench_http.Queries().coordinates(
        bench_http.dates(3, bench_http.SEED), 6))]
    _, staged = bench_stages.stage_table(services.pipeline, bodies)
    _, answers = bench_stages.one_at_a_time(services.pipeline, bodies)
    assert answers == staged


def test_the_stages_table_sums_the_stages_alone():
    table = bench_stages._table({bench_stages.REFERENCE: 10.0, "parsing": 100.0, "texts": 200.0,
                                 bench_stages.ONE_AT_A_TIME: 360.0})
    assert "| **every stage** | **300** | **30.00** | 100% |" in table
    assert f"| {bench_stages.ONE_AT_A_TIME} | 360 | 36.00 | 120% |" in table
