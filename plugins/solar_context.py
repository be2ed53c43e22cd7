"""Built-in plugin: the ``solar_context`` block, the equation of time and longitude correction explained."""

from __future__ import annotations

from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import Report


@hookimpl
def solarserv_solar_context(report: Report) -> Narrative:
    return Narrative("solar_context.txt.j2")
