"""The benchmark scripts' own logic (scripts/bench_calc.py, scripts/bench_http.py), without real loads."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

from solarserv.solar import fast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

# bench_calc compares against libraries of the bench extra only (scripts/bench installs it).
pytest.importorskip("ephem", reason="the bench extra (pip install -e .[bench]) is not installed")
pytest.importorskip("astral", reason="the bench extra (pip install -e .[bench]) is not installed")
import bench_calc  # noqa: E402

ONE_FIT = ((0.0, 0.0, 1.0),)  # equation of time 0, declination 0, distance 1 au all day


def test_the_warm_core_fits_no_day_while_timed_with_more_days_than_the_services_cache(monkeypatch):
    fitted: list[int] = []

    def instant_fits(days):  # thousands of days fitted in no time
        fitted.extend(days)
        return dict.fromkeys(days, ONE_FIT)

    monkeypatch.setattr(fast, "_fit_days", instant_fits)
    samples = bench_calc.random_samples(fast.CACHED_DAYS + 300, seed=1)
    days = {(sample.instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).days for sample in samples}
    assert len(days) > fast.CACHED_DAYS

    row = bench_calc.warm_core(samples)

    assert len(row.answers) == len(samples)
    assert sorted(fitted) == sorted(days)  # each day once, in the warm-up
