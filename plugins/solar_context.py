"""Built-in plugin: the ``solar_context`` block, the equation of time and longitude correction explained."""

from __future__ import annotations

from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import Report
from solarserv.solar import MINUTES_PER_DEGREE


@hookimpl
def solarserv_solar_context(report: Report) -> Narrative:
    return Narrative("solar_context.txt.j2", {
        # Degrees east (+) or west (−) of the standard meridian, as the correction measured them.
        "meridian_distance": report.longitude_correction_minutes / MINUTES_PER_DEGREE,
    })
