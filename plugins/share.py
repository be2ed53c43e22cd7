"""Built-in plugin: the one shareable sentence (``share.text``); the core builds the link."""

from __future__ import annotations

from narratives import rounded_to_second
from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import Report


@hookimpl
def solarserv_share_text(report: Report) -> Narrative:
    return Narrative("share.txt.j2", {"true_solar": rounded_to_second(report.true_solar)})
