"""How times and offsets are written, in the result JSON and in the texts alike."""

from __future__ import annotations

import datetime as dt
import math
from typing import Literal


def round_to_second(moment: dt.datetime) -> dt.datetime:
    """The nearest whole second (23:59:59.6 becomes 00:00:00 of the next day)."""
    return (moment + dt.timedelta(microseconds=500_000)).replace(microsecond=0)


def format_offset(offset: dt.timedelta, precision: Literal["auto", "minute", "second"] = "auto") -> str:
    """A UTC offset: "+05:45", "-10:00". "auto" adds seconds only when there are some (local mean time,
    "+00:09:21"); "minute" rounds to the nearest minute; "second" always shows them."""
    # Half up, like round_to_second (round() would send Ho Chi Minh's +07:06:30 of 1906 to +07:06).
    total = math.floor(offset.total_seconds() + 0.5)
    if precision == "minute":
        total = 60 * math.floor(total / 60 + 0.5)
    sign = "-" if total < 0 else "+"
    hours, rest = divmod(abs(total), 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}"
    show_seconds = precision == "second" or (precision == "auto" and seconds)
    return f"{text}:{seconds:02d}" if show_seconds else text
