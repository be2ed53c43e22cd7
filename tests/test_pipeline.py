"""Pipeline: the one path from a query to its report and its result JSON."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time

from solarserv.models import SolarQuery
from solarserv.pipeline import Pipeline
from solarserv.solar import curves


def pipeline_on(services, today: dt.date) -> Pipeline:
    built = services.pipeline
    return Pipeline(built.geocoder, built.timezones, built.engine, built.narrator, today=lambda: today)


def test_the_report_and_the_result_judge_the_future_from_the_pipelines_today(services):
    query = SolarQuery(dt.date(2035, 6, 1), dt.time(12), latitude=48.8566, longitude=2.3522)
    assert asyncio.run(pipeline_on(services, dt.date(2026, 1, 1)).report(query)).confidence.level == "HIGH"
    result = asyncio.run(pipeline_on(services, dt.date(2024, 1, 1)).run(query))
    assert result["confidence"] == "LOW"
    assert "the date is more than 10 years ahead" in result["validation"]


def test_the_charts_years_are_computed_one_at_a_time_in_one_thread(services, monkeypatch):
    # Each year's computation peaks at megabytes, and a thread keeps the memory it frees: years computed together
    # in the default executor's threads made each process keep hundreds of MB.
    running, most_at_once, threads = 0, 0, set()
    lock = threading.Lock()

    def recorded(engine, year):
        nonlocal running, most_at_once
        with lock:
            running += 1
            most_at_once = max(most_at_once, running)
            threads.add(threading.get_ident())
        time.sleep(0.02)  # room for another to start alongside, if one can
        with lock:
            running -= 1
        return ((dt.date(year, 1, 1), 0.0),)

    monkeypatch.setattr(curves, "equation_of_time_by_day", recorded)

    async def eight_years():
        pipeline = pipeline_on(services, dt.date(2026, 1, 1))
        return await asyncio.gather(*(pipeline.equation_of_time(year) for year in range(2000, 2008)))

    assert [answer["year"] for answer in asyncio.run(eight_years())] == list(range(2000, 2008))
    assert most_at_once == 1 and len(threads) == 1


def test_a_year_already_computed_is_answered_while_another_is_being_computed(services, monkeypatch):
    # Every year went through the one chart thread, those already computed too: one asked while other years were being
    # computed waited for them all (20 s behind 20 years asked at once), where it is answered from memory.
    pipeline = pipeline_on(services, dt.date(2026, 1, 1))
    asyncio.run(pipeline.equation_of_time(2026))
    computing, release = threading.Event(), threading.Event()
    compute = curves.equation_of_time_by_day

    def held(engine, year):
        computing.set()
        release.wait(10)
        return compute(engine, year)

    monkeypatch.setattr(curves, "equation_of_time_by_day", held)

    # A year no earlier test of the session has computed with the shared engine: it goes to the chart thread.
    not_yet = next(year for year in curves.SUPPORTED_YEARS
                   if curves.computed_equation_of_time_by_day(pipeline.engine, year) is None)

    async def while_another_is_computed():
        being_computed = asyncio.ensure_future(pipeline.equation_of_time(not_yet))
        await asyncio.get_running_loop().run_in_executor(None, computing.wait, 10)
        answer = await pipeline.equation_of_time(2026)
        still_computing = not being_computed.done()
        release.set()
        await being_computed
        return answer, still_computing

    answer, still_computing = asyncio.run(while_another_is_computed())
    assert answer["year"] == 2026 and len(answer["days"]) == 365
    assert still_computing
