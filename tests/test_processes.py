"""`solarserv serve --processes 2`: two workers answer on one port, and SIGTERM stops them all."""

from __future__ import annotations

import json
import signal
import sys
import urllib.request

import psutil
import pytest
from servers import start_solarserv, stop_solarserv

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
    printed = []
    try:
        # Each worker prints the ready line when it accepts connections; the first also the console line.
        while sum("ready at" in line for line in printed) < 2:
            line = process.stdout.readline()
            assert line, f"the server stopped before both workers were ready: {printed}"
            printed.append(line.strip())
        ready = [line for line in printed if "ready at" in line]
        yield process, ready[0].split("ready at ")[1].rstrip("/"), printed
    finally:
        stop_solarserv(process)


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
def test_sigint_stops_every_worker_too(two_workers):
    process, _, _ = two_workers
    workers = [child.pid for child in psutil.Process(process.pid).children()]
    assert len(workers) == 2
    process.send_signal(signal.SIGINT)  # to the parent only, as `kill -INT` does
    assert process.wait(timeout=30) == 0
    assert not [pid for pid in workers if psutil.pid_exists(pid)]


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
