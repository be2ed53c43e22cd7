"""`solarserv serve --processes 2`: two workers answer on one port, and SIGTERM stops them all."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from counters import unused_port
from files import write
from servers import answers, refuses_connections, start_solarserv, stop_solarserv

from solarserv.geo import gazetteer
from solarserv.workers import GAVE_UP_STATUS, RESTART_PAUSES_SECONDS

PARIS = {"date": "2026-07-14", "local_time": "14:30", "latitude": 48.8566, "longitude": 2.3522}
# New connections to make before giving up on seeing both workers answer: each worker listens on a
# socket of its own (SO_REUSEPORT) and Linux spreads connections over them; a few tries suffice.
MAX_CONNECTIONS = 200


def post(url: str, fields: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(fields).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.status, json.load(response)


def healthz(base_url: str) -> dict:
    # A new connection per call (urllib does not keep them alive), so the kernel hands each to a worker.
    with urllib.request.urlopen(f"{base_url}/healthz", timeout=30) as response:
        return json.load(response)


@pytest.fixture
def two_workers(data_dir, tmp_path):
    """`solarserv serve --processes 2 --port 0` as a real subprocess; yields (process, base URL, lines).
    The session's data dir already holds the gazetteer index, so the workers open it at once."""
    process = start_solarserv(["--processes", "2", "--port", "0", "--data-dir", str(data_dir)],
                              tmp_path / "server.log")
    try:
        yield process, *until_both_workers_are_ready(process)
    finally:
        stop_solarserv(process)


def until_both_workers_are_ready(process, processes: int = 2) -> tuple[str, list[str]]:
    """The base URL and the lines printed, once both workers (or the ``processes`` serving) have printed their
    ready line (the first also prints the console line)."""
    printed = []
    while sum("ready at" in line for line in printed) < processes:
        line = process.stdout.readline()
        assert line, f"the server stopped before every process was ready: {printed}"
        printed.append(line.strip())
    ready = [line for line in printed if "ready at" in line]
    return ready[0].split("ready at ")[1].rstrip("/"), printed


@pytest.mark.slow
def test_both_workers_answer_and_sigterm_stops_them_all(two_workers):
    process, base_url, printed = two_workers
    workers = {child.pid for child in psutil.Process(process.pid).children()}
    assert len(workers) == 2

    answering = set()
    for _ in range(MAX_CONNECTIONS):
        answering.add(healthz(base_url)["process_id"])
        if answering == workers:
            break
    assert answering == workers
    for _ in range(4):  # on either worker, the places read before the fork name the point
        status, result = post(f"{base_url}/api/v1/solar-time", PARIS)
        assert status == 200 and result["true_solar_time"].startswith("12:3")
        assert result["location"]["display_name"] == "Paris, Île-de-France, France"
    assert "process_id" not in result

    process.terminate()  # SIGTERM to the parent only: it passes the signal on
    assert process.wait(timeout=30) == 0
    assert not [pid for pid in workers if psutil.pid_exists(pid)]  # stopped, and reaped by the parent

    printed += process.stdout.read().splitlines()
    ready = [line for line in printed if "ready at" in line]
    assert len(ready) == 2 and ready[0] == ready[1]
    # One login link: the admin token is made before the fork, so every worker knows it.
    assert sum(line.startswith("Console") for line in printed) == 1


@pytest.mark.slow
def test_a_port_another_servers_workers_listen_on_is_refused_as_in_use(two_workers, data_dir, tmp_path):
    # Bound with SO_REUSEPORT, as its workers' sockets are, the port was shared: the second server started, and the
    # kernel gave it its share of the first one's connections.
    _, base_url, _ = two_workers
    port = int(base_url.rsplit(":", 1)[1])
    log_path = tmp_path / "second.log"
    second = start_solarserv(["--processes", "2", "--port", str(port), "--data-dir", str(data_dir)], log_path)
    try:
        assert second.wait(timeout=60) == 2
    finally:
        stop_solarserv(second)
    assert log_path.read_text() == (f"solarserv: error: cannot listen on HOST='127.0.0.1' PORT={port}: Address already "
                                    "in use\n")


