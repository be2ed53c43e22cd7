"""Built-in plugin: the ``summary`` block, one paragraph in plain English from this request's numbers."""

from __future__ import annotations

from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import Report
from solarserv.timefmt import round_to_second


@hookimpl
def solarserv_summary(report: Report) -> Narrative:
    true_solar = round_to_second(report.true_solar)
    return Narrative("summary.txt.j2", {
        "true_solar": true_solar,
        # -1 / 0 / +1: a sundial can read a time of the day before or after the civil date.
        "solar_day_shift": (true_solar.date() - report.civil.local.date()).days,
        # Below the horizon a sundial casts no shadow; the text says so.
        "sun_up": report.sun.elevation > 0,
    })
