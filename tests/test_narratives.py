"""The built-in narratives: each text block for real reports, the filters, the tzdata history reader."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

import pytest
from reports import report_at

from solarserv import config, formatting
from solarserv.errors import ApiError
from solarserv.formatting import duration, hms, signed_duration
from solarserv.geo.tzhistory import SummerTimeRun, zone_history
from solarserv.geo.zones import TZDATA_VERSION
from solarserv.narration import Narrator, Texts
from solarserv.plugins import validation
from solarserv.result import numbers_json, result_json
from solarserv.timefmt import format_offset as offset
from solarserv.timefmt import round_to_second, shown_true_solar


@pytest.fixture(scope="module")
def narrator() -> Narrator:
    return Narrator.build(config.load(environ={}), third_party=False)


def narrate(narrator: Narrator, place: str, date: str, time: str, **changes) -> tuple[Texts, object]:
    report = report_at(place, date, time, **changes)
    return narrator.narrate(report), report


def true_solar_text(report) -> str:
    return hms(shown_true_solar(report))


def report_in(zone: str, latitude: float, longitude: float, date: str, time: str, display_name: str):
    """A report for a zone PLACES does not cover, through report_at's location changes."""
    return report_at("UTC", date, time, place_name=display_name.split(",")[0], display_name=display_name,
                     latitude=latitude, longitude=longitude, timezone=zone)


def st_johns(date: str, time: str):
    return report_in("America/St_Johns", 47.5615, -52.7126, date, time, "St John's, Newfoundland, Canada")


def troll(date: str, time: str):
    return report_in("Antarctica/Troll", -72.0114, 2.5350, date, time, "Troll, Dronning Maud Land, Antarctica")


# --- summary -------------------------------------------------------------------------------------------

def test_summary_paris_summer_names_the_numbers_of_this_request(narrator):
    texts, report = narrate(narrator, "Paris", "2026-07-14", "14:30")
    summary = texts.summary
    assert summary.startswith("At 14:30 on 14 July 2026 in Paris, Île-de-France, France "
                              "(Europe/Paris, UTC+02:00, summer time), a sundial reads ")
    behind = duration(report.total_difference_minutes)
    assert f"reads {true_solar_text(report)} — {behind} behind the clock." in summary
    assert f"equation of time ({signed_duration(report.equation_of_time_minutes)})" in summary
    assert f"longitude correction ({signed_duration(report.longitude_correction_minutes)}) " \
           "minus 1 h of summer time." in summary
    assert "above the horizon in the south" in summary
    assert "\n" not in summary



def test_summary_says_when_its_terms_to_the_second_miss_the_total_to_the_second(narrator):
    # -5 min 31 s + -17 min 57 s is -23 min 28 s; the total, to the second, is -23 min 27 s.
    report = report_in("Africa/Douala", 6.2424, 10.5134, "1974-08-09", "11:08:13", "Bamenda, Cameroon")
    assert "— 23 min 27 s behind the clock. The difference is, each to the nearest second, the equation of time " \
           "(-5 min 31 s) plus the longitude correction (-17 min 57 s)." in narrator.narrate(report).summary
    paris = narrator.narrate(report_at("Paris", "2026-07-14", "14:30")).summary
    assert "The difference is the equation of time (-5 min 55 s)" in paris

def test_summary_leaves_out_a_longitude_correction_of_0_s_as_the_solar_context_does(narrator):
    # A point on its zone's meridian (Greenwich; a town centre in its local-mean-time years) read "plus the
    # longitude correction (0 s)" beside a solar context saying no longitude correction applies.
    greenwich = narrator.narrate(report_at("UTC", "2026-07-14", "14:30", timezone="Europe/London"))
    assert "(0 s)" not in greenwich.summary
    assert "minus 1 h of summer time; the place lies on its zone's standard meridian, so no longitude correction " \
           "applies." in greenwich.summary
    assert "so no longitude correction applies." in greenwich.solar_context
    utc = narrator.narrate(report_at("UTC", "2026-07-14", "14:30")).summary
    assert re.search(r"The difference is the equation of time \([-+]\d+ min \d+ s\); the place lies on its zone's "
                     r"standard meridian, so no longitude correction applies\. ", utc)


def test_summary_paris_winter_has_no_dst(narrator):
    texts, report = narrate(narrator, "Paris", "2026-01-14", "09:00")
    assert "(Europe/Paris, UTC+01:00, no DST)" in texts.summary
    assert "summer time" not in texts.summary
    assert f"reads {true_solar_text(report)} — " in texts.summary


def test_summary_dublin_winter_is_gmt_without_dst_despite_tzdata_negative_dst(narrator):
    texts, _ = narrate(narrator, "Dublin", "2026-01-10", "12:00")
    assert "(Europe/Dublin, UTC+00:00, no DST)" in texts.summary
    assert "summer time" not in texts.summary


def test_summary_kashgar_is_hours_behind_and_solar_time_can_be_the_previous_day(narrator):
    texts, report = narrate(narrator, "Kashgar", "2026-07-14", "14:30")
    assert report.total_difference_minutes < -170
    assert f"{duration(report.total_difference_minutes)} behind the clock" in texts.summary
    assert "(Asia/Shanghai, UTC+08:00, no DST)" in texts.summary

    night, report = narrate(narrator, "Kashgar", "2026-07-14", "01:30")
    assert report.true_solar.date() == dt.date(2026, 7, 13)
    assert f"reads {true_solar_text(report)} of the previous day, 13 July 2026 — " in night.summary
    assert "below the horizon, so a real sundial casts no shadow now" in night.summary


def test_summary_kiritimati_just_after_midnight_reads_the_previous_day(narrator):
    texts, report = narrate(narrator, "Kiritimati", "2026-03-20", "00:10")
    assert "(Pacific/Kiritimati, UTC+14:00, no DST)" in texts.summary
    assert "of the previous day, 19 March 2026" in texts.summary


def test_summary_in_local_mean_time_shows_the_exact_offset(narrator):
    texts, report = narrate(narrator, "Paris", "1905-06-01", "12:00")
    assert "(Europe/Paris, UTC+00:09:21, local mean time)" in texts.summary
    assert f"{duration(report.total_difference_minutes)} ahead of the clock" in texts.summary


def test_summary_tells_summer_time_kept_on_local_mean_time(narrator):
    # Dublin Mean Time -00:25:21 plus the summer hour of 1916: the JSON says dst, so must the text.
    texts, report = narrate(narrator, "Dublin", "1916-07-01", "12:00")
    assert report.civil.dst and report.civil.local_mean_time
    assert "(Europe/Dublin, UTC+00:34:39, summer time on local mean time)" in texts.summary
    assert "minus 1 h of summer time." in texts.summary


def test_summary_for_coordinates_names_the_point_and_the_place_near_it(narrator):
    texts, _ = narrate(narrator, "Paris", "2026-07-14", "14:30", source="coordinates",
                       place_name="48.8566°N, 2.3522°E")
    assert "on 14 July 2026 at 48.8566°N, 2.3522°E (Paris, Île-de-France, France; Europe/Paris, UTC+02:00, " \
           "summer time), a sundial reads" in texts.summary


# --- solar context -------------------------------------------------------------------------------------