@pytest.mark.slow
@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGHUP], ids=lambda each: each.name)
def test_sigint_and_sighup_stop_every_worker_too(two_workers, tmp_path, stop_signal):
    # SIGHUP (the terminal of a server in the foreground closed) ended the parent at once, status 129, no line said
    # so; the workers then stopped on the SIGTERM Linux sends at a parent's death.
    process, _, _ = two_workers
    workers = [child.pid for child in psutil.Process(process.pid).children()]
    assert len(workers) == 2
    process.send_signal(stop_signal)  # to the parent only, as `kill -INT` does
    assert process.wait(timeout=30) == 0
    assert not [pid for pid in workers if psutil.pid_exists(pid)]
    logged = (tmp_path / "server.log").read_text()
    assert f"solarserv.workers: Stopping on {stop_signal.name}: passing it on to every worker (2 running)" in logged
    assert logged.count("stopped: exit status 0") == 2


@pytest.mark.slow
def test_under_nohup_sighup_stops_no_process(data_dir, tmp_path):
    # nohup ignores SIGHUP so that the server outlives its terminal: the server must not take it back.
    process = start_solarserv(["--processes", "2", "--port", "0", "--data-dir", str(data_dir)], tmp_path / "server.log",
                              under=["nohup"])
    try:
        base_url, _ = until_both_workers_are_ready(process)
        workers = psutil.Process(process.pid).children()
        for each in (process, *workers):
            each.send_signal(signal.SIGHUP)
        for _ in range(20):  # each on a new connection, which the kernel may send to either worker
            assert healthz(base_url)["status"] == "ok"
        assert process.poll() is None and all(worker.is_running() for worker in workers)
        assert " ended (" not in (tmp_path / "server.log").read_text()  # no worker was started again
        process.terminate()
        assert process.wait(timeout=30) == 0
    finally:
        stop_solarserv(process)


@pytest.mark.slow
def test_a_stopping_server_refuses_new_connections_while_it_answers_those_in_flight(two_workers):
    # The parent kept its listening socket (worker 0's) open while the workers answered the requests in flight:
    # every new connection was taken into its queue, where none would accept it, and waited until the server was gone.
    process, base_url, _ = two_workers
    port = int(base_url.rsplit(":", 1)[1])
    body = json.dumps(PARIS).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=30) as in_flight:
        in_flight.sendall(b"POST /api/v1/solar-time HTTP/1.1\r\nHost: solarserv\r\nContent-Type: application/json\r\n"
                          b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
        assert in_flight.recv(100).startswith(b"HTTP/1.1 100")  # its headers read: the request is in flight
        process.terminate()
        wait_for(lambda: refuses_connections(port), "new connections refused while a request is in flight")
        in_flight.sendall(body)
        assert in_flight.makefile("rb").read().startswith(b"HTTP/1.1 200 OK\r\n")  # answered, up to the server's close
    assert process.wait(timeout=30) == 0


def ignores(process: psutil.Process, signum: int) -> bool:
    """Whether ``process`` ignores the signal ``signum`` (the SigIgn mask of its /proc status)."""
    with contextlib.suppress(psutil.NoSuchProcess, FileNotFoundError):
        for line in Path(f"/proc/{process.pid}/status").read_text().splitlines():
            if line.startswith("SigIgn:"):
                return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return True  # ended meanwhile: nothing left to write a traceback


@pytest.mark.slow
@pytest.mark.parametrize("processes", [1, 2])
def test_a_second_ctrl_c_stops_a_stopping_server_at_once(data_dir, tmp_path, processes):
    # Pressed again while the server waited for a request in flight, Ctrl-C changed nothing: it waited on, 30 s at most.
    log_path = tmp_path / "server.log"
    # In a process group of its own, as a terminal's foreground job: Ctrl-C sends SIGINT to each of its processes.
    process = start_solarserv(["--processes", str(processes), "--port", "0", "--data-dir", str(data_dir)], log_path,
                              under=["setsid"])
    try:
        base_url, _ = until_both_workers_are_ready(process, processes)
        port = int(base_url.rsplit(":", 1)[1])
        serving = [psutil.Process(process.pid), *psutil.Process(process.pid).children()]
        with socket.create_connection(("127.0.0.1", port), timeout=30) as in_flight:
            in_flight.sendall(b"POST /api/v1/solar-time HTTP/1.1\r\nHost: solarserv\r\nContent-Length: 2\r\n"
                              b"Expect: 100-continue\r\n\r\n")
            assert in_flight.recv(100).startswith(b"HTTP/1.1 100")  # its headers read: the request is in flight
            os.killpg(process.pid, signal.SIGINT)
            wait_for(lambda: refuses_connections(port), "the server stopping")
            assert process.poll() is None  # waiting for the request in flight
            if processes > 1:  # a worker ending as the second Ctrl-C came wrote a traceback: they ignore it now
                assert all(ignores(worker, signal.SIGINT) for worker in serving[1:] if worker.is_running())
            os.killpg(process.pid, signal.SIGINT)
            assert process.wait(timeout=30) == 130
            assert in_flight.makefile("rb").read() == b""  # closed, unanswered
        assert not [each for each in serving if each.is_running()]
    finally:
        stop_solarserv(process)
    logged = log_path.read_text()
    assert "Traceback" not in logged
    if processes == 1:
        at_once = r"WARNING solarserv: Stopping at once on a second SIGINT: 1 request in flight left unanswered"
    else:  # the idle worker may have stopped already
        at_once = (r"WARNING solarserv.workers: Stopping at once on a second SIGINT: killing (1 worker|2 workers) "
                   r"still running, their requests in flight unanswered")
    assert logged.count(" at once ") == 1 and re.search(rf"{at_once} \(exit status 130\)\n", logged)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform != "linux", reason="workers learn of their parent's death from Linux (prctl)")
