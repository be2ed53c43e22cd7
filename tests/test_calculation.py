"""calculation: the civil-time bookkeeping around the engine's Sun, on real reports (tests/reports.py)."""

from __future__ import annotations

import pytest
from reports import report_at


@pytest.mark.parametrize(("place", "distance"), [
    ("Paris", 2.3522 - 15),  # summer time on UTC+01:00: the meridian of 15°E
    ("Dublin", -6.2603),  # Irish summer time is on GMT, as people read it: the meridian of 0°
    ("Kashgar", 75.9898 - 120),  # Beijing time, 44° east of the town
    ("Kiritimati", -157.4 + 150),  # UTC+14 puts the meridian at 150°W: 7.4° west of it, not 352.6° east
    ("UTC", 0.0),
])
def test_the_report_gives_the_distance_from_the_standard_meridian_east_positive(place, distance):
    report = report_at(place, "2026-07-14", "14:30")
    assert report.meridian_distance_degrees == pytest.approx(distance, abs=1e-9)
    assert report.longitude_correction_minutes == 4 * report.meridian_distance_degrees
