"""The hooks a solarserv plugin can implement.

A plugin is a module (or object) with functions named like the specs below, decorated with
``@solarserv.hookspecs.hookimpl``. Every hook receives the finished ``Report`` (frozen: plugins add
text, never numbers) and returns data; the core renders ``Narrative`` values through its one Jinja
environment, so an operator's ``NARRATIVES_DIR`` can restyle any plugin's text.

The four text blocks (summary, historical context, solar context, share text) are each written by
exactly one plugin: a third-party plugin takes a block over from the built-in one, and two third-party
plugins claiming one block stop start-up with an error naming them.
Validation checks are additive: every plugin may contribute checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pluggy

from solarserv.models import Report

hookspec = pluggy.HookspecMarker("solarserv")
hookimpl = pluggy.HookimplMarker("solarserv")


@dataclass(frozen=True)
class Narrative:
    """Text to render: a template name in the narratives environment and the values it uses.

    The template also sees ``report`` (the finished Report) without it being passed here, so no value may
    take that name (``ValueError``; a shared Narrative's may, as its template sees no report). A value that
    is itself a Narrative is rendered first and passed as its text.

    ``shared=True`` declares that the text follows from the values alone, whatever the report: the
    template then sees only its values (no ``report``), and the narrator renders each distinct set of
    values once and reuses the text. The built-in historical context uses it for the zone's record, the
    same on every request in that zone. The values of a shared Narrative are compared as cache keys:

    * each must be hashable (a nested Narrative is fine: it is keyed by its text);
    * values of the same type that compare equal must render alike. Types are told apart (1, True and
      1.0 are three keys), but 0.0 and -0.0 are one key, and so are aware date-times of the same instant
      in different zones: pass such values as text, or date-times naive in the zone to show.
    """

    template: str
    values: Mapping[str, Any] = field(default_factory=dict)
    shared: bool = False

    def __post_init__(self) -> None:
        # Refused here, where the plugin's traceback points at its own line: rendered, such a value failed every
        # answer with Jinja's "got multiple values for keyword argument 'report'".
        if not self.shared and "report" in self.values:
            raise ValueError(f"Narrative {self.template!r} has a value named report, the name under which its "
                             "template sees the report: rename the value")


@dataclass(frozen=True)
class HistoricalContext:
    narrative: Narrative
    found: bool  # the zone has a recorded civil-time history (historical_context_status "found")


@dataclass(frozen=True)
class Check:
    """One line of the validation text: ✓ when passed, ✗ when not."""

    passed: bool
    text: str


@hookspec
def solarserv_summary(report: Report) -> Narrative:
    """The one-paragraph human explanation of the result (block ``summary``)."""


@hookspec
def solarserv_historical_context(report: Report) -> HistoricalContext:
    """The civil-time history of the zone, with whether any was found (block ``historical_context``)."""


@hookspec
def solarserv_solar_context(report: Report) -> Narrative:
    """What the equation of time and longitude correction mean here (block ``solar_context``)."""


@hookspec
def solarserv_share_text(report: Report) -> Narrative:
    """One shareable sentence about the result (``share.text``; the core builds the link)."""


@hookspec
def solarserv_validation_checks(report: Report) -> list[Check]:
    """Sanity checks on the result; every plugin's checks are listed in the ``validation`` text."""


@hookspec
def solarserv_template_dirs() -> list[Path]:
    """Directories of templates this plugin ships, searched after NARRATIVES_DIR, before built-ins."""


# Hooks whose answer fills one text block: exactly one plugin may implement each.
EXCLUSIVE_BLOCKS: dict[str, str] = {
    "solarserv_summary": "summary",
    "solarserv_historical_context": "historical_context",
    "solarserv_solar_context": "solar_context",
    "solarserv_share_text": "share.text",
}