def test_workers_stop_when_their_parent_is_killed(two_workers):
    process, _, _ = two_workers
    workers = [psutil.Process(child.pid) for child in psutil.Process(process.pid).children()]
    assert len(workers) == 2
    process.kill()  # SIGKILL: the parent can pass nothing on
    process.wait(timeout=30)
    _, alive = psutil.wait_procs(workers, timeout=30)
    for orphan in alive:  # not left behind by a failing run
        orphan.kill()
    assert not alive  # they would keep serving the port, with no parent to stop or restart them


@pytest.mark.slow
def test_plugins_are_loaded_once_before_the_workers_fork(data_dir, tmp_path):
    # A worker restarted after the checkout changed must not import new code beside its siblings' old code (it
    # failed at every restart, and after 100 the parent gave up and stopped the healthy worker too).
    imported_by = tmp_path / "imported-by.txt"
    plugins = write(tmp_path / "plugins", "counted.py", f"import os\n\nwith open({str(imported_by)!r}, 'a') as "
                    "record:\n    record.write(f'{os.getpid()}\\n')\n").parent
    process = start_solarserv(["--processes", "2", "--port", "0", "--data-dir", str(data_dir),
                                "--plugins-dir", str(plugins)], tmp_path / "server.log")
    try:
        base_url, _ = until_both_workers_are_ready(process)
        assert healthz(base_url)["status"] == "ok"
        assert imported_by.read_text().split() == [str(process.pid)]  # by the parent, once
    finally:
        stop_solarserv(process)


# What `serve` loads before it forks (serving._load_code), then what a worker does: build the services and the
# server, answer by coordinates, by name and with the chart; printing what of the service it imported meanwhile.
WORKER_PROBE = """
import asyncio, datetime as dt, sys
from solarserv import config, serving
from solarserv.models import SolarQuery

settings = config.load(environ={"SOLARSERV_DATA_DIR": sys.argv[1]})
narrator = serving._load_code(settings)
loaded = set(sys.modules)

async def work():
    from solarserv.web.app import Services, make_app
    from solarserv.web.server import make_server

    services = Services.build(settings, narrator=narrator)
    make_server(make_app(settings, services))
    await services.pipeline.run(SolarQuery(dt.date(2026, 7, 14), dt.time(14, 30), latitude=48.8566, longitude=2.3522))
    await services.pipeline.run(SolarQuery(dt.date(2026, 7, 14), dt.time(14, 30), place_name="Paris, FR"))
    await services.pipeline.equation_of_time(2026)
    services.keys.close()

asyncio.run(work())
print(sorted(name for name in set(sys.modules) - loaded if name.startswith("solarserv")))
"""