def test_solar_context_explains_eot_and_longitude_with_this_requests_numbers(narrator):
    texts, report = narrate(narrator, "Paris", "2026-07-14", "14:30")
    context = texts.solar_context
    equation = signed_duration(report.equation_of_time_minutes)
    assert f"The equation of time at 14:30 on 14 July 2026 is {equation}." in context
    assert "ellipse" in context and "tilted 23.4°" in context
    assert "lies 12.65° west of its zone's standard meridian 15°E (UTC+01:00 standard time" in context
    assert f"culminates {duration(report.longitude_correction_minutes)} later" in context
    assert "Summer time sets the clocks 1 h ahead" in context
    noon = report.events.solar_noon
    assert f"solar noon — at {formatting.hm(noon)} clock time" in context
    sunrise, sunset = formatting.hm(report.events.sunrise), formatting.hm(report.events.sunset)
    assert f"rises at {sunrise} and sets at {sunset}" in context



def test_solar_context_gives_solar_noons_offset_when_the_clocks_change_between_now_and_noon(narrator):
    # 02:30 on UTC+02:00 (the first of the two), 1 h 34 min 43 s ahead of the sundial; by noon the clocks
    # have gone back to UTC+01:00, so the sundial reads 12:00 at 12:35, not at 13:35.
    texts, report = narrate(narrator, "Paris", "2026-10-25", "02:30")
    noon = formatting.hm(report.events.solar_noon)
    assert (report.civil.utc_offset, noon) == (dt.timedelta(hours=2), "12:35")
    behind = formatting.ahead_or_behind(report.total_difference_minutes, "the clocks")
    assert (f"{behind}: on this date it shows 12:00 — solar noon — at 12:35 clock time, on UTC+01:00 (the clocks "
            "change on this date).") in texts.solar_context
    later, _ = narrate(narrator, "Paris", "2026-10-25", "14:30")
    assert "solar noon — at 12:35 clock time. The Sun rises" in later.solar_context


def test_solar_context_gives_the_equation_of_time_of_the_time_asked_about(narrator):
    # Over Christmas the equation of time falls by half a minute a day: in Paris on 25 December 2026 it
    # crosses zero, ahead at the start of the date and behind at its end.
    early, early_report = narrate(narrator, "Paris", "2026-12-25", "00:00")
    late, late_report = narrate(narrator, "Paris", "2026-12-25", "23:59")
    early_equation = signed_duration(early_report.equation_of_time_minutes)
    late_equation = signed_duration(late_report.equation_of_time_minutes)
    assert (early_equation, late_equation) == ("+13 s", "-16 s")
    assert f"The equation of time at 00:00 on 25 December 2026 is {early_equation}." in early.solar_context
    assert f"The equation of time at 23:59 on 25 December 2026 is {late_equation}." in late.solar_context

def test_solar_context_kashgar_and_kiritimati_meridians(narrator):
    kashgar, _ = narrate(narrator, "Kashgar", "2026-07-14", "14:30")
    assert "lies 44.01° west of its zone's standard meridian 120°E" in kashgar.solar_context
    kiritimati, report = narrate(narrator, "Kiritimati", "2026-03-20", "00:10")
    assert report.longitude_correction_minutes == pytest.approx(-29.6)
    assert "lies 7.40° west of its zone's standard meridian 150°W (UTC+14:00" in kiritimati.solar_context



def test_solar_context_never_puts_a_place_with_a_correction_on_its_meridian(narrator):
    # Detroit's own mean time of 1900 had its meridian 0.0042° west of the town centre: a second of correction.
    report = report_in("America/Detroit", 42.33, -83.05, "1900-06-01", "12:00", "Detroit, Michigan, United States")
    context = narrator.narrate(report).solar_context
    assert signed_duration(report.longitude_correction_minutes) == "-1 s"
    assert "lies 0.0042° west of its zone's standard meridian 83.0458°W" in context
    assert "culminates 1 s later than on that meridian" in context

def test_solar_context_polar_day_and_polar_night_in_tromso(narrator):
    summer, report = narrate(narrator, "Tromsø", "2026-06-21", "00:30")
    assert report.events.state == "polar_day"
    assert "stays above the horizon all day (polar day)" in summer.solar_context
    winter, report = narrate(narrator, "Tromsø", "2026-12-21", "12:00")
    assert report.events.state == "polar_night"
    assert "stays below the horizon all day (polar night)" in winter.solar_context


def test_solar_context_in_local_mean_time_speaks_of_mean_time(narrator):
    texts, _ = narrate(narrator, "Paris", "1905-06-01", "12:00")
    assert "meridian 2.3375°E (UTC+00:09:21 local mean time" in texts.solar_context
    summer, _ = narrate(narrator, "Dublin", "1916-07-01", "12:00")
    assert "meridian 6.3375°W (UTC-00:25:21 local mean time" in summer.solar_context
    assert "Summer time sets the clocks 1 h ahead of local mean time." in summer.solar_context


def test_solar_context_puts_a_sunset_that_reads_midnight_after_midnight(narrator):
    # North of the Arctic Circle in mid-May the sunset is seconds before midnight: shown as 00:00, it is
    # told as after midnight, like the sunsets a minute later.
    texts, report = narrate(narrator, "Tromsø", "2026-05-16", "12:00", latitude=69.6053)
    sunset = report.events.sunset
    assert sunset.date() == report.civil.local.date() and sunset.time() > dt.time(23, 59, 30)
    assert f"rises at {formatting.hm(report.events.sunrise)} and sets at 00:00 after midnight." \
        in texts.solar_context
    earlier, _ = narrate(narrator, "Tromsø", "2026-05-15", "12:00")
    assert "and sets at 23:48." in earlier.solar_context


def test_solar_context_dates_an_event_that_falls_on_another_civil_day(narrator):
    # The South Pole keeps New Zealand time, twelve hours from its longitude 0°: the sunset that ends
    # March 2024's polar day falls in the solar day of 23 March, on the clocks the evening before.
    report = report_in("Antarctica/McMurdo", -90.0, 0.0, "2024-03-23", "10:00", "South Pole, Antarctica")
    texts = narrator.narrate(report)
    assert (report.events.state, report.events.sunrise) == ("normal", None)
    assert report.events.sunset.date() == dt.date(2024, 3, 22)
    assert "The Sun, up since the day before, sets at 18:45 on 22 March 2024." in texts.solar_context
    # One event of the two: said as such, where "sunrise none – sunset 18:45" read as a span without a start.
    assert "✓ Sun's elevation -1.1° fits night, after sunset 18:45 on 22 March 2024 (no sunrise: up since the day " \
        "before)" in texts.validation


def test_the_validation_says_the_day_the_midnight_sun_begins_has_no_sunset(narrator):
    # Tromsø, 18 May 2026: the Sun rises at 00:52 and does not set again until July; it read "sunset none".
    texts, report = narrate(narrator, "Tromsø", "2026-05-18", "12:00")
    assert report.events.sunset is None and report.events.sunrise is not None
    assert "fits daytime, after sunrise 00:52 (no sunset before the next solar midnight)" in texts.validation
    assert "none" not in texts.validation


def test_solar_context_dates_the_sunset_after_a_sunrise_on_the_evening_before(narrator):
    # Uelen, 10° east of Chukotka's meridian 180°: solar noon comes at 11:18, and days before the midnight Sun
    # the sunrise that opens the solar day of 7 June falls at 23:55 on the 6th. The sunset ends the 7th
    # itself: not "after midnight", which says the day after the one asked for.
    report = report_in("Asia/Anadyr", 66.16, -169.8, "2024-06-07", "12:00", "Uelen, Chukotka, Russia")
    assert (report.events.sunrise.date(), report.events.sunset.date()) == (dt.date(2024, 6, 6), dt.date(2024, 6, 7))
    texts = narrator.narrate(report)
    assert "The Sun rises at 23:55 on 6 June 2024 and sets at 22:48 on 7 June 2024." in texts.solar_context
    # The validation's span too: undated, 23:55 – 22:48 read as a span that ends before it begins.
    assert "fits daytime, inside sunrise 23:55 on 6 June 2024 – sunset 22:48" in texts.validation


