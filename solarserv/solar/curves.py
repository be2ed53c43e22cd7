"""Quantities over a whole year, sampled day by day from a SunEngine (for pictures such as the page's chart).

The equation of time is a property of the instant alone: the engine measures the Sun's hour angle
geocentrically (see solar/reference.py), so the same minutes hold at every longitude and latitude. It is
therefore asked at 0°, 0°, once a day at 12:00 UTC, the instant almanacs tabulate it for.
"""

from __future__ import annotations

import calendar
import datetime as dt

from solarserv.solar import SunEngine
from solarserv.solar.ephemeris import SUPPORTED_FIRST_DATE, SUPPORTED_LAST_DATE

SUPPORTED_YEARS = range(SUPPORTED_FIRST_DATE.year, SUPPORTED_LAST_DATE.year + 1)
SAMPLE_TIME_UTC = dt.time(12, 0)


Curve = tuple[tuple[dt.date, float], ...]
# A year never changes: at most one entry per supported year and engine.
_CURVES: dict[tuple[SunEngine, int], Curve] = {}


def equation_of_time_by_day(engine: SunEngine, year: int) -> Curve:
    """(date, equation of time in minutes at 12:00 UTC) for every day of ``year``, in order; computed once."""
    if year not in SUPPORTED_YEARS:
        raise ValueError(f"year {year} is outside {SUPPORTED_YEARS.start}..{SUPPORTED_YEARS.stop - 1}")
    curve = _CURVES.get((engine, year))
    if curve is None:
        curve = _CURVES[engine, year] = _equation_of_time_by_day(engine, year)
    return curve


def computed_equation_of_time_by_day(engine: SunEngine, year: int) -> Curve | None:
    """``equation_of_time_by_day``'s curve if it has been computed, None if not (and it is not computed here)."""
    return _CURVES.get((engine, year))


def _equation_of_time_by_day(engine: SunEngine, year: int) -> Curve:
    curve = []
    for month in range(1, 13):
        instants = [dt.datetime.combine(dt.date(year, month, day), SAMPLE_TIME_UTC, tzinfo=dt.UTC)
                    for day in range(1, calendar.monthrange(year, month)[1] + 1)]
        # A month's days in one skyfield evaluation: the year's in one peaked at 55 MB, a month's peak at 6 MB, for
        # about a sixth more time (skyfield's fixed cost per evaluation, twelve times).
        engine.prepare(instants[0].timestamp(), instants[-1].timestamp())
        curve.extend((instant.date(), engine.sun_state(instant, 0.0, 0.0).equation_of_time_minutes)
                     for instant in instants)
    return tuple(curve)
