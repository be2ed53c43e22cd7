"""Built-in plugin: the ``summary`` block, one paragraph in plain English from this request's numbers."""

from __future__ import annotations

from solarserv.formatting import adds_up_to_the_second
from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import Report
from solarserv.solar.events import above_standard_altitude
from solarserv.timefmt import rounded_figure, shown_true_solar

# Apparent elevations nearer the horizon than this may read 0.0° to a tenth; the figure decides (0.05 reads 0.1°).
_NEAR_HORIZON_DEGREES = 0.06


@hookimpl
def solarserv_summary(report: Report) -> Narrative:
    true_solar = shown_true_solar(report)
    return Narrative("summary.txt.j2", {
        "true_solar": true_solar,
        # -1 / 0 / +1: a sundial can read a time of the day before or after the civil date.
        "solar_day_shift": (true_solar.date() - report.civil.local.date()).days,
        "sun": _sun_seen(report),
        # The terms of the difference, each to the second, can miss the difference to the second by one.
        "terms_add_up": adds_up_to_the_second(report.total_difference_minutes, report.equation_of_time_minutes,
                                              report.longitude_correction_minutes, -report.dst_minutes),
    })


def _sun_seen(report: Report) -> str:
    """"horizon": the centre on it to the tenth of a degree the texts and the page show ("0.0° above the
    horizon" said nothing true); "up"; "rim": the centre below the horizon, the upper rim above it (risen by
    the almanac's standard, as sunrise and sunset count); or "down", where a sundial casts no shadow."""
    elevation = report.sun.elevation
    if abs(elevation) < _NEAR_HORIZON_DEGREES and rounded_figure(elevation, 1) == "0.0":
        return "horizon"
    if elevation > 0:
        return "up"
    return "rim" if above_standard_altitude(report.location.latitude, report.sun) else "down"
