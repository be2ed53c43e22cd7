"""Where a coordinate-mode answer's time goes, stage by stage, in one process: `scripts/bench stages`.

The HTTP benchmark's requests (bench_http.Queries: points never asked before around 30 places, dates from its
pool of 240) go through the pipeline's stages as a request does, one stage at a time over a round of requests,
each stage timed in CPU time of this process. No HTTP and no event loop between the stages, so each is timed
alone, its code and data kept in the processor's caches over the round; the row after the stages' sum takes new
requests of the same kind one at a time through them all, as a server does (README, Performance). A round's
requests are new, so no cache of places hides the reverse geocoding; the per-day fits of the engine serve
the pool's dates after the first round, as in a server.

The reference, timed in the same rounds, is what any JSON API does per request: decode the request's JSON and
encode a stored answer. Each stage is printed in µs per request (the best of the rounds: other work on the
machine only ever adds time) and as a multiple of the reference, which carries across machines.

    scripts/bench stages [--rounds N] [--requests N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_http  # noqa: E402  (scripts/ is not a package)

from solarserv import config  # noqa: E402
from solarserv.pipeline import Pipeline  # noqa: E402
from solarserv.request import parse_json_fields  # noqa: E402
from solarserv.result import numbers_json, result_json  # noqa: E402
from solarserv.web.api import decode_json  # noqa: E402

REFERENCE = "reference: decode the request's JSON, encode a stored answer"
ONE_AT_A_TIME = "every stage, one request at a time (Pipeline.run awaited, as a handler does)"


def stage_table(pipeline: Pipeline, bodies: Sequence[str]) -> tuple[dict[str, float], list[str]]:
    """Seconds of CPU time each stage took over ``bodies``, the reference first, and the answers the stages
    gave together; each stage works on what the one before it gave."""
    timings: dict[str, float] = {}

    def timed(name: str, step: Callable[[Any], Any], inputs: Sequence[Any]) -> list[Any]:
        started = time.process_time()
        outputs = [step(value) for value in inputs]
        timings[name] = time.process_time() - started
        return outputs

    stored = json.loads(json.dumps(asyncio.run(_answered(pipeline, bodies[0]))))
    timed(REFERENCE, lambda body: (json.loads(body), json.dumps(stored, ensure_ascii=False)), bodies)
    queries = timed("request parsing (JSON to a query)", lambda body: parse_json_fields(decode_json(body)), bodies)
    loop = asyncio.new_event_loop()
    try:
        # The offline geocoder's coroutines never wait for anything on these points: run each to its end.
        locations = timed("place: zone, reverse geocoding, border, country",
                          lambda query: loop.run_until_complete(pipeline.locate(query)), queries)
    finally:
        loop.close()
    reports = timed("civil time and the calculation (Sun, events, confidence)",
                    lambda pair: pipeline.calculate(*pair), list(zip(queries, locations, strict=True)))
    numbers = timed("the result's numbers (numbers_json)", numbers_json, reports)
    texts = timed("texts: plugins and templates", pipeline.narrator.narrate, reports)
    answers = timed("the whole result, encoded (result_json, json.dumps)",
                    lambda pair: json.dumps(result_json(*pair), ensure_ascii=False),
                    list(zip(numbers, texts, strict=True)))
    return timings, answers


def one_at_a_time(pipeline: Pipeline, bodies: Sequence[str]) -> tuple[float, list[str]]:
    """Seconds of CPU time the same work took with each request taken through every stage before the next, as a
    server does, and the answers. Each stage then finds the caches of the processor (its code and data) holding the
    other stages' and not its own, where stage_table runs one stage's code over every request in turn."""

    async def answers() -> list[str]:
        return [json.dumps(await _answered(pipeline, body), ensure_ascii=False) for body in bodies]

    loop = asyncio.new_event_loop()
    try:
        started = time.process_time()
        answered = loop.run_until_complete(answers())
        return time.process_time() - started, answered
    finally:
        loop.close()


async def _answered(pipeline: Pipeline, body: str) -> dict[str, Any]:
    """The service's answer to one request's JSON body, as its handler gets it."""
    return await pipeline.run(parse_json_fields(decode_json(body)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds, each of new requests (default 7)")
    parser.add_argument("--requests", type=int, default=2000, help="requests per round (default 2000)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-stages-") as data_dir:
        # The embedded defaults on a data dir of its own, as bench_http's servers run.
        pipeline = Pipeline.build(config.load(bench_http.solarserv_environment(Path(data_dir))))
        queries = bench_http.Queries()
        pool = bench_http.dates(bench_http.DATE_POOL, bench_http.SEED)
        print(f"scripts/bench stages — {args.rounds} rounds of {args.requests} coordinate-mode requests "
              f"(bench_http's), after one round of warm-up", flush=True)
        print(f"Python {platform.python_version()}; load average before: "
              f"{' '.join(f'{value:.2f}' for value in os.getloadavg())}", flush=True)
        started = time.perf_counter()
        best: dict[str, float] = {}
        for round_number in range(args.rounds + 1):
            bodies = [request.body for request in bench_http.as_posts(queries.coordinates(pool, args.requests))]
            timings, _ = stage_table(pipeline, bodies)
            # Requests of its own: the points stage_table asked for are now among the places kept.
            bodies = [request.body for request in bench_http.as_posts(queries.coordinates(pool, args.requests))]
            timings[ONE_AT_A_TIME], _ = one_at_a_time(pipeline, bodies)
            if round_number:  # the first round warms the caches up (the index of places, the days' fits)
                best = {name: min(seconds, best.get(name, seconds)) for name, seconds in timings.items()}
    print(f"load average after: {' '.join(f'{value:.2f}' for value in os.getloadavg())}; "
          f"{time.perf_counter() - started:.0f} s\n")
    print(_table({name: 1e6 * seconds / args.requests for name, seconds in best.items()}))
    return 0


def _table(microseconds: dict[str, float]) -> str:
    reference, together = microseconds[REFERENCE], microseconds[ONE_AT_A_TIME]
    stages = {name: value for name, value in microseconds.items() if name not in (REFERENCE, ONE_AT_A_TIME)}
    whole = sum(stages.values())
    lines = ["| stage | µs per request | × reference | share |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {value:.0f} | {value / reference:.2f} | {value / whole:.0%} |"
              for name, value in stages.items()]
    lines.append(f"| **every stage** | **{whole:.0f}** | **{whole / reference:.2f}** | 100% |")
    lines.append(f"| {ONE_AT_A_TIME} | {together:.0f} | {together / reference:.2f} | {together / whole:.0%} |")
    lines.append(f"| {REFERENCE} | {reference:.0f} | 1.00 | |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
