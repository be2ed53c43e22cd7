"""JPL DE421 and skyfield's timescale, each loaded once and never downloaded, plus the time-scale rule.

The Sun's hour angle follows the rotation of the Earth (UT1); civil clocks follow UTC. ``skyfield_time``
turns an aware UTC instant into a skyfield ``Time`` whose UT1 is:

* UTC + (UT1 − UTC) from skyfield's built-in IERS table, inside the table's coverage
  (``iers_table_coverage()``, read from the table itself: 1973-01-02 … 2027-01-23 with skyfield 1.55);
* UTC itself everywhere else:
  - before 1972 clocks kept mean solar time at Greenwich (GMT; from 1961 UTC with "rubber" seconds and
    small steps that held it within 0.1 s of UT2), so an old clock reading is UT. Skyfield's own UTC scale
    is TAI − 10 s before 1972; read literally it puts true solar time off by +36.6 s in 1905 and +13 s
    in 1950;
  - from 1972 leap seconds keep |UT1 − UTC| < 0.9 s, so in the gap before the table (1972) and after its
    end (UT1 − UTC not yet known) taking 0 costs less than 0.9 s of solar time.

TT, and so the Sun's place on the ephemeris, then follows skyfield's ΔT model for that UT1.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib.resources

from skyfield.api import load, load_file
from skyfield.jpllib import SpiceKernel
from skyfield.timelib import Time, Timescale

from solarserv.solar import UNIX_EPOCH
from solarserv.timefmt import round_to_second

# Civil dates the service answers for: inside DE421 (1899-07-29 … 2053-10-09) with room for every
# time zone and for the day around a solar event.
SUPPORTED_FIRST_DATE = dt.date(1900, 1, 1)
SUPPORTED_LAST_DATE = dt.date(2050, 12, 31)

EPHEMERIS_NAME = "JPL DE421"

_UNIX_EPOCH_JULIAN_DATE = 2440587.5
_DAY = dt.timedelta(days=1)


@functools.cache
def ephemeris() -> SpiceKernel:
    """DE421 as shipped by the skyfield-data package (no download; opened once, memory-mapped)."""
    path = importlib.resources.files("skyfield_data") / "data" / "de421.bsp"
    return load_file(str(path))


@functools.cache
def timescale() -> Timescale:
    """Skyfield's timescale built from the leap-second and IERS tables inside skyfield itself."""
    return load.timescale(builtin=True)


@functools.cache
def iers_table_coverage() -> tuple[dt.datetime, dt.datetime]:
    """The first and last UTC instants of skyfield's built-in UT1 − UTC table, read from the table."""
    ts = timescale()
    table_tt, _ = ts.delta_t_table  # daily TT Julian dates and ΔT, from IERS finals2000A.all
    # The rows are 0h UTC of each day; converting their stored TT back to UTC leaves ~10 µs of rounding.
    first, last = (ts.tt_jd(tt).utc_datetime() for tt in (table_tt[0], table_tt[-1]))
    return round_to_second(first), round_to_second(last)


def _in_iers_table(instant: dt.datetime) -> bool:
    first, last = iers_table_coverage()
    return first <= instant <= last


def julian_date(instant: dt.datetime) -> float:
    """The Julian date of an aware instant, counting every day as 86400 s (POSIX time, no leap seconds)."""
    return _UNIX_EPOCH_JULIAN_DATE + (instant - UNIX_EPOCH) / _DAY


def skyfield_time(instant: dt.datetime) -> Time:
    """A skyfield Time for an aware UTC instant, with UT1 chosen by the rule in the module docstring."""
    if _in_iers_table(instant):
        return timescale().from_datetime(instant)
    return timescale().ut1_jd(julian_date(instant))


def ut1_minus_utc_seconds(instant: dt.datetime) -> float:
    """UT1 − UTC in seconds as ``skyfield_time`` uses it: from the IERS table, else 0. (The tests hold the
    engines to outside references with it, by the same rule.)"""
    if _in_iers_table(instant):
        return float(timescale().from_datetime(instant).dut1)
    return 0.0
