"""The spec's Result object, built from a finished Report and its texts: the one place fields are named."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

from solarserv.models import Report, SolarEvents
from solarserv.narration import Texts
from solarserv.solar import curves
from solarserv.timefmt import (
    DEGREES_DECIMALS,
    MINUTES_DECIMALS,
    format_hms,
    format_offset,
    offset_to_minute,
    round_to_second,
    shown_true_solar,
)


def numbers_json(report: Report) -> dict[str, Any]:
    """The result's fields up to its texts. Read before the plugins see the report: one that forces its way
    past the frozen dataclasses (``object.__setattr__``) then changes no number of the answer."""
    civil, location = report.civil, report.location
    true_solar = shown_true_solar(report)
    return {
        "true_solar_time": format_hms(true_solar),
        "true_solar_date": true_solar.date().isoformat(),
        "local_time": format_hms(civil.local),
        "utc_time": format_hms(civil.utc),
        "utc_date": civil.utc.date().isoformat(),
        "utc_offset": format_offset(civil.utc_offset, "minute"),
        "timezone": civil.zone,
        "dst": civil.dst,
        "date": report.query.date.isoformat(),
        "location": {
            "place_name": location.place_name,
            "display_name": location.display_name,
            "latitude": location.latitude,
            "longitude": location.longitude,
            "country_code": location.country_code,
        },
        "calculation": {
            "equation_of_time_minutes": round(report.equation_of_time_minutes, MINUTES_DECIMALS),
            "longitude_correction_minutes": round(report.longitude_correction_minutes, MINUTES_DECIMALS),
            "total_difference_minutes": round(report.total_difference_minutes, MINUTES_DECIMALS),
            "dst_minutes": round(report.dst_minutes, MINUTES_DECIMALS),
            "standard_meridian": round(report.standard_meridian, DEGREES_DECIMALS),
            "utc_offset_exact": format_offset(civil.utc_offset, "second"),
            "ephemeris": report.ephemeris,
            "tzdata_version": civil.tzdata_version,
        },
        "solar_position": {
            "azimuth": round(report.sun.azimuth, DEGREES_DECIMALS),
            "elevation": round(report.sun.elevation, DEGREES_DECIMALS),
        },
        "solar_events": events_json(report.events),
        "confidence": report.confidence.level,
    }


def result_json(numbers: dict[str, Any], texts: Texts) -> dict[str, Any]:
    """The whole result: ``numbers_json``'s fields, the texts, and the share link."""
    share_params = urlencode({
        "date": numbers["date"],
        "local_time": numbers["local_time"],
        "latitude": repr(numbers["location"]["latitude"]),
        "longitude": repr(numbers["location"]["longitude"]),
    })
    return {
        **numbers,
        "historical_context_status": "found" if texts.historical_context_found else "not_found",
        "summary": texts.summary,
        "historical_context": texts.historical_context,
        "solar_context": texts.solar_context,
        "validation": texts.validation,
        "share": {"text": texts.share_text, "url_params": share_params, "url": f"/?{share_params}"},
    }


def equation_of_time_json(year: int, days: Iterable[tuple[dt.date, float]], ephemeris: str) -> dict[str, Any]:
    return {
        "year": year,
        "utc_time": format_hms(curves.SAMPLE_TIME_UTC),
        "ephemeris": ephemeris,
        "days": [{"date": date.isoformat(), "equation_of_time_minutes": round(minutes, MINUTES_DECIMALS)}
                 for date, minutes in days],
    }


def events_json(events: SolarEvents) -> dict[str, Any]:
    """Local civil date-times in ISO 8601 with their offset: a sunset can fall on the next date.

    Each is the reading of the place's clock, as ``local_time`` and the texts are. ISO 8601 (and RFC 3339,
    JavaScript's Date) have no offsets with seconds: in a local-mean-time era (Paris 1905, +00:09:21) that
    reading carries the offset ``utc_offset`` shows (+00:09). Written as the same instant at +00:09, a solar
    noon read 11:57:06 where the clocks of Paris, the texts and ``local_time`` plus the total difference
    read 11:57:27.
    Each is rounded at its own offset, fixed: a zone's date-time loses its fold in arithmetic, and an
    event in the second pass of a repeated hour would be written at the first pass's offset (Troll's
    sunrise of 25 October 2026, 02:34 at +00:00, read +02:00: two hours early)."""

    def local(instant: dt.datetime | None) -> str | None:
        if instant is None:
            return None
        offset = instant.utcoffset()
        reading = round_to_second(instant.astimezone(dt.timezone(offset)))
        return reading.replace(tzinfo=dt.timezone(offset_to_minute(offset))).isoformat()

    length = events.day_length_minutes
    return {
        "state": events.state,
        "sunrise": local(events.sunrise),
        "solar_noon": local(events.solar_noon),
        "sunset": local(events.sunset),
        "day_length_minutes": None if length is None else round(length, MINUTES_DECIMALS),
    }
