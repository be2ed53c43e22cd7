"""Quantities over a whole year, sampled day by day from a SunEngine (for pictures such as the page's chart).

The equation of time is a property of the instant alone: the engine measures the Sun's hour angle
geocentrically (see solar/reference.py), so the same minutes hold at every longitude and latitude. It is
therefore asked at 0°, 0°, once a day at 12:00 UTC, the instant almanacs tabulate it for.
"""

from __future__ import annotations

import datetime as dt
import functools

from solarserv.solar import SunEngine
from solarserv.solar.ephemeris import SUPPORTED_FIRST_DATE, SUPPORTED_LAST_DATE

SUPPORTED_YEARS = range(SUPPORTED_FIRST_DATE.year, SUPPORTED_LAST_DATE.year + 1)
SAMPLE_TIME_UTC = dt.time(12, 0)


@functools.cache  # a year never changes: at most one entry per supported year and engine
def equation_of_time_by_day(engine: SunEngine, year: int) -> tuple[tuple[dt.date, float], ...]:
    """(date, equation of time in minutes at 12:00 UTC) for every day of ``year``, in order."""
    if year not in SUPPORTED_YEARS:
        raise ValueError(f"year {year} is outside {SUPPORTED_YEARS.start}..{SUPPORTED_YEARS.stop - 1}")
    first = dt.date(year, 1, 1)
    dates = [first + dt.timedelta(days=offset) for offset in range((dt.date(year + 1, 1, 1) - first).days)]
    instants = [dt.datetime.combine(date, SAMPLE_TIME_UTC, tzinfo=dt.UTC) for date in dates]
    engine.prepare(instants[0].timestamp(), instants[-1].timestamp())  # the year's days in one go
    return tuple((date, engine.sun_state(instant, 0.0, 0.0).equation_of_time_minutes)
                 for date, instant in zip(dates, instants, strict=True))