@pytest.mark.slow
def test_a_worker_imports_none_of_the_services_code_after_the_fork(data_dir):
    # Whatever of solarserv (its built-in plugins included, or a PLUGINS_DIR file's solarserv_plugin_*) a worker
    # imported itself would come from the checkout as it is when the worker starts.
    imported = subprocess.run([sys.executable, "-c", WORKER_PROBE, str(data_dir)], capture_output=True, text=True,
                              check=True)
    assert imported.stdout.strip() == "[]"


def wait_for(condition, what: str, attempts: int = 600) -> None:
    """Wait until ``condition()`` holds, checking every 0.1 s, for at most a minute: a generous limit, not a timing."""
    for _ in range(attempts):
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


@pytest.mark.slow
def test_a_worker_stopped_alone_is_started_again_and_no_connection_waits_for_it(two_workers, tmp_path):
    # Tornado's fork_processes took its exit status 0 for done: it stayed stopped, and when it was worker 0, whose
    # listening socket the parent holds too, the kernel kept sending it about half of the new connections, which
    # waited there for ever.
    process, base_url, printed = two_workers
    parent = psutil.Process(process.pid)
    # Workers 0 and 1, by the parent's lines: forked within a millisecond, they may share a create_time.
    started = re.findall(r"Worker (\d) started \(pid (\d+)\)", (tmp_path / "server.log").read_text())
    first, second = (psutil.Process(int(pid)) for _, pid in sorted(started))
    first.terminate()
    first.wait(timeout=30)
    wait_for(lambda: len(parent.children()) == 2, "a worker started in place of the one stopped")
    workers = {child.pid for child in parent.children()}
    assert second.pid in workers and first.pid not in workers
    answering = set()
    for _ in range(MAX_CONNECTIONS):  # each on a new connection, which the kernel may send to either socket
        answering.add(healthz(base_url)["process_id"])
    assert answering == workers
    process.terminate()
    assert process.wait(timeout=30) == 0
    printed += process.stdout.read().splitlines()
    assert sum("ready at" in line for line in printed) == 3  # the worker started again too
    # Worker 0 printed the console line again: the login link, with the admin token generated for the run.
    assert sum(line.startswith("Console") for line in printed) == 1


@pytest.mark.slow
def test_the_console_line_is_printed_by_worker_0_started_again_when_its_first_start_died_before_printing_it(
        data_dir, tmp_path):
    # Only worker 0's first start printed it: one that died before it did left the run without a login link.
    reader, writer = os.pipe()
    os.set_blocking(writer, False)
    with contextlib.suppress(BlockingIOError):  # the pipe filled: each write of a line there waits for a read
        while True:
            os.write(writer, b"filler\n")
    os.set_blocking(writer, True)  # the server's too: the same open pipe
    log_path = tmp_path / "server.log"
    process = start_solarserv(["--processes", "2", "--port", "0", "--data-dir", str(data_dir)], log_path,
                              stdout=writer)
    os.close(writer)
    with os.fdopen(reader) as printed:
        try:
            wait_for(lambda: "Worker 0 started" in log_path.read_text(), "worker 0 started")
            first = re.search(r"Worker 0 started \(pid (\d+)\)", log_path.read_text()).group(1)
            os.kill(int(first), signal.SIGKILL)  # waiting to write its ready line, which comes before the console's
            wait_for(lambda: log_path.read_text().count("Worker 0 started") == 2, "worker 0 started again")
            lines = []
            while sum("ready at" in line for line in lines) < 2:  # worker 0 prints its console line next, at once
                lines.append(printed.readline())
                assert lines[-1], f"the server stopped before both workers were ready: {lines}"
            process.terminate()
            assert process.wait(timeout=30) == 0
            lines += printed.readlines()
        finally:
            stop_solarserv(process)
    assert sum(line.startswith("Console login link") for line in lines) == 1


