"""Built-in plugin: sanity checks on every result, each recomputed from the report's own numbers.

Each check is a function ``Report → Check | None`` (None when it does not apply, e.g. day or night
for an instant more than 12 h from solar noon). A third-party plugin adds checks through the same hook,
``solarserv_validation_checks``.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable

from solarserv.formatting import adds_up_to_the_second, degrees, duration, hm_on, long_date, signed_duration
from solarserv.hookspecs import Check, hookimpl
from solarserv.models import Report
from solarserv.solar import MINUTES_PER_DEGREE, SECONDS_PER_DAY
from solarserv.timefmt import (
    format_hms,
    format_longitude,
    format_offset,
    round_to_second,
    seconds_since_midnight,
    shown_true_solar,
)

NOON_SECONDS = 43200  # true solar time at solar noon
DEGREES_PER_HOUR = 15
# The equation of time stays within −14.46 … +16.49 min in every year of the supported range (1900-02-11,
# 2048-11-02), so the limit holds to about a second.
EQUATION_OF_TIME_LIMIT_MINUTES = 16.5
# A correction beyond an hour means the zone's clocks are set for a distant meridian (western China,
# Spain, Argentina): worth a note, not an error.
FAR_FROM_MERIDIAN_MINUTES = 60
TOTAL_TOLERANCE_SECONDS = 0.001
TRUE_SOLAR_TOLERANCE_SECONDS = 0.5  # the same reading to the second
# Sunrise and sunset put the Sun's upper limb on the horizon with 34′ of standard refraction: its centre
# is then about −0.8° geometric but about −0.21° apparent (refracted for 10 °C and 1010 hPa, as `elevation` is).
# Inside this band of apparent elevations either answer is right; outside it, day and night are certain.
HORIZON_BAND_DEGREES = (-0.9, 0.0)
# Successive solar noons are 24 h apart to within 30 s (the steepest change of the equation of time,
# in late December), so true solar time can be carried from now to today's noon with this slack.
SOLAR_DAY_DRIFT_SECONDS_PER_DAY = 30
CLOCK_RESOLUTION_SECONDS = 1


def utc_offset_is_consistent(report: Report) -> Check:
    civil = report.civil
    utc = civil.utc.astimezone(dt.UTC).replace(tzinfo=None)
    clock_matches = abs((utc + civil.utc_offset - civil.local).total_seconds()) < CLOCK_RESOLUTION_SECONDS
    parts_add_up = (civil.standard_offset + civil.dst_offset == civil.utc_offset
                    and civil.dst_offset >= dt.timedelta(0))
    # The summer time term only where there is some (or a wrong one to show): "+ summer time 0 s" said nothing.
    summer = f" + summer time {duration(report.dst_minutes)}" if civil.dst_offset else ""
    parts = ("UTC, as tzdata records no local time here then" if civil.no_local_time else
             f"{'local mean time' if civil.local_mean_time else 'standard time'} "
             f"UTC{format_offset(civil.standard_offset)}{summer}")
    return Check(clock_matches and parts_add_up,
                 f"local time {format_hms(civil.local)} = UTC {format_hms(utc)} {format_offset(civil.utc_offset)}, "
                 f"which is {parts}")


def equation_of_time_in_range(report: Report) -> Check:
    equation = report.equation_of_time_minutes
    within = abs(equation) <= EQUATION_OF_TIME_LIMIT_MINUTES
    return Check(within, f"equation of time {signed_duration(equation)} is "
                         f"{'within' if within else 'outside'} ±{EQUATION_OF_TIME_LIMIT_MINUTES:g} min, "
                         "the most it reaches in any year")


def longitude_correction_matches_meridian(report: Report) -> Check:
    civil = report.civil
    meridian = report.standard_meridian
    standard_meridian = DEGREES_PER_HOUR * civil.standard_offset.total_seconds() / 3600
    correction = report.longitude_correction_minutes
    distance = report.meridian_distance_degrees
    # Differences of longitudes only matter modulo 360° (Kiritimati: 157.4°W on a meridian of 150°W).
    meridian_ok = abs(math.remainder(meridian - standard_meridian, 360)) < 1e-6
    distance_ok = abs(distance) <= 180 and abs(math.remainder(
        distance - (report.location.longitude - meridian), 360)) < 1e-6
    correction_ok = abs(correction - MINUTES_PER_DEGREE * distance) < 1e-6
    text = (f"longitude correction {signed_duration(correction)} = {MINUTES_PER_DEGREE} min/° × "
            f"{degrees(abs(distance), 4)} {'east' if distance >= 0 else 'west'} of the standard meridian "
            f"{format_longitude(meridian)} (15° × UTC{format_offset(civil.standard_offset)})")
    if abs(correction) > FAR_FROM_MERIDIAN_MINUTES:
        text += ("; note: more than an hour, because the zone's clocks are set for a meridian far from "
                 "here, so the Sun culminates far from 12:00 on the clock")
    return Check(meridian_ok and distance_ok and correction_ok, text)


def total_matches_hour_angle(report: Report) -> Check:
    """EoT + correction − DST must equal what the Sun's hour angle says minus the civil clock."""
    from_hour_angle = report.sun.true_solar_seconds - seconds_since_midnight(report.civil.local)
    total = report.total_difference_minutes
    agrees = abs(math.remainder(from_hour_angle - total * 60, SECONDS_PER_DAY)) <= TOTAL_TOLERANCE_SECONDS
    terms = (report.equation_of_time_minutes, report.longitude_correction_minutes, -report.dst_minutes)
    # Each figure is shown to the nearest second, so the figures shown can miss their sum by a second.
    rounded = "" if adds_up_to_the_second(total, *terms) else " (each to the nearest second)"
    # A hyphen-minus, as in every signed number of the texts (-5 min 55 s, UTC-05:00).
    dst = f" - DST {duration(report.dst_minutes)}" if report.dst_minutes else ""
    return Check(agrees,
                 f"total difference {signed_duration(total)} = equation of time "
                 f"{signed_duration(report.equation_of_time_minutes)} + longitude correction "
                 f"{signed_duration(report.longitude_correction_minutes)}{dst}{rounded}, "
                 f"{'matching' if agrees else 'not matching'} the Sun's hour angle to 1 ms")