def test_texts_date_a_solar_noon_on_another_day_than_the_clocks(narrator):
    # The South Pole keeps New Zealand time, twelve hours from its longitude 0°: solar noon comes near midnight
    # on the clocks. On 16 April 2024 it comes at 23:59:41, a minute shown as 00:00 of the 17th; on 13 June the
    # civil day holds none, and the transit nearest its middle is the 12th's, at 23:59:59.
    april = narrator.narrate(report_in("Antarctica/McMurdo", -90.0, 0.0, "2024-04-16", "12:00", "South Pole"))
    assert "ahead of the clocks: it shows 12:00 — solar noon — at 00:00 clock time on 17 April 2024." \
        in april.solar_context
    assert "✓ solar noon at 23:59:41 clock time is 12:00 true solar time" in april.validation
    june = narrator.narrate(report_in("Antarctica/McMurdo", -90.0, 0.0, "2024-06-13", "12:00", "South Pole"))
    assert "ahead of the clocks: on this date it shows 12:00 — solar noon — at 00:00 clock time." in june.solar_context
    assert "✓ solar noon at 23:59:59 on 12 June 2024 clock time is 12:00 true solar time" in june.validation


def test_solar_context_of_a_sun_that_peeks_over_the_line_after_midnight(narrator):
    # 0.19° from the South Pole the Sun, below the line at solar noon (23:53 on NZ clocks), is up for
    # 29 minutes an hour later: both events fall on the next civil day, and neither is "after midnight".
    report = report_in("Antarctica/McMurdo", -89.8125, 0.0, "1977-09-20", "12:00", "near the South Pole")
    assert report.events.state == "normal"
    assert "The Sun rises at 00:56 on 21 September 1977 and sets at 01:25." in narrator.narrate(report).solar_context


def test_hm_on_names_the_day_the_minute_shown_falls_on():
    day = dt.date(2024, 3, 22)
    utc = dt.UTC
    assert formatting.hm_on(dt.datetime(2024, 3, 22, 18, 45, 10, tzinfo=utc), day) == "18:45"
    assert formatting.hm_on(dt.datetime(2024, 3, 21, 18, 45, tzinfo=utc), day) == "18:45 on 21 March 2024"
    assert formatting.hm_on(dt.datetime(2024, 3, 21, 23, 59, 40, tzinfo=utc), day) == "00:00"
    assert formatting.shown_date(dt.datetime(2024, 3, 21, 23, 59, 29, tzinfo=utc)) == dt.date(2024, 3, 21)
    assert formatting.shown_date(dt.datetime(2024, 3, 21, 23, 59, 30, tzinfo=utc)) == day  # as hm rounds
    assert formatting.hm(dt.datetime(2024, 3, 21, 23, 59, 30, tzinfo=utc)) == "00:00"


# --- historical context --------------------------------------------------------------------------------

def test_historical_context_paris(narrator):
    texts, _ = narrate(narrator, "Paris", "2026-07-14", "14:30")
    history = texts.historical_context
    assert texts.historical_context_found
    assert "first kept local mean time, UTC+00:09:21, until standard time was adopted on 11 March 1911: " \
           "UTC+00:00 (WET)." in history
    assert ("Summer time was observed every year from 1916 to 1945. It has been observed again every year since "
            f"1976 ({int(TZDATA_VERSION[:4]) - 1975} years up to {TZDATA_VERSION[:4]}).") in history
    assert ("On 14 July 2026 the clocks showed summer time (CEST), UTC+02:00: standard time UTC+01:00 "
            "plus 1 h.") in history


@pytest.mark.parametrize(("runs", "text"), [
    ([(1918, 1918)], "in 1918"),
    ([(1918, 1919)], "in 1918 and 1919"),  # it read "every year from 1918 to 1919 (2 years)"
    ([(1918, 1945)], "every year from 1918 to 1945"),
    ([(1916, 1916), (1918, 1919)], "in 1916, 1918 and 1919"),
    ([(1918, 1919), (1942, 1945)], "in 1918 and 1919, and every year from 1942 to 1945"),
    ([(1917, 1919), (1921, 1921), (1981, 2010)], "every year from 1917 to 1919, in 1921 and from 1981 to 2010"),
    ([(1977, 1980), (1991, 2005), (2008, 2022)],
     "every year from 1977 to 1980, from 1991 to 2005 and from 2008 to 2022"),
])
def test_summer_time_years_read_as_people_write_them(runs, text):
    assert formatting.year_spans([SummerTimeRun(first, last, False) for first, last in runs]) == text


@pytest.mark.parametrize(("zone", "summer_time", "text"), [
    ("America/Chicago", ((1918, 1919, False), (1942, 1945, False), (1948, 2026, True)),
     "Summer time was observed in 1918 and 1919, and every year from 1942 to 1945. It has been observed again "
     "every year since 1948 (79 years up to 2026)."),
    ("America/Chicago", ((1918, 2026, True),),
     "Summer time has been observed every year since 1918 (109 years up to 2026)."),
    ("America/Chicago", ((1918, 1918, False), (2026, 2026, True)),
     "Summer time was observed in 1918. It has been observed again since 2026."),  # it read "(still observed: 1 years"
])
def test_the_zone_record_tells_summer_time_past_and_still_observed(narrator, zone, summer_time, text):
    history = dataclasses.replace(zone_history(zone), summer_time=tuple(SummerTimeRun(*run) for run in summer_time))
    record = narrator.templates.get_template("zone_record.txt.j2").render(history=history)
    assert record.endswith(text)


def test_historical_context_on_a_local_mean_time_date(narrator):
    texts, _ = narrate(narrator, "Paris", "1905-06-01", "12:00")
    assert "On 1 June 1905 the clocks still kept local mean time (PMT), UTC+00:09:21 exactly." \
        in texts.historical_context


def test_historical_context_dublin_reads_summer_time_as_people_know_it(narrator):
    summer, _ = narrate(narrator, "Dublin", "2026-07-14", "12:00")
    assert "the clocks showed summer time (IST), UTC+01:00: standard time UTC+00:00 plus 1 h." \
        in summer.historical_context
    winter, _ = narrate(narrator, "Dublin", "2026-01-10", "12:00")
    assert "the clocks showed standard time (GMT), UTC+00:00." in winter.historical_context
    assert "UTC-00:25:21" in winter.historical_context  # Dublin Mean Time


def test_historical_context_tells_summer_time_kept_on_local_mean_time(narrator):
    dublin = narrator.narrate(report_at("Dublin", "1916-07-01", "12:00")).historical_context
    assert "On 1 July 1916 the clocks showed summer time (IST), UTC+00:34:39: local mean time UTC-00:25:21 " \
           "plus 1 h." in dublin
    # Newfoundland kept summer time on St John's mean time from 1918 until standard time in 1935.
    newfoundland = narrator.narrate(st_johns("1930-07-01", "12:00")).historical_context
    assert "On 1 July 1930 the clocks showed summer time (NDT), UTC-02:30:52: local mean time UTC-03:30:52 " \
           "plus 1 h." in newfoundland
    winter = narrator.narrate(st_johns("1930-01-15", "12:00")).historical_context
    assert "On 15 January 1930 the clocks still kept local mean time (NST), UTC-03:30:52 exactly." in winter