@pytest.mark.slow
def test_a_worker_failing_at_start_is_started_again_after_longer_pauses_until_the_server_gives_up(data_dir, tmp_path):
    # fork_processes started it again at once, a hundred times in six seconds (a core spun), then ended with a
    # RuntimeError traceback.
    new_data_dir = tmp_path / "var"
    new_data_dir.mkdir()
    os.link(gazetteer.index_path(data_dir), gazetteer.index_path(new_data_dir))
    log_path = tmp_path / "server.log"
    process = start_solarserv(["--processes", "2", "--port", "0", "--data-dir", str(new_data_dir)], log_path)
    try:
        until_both_workers_are_ready(process)
        workers = psutil.Process(process.pid).children()
        # What checks before binding would have refused: every worker started from now on fails at start.
        (new_data_dir / "keys.db").write_bytes(b"Not a database: a file copied over it.\n" * 100)
        workers[0].kill()
        assert process.wait(timeout=120) == GAVE_UP_STATUS
        _, alive = psutil.wait_procs(workers, timeout=30)
        assert not alive  # the healthy one stopped with the parent
    finally:
        stop_solarserv(process)
    lines = log_path.read_text().splitlines()
    assert "Traceback (most recent call last):" not in lines
    pauses = [line.split("starting it again in ")[1] for line in lines if "starting it again in" in line]
    assert pauses == ["0.25 s", "0.5 s", "1 s", "2 s", "4 s"]
    # Killed, then started again five times, each failing: six ends in a row within 10 s of a start.
    assert sum(line.startswith("solarserv: error: The key store") for line in lines) == 5
    gave_up = [line for line in lines if "giving up" in line]
    assert len(gave_up) == 1 and "6 times in a row within 10 s of its start: giving up, stopping the server (exit " \
        "status 1)" in gave_up[0]


# The parent of two workers, with STOP_WAIT_SECONDS lowered; worker 0 ignores SIGTERM, as a worker stuck in a
# plugin would not act on it, and worker 1 stops on it. Each prints its number and pid once it is ready.
# 5 s, not 0.5: worker 1's own exit (the interpreter's teardown) took longer on a busy machine, and it was killed too.
STUCK_WORKER_STOP_WAIT_SECONDS = 5
STUCK_WORKER = f"""
import os, signal
from solarserv import workers

workers.STOP_WAIT_SECONDS = {STUCK_WORKER_STOP_WAIT_SECONDS}
worker = workers.fork_workers(2, [])
if worker.number == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
os.write(1, f"{{worker.number}} {{os.getpid()}}\\n".encode())  # one write: the two workers share the pipe
while True:
    signal.pause()
"""


