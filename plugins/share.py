"""Built-in plugin: the one shareable sentence (``share.text``); the core builds the link."""

from __future__ import annotations

from solarserv.hookspecs import Narrative, hookimpl
from solarserv.models import Report
from solarserv.timefmt import shown_true_solar


@hookimpl
def solarserv_share_text(report: Report) -> Narrative:
    return Narrative("share.txt.j2", {"true_solar": shown_true_solar(report)})