def test_historical_context_before_the_zone_has_local_time_says_there_was_none(narrator):
    # tzdata's "-00": Troll station's record begins in 2005; before that it gives no local time, and the
    # clock time given is taken as UTC.
    history = narrator.narrate(troll("2000-01-10", "12:00")).historical_context
    assert "tzdata's record of Antarctica/Troll begins on 12 February 2005." in history
    assert "On 10 January 2000 there was no local time on record: tzdata records none here before " \
           "12 February 2005, so the time given is read as UTC." in history
    assert "showed standard time" not in history
    recorded = narrator.narrate(troll("2005-02-12", "00:30")).historical_context
    assert "On 12 February 2005 the clocks showed standard time, UTC+00:00." in recorded


def test_every_text_says_a_time_without_local_time_on_record_was_read_as_utc(narrator):
    texts = narrator.narrate(troll("2000-01-10", "12:00"))
    assert "(Antarctica/Troll, UTC+00:00, no local time on record, so read as UTC)" in texts.summary
    assert "standard meridian 0° (UTC, as tzdata records no local time here then, 15° per hour)" \
        in texts.solar_context
    assert "✓ local time 12:00:00 = UTC 12:00:00 +00:00, which is UTC, as tzdata records no local time here " \
           "then\n" in texts.validation
    assert "LOW: tzdata records no local time here on this date" in texts.validation
    for text in (texts.summary, texts.solar_context, texts.validation):
        assert "standard time" not in text and "no DST" not in text
    recorded = narrator.narrate(troll("2010-01-10", "12:00"))
    assert "(Antarctica/Troll, UTC+00:00, no DST)" in recorded.summary
    assert "(UTC+00:00 standard time, 15° per hour)" in recorded.solar_context


def test_historical_context_not_found_for_a_zone_without_history(narrator):
    texts, _ = narrate(narrator, "UTC", "2026-07-14", "12:00")
    assert not texts.historical_context_found
    assert texts.historical_context == (
        f"tzdata {zone_history('Etc/UTC').tzdata_version} records no change of civil time for Etc/UTC: its "
        "clocks have kept UTC+00:00 throughout, with no local mean time, adoption of standard time or summer "
        "time on record.")


def test_zone_history_paris():
    history = zone_history("Europe/Paris")
    assert history.found
    assert history.local_mean_time == dt.timedelta(minutes=9, seconds=21)
    adoption = history.standard_time_adopted
    assert (adoption.date, adoption.old_offset, adoption.new_offset, adoption.abbreviation) == (
        dt.date(1911, 3, 11), dt.timedelta(minutes=9, seconds=21), dt.timedelta(0), "WET")
    runs = [(run.first_year, run.still_observed) for run in history.summer_time]
    assert runs == [(1916, False), (1976, True)]
    assert zone_history("Europe/Paris") is history  # parsed once


def test_a_city_mean_time_to_the_minute_is_mean_time_not_standard_time(narrator):
    # tzdata gives Minsk Mean Time as +01:50 (MMT) from 1880; Belarus took standard time (EET) in 1924.
    report = report_in("Europe/Minsk", 53.9, 27.5667, "1900-06-15", "12:00", "Minsk, Horad Minsk, Belarus")
    assert report.civil.local_mean_time and report.confidence.level == "LOW"
    text = narrator.narrate(report).historical_context
    assert "then UTC+01:50 (MMT) from 1 January 1880, until standard time was adopted on 2 May 1924" in text
    assert "On 15 June 1900 the clocks still kept local mean time (MMT), UTC+01:50 exactly." in text
    # New Zealand Mean Time (1868–1946) was a standard time, of the meridian 172°30′E.
    auckland = report_in("Pacific/Auckland", -36.85, 174.76, "1900-06-15", "12:00", "Auckland, New Zealand")
    assert not auckland.civil.local_mean_time
    assert "the clocks showed standard time (NZMT), UTC+11:30." in narrator.narrate(auckland).historical_context


def test_a_return_to_mean_time_and_a_stop_of_local_time_are_told_as_such(narrator):
    lagos = narrator.narrate(report_in("Africa/Lagos", 6.45, 3.4, "1910-06-15", "12:00", "Lagos, Nigeria"))
    assert "on 1 July 1908 to mean time again, UTC+00:13:35 (LMT)" in lagos.historical_context
    # Not "still": standard time had come in 1905.
    assert "On 15 June 1910 the clocks kept local mean time (LMT)" in lagos.historical_context
    macquarie = narrator.narrate(report_in("Antarctica/Macquarie", -54.5, 158.95, "1960-06-15", "12:00",
                                           "Macquarie Island, Australia")).historical_context
    assert ("changed on 1 April 1919 to none on record (tzdata records no local time then) and on 25 March "
            "1948 to UTC+10:00 (AEST)") in macquarie


def test_a_change_across_the_date_line_is_dated_by_a_day_the_clocks_showed(narrator):
    # Samoa skipped Friday 30 December 2011 (the old clocks' date of the change) and kept 4 July 1892 twice.
    apia = narrator.narrate(report_in("Pacific/Apia", -13.8333, -171.7667, "2012-06-01", "12:00",
                                      "Apia, Tuamasaga, Samoa")).historical_context
    assert ("then UTC-11:26:56 (LMT) from 4 July 1892 (across the date line, the clocks showed 4 July 1892 "
            "again)") in apia
    assert ("on 31 December 2011 to UTC+13:00 (across the date line, the clocks skipped 30 December 2011)"
            ) in apia
    # Alaska's change of 1867 came in the afternoon: both dates it went back over were shown again.
    sitka = zone_history("America/Sitka").mean_time_changes[0]
    assert (sitka.date, sitka.date_line.forward, sitka.date_line.dates) == (
        dt.date(1867, 10, 18), False, (dt.date(1867, 10, 18), dt.date(1867, 10, 19)))
    manila = zone_history("Asia/Manila").mean_time_changes[0]
    assert (manila.date, manila.date_line.dates) == (dt.date(1845, 1, 1), (dt.date(1844, 12, 31),))
    assert not any(change.date_line for change in zone_history("Europe/Paris").offset_changes)


def test_zone_history_tells_mean_times_before_standard_time_and_skips_uninhabited_years():
    kolkata = zone_history("Asia/Kolkata")
    mean_times = [(change.date, change.new_offset, change.abbreviation)
                  for change in kolkata.mean_time_changes]
    assert mean_times == [
        (dt.date(1854, 6, 28), dt.timedelta(hours=5, minutes=53, seconds=20), "HMT"),
        (dt.date(1870, 1, 1), dt.timedelta(hours=5, minutes=21, seconds=10), "MMT")]
    assert kolkata.standard_time_adopted.new_offset == dt.timedelta(hours=5, minutes=30)
    # Iqaluit was founded in 1942: tzdata's "-00" before that is no local time, not an offset of 0.
    iqaluit = zone_history("America/Iqaluit")
    assert iqaluit.local_mean_time is None and iqaluit.standard_time_adopted is None
    # Its first clocks (EWT, -04:00) began at 0h UTC on 1 August 1942: 20:00 on 31 July there.
    assert iqaluit.recorded_since == dt.date(1942, 7, 31)
    assert all(change.old_offset != dt.timedelta(0) for change in iqaluit.offset_changes)


def test_zone_history_rebases_dublins_negative_dst():
    periods = zone_history("Europe/Dublin").periods
    modern = [period for period in periods if period.start and period.start.year >= 1972]
    assert modern, "tzdata lists Dublin's transitions after 1971"
    for period in modern:
        assert period.standard_offset == dt.timedelta(0)
        assert period.summer == (period.utc_offset == dt.timedelta(hours=1))


def test_zone_history_reads_namibias_plus_two_since_2017_as_standard_time():
    # The last record follows a negative-DST winter, but the footer no longer alternates.
    last = zone_history("Africa/Windhoek").periods[-1]
    assert (last.start.date(), last.utc_offset, last.standard_offset, last.summer) == (
        dt.date(2017, 9, 3), dt.timedelta(hours=2), dt.timedelta(hours=2), False)