def test_a_worker_that_does_not_stop_is_killed_once_the_stop_wait_is_over(tmp_path):
    # The parent waited for it for ever, holding the port, and so did whoever stopped the server.
    log_path = tmp_path / "parent.log"
    with log_path.open("w") as log:
        process = subprocess.Popen([sys.executable, "-c", STUCK_WORKER], stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        workers = dict(sorted(tuple(map(int, process.stdout.readline().split())) for _ in range(2)))
        process.terminate()
        assert process.wait(timeout=30) == 0
    finally:
        stop_solarserv(process)
    assert list(workers) == [0, 1] and not [pid for pid in workers.values() if psutil.pid_exists(pid)]
    lines = log_path.read_text().splitlines()
    killing = [line for line in lines if "killing it" in line]
    assert killing == [f"Worker 0 (pid {workers[0]}) still running {STUCK_WORKER_STOP_WAIT_SECONDS} s after it was "
                       "told to stop: killing it (SIGKILL)"]


# The parent of one worker that counts as started as soon as it runs (STARTING_SECONDS 0), as a worker serving for
# longer than 10 s does. It prints its pid once it runs.
LONG_RUNNING_WORKER = """
import os, signal
from solarserv import workers

workers.STARTING_SECONDS = 0
workers.fork_workers(1, [])
os.write(1, f"{os.getpid()}\\n".encode())
while True:
    signal.pause()
"""


def test_a_worker_that_ended_after_its_start_is_started_again_at_once_however_often(tmp_path):
    log_path = tmp_path / "parent.log"
    with log_path.open("w") as log:
        process = subprocess.Popen([sys.executable, "-c", LONG_RUNNING_WORKER], stdout=subprocess.PIPE, stderr=log,
                                   text=True)
    try:
        pids = [int(process.stdout.readline())]
        for _ in range(len(RESTART_PAUSES_SECONDS) + 2):  # more ends in a row than a failing start is allowed
            os.kill(pids[-1], signal.SIGKILL)
            pids.append(int(process.stdout.readline()))
        process.terminate()
        assert process.wait(timeout=30) == 0
    finally:
        stop_solarserv(process)
    lines = log_path.read_text().splitlines()
    assert [line for line in lines if " ended (" in line] == [
        f"Worker 0 (pid {pid}) ended (killed by signal 9, SIGKILL) after 0 s: starting it again" for pid in pids[:-1]]
    assert not [line for line in lines if "starting it again in" in line or "giving up" in line]


@pytest.mark.slow
def test_workers_whose_stdout_has_no_reader_any_more_serve_on(data_dir, tmp_path):
    # `serve | head -1` once head had gone: the ready line's failed write ended each worker at each start, until
    # the parent gave up (a server of one process stopped, status 1); no line said why.
    port = unused_port()
    log_path = tmp_path / "server.log"
    process = start_solarserv(["--processes", "2", "--port", str(port), "--data-dir", str(data_dir)], log_path)
    process.stdout.close()  # before either worker writes: as head does once it has its line
    try:
        wait_for(lambda: log_path.read_text().count("cannot write to stdout any more") == 2
                 or " ended (" in log_path.read_text(), "both workers writing their ready line")
        assert " ended (" not in log_path.read_text() and answers(port)
        process.terminate()
        assert process.wait(timeout=30) == 0
    finally:
        stop_solarserv(process)


def assert_serves_then_stops_cleanly(process: subprocess.Popen, port: int, log_path: Path) -> None:
    """The server answers (it did not end instead), stops on SIGTERM with status 0, and logged no traceback."""
    try:
        wait_for(lambda: process.poll() is not None or answers(port), "the server answering or ending")
        process.terminate()
        assert process.wait(timeout=30) == 0
    finally:
        stop_solarserv(process)
    assert "Traceback" not in log_path.read_text()


@pytest.mark.slow
def test_a_server_started_with_stdout_closed_serves(data_dir, tmp_path):
    # `serve >&-`: Python's sys.stdout is None, and the ready line ended the server with a traceback.
    port = unused_port()
    log_path = tmp_path / "server.log"
    process = start_solarserv(["--port", str(port), "--data-dir", str(data_dir)], log_path,
                              under=["sh", "-c", 'exec "$@" >&-', "sh"])
    assert_serves_then_stops_cleanly(process, port, log_path)


@pytest.mark.slow
def test_a_server_whose_stdout_is_full_serves_and_says_why_its_lines_are_dropped(data_dir, tmp_path):
    # Every failed write was told as "stdout has no reader any more", a full disk's too.
    port = unused_port()
    log_path = tmp_path / "server.log"
    with open("/dev/full", "w") as full:
        process = start_solarserv(["--port", str(port), "--data-dir", str(data_dir)], log_path, stdout=full)
    assert_serves_then_stops_cleanly(process, port, log_path)
    assert "cannot write to stdout any more (No space left on device)" in log_path.read_text()


@pytest.mark.slow
def test_a_server_whose_terminal_was_closed_serves(data_dir, tmp_path):
    # `serve &` in a terminal closed after it (disowned, or under setsid): a write to a terminal hung up fails with
    # EIO, not a broken pipe, and the ready line ended the server with a traceback.
    port = unused_port()
    log_path = tmp_path / "server.log"
    terminal, server_side = pty.openpty()
    process = start_solarserv(["--port", str(port), "--data-dir", str(data_dir)], log_path, stdout=server_side)
    os.close(server_side)
    os.close(terminal)  # before the server writes its ready line, which the hung-up terminal refuses
    assert_serves_then_stops_cleanly(process, port, log_path)
