"""Built-in plugin: the ``summary`` block, one paragraph in plain English from this request's numbers."""

from __future__ import annotations

from solarserv.formatting import adds_up_to_the_second
from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import Report
from solarserv.solar.events import above_standard_altitude
from solarserv.timefmt import shown_true_solar


@hookimpl
def solarserv_summary(report: Report) -> Narrative:
    true_solar = shown_true_solar(report)
    return Narrative("summary.txt.j2", {
        "true_solar": true_solar,
        # -1 / 0 / +1: a sundial can read a time of the day before or after the civil date.
        "solar_day_shift": (true_solar.date() - report.civil.local.date()).days,
        # "up", "rim" (the centre below the horizon, the upper rim above it: risen by the almanac's
        # standard, as sunrise and sunset count) or "down", where a sundial casts no shadow.
        "sun": "up" if report.sun.elevation > 0
               else "rim" if above_standard_altitude(report.location.latitude, report.sun) else "down",
        # The terms of the difference, each to the second, can miss the difference to the second by one.
        "terms_add_up": adds_up_to_the_second(report.total_difference_minutes, report.equation_of_time_minutes,
                                              report.longitude_correction_minutes, -report.dst_minutes),
    })