def test_zone_history_follows_links_and_names_the_zone_it_reads():
    assert zone_history("Europe/Amsterdam").record_of == "Europe/Brussels"
    assert zone_history("Europe/Paris").record_of == "Europe/Paris"


def test_zone_history_refuses_names_outside_tzdata():
    with pytest.raises(ApiError) as raised:
        zone_history("../../etc/passwd")
    assert raised.value.code == "TIMEZONE_RESOLUTION_FAILED"


def _offset_changes(zone: str) -> list[tuple[dt.date, dt.timedelta, str | None]]:
    return [(change.date, change.new_offset, change.abbreviation) for change in zone_history(zone).offset_changes]


def test_zone_history_dates_standard_offset_changes_that_came_with_summer_time():
    # tzdata's zone lines change the standard offset on the day the clocks changed, even when summer time
    # began or went on that day (no abbreviation of a standard time then).
    hour = dt.timedelta(hours=1)
    assert _offset_changes("Europe/Paris")[:3] == [
        (dt.date(1940, 6, 14), hour, None),  # German time, on summer time at once
        (dt.date(1944, 8, 25), dt.timedelta(0), None),  # liberated: double summer time on WET
        (dt.date(1945, 9, 16), hour, "CET")]
    assert (dt.date(2007, 3, 11), -5 * hour, None) in _offset_changes("America/Indiana/Winamac")
    kyiv = _offset_changes("Europe/Kyiv")
    assert (dt.date(1941, 9, 20), hour, None) in kyiv and (dt.date(1943, 11, 6), 3 * hour, "MSK") in kyiv


def test_zone_history_keeps_double_and_half_hour_summer_time_on_the_standard_offset():
    # London's BDST (+02:00) and Hong Kong's HKWT (+08:30) were summer time, not new standard offsets.
    hour = dt.timedelta(hours=1)
    assert _offset_changes("Europe/London") == [(dt.date(1968, 10, 27), hour, "BST"),
                                               (dt.date(1971, 10, 31), dt.timedelta(0), "GMT")]
    assert _offset_changes("Asia/Hong_Kong") == [(dt.date(1941, 12, 25), 9 * hour, "JST"),
                                                (dt.date(1945, 11, 18), 8 * hour, "HKT")]
    assert zone_history("Asia/Hong_Kong").summer_time[0] == SummerTimeRun(1941, 1941, False)


def test_zone_history_has_no_summer_time_in_a_year_spent_on_a_new_standard_offset():
    # Greenland moved to -02:00 at the start of summer time 2023 and kept it as standard time all summer.
    runs = [(run.first_year, run.last_year) for run in zone_history("America/Nuuk").summer_time]
    assert runs == [(1980, 2022), (2024, int(TZDATA_VERSION[:4]))]


# --- validation ----------------------------------------------------------------------------------------

CASES = [
    ("Paris", "2026-07-14", "14:30"),
    ("Paris", "2026-01-14", "09:00"),
    ("Dublin", "2026-01-10", "12:00"),
    ("Kashgar", "2026-07-14", "14:30"),
    ("Kashgar", "2026-07-14", "01:30"),
    ("Kiritimati", "2026-03-20", "00:10"),
    ("Tromsø", "2026-06-21", "00:30"),
    ("Tromsø", "2026-12-21", "12:00"),
    ("Paris", "1905-06-01", "12:00"),
    ("Madrid", "2026-03-29", "23:59:59"),  # the evening clocks went forward
    ("Paris", "2026-07-05", "01:55:07"),  # a sundial reading of 23:59:59.6, shown as 00:00:00
    ("Dublin", "1916-07-01", "12:00"),  # summer time on Dublin Mean Time
]


@pytest.mark.parametrize(("place", "date", "time"), CASES)
def test_every_block_carries_this_reports_numbers_and_every_check_passes(narrator, place, date, time):
    report = report_at(place, date, time)
    texts = narrator.narrate(report)
    reading = true_solar_text(report)
    assert reading in texts.summary and f"UTC{offset(report.civil.utc_offset)}" in texts.summary
    assert signed_duration(report.equation_of_time_minutes) in texts.solar_context
    assert signed_duration(report.longitude_correction_minutes) in texts.solar_context
    assert formatting.longitude(report.standard_meridian) in texts.solar_context
    assert report.civil.zone in texts.historical_context and texts.historical_context_found
    assert reading in texts.share_text and texts.share_text.count(".") == 1
    checks = validation.solarserv_validation_checks(report)
    # The day/night check leaves out instants more than 12 h from this date's solar noon.
    assert len(checks) >= len(validation.CHECKS) - 1
    assert all(check.passed for check in checks), [check.text for check in checks if not check.passed]
    assert texts.validation.count("✓ ") == len(checks) and "✗" not in texts.validation


def test_validation_shows_the_true_solar_time_and_date_the_json_shows(narrator):
    # Exactly 23:59:59.589 of 4 July: the JSON rounds it to 00:00:00 on 5 July, the civil date.
    report = report_at("Paris", "2026-07-05", "01:55:07")
    assert report.true_solar.date() == dt.date(2026, 7, 4)
    result = result_json(numbers_json(report), narrator.narrate(report))
    assert (result["true_solar_time"], result["true_solar_date"]) == ("00:00:00", "2026-07-05")
    check = validation.true_solar_time_is_local_plus_total(report)
    assert check.passed
    assert check.text.startswith("true solar time 00:00:00 = local time 01:55:07 -1 h 55 min 7 s")
    # A reading of another day names it, still as the JSON rounds it.
    previous_day = validation.true_solar_time_is_local_plus_total(report_at("Kashgar", "2026-07-14", "01:30"))
    assert "on 13 July 2026 = local time 01:30:00" in previous_day.text


def test_validation_text_lists_checks_notes_and_confidence(narrator):
    location_note = "Several places are called Paris in FR; the most populous was used."
    report = report_at("Paris", "1905-06-01", "12:00", notes=(location_note,))
    lines = narrator.narrate(report).validation.splitlines()
    assert lines[0] == "✓ local time 12:00:00 = UTC 11:50:39 +00:09:21, which is local mean time UTC+00:09:21"
    assert f"Note: {location_note}" in lines
    assert "Confidence LOW, because:" in lines
    assert any(line.startswith("  – LOW: the zone was still on local mean time") for line in lines)
    # A repeated local time (clocks went back) reaches the validation text through its confidence rule.
    repeated = narrator.narrate(report_at("Paris", "2026-10-25", "02:30")).validation
    assert "the local time occurs twice on this date (clocks went back); the first occurrence was used" in repeated


def test_kashgar_and_spain_get_a_note_not_a_failure_for_a_correction_over_an_hour():
    for place in ("Kashgar", "Madrid"):
        report = report_at(place, "2026-07-14", "14:30")
        check = validation.longitude_correction_matches_meridian(report)
        assert abs(report.longitude_correction_minutes) > 60
        assert check.passed and "note: more than an hour" in check.text
    paris = validation.longitude_correction_matches_meridian(report_at("Paris", "2026-07-14", "14:30"))
    assert paris.passed and "note" not in paris.text


def _failing(report) -> list[str]:
    return [check.text for check in validation.solarserv_validation_checks(report) if not check.passed]


def test_checks_catch_an_equation_of_time_out_of_step_with_the_hour_angle():
    report = report_at("Paris", "2026-07-14", "14:30")
    wrong = dataclasses.replace(report, sun=dataclasses.replace(report.sun, equation_of_time_minutes=20.0))
    failing = _failing(wrong)
    assert any(text.startswith("equation of time +20 min is outside ±16.5 min") for text in failing)
    assert any(text.startswith("total difference") for text in failing)


