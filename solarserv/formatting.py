"""How the texts write a value, and ``FILTERS``: the names templates call those functions by.

Times, UTC offsets and coordinates are written by solarserv.timefmt, which the result JSON shares; this
module adds what only the texts write (durations, angles, compass points, dates, zone abbreviations,
paragraphs). Kept apart from timefmt, which stays the small set of rules the JSON and the texts must agree
on. The one Jinja environment (``solarserv.narration``) registers ``FILTERS``, so an operator's templates in
``NARRATIVES_DIR`` and third-party plugin templates use the same formatting, and plugins writing text in
Python import the functions from here:

    {{ report.equation_of_time_minutes|signed_duration }}   +3 min 12 s
    {{ report.total_difference_minutes|duration }}          2 h 52 min 18 s
    {% if report.total_difference_minutes|whole_seconds == 0 %}   a difference of 0 s, to the second
    {{ report.total_difference_minutes|ahead_or_behind("the clock") }}   2 h 52 min 18 s behind the clock
    {{ report.civil.utc_offset|offset }}                    +05:45  (+00:09:21 for local mean time)
    UTC+02:00{{ report.civil.abbreviation|zone_abbreviation }}   UTC+02:00 (CEST)  (nothing for "+05")
    {{ report.true_solar|hms }}                             11:37:42
    {{ report.civil.local|clock }}                          14:30  (14:30:05 when seconds are set)
    {{ report.events.solar_noon|hm }}                       13:05
    {{ report.events.sunset|hm_on(report.civil.local.date()) }}   18:45 on 22 March 2024  (18:45 that day)
    {{ report.events.sunset|shown_date }}                   2024-05-17 for 23:59:40 on the 16th (as hm shows it)
    {{ report.location.latitude|latitude }}                 48.8566°N
    {{ report.standard_meridian|longitude }}                120°E
    {{ report.sun.elevation|degrees }}                      52.3°
    {{ report.sun.azimuth|compass }}                        south-east
    {{ report.query.date|long_date }}                       14 July 2026
    {{ history.summer_time|year_spans }}                    in 1918 and 1919, and every year from 1942 to 1945
    {% filter paragraph %} … {% endfilter %}               lines joined into one paragraph
"""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

# The month names, offsets, and the rounding to the minute, the second and the tenth of a degree of a JSON
# figure as solarserv.timefmt writes them.
from solarserv.text import in_words
from solarserv.timefmt import (
    DEGREES_DECIMALS,
    MONTH_NAMES,
    format_offset,
    rounded_figure,
    shown_minutes,
    whole_seconds,
)

# How times, offsets and coordinates are written is shared with the result JSON (solarserv.timefmt);
# the filter names are the ones templates use.
from solarserv.timefmt import format_clock as clock
from solarserv.timefmt import format_hm as hm
from solarserv.timefmt import format_hms as hms
from solarserv.timefmt import format_latitude as latitude
from solarserv.timefmt import format_longitude as longitude

_ONE_DAY = dt.timedelta(days=1)

# Clockwise from north; the texts write them out, the reverse geocoder's "35 km NE of Lyon" abbreviates them.
COMPASS_POINTS = ("north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west")


def adds_up_to_the_second(total: float, *terms: float) -> bool:
    """Whether ``terms``, each shown to the nearest second, add up to ``total`` shown to the nearest second
    (-5 min 31 s + -17 min 57 s miss a total of -23 min 27 s: each was rounded on its own)."""
    return whole_seconds(total) == sum(map(whole_seconds, terms))


# The last few kept: an answer writes its four differences (equation of time, longitude correction, DST, total)
# about fifteen times over its texts and checks, and each is its own request's.
@functools.lru_cache(maxsize=32)
def duration(minutes: float) -> str:
    """The size of a time difference: "2 h 52 min 18 s", "45 s", "1 h" (sign dropped, nearest second)."""
    seconds = abs(whole_seconds(minutes))
    # Zero parts left out, but never the whole: "1 h", "2 min 5 s", "0 s". Each case written as it reads,
    # not the whole written and its zeros cut out: an answer writes about fifteen durations.
    if seconds < 60:
        return f"{seconds} s"
    mins, secs = divmod(seconds, 60)
    if mins < 60:
        return f"{mins} min {secs} s" if secs else f"{mins} min"
    hours, mins = divmod(mins, 60)
    text = f"{hours} h {mins} min" if mins else f"{hours} h"
    return f"{text} {secs} s" if secs else text


def signed_duration(minutes: float) -> str:
    """A time difference with its sign: "+3 min 12 s", "-2 h 52 min 18 s", "0 s"."""
    text = duration(minutes)
    if text == "0 s":
        return text
    return ("-" if minutes < 0 else "+") + text


