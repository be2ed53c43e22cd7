"""Built-in plugin: the zone's civil-time history from tzdata (``historical_context`` and its status)."""

from __future__ import annotations

from solarserv.geo.tzhistory import zone_history
from solarserv.hookspecs import HistoricalContext, Narrative, hookimpl
from solarserv.models import Report


@hookimpl
def solarserv_historical_context(report: Report) -> HistoricalContext:
    history = zone_history(report.civil.zone)
    record = Narrative("zone_record.txt.j2", {"history": history}, shared=True)
    return HistoricalContext(Narrative("historical_context.txt.j2", {"history": history, "record": record}),
                             found=history.found)
