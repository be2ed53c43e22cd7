"""scripts/bench calc: the calculation core against per-call skyfield, NREL SPA (pvlib), PyEphem and astral.

Every method answers the same random (UTC instant 1900–2050, latitude, longitude) samples with true solar
time, azimuth and elevation, computed per call the way a user of that library would: one instant, one place.
Per-call skyfield (``SkyfieldEngine``) is the reference the errors are measured against; azimuth and
elevation errors count only where the reference elevation is above −1° (the last column: above +1°, clear
of the band where libraries cut refraction off at different altitudes). Calls are timed one by one with
the garbage collector off (as ``timeit`` does). The core is timed twice: warm (every sample's day already
fitted, in a cache big enough for all of them; the script stops if a timed call still had to fit one)
and cold (a fresh engine per sample, so each call pays for fitting its day).

Usage: scripts/bench calc [--samples N] [--seed S]     prints a Markdown table (about a minute)
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gc
import math
import os
import platform
import random
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import astral
import astral.julian
import astral.sun
import ephem
import pandas as pd
import pvlib

from solarserv.solar import SECONDS_PER_DEGREE, STANDARD_PRESSURE_MBAR, STANDARD_TEMPERATURE_C, wrap_seconds_of_day
from solarserv.solar.fast import CACHED_DAYS, DayFit, FastEngine
from solarserv.solar.reference import SkyfieldEngine, signed_seconds, utc_seconds_of_day

FIRST_INSTANT = dt.datetime(1900, 1, 1, tzinfo=dt.UTC)
LAST_INSTANT = dt.datetime(2051, 1, 1, tzinfo=dt.UTC)
LOWEST_CHECKED_ELEVATION = -1.0


@dataclasses.dataclass(frozen=True)
class Sample:
    instant: dt.datetime
    latitude: float
    longitude: float


@dataclasses.dataclass(frozen=True)
class Answer:
    true_solar_seconds: float
    azimuth: float
    elevation: float


Method = Callable[[Sample], Answer]


@dataclasses.dataclass(frozen=True)
class Row:
    label: str
    microseconds: list[float]
    answers: list[Answer]


def random_samples(count: int, seed: int) -> list[Sample]:
    rng = random.Random(seed)
    span_us = (LAST_INSTANT - FIRST_INSTANT) // dt.timedelta(microseconds=1)
    return [
        Sample(
            FIRST_INSTANT + dt.timedelta(microseconds=rng.randrange(span_us)),
            math.degrees(math.asin(rng.uniform(-1, 1))),  # uniform over the sphere
            rng.uniform(-180, 180),
        )
        for _ in range(count)
    ]


def engine_method(engine) -> Method:
    def answer(sample: Sample) -> Answer:
        sun = engine.sun_state(sample.instant, sample.latitude, sample.longitude)
        return Answer(sun.true_solar_seconds, sun.azimuth, sun.elevation)

    return answer


class CountingEngine(FastEngine):
    """The service's engine, counting the days it fits: a warm call must fit none."""

    def __init__(self, cached_days: int) -> None:
        super().__init__(cached_days)
        self.days_fitted = 0

    def _store(self, fits: dict[int, DayFit]) -> dict[int, DayFit]:  # every fit, and nothing else, comes here
        self.days_fitted += len(fits)
        return super()._store(fits)


def warm_core(samples: list[Sample]) -> Row:
    """The core timed with every sample's day fitted beforehand, in a cache with room for a day per sample.
    The service's cache holds CACHED_DAYS days, the first fitted dropped first: with more samples' days
    than that, the timing pass (in the warm-up's order) would evict, call after call, the day the next
    call needs, and fit nearly every one again."""
    engine = CountingEngine(cached_days=max(CACHED_DAYS, len(samples)))
    for sample in samples:
        engine.sun_state(sample.instant, sample.latitude, sample.longitude)
    fitted_in_warm_up = engine.days_fitted
    row = timed("solarserv core (FastEngine), warm", engine_method(engine), samples)
    if engine.days_fitted > fitted_in_warm_up:
        raise SystemExit(f"the warm core fitted {engine.days_fitted - fitted_in_warm_up} days while timed: "
                         "its timings are not warm")
    return row


def cold_core(sample: Sample) -> Answer:
    """A fresh engine per call: the call fits the sample's day (one vectorised skyfield evaluation)."""
    return engine_method(FastEngine())(sample)


def pvlib_spa(sample: Sample) -> Answer:
    """NREL SPA for one timestamp; pvlib's own ΔT model (delta_t=None); TST from SPA's equation of time."""
    frame = pvlib.solarposition.spa_python(
        pd.DatetimeIndex([sample.instant]),
        sample.latitude,
        sample.longitude,
        altitude=0,
        pressure=STANDARD_PRESSURE_MBAR * 100,
        temperature=STANDARD_TEMPERATURE_C,
        delta_t=None,
    )
    row = frame.iloc[0]
    mean_solar_seconds = utc_seconds_of_day(sample.instant) + sample.longitude * SECONDS_PER_DEGREE
    solar_seconds = mean_solar_seconds + row["equation_of_time"] * 60
    return Answer(wrap_seconds_of_day(solar_seconds), float(row["azimuth"]), float(row["apparent_elevation"]))