def true_solar_time_is_local_plus_total(report: Report) -> Check:
    # true_solar is local time + total by definition (Report.true_solar); what can go wrong is that sum
    # disagreeing with the Sun's hour angle. The comparison takes the exact reading; the text shows it
    # as the JSON does, date included (23:59:59.6 is 00:00:00 of the next day).
    local = report.civil.local
    matches_sun = abs(math.remainder(seconds_since_midnight(report.true_solar) - report.sun.true_solar_seconds,
                                     SECONDS_PER_DAY)) < TRUE_SOLAR_TOLERANCE_SECONDS
    shown = shown_true_solar(report)
    other_day = f" on {long_date(shown.date())}" if shown.date() != local.date() else ""
    return Check(matches_sun,
                 f"true solar time {format_hms(shown)}{other_day} = local time {format_hms(local)} "
                 f"{signed_duration(report.total_difference_minutes)}, the reading of the Sun's hour angle")


def sun_matches_day_or_night(report: Report) -> Check | None:
    events = report.events
    now = report.civil.utc
    # The events describe the solar day around this date's solar noon. An instant more than 12 h from
    # that noon belongs to the solar day before or after, whose sunrise and sunset can be hours away
    # from these near the poles: the events cannot judge it.
    if abs(_seconds_between(now, events.solar_noon)) > SECONDS_PER_DAY / 2:
        return None
    elevation = report.sun.elevation
    if events.state == "polar_day":
        daytime, when = True, "polar day: the Sun does not set today"
    elif events.state == "polar_night":
        daytime, when = False, "polar night: the Sun does not rise today"
    else:
        # Aware date-times in different zones compare as instants. A missing event is the one day a
        # year the midnight Sun begins (no sunset) or ends (no sunrise).
        daytime = ((events.sunrise is None or events.sunrise <= now)
                   and (events.sunset is None or now <= events.sunset))
        # Each event dated when it falls on another day than the clock's (a sunset after midnight, a sunrise
        # the evening before): undated, such a span reads as ending before it begins.
        day = report.civil.local.date()
        if events.sunrise and events.sunset:
            span = f"{'inside' if daytime else 'outside'} sunrise {hm_on(events.sunrise, day)} – sunset " \
                   f"{hm_on(events.sunset, day)}"
        elif events.sunrise:
            span = f"{'after' if daytime else 'before'} sunrise {hm_on(events.sunrise, day)} (no sunset before the " \
                   "next solar midnight)"
        else:
            span = f"{'before' if daytime else 'after'} sunset {hm_on(events.sunset, day)} (no sunrise: up since the " \
                   "day before)"
        when = f"{'daytime' if daytime else 'night'}, {span}"
    low, high = HORIZON_BAND_DEGREES
    consistent = elevation > low if daytime else elevation < high
    return Check(consistent, f"Sun's elevation {degrees(elevation)} fits {when}")


def solar_noon_at_twelve(report: Report) -> Check:
    events = report.events
    elapsed = _seconds_between(report.civil.utc, events.solar_noon)
    at_noon = report.sun.true_solar_seconds + elapsed
    error = abs(math.remainder(at_noon - NOON_SECONDS, SECONDS_PER_DAY))
    allowed = CLOCK_RESOLUTION_SECONDS + SOLAR_DAY_DRIFT_SECONDS_PER_DAY * abs(elapsed) / SECONDS_PER_DAY
    # Dated when it falls on another day than the clock's: where the clocks run about 12 h from the Sun (the
    # South Pole on New Zealand time) a civil day can hold no noon, and the nearest lies just outside it.
    noon_day = round_to_second(events.solar_noon).date()
    on_day = f" on {long_date(noon_day)}" if noon_day != report.civil.local.date() else ""
    return Check(error <= allowed,
                 f"solar noon at {format_hms(events.solar_noon)}{on_day} clock time is 12:00 true solar time "
                 f"(carried from now: {error:.1f} s off, {allowed:.1f} s allowed)")


def _seconds_between(start: dt.datetime, end: dt.datetime) -> float:
    """Elapsed seconds between aware instants. Converting to UTC first matters: Python subtracts two
    datetimes that share a tzinfo as wall-clock times, which is an hour off across a DST change."""
    return (end.astimezone(dt.UTC) - start.astimezone(dt.UTC)).total_seconds()


CHECKS: tuple[Callable[[Report], Check | None], ...] = (
    utc_offset_is_consistent,
    equation_of_time_in_range,
    longitude_correction_matches_meridian,
    total_matches_hour_angle,
    true_solar_time_is_local_plus_total,
    sun_matches_day_or_night,
    solar_noon_at_twelve,
)


@hookimpl
def solarserv_validation_checks(report: Report) -> list[Check]:
    return [check for check in (run(report) for run in CHECKS) if check is not None]
