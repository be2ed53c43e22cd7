"""Benchmark of place-name mode (GEOCODER=offline): run as `scripts/bench geocode [--json]`.

1. Index build: `python -m solarserv.geo.gazetteer DIR` on an empty data dir — wall time, peak RSS of
   that child process, size of the file.
2. Serving process: `python -m solarserv serve --port 0` on that data dir, then on an empty one (the
   server builds the index in a child process while it already answers) — time from process start to
   /healthz answering and to the first place-name answer of the API; resident memory (VmRSS, and the
   peak VmHWM) after a warm-up of mixed requests.
3. Geocoder alone, in this process: median and p99 of `locate` (names found, ambiguous, qualified),
   of `locate` for unknown names (404 with suggestions), and of `describe` (reverse geocoding).

Everything runs on loopback and stops by itself; temporary data dirs are removed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from solarserv.errors import ApiError  # noqa: E402
from solarserv.geo.gazetteer import index_path  # noqa: E402
from solarserv.geo.offline import OfflineGeocoder  # noqa: E402

NAMES = [
    "Tokyo", "Paris", "Paris, France", "Paris, TX", "Springfield, IL, US", "Springfield", "München",
    "Bombay", "New York", "São Paulo, Brazil", "Nairobi", "Cairo, Egypt", "Москва", "東京", "Kashgar",
    "St. Louis, Missouri", "Sydney, Australia", "Reykjavík", "Buenos Aires, Argentina", "Den Haag",
    "Lima, Peru", "Canberra", "Toronto, Ontario", "Ciudad de México", "Peking", "Ushuaia", "Saigon",
]
UNKNOWN_NAMES = ["Pariss", "Springfeld", "Xyzzyqq", "Nairobbi", "Tokio Town", "Londn"]
QUERY = {"date": "2026-07-14", "local_time": "12:00"}


def measure_build(data_dir: Path) -> dict:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "solarserv.geo.gazetteer", str(data_dir)], check=True,
                   cwd=ROOT, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"build_seconds": round(seconds, 2), "build_peak_rss_mb": round(peak_kb / 1024),
            "index_mb": round(index_path(data_dir).stat().st_size / 1e6, 1)}


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _wait_for(url: str, wanted: int, deadline: float) -> float:
    """Poll `url` until it answers `wanted`; the perf_counter time it first did."""
    while time.perf_counter() < deadline:
        try:
            if _get(url)[0] == wanted:
                return time.perf_counter()
        except OSError:
            pass
        time.sleep(0.005)
    raise TimeoutError(f"{url} did not answer {wanted} in time")


def _memory_mb(pid: int) -> dict:
    status = Path(f"/proc/{pid}/status").read_text()
    fields = dict(re.findall(r"^(VmRSS|VmHWM):\s+(\d+) kB", status, re.MULTILINE))
    return {"rss_mb": round(int(fields["VmRSS"]) / 1024), "peak_rss_mb": round(int(fields["VmHWM"]) / 1024)}


def _api_url(base: str, **fields) -> str:
    return f"{base}/api/v1/solar-time?" + urllib.parse.urlencode({**QUERY, **fields})


def measure_server(data_dir: Path, requests: int) -> dict:
    environment = {**os.environ, "SOLARSERV_DATA_DIR": str(data_dir), "ANON_RPM": "100000000",
                   "GEOCODER": "offline", "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "solarserv", "serve", "--port", "0"], cwd=ROOT,
                              env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        for line in server.stdout:
            found = re.search(r"ready at (http://\S+?)/?$", line.strip())
            if found:
                base = found.group(1)
                break
        else:
            raise RuntimeError("the server exited before saying it was ready")
        deadline = started + 60
        healthy = _wait_for(f"{base}/healthz", 200, deadline)
        first_answer = _wait_for(_api_url(base, place_name="Paris, France"), 200, deadline)
        for index in range(requests):
            _get(_api_url(base, place_name=NAMES[index % len(NAMES)]) if index % 2 else
                 _api_url(base, latitude=48.85 + index % 7, longitude=2.35 + index % 11))
        return {"ready_seconds": round(healthy - started, 2),
                "first_place_answer_seconds": round(first_answer - started, 2),
                "warm_up_requests": requests, **_memory_mb(server.pid)}
    finally:
        server.terminate()
        server.wait(10)


def _timed(loop: asyncio.AbstractEventLoop, coroutine_function, arguments: list, rounds: int) -> dict:
    """Median and p99 (ms) of one awaited call per argument tuple, `rounds` times over, in wall-clock
    time and in this process's CPU time (which other load on the machine does not inflate); a refusal
    (404, 409) counts as an answer."""
    wall, cpu = [], []
    for _ in range(rounds):
        for argument in arguments:
            started, started_cpu = time.perf_counter(), time.process_time()
            try:
                loop.run_until_complete(coroutine_function(*argument))
            except ApiError:
                pass
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - started_cpu) * 1000)
    return {"calls": len(wall), "median_ms": _median(wall), "p99_ms": _p99(wall),
            "cpu_median_ms": _median(cpu), "cpu_p99_ms": _p99(cpu)}


def _median(samples: list[float]) -> float:
    return round(statistics.median(samples), 3)


def _p99(samples: list[float]) -> float:
    return round(sorted(samples)[int(0.99 * (len(samples) - 1))], 3)


def measure_lookups(data_dir: Path, rounds: int) -> dict:
    geocoder = OfflineGeocoder(data_dir)
    loop = asyncio.new_event_loop()
    try:
        started = time.perf_counter()
        loop.run_until_complete(geocoder.locate("Tokyo"))  # the first lookup of a fresh process
        first = (time.perf_counter() - started) * 1000
        generator = random.Random(1)
        towns = [loop.run_until_complete(geocoder.locate(name)).place for name in NAMES if "," in name]
        jitter = 0.2  # degrees: points in and around the towns
        near_towns = [(town.latitude + generator.uniform(-jitter, jitter),
                       town.longitude + generator.uniform(-jitter, jitter))
                      for town in towns for _ in range(20)]
        anywhere = [(generator.uniform(-60, 70), generator.uniform(-180, 180)) for _ in range(300)]
        few = max(1, rounds // 10)
        return {
            "first_locate_ms": round(first, 2),
            "locate": _timed(loop, geocoder.locate, [(name,) for name in NAMES], rounds),
            "locate_unknown": _timed(loop, geocoder.locate, [(name,) for name in UNKNOWN_NAMES], few),
            "describe_near_towns": _timed(loop, geocoder.describe, near_towns, few),
            "describe_anywhere": _timed(loop, geocoder.describe, anywhere, few),
        }
    finally:
        loop.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--rounds", type=int, default=200, help="passes over the name list (default 200)")
    parser.add_argument("--requests", type=int, default=300, help="HTTP warm-up requests (default 300)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="solarserv-bench-") as built, \
            tempfile.TemporaryDirectory(prefix="solarserv-bench-") as empty:
        results = {"build": measure_build(Path(built)),
                   "server": measure_server(Path(built), args.requests),
                   "server_first_start": measure_server(Path(empty), args.requests),
                   "lookups": measure_lookups(Path(built), args.rounds),
                   "load_average": os.getloadavg(), "cores": os.cpu_count()}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    build, lookups = results["build"], results["lookups"]
    print(f"machine: {results['cores']} cores, load average {results['load_average'][0]:.1f} at the end")
    print(f"index build (once per data dir): {build['build_seconds']} s, child peak RSS "
          f"{build['build_peak_rss_mb']} MB, index file {build['index_mb']} MB")
    for label, server in (("serving process, index built", results["server"]),
                          ("serving process, empty data dir", results["server_first_start"])):
        print(f"{label}: /healthz after {server['ready_seconds']} s, first place-name answer after "
              f"{server['first_place_answer_seconds']} s; RSS {server['rss_mb']} MB "
              f"(peak {server['peak_rss_mb']} MB) after {server['warm_up_requests']} requests")
    print(f"first locate in a fresh process: {lookups['first_locate_ms']} ms")
    for name in ("locate", "locate_unknown", "describe_near_towns", "describe_anywhere"):
        timing = lookups[name]
        print(f"{name}: median {timing['median_ms']} ms, p99 {timing['p99_ms']} ms wall-clock; CPU median "
              f"{timing['cpu_median_ms']} ms, p99 {timing['cpu_p99_ms']} ms ({timing['calls']} calls)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
