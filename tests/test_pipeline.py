"""Pipeline: the one path from a query to its report and its result JSON."""

from __future__ import annotations

import asyncio
import datetime as dt

from solarserv.models import SolarQuery
from solarserv.pipeline import Pipeline


def pipeline_on(services, today: dt.date) -> Pipeline:
    built = services.pipeline
    return Pipeline(built.geocoder, built.timezones, built.engine, built.narrator, today=lambda: today)


def test_the_report_and_the_result_judge_the_future_from_the_pipelines_today(services):
    query = SolarQuery(dt.date(2035, 6, 1), dt.time(12), latitude=48.8566, longitude=2.3522)
    assert asyncio.run(pipeline_on(services, dt.date(2026, 1, 1)).report(query)).confidence.level == "HIGH"
    result = asyncio.run(pipeline_on(services, dt.date(2024, 1, 1)).run(query))
    assert result["confidence"] == "LOW"
    assert "the date is more than 10 years ahead" in result["validation"]