def test_checks_catch_a_wrong_longitude_correction_and_meridian():
    report = report_at("Kiritimati", "2026-03-20", "12:00")
    unwrapped = report.longitude_correction_minutes + 1440
    assert _failing(dataclasses.replace(report, longitude_correction_minutes=unwrapped))
    assert any(text.startswith("longitude correction")
               for text in _failing(dataclasses.replace(report, standard_meridian=-165.0)))
    east_not_west = dataclasses.replace(report, meridian_distance_degrees=-report.meridian_distance_degrees)
    assert any(text.startswith("longitude correction") for text in _failing(east_not_west))


def test_checks_catch_a_true_solar_time_out_of_step_with_the_sun():
    report = report_at("Kashgar", "2026-07-14", "01:30")
    an_hour_off = dataclasses.replace(report.sun, true_solar_seconds=(report.sun.true_solar_seconds + 3600) % 86400)
    failing = _failing(dataclasses.replace(report, sun=an_hour_off))
    assert [text for text in failing if text.startswith("true solar time")]


def test_checks_catch_an_elevation_on_the_wrong_side_of_the_horizon():
    night = report_at("Kashgar", "2026-07-14", "23:30")
    risen = dataclasses.replace(night, sun=dataclasses.replace(night.sun, elevation=25.0))
    assert any(text.startswith("Sun's elevation 25.0° fits night") for text in _failing(risen))
    polar_day = report_at("Tromsø", "2026-06-21", "12:00")
    sunk = dataclasses.replace(polar_day, sun=dataclasses.replace(polar_day.sun, elevation=-5.0))
    assert any("polar day" in text for text in _failing(sunk))


def test_checks_catch_solar_noon_away_from_twelve():
    report = report_at("Paris", "2026-07-14", "14:30")
    late = dataclasses.replace(report.events, solar_noon=report.events.solar_noon + dt.timedelta(minutes=2))
    assert any(text.startswith("solar noon") for text in _failing(dataclasses.replace(report, events=late)))


def test_checks_catch_a_utc_offset_that_does_not_add_up():
    report = report_at("Dublin", "2026-07-14", "12:00")
    wrong = dataclasses.replace(report.civil, dst_offset=dt.timedelta(0))
    assert any(text.startswith("local time") for text in _failing(dataclasses.replace(report, civil=wrong)))


def test_differences_under_half_a_second_are_told_as_none(narrator):
    # On the Greenwich meridian in UTC the longitude correction and DST are zero: the total is the EoT.
    report = report_at("UTC", "2026-07-14", "12:00")
    level = narrator.narrate(dataclasses.replace(report, sun=dataclasses.replace(report.sun,
                                                                                 equation_of_time_minutes=0.004)))
    assert " — the same as the clock." in level.summary
    assert "At that moment the two agree." in level.solar_context
    assert "lies on its zone's standard meridian 0°, so no longitude correction applies." in level.solar_context
    assert "All together a sundial here reads the same as the clocks: on this date" in level.solar_context
    lagging = narrator.narrate(dataclasses.replace(report, sun=dataclasses.replace(report.sun,
                                                                                   equation_of_time_minutes=-0.01)))
    assert " — 1 s behind the clock." in lagging.summary
    assert "At that moment the Sun is 1 s behind mean solar time." in lagging.solar_context
    assert "All together a sundial here reads 1 s behind the clocks: on this date" in lagging.solar_context


def test_a_difference_on_a_half_second_of_the_json_reads_alike_in_the_json_and_every_text(narrator):
    # -1.4999976 s, written -0.025 min in the JSON: 1.5 s, which its reader (and the page) rounds to 2 s. The
    # texts rounded the exact value: "1 s behind", and a reading of 11:59:59 that the JSON gave too.
    report = report_at("UTC", "2026-07-14", "12:00")
    for minutes, reading, difference in ((-0.02499996, "11:59:58", "-2 s"), (0.02499996, "12:00:02", "+2 s")):
        on_half = dataclasses.replace(report, sun=dataclasses.replace(report.sun, equation_of_time_minutes=minutes))
        numbers, texts = numbers_json(on_half), narrator.narrate(on_half)
        assert numbers["calculation"]["total_difference_minutes"] == numbers["calculation"][
            "equation_of_time_minutes"] == round(minutes, 4) == float(difference[0] + "0.025")
        assert numbers["true_solar_time"] == reading
        assert f"a sundial reads {reading} — 2 s {'behind' if minutes < 0 else 'ahead of'} the clock." in texts.summary
        assert f"The difference is the equation of time ({difference});" in texts.summary
        assert f"The equation of time at 12:00 on 14 July 2026 is {difference}." in texts.solar_context
        assert f"\n✓ equation of time {difference} is within" in texts.validation
        assert f"true solar time {reading} = local time 12:00:00 {difference}, " in texts.validation
        assert texts.share_text.endswith(f": {reading}.")


def test_an_angle_on_a_half_tenth_of_the_json_reads_alike_in_the_json_and_every_text(narrator):
    # Written 0.15° and 196.75° in the JSON; "%.1f" of the binary values read 0.1° and 196.7°.
    report = report_at("UTC", "2026-07-14", "12:00")
    sun = dataclasses.replace(report.sun, elevation=0.14999999, azimuth=196.74999)
    numbers, texts = numbers_json(dataclasses.replace(report, sun=sun)), narrator.narrate(
        dataclasses.replace(report, sun=sun))
    assert numbers["solar_position"] == {"azimuth": 196.75, "elevation": 0.15}
    assert "The Sun stands 0.2° above the horizon in the south (azimuth 196.8°)." in texts.summary
    assert "Sun's elevation 0.2° fits" in texts.validation


def test_the_meridian_distance_reads_alike_in_the_solar_context_and_the_validation(narrator):
    # The validation shows 12.6450°; the solar context rounded the exact 12.64499 itself, to 12.64°.
    report = report_at("Paris", "2026-07-14", "14:30")
    texts = narrator.narrate(dataclasses.replace(report, meridian_distance_degrees=-12.64499))
    assert "× 12.6450° west of the standard meridian 15°E" in texts.validation
    assert "lies 12.65° west of its zone's standard meridian 15°E" in texts.solar_context


# --- share ---------------------------------------------------------------------------------------------

def test_share_text_is_one_sentence(narrator):
    texts, report = narrate(narrator, "Paris", "2026-07-14", "14:30")
    assert texts.share_text == f"Sundial time in Paris, France, on 14 July 2026 at 14:30: {true_solar_text(report)}."


def test_share_text_names_another_solar_date_and_coordinates(narrator):
    texts, report = narrate(narrator, "Kashgar", "2026-07-14", "01:30", source="coordinates",
                            place_name="39.4704°N, 75.9898°E")
    assert texts.share_text == (f"Sundial time at 39.4704°N, 75.9898°E on 14 July 2026 at 01:30: "
                                f"{true_solar_text(report)} on 13 July 2026.")


def test_share_text_names_the_country_of_a_place_found_by_name(narrator):
    # Pasted in a message, "Sundial time in Santiago" leaves Chile and Spain to guess; the sentence names the
    # display name's first part and its last, the country, between commas.
    santiago = report_at("Paris", "2026-07-14", "14:30", place_name="Santiago",
                         display_name="Santiago, Región Metropolitana de Santiago, Chile")
    assert narrator.narrate(santiago).share_text.startswith("Sundial time in Santiago, Chile, on 14 July 2026 ")
    # A name of one part (a city state) is written once.
    singapore = report_at("Paris", "2026-07-14", "14:30", place_name="Singapore", display_name="Singapore")
    assert narrator.narrate(singapore).share_text.startswith("Sundial time in Singapore on ")