def pyephem(sample: Sample) -> Answer:
    """PyEphem: local apparent sidereal time − apparent geocentric RA; topocentric refracted alt/az."""
    observer = ephem.Observer()
    observer.lat, observer.lon = math.radians(sample.latitude), math.radians(sample.longitude)
    observer.elevation, observer.temp, observer.pressure = 0, STANDARD_TEMPERATURE_C, STANDARD_PRESSURE_MBAR
    observer.date = ephem.Date(sample.instant.replace(tzinfo=None))  # PyEphem reads naive times as UTC
    sun = ephem.Sun(observer)
    hour_angle = float(observer.sidereal_time()) - float(sun.g_ra)
    solar_seconds = wrap_seconds_of_day(hour_angle / (2 * math.pi) * 86400 + 43200)
    return Answer(solar_seconds, math.degrees(sun.az), math.degrees(sun.alt))


def astral_noaa(sample: Sample) -> Answer:
    """astral (NOAA's algorithm): refracted zenith and azimuth; TST from its equation of time."""
    observer = astral.Observer(sample.latitude, sample.longitude, 0)
    zenith, azimuth = astral.sun.zenith_and_azimuth(observer, sample.instant, with_refraction=True)
    century = astral.julian.julianday_to_juliancentury(astral.julian.julianday(sample.instant))
    eot_minutes = astral.sun.eq_of_time(century)
    solar_seconds = utc_seconds_of_day(sample.instant) + sample.longitude * SECONDS_PER_DEGREE + eot_minutes * 60
    return Answer(wrap_seconds_of_day(solar_seconds), azimuth, 90 - zenith)


def timed(label: str, method: Method, samples: list[Sample]) -> Row:
    clock = time.perf_counter_ns
    microseconds, answers = [], []
    gc.collect()
    gc.disable()
    try:
        for sample in samples:
            start = clock()
            answer = method(sample)
            microseconds.append((clock() - start) / 1000)
            answers.append(answer)
    finally:
        gc.enable()
    return Row(label, microseconds, answers)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def max_errors(answers: list[Answer], reference: list[Answer]) -> tuple[float, float, float, float]:
    """Max |ΔTST| (s) over all samples; max |Δazimuth|, |Δelevation| (°) where the reference elevation is
    above −1°; and max |Δelevation| above +1°, clear of the band where refraction models are cut off."""
    pairs = list(zip(answers, reference, strict=True))
    tst = max(abs(signed_seconds(a.true_solar_seconds - r.true_solar_seconds)) for a, r in pairs)
    visible = [(a, r) for a, r in pairs if r.elevation > LOWEST_CHECKED_ELEVATION]
    azimuth = max(abs((a.azimuth - r.azimuth + 180) % 360 - 180) for a, r in visible)
    elevation = max(abs(a.elevation - r.elevation) for a, r in visible)
    elevation_above_horizon = max(abs(a.elevation - r.elevation) for a, r in visible if r.elevation > 1)
    return tst, azimuth, elevation, elevation_above_horizon


def machine_line() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    lines = cpuinfo.read_text().splitlines() if cpuinfo.exists() else []
    models = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cpu = models[0] if models else platform.machine()
    return f"{cpu}, {os.cpu_count()} CPUs, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=4000, help="random instants and places (default 4000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    arguments = parser.parse_args()
    samples = random_samples(arguments.samples, arguments.seed)
    load_before = os.getloadavg()
    started = time.perf_counter()

    warm = warm_core(samples)
    cold = timed("solarserv core, cold: fits the day first", cold_core, samples)
    reference = timed("skyfield per call (SkyfieldEngine): the reference", engine_method(SkyfieldEngine()), samples)
    peers = [
        timed(f"pvlib {version('pvlib')} spa_python, one timestamp", pvlib_spa, samples),
        timed(f"PyEphem {version('ephem')}", pyephem, samples),
        timed(f"astral {version('astral')}", astral_noaa, samples),
    ]

    core_median = statistics.median(warm.microseconds)
    print(
        f"scripts/bench calc — {len(samples)} random instants 1900–2050 and places (seed {arguments.seed}); "
        f"{sum(r.elevation > LOWEST_CHECKED_ELEVATION for r in reference.answers)} with the Sun above −1°"
    )
    print(
        f"{machine_line()}; load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print("| method | µs/call median | p90 | × core | max ΔTST (s) | max Δaz (°) | max Δel (°) | above +1° |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in [warm, cold, reference, *peers]:
        median = statistics.median(row.microseconds)
        tst, azimuth, elevation, elevation_above_horizon = max_errors(row.answers, reference.answers)
        print(
            f"| {row.label} | {median:,.1f} | {percentile(row.microseconds, 0.9):,.1f} | "
            f"{median / core_median:,.1f} | {tst:.2g} | {azimuth:.2g} | {elevation:.2g} | "
            f"{elevation_above_horizon:.2g} |"
        )


if __name__ == "__main__":
    main()