def ahead_or_behind(minutes: float, reference: str) -> str:
    """A time difference set against ``reference``: "3 min 12 s ahead of the clock", "45 s behind the
    clock", "the same as the clock" (when it is 0 s to the second)."""
    if whole_seconds(minutes) == 0:
        return f"the same as {reference}"
    return f"{duration(minutes)} {'ahead of' if minutes > 0 else 'behind'} {reference}"


def degrees(value: float, digits: int = 1) -> str:
    """An angle with its sign, rounded from the JSON's figure: "52.3°", "-12.4°", "0.0°" for -0.04°."""
    text = rounded_figure(value, digits)
    return f"-{text}°" if value < 0 and text.strip("0.") else text + "°"


def compass(azimuth: float) -> str:
    """The nearest of eight compass points for an azimuth (0° = north, clockwise): "south-east". Judged on the JSON's
    figure, a half-way azimuth (22.5°) taking the next point, as the page (page.js, compassPoint) reads it."""
    return COMPASS_POINTS[math.floor(round(azimuth, DEGREES_DECIMALS) % 360 / 45 + 0.5) % 8]


def compass_initials(azimuth: float) -> str:
    """The nearest compass point, abbreviated: "SE"."""
    return "".join(word[0] for word in compass(azimuth).split("-")).upper()


def long_date(value: dt.date) -> str:
    """"14 July 2026"."""
    return f"{value.day} {MONTH_NAMES[value.month - 1]} {value.year}"


def zone_abbreviation(value: str | None) -> str:
    """" (CEST)" to follow an offset when tzdata names it; nothing for a numeric one ("+05") or none."""
    return f" ({value})" if value and value[:1].isalpha() else ""


def shown_date(instant: dt.datetime) -> dt.date:
    """The date of the minute ``hm`` shows: 23:59:40 shows as 00:00 of the next day."""
    # From the minute hm shows, not from a rounded date-time: a datetime's replace() costs more than the rest of
    # this, and an answer shows about six dates of events.
    day = instant.date()
    return day + _ONE_DAY if shown_minutes(instant) == 1440 else day


def hm_on(instant: dt.datetime, day: dt.date) -> str:
    """HH:MM, naming the date when the minute shown falls on another day than ``day``: an event of the
    solar day can lie on either side of the civil one ("18:45 on 22 March 2024")."""
    shown_day = shown_date(instant)
    return hm(instant) if shown_day == day else f"{hm(instant)} on {long_date(shown_day)}"


def year_spans(runs: Sequence[Any]) -> str:
    """Runs of consecutive years (each with ``first_year`` and ``last_year``) as they read: "in 1918", "in 1918
    and 1919", "every year from 1916 to 1945". A run of one or two years is named by its years, next to its
    neighbours of one or two ("in 1916, 1918 and 1919"); only the first longer run says "every year"
    ("every year from 1916 to 1919, in 1922 and from 1940 to 1945")."""
    phrases: list[str] = []
    years: list[str] = []
    for run in runs:
        if run.last_year - run.first_year < 2:
            years.extend(str(year) for year in range(run.first_year, run.last_year + 1))
            continue
        if years:
            phrases.append("in " + in_words(years))
            years = []
        every = "" if any(phrase.startswith(("every", "from")) for phrase in phrases) else "every year "
        phrases.append(f"{every}from {run.first_year} to {run.last_year}")
    if years:
        phrases.append("in " + in_words(years))
    # A comma before the last "and" once a phrase has an "and" of its own: "in 1916 and 1918, and from …".
    return in_words(phrases, serial=any(" and " in phrase for phrase in phrases)) if phrases else ""


def paragraph(text: str) -> str:
    """Join a template's lines into one paragraph: templates stay readable, the text flows."""
    # A template's lines end in "\n", or " \n" before a block tag. Once those are spaces, a text holding no two
    # spaces together and no other whitespace (each of which str.isprintable refuses) is joined as it is: split
    # into its words and joined again, each text was copied word by word.
    joined = text.replace(" \n", " ").replace("\n", " ")
    if "  " in joined or not joined.isprintable():
        return " ".join(text.split())
    return joined.strip(" ")


FILTERS: dict[str, Callable[..., Any]] = {
    "hms": hms,
    "hm": hm,
    "hm_on": hm_on,
    "shown_date": shown_date,
    "clock": clock,
    "duration": duration,
    "signed_duration": signed_duration,
    "whole_seconds": whole_seconds,
    "ahead_or_behind": ahead_or_behind,
    "offset": format_offset,
    "degrees": degrees,
    "latitude": latitude,
    "longitude": longitude,
    "compass": compass,
    "long_date": long_date,
    "paragraph": paragraph,
    "year_spans": year_spans,
    "zone_abbreviation": zone_abbreviation,
}