def test_share_text_writes_its_dates_as_the_other_texts_do(narrator):
    # It wrote 2026-07-14 where the summary, the contexts and the validation write 14 July 2026.
    texts, _ = narrate(narrator, "Kashgar", "2026-07-14", "01:30")
    assert "14 July 2026" in texts.summary and "13 July 2026" in texts.summary
    assert "on 14 July 2026 at 01:30: " in texts.share_text and texts.share_text.endswith(" on 13 July 2026.")
    assert not re.search(r"\d{4}-\d\d-\d\d", texts.share_text)


# --- filters -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("minutes", "plain", "signed"), [
    (3.2, "3 min 12 s", "+3 min 12 s"),
    (-172.3, "2 h 52 min 18 s", "-2 h 52 min 18 s"),
    (60.0, "1 h", "+1 h"),
    # Each zero part left out, each other kept: every branch of duration, which writes each case itself.
    (3.0, "3 min", "+3 min"),
    (60 + 5 / 60, "1 h 5 s", "+1 h 5 s"),
    (-62.0, "1 h 2 min", "-1 h 2 min"),
    (59 + 59.6 / 60, "1 h", "+1 h"),  # rounded up to the hour, not "60 min"
    (0.75, "45 s", "+45 s"),
    (0.004, "0 s", "0 s"),
    (-29.6, "29 min 36 s", "-29 min 36 s"),
])
def test_durations(minutes, plain, signed):
    assert duration(minutes) == plain
    assert signed_duration(minutes) == signed


@pytest.mark.parametrize(("minutes", "text"), [
    (3.2, "3 min 12 s ahead of the clock"),
    (-0.75, "45 s behind the clock"),
    (0.008, "the same as the clock"),  # under half a second either way: 0 s, as duration shows it
    (-0.008, "the same as the clock"),
])
def test_a_difference_is_ahead_of_behind_or_the_same_as_its_reference(minutes, text):
    assert formatting.ahead_or_behind(minutes, "the clock") == text
    assert (formatting.whole_seconds(minutes) == 0) == (duration(minutes) == "0 s")


@pytest.mark.parametrize(("seconds", "text"), [
    (5 * 3600 + 45 * 60, "+05:45"),
    (-10 * 3600, "-10:00"),
    (9 * 60 + 21, "+00:09:21"),
    (-(25 * 60 + 21), "-00:25:21"),
    (0, "+00:00"),
])
def test_offsets(seconds, text):
    assert offset(dt.timedelta(seconds=seconds)) == text


def test_clock_filters_round_to_the_nearest_second_across_midnight():
    assert hms(dt.datetime(2026, 7, 14, 23, 59, 59, 600_000)) == "00:00:00"
    assert hms(dt.time(11, 37, 41, 499_999)) == "11:37:41"
    assert hms(43200.5) == "12:00:01"  # half a second rounds up, as round_to_second does
    last_half_second = dt.datetime(2026, 7, 14, 23, 59, 59, 500_000)
    assert round_to_second(last_half_second) == dt.datetime(2026, 7, 15)
    assert formatting.hm(dt.time(13, 4, 31)) == "13:05"
    assert formatting.hm(dt.time(13, 4, 29, 600_000)) == "13:05"  # via 13:04:30, as the JSON shows it
    assert formatting.clock(dt.time(14, 30)) == "14:30"
    assert formatting.clock(dt.time(14, 30, 5)) == "14:30:05"


def test_angle_and_date_filters():
    assert formatting.latitude(48.85661) == "48.8566°N"
    assert formatting.latitude(-33.8688) == "33.8688°S"
    assert formatting.longitude(-157.4) == "157.4°W"
    assert formatting.longitude(120.0) == "120°E"
    assert formatting.longitude(0.0) == "0°"
    assert formatting.degrees(-12.44) == "-12.4°"
    assert [formatting.compass(azimuth) for azimuth in (0, 134, 196.7, 359)] == [
        "north", "south-east", "south", "north"]
    assert [formatting.compass_initials(azimuth) for azimuth in (0, 44, 134, 196.7, 292, 359)] == [
        "N", "NE", "SE", "S", "W", "N"]
    assert formatting.long_date(dt.date(2026, 7, 14)) == "14 July 2026"
    assert formatting.paragraph("one\n  two\nthree ") == "one two three"


def test_solar_events_in_a_local_mean_time_era_read_the_places_clock_in_valid_iso_8601(narrator):
    # Paris kept +00:09:21 in 1905; ISO 8601 has no offsets with seconds, so the events say +00:09. Their readings
    # are the clocks' of Paris, as local_time and the texts are: as instants at +00:09 they read 21 s early.
    report = report_at("Paris", "1905-06-01", "12:00")
    texts = narrator.narrate(report)
    events = result_json(numbers_json(report), texts)["solar_events"]
    for name in ("sunrise", "solar_noon", "sunset"):
        assert re.fullmatch(r"1905-06-01T\d\d:\d\d:\d\d\+00:09", events[name]), events[name]
        reading = dt.datetime.fromisoformat(events[name]).replace(tzinfo=None)
        assert abs(reading - getattr(report.events, name).replace(tzinfo=None)) <= dt.timedelta(seconds=0.5)
    assert events["solar_noon"] == "1905-06-01T11:57:27+00:09"
    assert "solar noon at 11:57:27 clock time" in texts.validation
    assert (events["sunrise"], events["sunset"]) == ("1905-06-01T04:01:18+00:09", "1905-06-01T19:54:10+00:09")
    assert "The Sun rises at 04:01 and sets at 19:54." in texts.solar_context


def test_solar_events_in_a_repeated_hour_carry_the_offset_of_their_occurrence(narrator):
    # Troll's clocks went back from 03:00 (+02:00) to 01:00 (+00:00) at 01:00 UTC on 25 October 2026; the Sun
    # rose at 02:34 UTC, on the second pass of 02:34, at +00:00.
    report = troll("2026-10-25", "12:00")
    assert report.events.sunrise.utcoffset() == dt.timedelta(0)
    events = result_json(numbers_json(report), narrator.narrate(report))["solar_events"]
    assert events["sunrise"] == "2026-10-25T02:34:14+00:00"
    for name in ("sunrise", "solar_noon", "sunset"):
        instant = dt.datetime.fromisoformat(events[name])
        assert abs(instant - getattr(report.events, name)) <= dt.timedelta(seconds=0.5), name

def test_the_summary_counts_the_sun_risen_while_its_upper_rim_shows(narrator):
    # Tromsø at noon in January: the centre 0.2° below the horizon, inside sunrise 11:45 – sunset 12:02.
    report = report_in("Europe/Oslo", 69.6492, 18.9553, "2024-01-15", "12:00", "Tromsø, Norway")
    assert -0.2667 < report.sun.elevation < 0
    summary = narrator.narrate(report).summary
    assert "Only the Sun's upper rim is above the horizon, in the south (its centre is 0.2° below)" in summary
    assert "casts no shadow" not in summary


@pytest.mark.parametrize("local_time,sign", [("21:48:20", 1), ("21:48:40", -1)])
def test_the_summary_puts_a_sun_within_a_twentieth_of_a_degree_on_the_horizon(narrator, local_time, sign):
    # Paris at sunset: the centre 0.008° above, then 0.029° below. "0.0° above the horizon" and "its centre is
    # 0.0° below" read as figures of nothing; the page shows 0.0° too.
    texts, report = narrate(narrator, "Paris", "2026-07-14", local_time)
    assert 0 < sign * report.sun.elevation < 0.05
    assert ("The Sun stands on the horizon in the north-west (azimuth 304.8°, elevation 0.0°), so a sundial's "
            "shadow is too long and faint to read;") in texts.summary
    assert "0.0° above" not in texts.summary and "0.0° below" not in texts.summary


def test_the_summary_counts_the_sun_set_once_sunset_has_passed(narrator):
    # Tromsø, 15 May 2026, a minute and a half after the 23:48 sunset. Refracted for 10 °C and 1010 hPa (0.62°),
    # the centre at the standard −0.8333° reads −0.21°; here it reads −0.24°, above the −0.27° at which the
    # upper rim would set under that refraction: the summary must not count as up what the events call set.
    texts, report = narrate(narrator, "Tromsø", "2026-05-15", "23:50")
    assert report.events.sunset < report.civil.utc and -0.2667 < report.sun.elevation < -0.2113
    assert "The Sun is 0.2° below the horizon, so a real sundial casts no shadow now" in texts.summary
    assert "fits night, outside sunrise 01:43 – sunset 23:48" in texts.validation


def test_the_total_check_says_when_its_rounded_terms_miss_their_sum(narrator):
    report = report_in("Africa/Douala", 6.2424, 10.5134, "1974-08-09", "11:08:13", "Bamenda, Cameroon")
    line = next(line for line in narrator.narrate(report).validation.splitlines() if "total difference" in line)
    assert line.startswith("✓ total difference -23 min 27 s = equation of time -5 min 31 s + longitude correction "
                           "-17 min 57 s (each to the nearest second), matching")
    paris = narrator.narrate(report_at("Paris", "2026-07-14", "14:30")).validation
    assert "nearest second" not in paris


def test_checks_name_summer_time_only_where_the_clocks_keep_it(narrator):
    # Without summer time the offset is the standard one alone, and the total has no DST term: "+ summer
    # time 0 s" and "- DST 0 s" were on every line of the kind.
    winter = narrator.narrate(report_at("Paris", "2026-01-14", "09:00")).validation.splitlines()
    assert winter[0] == "✓ local time 09:00:00 = UTC 08:00:00 +01:00, which is standard time UTC+01:00"
    assert "DST" not in winter[3] and winter[3].startswith("✓ total difference ")
    assert ", matching the Sun's hour angle" in winter[3]
    assert not re.search(r"(?<![\d.])0 s\b", "\n".join(winter))
    summer = narrator.narrate(report_at("Paris", "2026-07-14", "14:30")).validation.splitlines()
    assert summer[0].endswith("which is standard time UTC+01:00 + summer time 1 h")
    assert " DST 1 h, matching" in summer[3]


def test_the_offset_check_calls_local_mean_time_as_the_other_texts_do(narrator):
    # It said "standard time UTC-00:25:21" where the summary and the history say local mean time.
    dublin = narrator.narrate(report_at("Dublin", "1916-07-01", "12:00"))
    assert dublin.validation.splitlines()[0].endswith(
        "which is local mean time UTC-00:25:21 + summer time 1 h")
    assert "local mean time UTC-00:25:21" in dublin.historical_context


def test_every_text_writes_its_minus_signs_with_one_character(narrator):
    # The total check wrote its "− DST" with U+2212 beside the hyphen-minus of "-50 min 35 s" and
    # "UTC-05:00" everywhere: a reader or a search for one finds half of them.
    for place, date in (("Paris", "2026-07-14"), ("Dublin", "1916-07-01"), ("Kashgar", "2026-01-14")):
        texts = narrator.narrate(report_at(place, date, "14:30"))
        for text in (texts.summary, texts.historical_context, texts.solar_context, texts.validation,
                     texts.share_text):
            assert "\u2212" not in text
    paris = narrator.narrate(report_at("Paris", "2026-07-14", "14:30")).validation
    assert "+ longitude correction -50 min 35 s - DST 1 h, matching" in paris


def test_checks_catch_an_equation_of_time_beyond_its_range_either_way():
    report = report_at("Paris", "2026-07-14", "14:30")
    wrong = dataclasses.replace(report, sun=dataclasses.replace(report.sun, equation_of_time_minutes=-20.0))
    assert any(text.startswith("equation of time -20 min is outside ±16.5 min") for text in _failing(wrong))


def test_checks_catch_offsets_that_add_up_only_with_negative_summer_time_or_not_to_the_clock():
    winter = report_at("Dublin", "2026-01-14", "12:00")  # UTC+00:00, standard time
    negative = dataclasses.replace(winter.civil, standard_offset=dt.timedelta(hours=1),
                                   dst_offset=dt.timedelta(hours=-1))
    assert any(text.startswith("local time") for text in _failing(dataclasses.replace(winter, civil=negative)))
    half_an_hour_off = dataclasses.replace(winter.civil, local=winter.civil.local + dt.timedelta(minutes=30))
    assert any(text.startswith("local time")
               for text in _failing(dataclasses.replace(winter, civil=half_an_hour_off)))


def test_checks_catch_a_meridian_distance_a_whole_turn_off():
    report = report_at("Paris", "2026-07-14", "14:30")
    distance = report.meridian_distance_degrees + 360  # the same meridian, and a correction to match it
    turned = dataclasses.replace(report, meridian_distance_degrees=distance,
                                 longitude_correction_minutes=report.longitude_correction_minutes + 4 * 360)
    assert any(text.startswith("longitude correction") for text in _failing(turned))


def test_checks_catch_half_a_minute_between_the_total_and_the_sun_and_a_minute_in_the_reading():
    report = report_at("Paris", "2026-07-14", "14:30")
    equation = report.equation_of_time_minutes + 0.5
    half_a_minute = dataclasses.replace(report, sun=dataclasses.replace(report.sun, equation_of_time_minutes=equation))
    assert any(text.startswith("total difference") for text in _failing(half_a_minute))
    a_minute_off = dataclasses.replace(report.sun, true_solar_seconds=report.sun.true_solar_seconds + 60)
    assert any(text.startswith("true solar time") for text in _failing(dataclasses.replace(report, sun=a_minute_off)))


def test_day_or_night_is_not_judged_more_than_12_hours_from_solar_noon():
    report = report_at("Kashgar", "2026-07-14", "01:30")  # solar noon near 15:00 on the clock
    assert validation.sun_matches_day_or_night(report) is None
    assert validation.sun_matches_day_or_night(report_at("Kashgar", "2026-07-14", "14:30")) is not None


def test_the_horizon_band_takes_either_answer_inside_it_and_only_one_outside():
    # Apparent elevations from −0.9° to 0°: sunrise and sunset put the Sun there, so day and night both fit.
    day, night = report_at("Paris", "2026-07-14", "14:30"), report_at("Kashgar", "2026-07-14", "23:30")
    for report in (day, night):
        inside = dataclasses.replace(report, sun=dataclasses.replace(report.sun, elevation=-0.5))
        assert validation.sun_matches_day_or_night(inside).passed
    below = dataclasses.replace(day, sun=dataclasses.replace(day.sun, elevation=-1.5))
    assert not validation.sun_matches_day_or_night(below).passed
    above = dataclasses.replace(night, sun=dataclasses.replace(night.sun, elevation=1.0))
    assert not validation.sun_matches_day_or_night(above).passed


def test_the_solar_noon_check_reads_as_in_the_readme():
    check = validation.solar_noon_at_twelve(report_at("Paris", "2026-07-14", "14:30"))
    assert check.text == ("solar noon at 13:56:30 clock time is 12:00 true solar time (carried from now: 0.2 s off, "
                          "1.7 s allowed)")
