// The public calculator page: reads the form or a share link, asks the public API, shows the answer.
// Everything shown comes from /api/v1/... as any client gets it; API text is inserted as text, never as HTML.
"use strict";

const SOLAR_TIME_API = "/api/v1/solar-time";
const EQUATION_OF_TIME_API = "/api/v1/equation-of-time";
const QUERY_FIELDS = ["date", "local_time", "place_name", "latitude", "longitude"];
const SVG = "http://www.w3.org/2000/svg";
const MINUS = "\u2212";
const DAY_MS = 86400000;

/** An answer from the API that is not a result: the status and the error envelope's ``error`` object. */
class ApiFailure extends Error {
  constructor(status, error) {
    super(error.message);
    this.status = status;
    this.error = error;
  }
}

const byId = (id) => document.getElementById(id);
const form = byId("calculator");
const PAGE_TITLE = document.title; // the empty page's, which every other one ends with

// ---------------------------------------------------------------- asking the API

async function getJson(path, params, signal) {
  const url = `${path}?${new URLSearchParams(params)}`;
  let response;
  try {
    response = await fetch(url, { signal, headers: { Accept: "application/json" } });
  } catch (failure) {
    if (signal && signal.aborted) throw failure;
    throw new ApiFailure(0, { code: "NETWORK", message: "The service could not be reached. Check the connection and try again." });
  }
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON (a proxy's error page, say): described below from the status line.
  }
  if (response.ok && body) return body;
  if (body && body.error && body.error.message) throw new ApiFailure(response.status, body.error);
  throw new ApiFailure(response.status, {
    code: `HTTP_${response.status}`,
    message: `The service answered ${response.status} ${response.statusText} without an explanation. Try again later.`,
  });
}

/** The API's result for a query whose date and time may be empty, meaning today and now at the place. */
async function solarTime(query, signal) {
  if (query.date && query.local_time) return getJson(SOLAR_TIME_API, query, signal);
  // Only the service knows the place's time zone. Ask once at noon (a clock time no zone skips) to learn
  // it, then ask again with the present wall-clock time there.
  const now = new Date();
  const probe = await getJson(SOLAR_TIME_API, { ...query, date: query.date || isoDate(now), local_time: "12:00:00" }, signal);
  const here = wallClock(now, probe);
  return getJson(SOLAR_TIME_API, { ...query, date: query.date || here.date, local_time: query.local_time || here.time }, signal);
}

/** Date and time of ``instant`` on the clocks of the answer's time zone. */
function wallClock(instant, answer) {
  try {
    const format = new Intl.DateTimeFormat("en-CA", {
      timeZone: answer.timezone, hourCycle: "h23",
      year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
    const part = Object.fromEntries(format.formatToParts(instant).map(({ type, value }) => [type, value]));
    return { date: `${part.year}-${part.month}-${part.day}`, time: `${part.hour}:${part.minute}:${part.second}` };
  } catch {
    // A zone this browser does not know: shift by the offset the service reported instead.
    const shifted = new Date(instant.getTime() + offsetSeconds(answer.calculation.utc_offset_exact) * 1000);
    return { date: isoDate(shifted), time: shifted.toISOString().slice(11, 19) };
  }
}

function offsetSeconds(text) {
  const [hours, minutes, seconds] = text.slice(1).split(":").map(Number);
  return (text[0] === "-" ? -1 : 1) * (hours * 3600 + minutes * 60 + (seconds || 0));
}

function isoDate(instant) {
  return instant.toISOString().slice(0, 10);
}

const equationOfTimeYears = new Map(); // year → Promise of the API's answer, asked once per page view

function equationOfTime(year) {
  if (!equationOfTimeYears.has(year)) {
    const answer = getJson(EQUATION_OF_TIME_API, { year });
    answer.catch(() => equationOfTimeYears.delete(year)); // a refusal (429) is not remembered
    equationOfTimeYears.set(year, answer);
  }
  return equationOfTimeYears.get(year);
}

// ---------------------------------------------------------------- the form and the address bar

function queryFromForm() {
  const value = (name) => form.elements[name].value.trim();
  const query = { date: value("date"), local_time: value("local_time") };
  if (form.elements.mode.value === "coordinates") {
    query.latitude = value("latitude");
    query.longitude = value("longitude");
  } else {
    query.place_name = value("place_name");
  }
  return withoutEmpty(query);
}

function queryFromAddress() {
  const params = new URLSearchParams(window.location.search);
  return withoutEmpty(Object.fromEntries(QUERY_FIELDS.map((name) => [name, (params.get(name) || "").trim()])));
}

// Empty fields are left out: the API then names what is missing, and an empty date or time means "now".
function withoutEmpty(query) {
  return Object.fromEntries(Object.entries(query).filter(([, value]) => value !== undefined && value !== ""));
}

function fillForm(query) {
  const coordinates = "latitude" in query || "longitude" in query;
  form.elements.mode.value = coordinates ? "coordinates" : "place";
  for (const name of QUERY_FIELDS) form.elements[name].value = query[name] === undefined ? "" : String(query[name]);
  showModeFields();
}

function showModeFields() {
  const coordinates = form.elements.mode.value === "coordinates";
  byId("coordinate-fields").hidden = !coordinates;
  byId("place-fields").hidden = coordinates;
}

let inFlight = null; // the AbortController of the question being asked
let shownResult = null; // the result on screen, so a late chart never lands on a newer one

/** Ask for ``query`` and show the outcome. ``addToHistory``: make the answer's share link, or the question
itself when it is refused, a new entry of the browser's history (a question from the form or the picker;
not one read from the address bar), so that reload shows it again and back returns to what was before. */
async function calculate(query, addToHistory) {
  if (inFlight) inFlight.abort(); // a newer question replaces an unanswered one
  const controller = new AbortController();
  inFlight = controller;
  const resultView = byId("result");
  resultView.setAttribute("aria-busy", "true");
  clearProblem();
  byId("candidates").hidden = true;
  announce("Asking the service…");
  try {
    const result = await solarTime(query, controller.signal);
    if (controller.signal.aborted) return;
    showResult(result);
    if (addToHistory) {
      addToAddressHistory(result.share.url);
      byId("result-heading").focus(); // a keyboard or screen-reader user lands on the answer asked for
    }
    // Whole out of context (read after going back, say), so with the clock time's date.
    announce(`Sundial time ${result.true_solar_time} at ${result.location.display_name}; clock time ${result.local_time} on ${formatDate(result.date)}.`);
  } catch (failure) {
    if (controller.signal.aborted) return;
    if (addToHistory) addToAddressHistory(`/?${new URLSearchParams(query)}`);
    resultView.hidden = true;
    announce("");
    if (failure instanceof ApiFailure && failure.status === 409 && Array.isArray(failure.error.candidates)) {
      showCandidates(failure.error, query);
    } else if (failure instanceof ApiFailure && failure.error.suggestions?.length) {
      showProblem(failure.error.message, fieldOfProblem(failure.error));
      showSuggestions(failure.error.suggestions, query);
    } else if (failure instanceof ApiFailure) {
      showProblem(failure.error.message, fieldOfProblem(failure.error), addToHistory);
    } else {
      showProblem(`This page failed: ${failure.message}`, null, addToHistory);
    }
  } finally {
    if (inFlight === controller) {
      inFlight = null;
      resultView.removeAttribute("aria-busy");
    }
  }
}

/** A new history entry for ``url``, unless the address bar already holds it (the same question asked again). */
function addToAddressHistory(url) {
  const target = new URL(url, window.location.origin);
  if (target.href !== window.location.href) window.history.pushState(null, "", target);
}

function announce(text) {
  byId("status").textContent = text;
}

/** The title says what the page shows (``shown``, or nothing but the form): a screen reader reads it on going back
or forward, and the browser's history lists its entries by it. */
function entitle(shown = null) {
  document.title = shown ? `${shown} · ${PAGE_TITLE}` : PAGE_TITLE;
}

/** Show ``message``; with ``field``, mark that field invalid and described by the message, and with
``moveFocus`` (the person just asked) put the cursor there to correct it. Without a field, ``moveFocus``
puts it on the message if it was lost: on the button of a picker hidden while the question was asked. */
function showProblem(message, field = null, moveFocus = false) {
  clearProblem(); // one problem at a time: a field marked before is no longer the one in question
  const problem = byId("problem");
  problem.textContent = message;
  problem.hidden = false;
  document.title = `Error: ${PAGE_TITLE}`;
  if (!field) {
    if (moveFocus && document.activeElement === document.body) problem.focus();
    return;
  }
  field.setAttribute("aria-invalid", "true");
  field.setAttribute("aria-describedby", `${field.dataset.describedBy ?? ""} problem`.trim());
  if (moveFocus) field.focus();
}

function clearProblem() {
  byId("problem").hidden = true;
  for (const field of form.querySelectorAll("[aria-invalid]")) {
    field.removeAttribute("aria-invalid");
    if (field.dataset.describedBy) field.setAttribute("aria-describedby", field.dataset.describedBy);
    else field.removeAttribute("aria-describedby");
  }
}

// Refusals that name no field in their message, and the field they are about.
const FIELD_OF_CODE = { PLACE_NOT_FOUND: "place_name", TIMEZONE_RESOLUTION_FAILED: "latitude" };

/** The shown form field an API refusal is about: by its code; for a refused value (INVALID_REQUEST), the
first shown field its message names that was left empty (an empty field is not sent, so it is the one
missing: "…; longitude is missing"), else the first one it names. The other mode's fields are hidden, and
other refusals (a busy geocoder, a rate limit) are about no field, whatever their message mentions. */
function fieldOfProblem(error) {
  const shown = (field) => (field && !field.closest("[hidden]") ? field : null);
  if (FIELD_OF_CODE[error.code]) return shown(form.elements[FIELD_OF_CODE[error.code]]);
  if (error.code !== "INVALID_REQUEST") return null;
  const named = QUERY_FIELDS
    .map((name) => [shown(form.elements[name]), error.message.search(new RegExp(`\\b${name}\\b`))])
    .filter(([field, at]) => field && at >= 0)
    .sort((a, b) => a[1] - b[1])
    .map(([field]) => field);
  return named.find((field) => !field.value.trim()) ?? named[0] ?? null;
}

/** A field the page refuses without asking, and why: a date or time the browser could not read (a year
left out, 30 February, no AM/PM), whose value is then "", which would otherwise ask for today or now; a
coordinate written with a decimal comma, as many languages write one, which the API refuses without
saying that the comma is what is wrong. */
function fieldRefusedInPage() {
  const fields = [["date", "The date is incomplete or not a real date", "today's date"],
    ["local_time", "The clock time is incomplete", "the time now"]];
  for (const [name, problem, instead] of fields) {
    const field = form.elements[name];
    if (field.validity.badInput) return { field, message: `${problem}: complete it, or clear it for ${instead} at the place.` };
  }
  if (form.elements.mode.value !== "coordinates") return null;
  for (const name of ["latitude", "longitude"]) {
    const field = form.elements[name];
    const written = field.value.trim();
    if (/^[-+]?\d+,\d+$/.test(written)) {
      return { field, message: `Write the ${name} with a decimal point: ${written.replace(",", ".")}, not ${written}.` };
    }
  }
  return null;
}

/** The 409 picker: recommended first, then by population; a pick resends in coordinate mode. Its words are
the page's: the API's message tells a client to resend a candidate's coordinates, which here is a click. */
function showCandidates(error, query) {
  const candidates = [...error.candidates].sort((a, b) =>
    Number(b.recommended) - Number(a.recommended) || (b.population || 0) - (a.population || 0));
  const country = candidates[0]?.country_code;
  const message = `“${query.place_name}” is the name of places in more than one country. `
    + "Choose the one you mean, or add its country or region to the name"
    + (country ? `: “${query.place_name}, ${country}”.` : ".");
  showChoices(message, candidates.map((candidate) => ({
    name: candidate.display_name,
    details: [formatCoordinates(candidate.latitude, candidate.longitude), candidate.timezone,
      candidate.population ? `population ${candidate.population.toLocaleString("en")}` : null,
      candidate.recommended ? "recommended" : null].filter(Boolean).join(" · "),
    recommended: candidate.recommended,
    query: withoutEmpty({ date: query.date, local_time: query.local_time,
      latitude: String(candidate.latitude), longitude: String(candidate.longitude) }),
  })));
}

/** A 404's close names (``error.suggestions``) as the same picker, below the API's message, which says why
nothing was found; a pick asks again with that name in the place field. */
function showSuggestions(suggestions, query) {
  showChoices("Choose one of these close names to ask again with it, or correct the place name.",
    suggestions.map((name) => ({
      name, details: null, recommended: false,
      query: withoutEmpty({ date: query.date, local_time: query.local_time, place_name: name }),
    })));
}

/** The picker under "Which place did you mean?": ``message``, then a button per choice (``name``, ``details``
or null, ``recommended``), whose click fills the form with its ``query`` and asks it. */
function showChoices(message, choices) {
  byId("candidates-message").textContent = message;
  byId("candidate-list").replaceChildren(...choices.map((choice) => {
    const button = element("button", { type: "button", class: choice.recommended ? "candidate recommended" : "candidate" });
    button.append(element("span", { class: "candidate-name" }, choice.name));
    if (choice.details) button.append(element("span", { class: "candidate-details" }, choice.details));
    button.addEventListener("click", () => {
      fillForm(choice.query);
      calculate(choice.query, true);
    });
    const item = element("li");
    item.append(button);
    return item;
  }));
  byId("candidates").hidden = false;
  entitle(byId("candidates-heading").textContent);
  byId("candidates-heading").focus();
}

// ---------------------------------------------------------------- the result

function showResult(result) {
  const { calculation, location, solar_position: sun } = result;
  byId("result-heading").textContent = location.display_name;
  byId("result-where").textContent = [
    formatCoordinates(location.latitude, location.longitude),
    result.timezone,
    // Local mean time has seconds in its offset (Paris 1905: +00:09:21), and the UTC time shown uses them.
    `UTC${calculation.utc_offset_exact.endsWith(":00") ? result.utc_offset : calculation.utc_offset_exact}`,
    result.dst ? "daylight saving time" : "standard time",
  ].join(" · ");

  byId("true-solar-time").textContent = result.true_solar_time;
  byId("true-solar-date").textContent = result.true_solar_date === result.date
    ? formatDate(result.true_solar_date) : `${formatDate(result.true_solar_date)} (another day than the clock's)`;
  byId("clock-time").textContent = result.local_time;
  byId("clock-note").textContent = formatDate(result.date);
  byId("utc-time").textContent = result.utc_time;
  byId("utc-note").textContent = formatDate(result.utc_date);

  byId("eot-value").textContent = signedDuration(calculation.equation_of_time_minutes);
  byId("eot-note").textContent = `the apparent Sun ${calculation.equation_of_time_minutes >= 0 ? "ahead of" : "behind"} mean solar time on this date`;
  byId("longitude-value").textContent = signedDuration(calculation.longitude_correction_minutes);
  byId("longitude-note").textContent = `${formatLongitude(location.longitude)} against the zone's standard meridian ${formatLongitude(calculation.standard_meridian)}`;
  const dstMinutes = calculation.dst_minutes;
  byId("dst-value").textContent = signedDuration(-dstMinutes);
  byId("dst-note").textContent = dstMinutes ? `clocks set ${duration(dstMinutes)} ahead of standard time` : "not in effect";
  const total = calculation.total_difference_minutes;
  byId("total-value").textContent = signedDuration(total);
  byId("total-note").textContent = `${result.local_time} ${total < 0 ? MINUS : "+"} ${duration(total)} = ${result.true_solar_time}`;

  byId("azimuth-value").textContent = `${roundedFigure(sun.azimuth, 1)}° (${compassPoint(sun.azimuth)})`;
  byId("elevation-value").textContent = elevationText(sun.elevation);
  drawCompass(byId("compass"), sun.azimuth, sun.elevation);
  drawAltitude(byId("altitude"), sun.elevation);
  showEvents(result.solar_events, result.date);

  byId("summary").textContent = result.summary;
  byId("solar-context").textContent = result.solar_context;
  byId("historical-context").textContent = result.historical_context;
  byId("validation").textContent = result.validation;
  byId("confidence").textContent = `confidence ${result.confidence}`;

  byId("share-text").textContent = result.share.text;
  byId("share-link").value = new URL(result.share.url, window.location.origin).href;
  byId("copy-status").textContent = "";

  byId("result").hidden = false;
  entitle(`${result.true_solar_time} at ${location.display_name}`);
  shownResult = result;
  drawEquationOfTimeChart(result);
}

function showEvents(events, date) {
  byId("events").hidden = !events;
  if (!events) return;
  const states = {
    normal: "",
    // The events belong to the solar day around this date's solar noon (near a pole it reaches well into
    // the next or the previous date).
    polar_day: "The Sun stays up from the solar midnight before this date's noon to the one after it (polar day).",
    polar_night: "The Sun stays down from the solar midnight before this date's noon to the one after it (polar night).",
  };
  byId("events-state").textContent = states[events.state] ?? events.state;
  byId("sunrise").textContent = eventTime(events.sunrise, date);
  byId("solar-noon").textContent = eventTime(events.solar_noon, date);
  byId("sunset").textContent = eventTime(events.sunset, date);
  const length = events.day_length_minutes;
  byId("day-length").textContent = typeof length === "number"
    ? `${Math.floor(Math.round(length) / 60)} h ${Math.round(length) % 60} min` : "—";
}

/** "20:23:03" from the API's local ISO date-time, naming the day when it is not the result's date. */
function eventTime(value, date) {
  if (!value) return "—";
  const [day, time] = value.includes("T") ? [value.slice(0, 10), value.slice(11, 19)] : [date, value];
  return day === date ? time : `${time} (${formatDate(day, { day: "numeric", month: "short" })})`;
}

// ---------------------------------------------------------------- pictures

/** Seen from above: north up, the Sun's direction on the rim (hollow when it is below the horizon). */
function drawCompass(svg, azimuth, elevation) {
  const radius = 50;
  const angle = (azimuth * Math.PI) / 180;
  const sunX = radius * Math.sin(angle);
  const sunY = -radius * Math.cos(angle);
  const parts = [
    svgElement("circle", { class: "dial", r: radius }),
    ...[0, 45, 90, 135, 180, 225, 270, 315].map((degrees) => {
      const a = (degrees * Math.PI) / 180;
      const inner = degrees % 90 === 0 ? 42 : 46;
      return svgElement("line", { class: "tick", x1: inner * Math.sin(a), y1: -inner * Math.cos(a), x2: radius * Math.sin(a), y2: -radius * Math.cos(a) });
    }),
    ...[["N", 0, -63], ["E", 63, 0], ["S", 0, 63], ["W", -63, 0]].map(([text, x, y]) =>
      svgElement("text", { class: "cardinal", x, y, "text-anchor": "middle", "dominant-baseline": "central" }, text)),
    svgElement("line", { class: "pointer", x1: 0, y1: 0, x2: sunX, y2: sunY }),
    svgElement("circle", { class: sunClass(elevation), cx: sunX, cy: sunY, r: 7 }),
  ];
  replacePicture(svg, `The Sun is in the ${compassPoint(azimuth)}, azimuth ${roundedFigure(azimuth, 1)}° clockwise from north`, parts);
}

/** Side view: the horizon, the zenith straight up, and the Sun on its arc at its elevation. */
function drawAltitude(svg, elevation) {
  const radius = 60;
  const angle = (elevation * Math.PI) / 180;
  const sunX = radius * Math.cos(angle);
  const sunY = -radius * Math.sin(angle);
  const parts = [
    svgElement("rect", { class: "ground", x: -25, y: 0, width: 115, height: 70 }),
    svgElement("path", { class: "dial", d: `M 0 ${-radius} A ${radius} ${radius} 0 0 1 0 ${radius}` }),
    svgElement("line", { class: "horizon", x1: -25, y1: 0, x2: 90, y2: 0 }),
    svgElement("text", { class: "scale", x: -4, y: -radius, "text-anchor": "end", "dominant-baseline": "central" }, "90°"),
    svgElement("text", { class: "scale", x: radius + 4, y: -4 }, "0°"),
    svgElement("line", { class: "pointer", x1: 0, y1: 0, x2: sunX, y2: sunY }),
    svgElement("circle", { class: sunClass(elevation), cx: sunX, cy: sunY, r: 7 }),
  ];
  const side = horizonSide(elevation);
  replacePicture(svg, `The Sun is ${side === "on" ? "on" : `${roundedFigure(elevation, 1)}° ${side}`} the horizon`, parts);
}

/** The Sun drawn hollow when it reads as below the horizon. */
function sunClass(elevation) {
  return horizonSide(elevation) === "below" ? "sun below" : "sun";
}

/** The year's equation of time from the API, with this result's instant marked on it. */
async function drawEquationOfTimeChart(result) {
  const svg = byId("eot-chart");
  const note = byId("eot-chart-note");
  const year = Number(result.date.slice(0, 4));
  byId("eot-heading").textContent = `The equation of time over ${year}`;
  let curve;
  try {
    curve = await equationOfTime(year);
  } catch (failure) {
    if (result !== shownResult) return; // a newer result is on screen
    replacePicture(svg, `The equation of time over ${year} is not available`, []);
    note.textContent = `The curve could not be drawn: ${failure.message}`;
    return;
  }
  if (result !== shownResult) return;

  // Drawn at the width it is shown at, so its text stays readable on a phone.
  const width = Math.max(300, Math.round(svg.getBoundingClientRect().width));
  svg.setAttribute("viewBox", `0 0 ${width} 250`);
  const box = { left: 40, right: width - 10, top: 12, bottom: 226 };
  const days = curve.days.length;
  const limit = 17; // minutes: the curve stays within about ±16.5
  const x = (day) => box.left + ((box.right - box.left) * day) / days;
  const y = (minutes) => box.top + ((box.bottom - box.top) * (limit - minutes)) / (2 * limit);
  const parts = [];
  for (const minutes of [-15, -10, -5, 0, 5, 10, 15]) {
    parts.push(svgElement("line", { class: minutes === 0 ? "axis" : "grid", x1: box.left, x2: box.right, y1: y(minutes), y2: y(minutes) }));
    parts.push(svgElement("text", { class: "scale", x: box.left - 6, y: y(minutes), "text-anchor": "end", "dominant-baseline": "central" },
      minutes > 0 ? `+${minutes}` : minutes < 0 ? `${MINUS}${-minutes}` : "0"));
  }
  const januaryFirst = Date.UTC(year, 0, 1);
  // "Sep" is about 20 units wide in the scale's 11 px type: on a phone's narrower chart, months run together.
  const monthName = (box.right - box.left) / 12 < 30 ? "narrow" : "short";
  for (let month = 0; month < 12; month += 1) {
    const day = (Date.UTC(year, month, 1) - januaryFirst) / DAY_MS;
    parts.push(svgElement("line", { class: "grid", x1: x(day), x2: x(day), y1: box.top, y2: box.bottom }));
    parts.push(svgElement("text", { class: "scale", x: x(day + 15), y: box.bottom + 16, "text-anchor": "middle" },
      new Date(Date.UTC(year, month, 1)).toLocaleString("en", { month: monthName, timeZone: "UTC" })));
  }
  // Samples are at 12:00 UTC, half a day into each date.
  const points = curve.days.map((sample, index) => `${x(index + 0.5).toFixed(1)},${y(sample.equation_of_time_minutes).toFixed(1)}`);
  parts.push(svgElement("polyline", { class: "curve", points: points.join(" ") }));
  parts.push(svgElement("text", { class: "scale", x: box.left + 4, y: box.top + 2, "dominant-baseline": "hanging" }, "sundial ahead of the clock (min)"));
  parts.push(svgElement("text", { class: "scale", x: box.left + 4, y: box.bottom - 4 }, "sundial behind"));

  const eot = result.calculation.equation_of_time_minutes;
  const instant = Date.parse(`${result.utc_date}T${result.utc_time}Z`);
  const markDay = Math.min(Math.max((instant - januaryFirst) / DAY_MS, 0), days);
  parts.push(svgElement("line", { class: "marker", x1: x(markDay), x2: x(markDay), y1: box.top, y2: box.bottom }));
  parts.push(svgElement("circle", { class: "marker-dot", cx: x(markDay), cy: y(eot), r: 5 }));
  const labelOnLeft = x(markDay) > (box.left + box.right) / 2;
  parts.push(svgElement("text", { class: "marker-label", x: x(markDay) + (labelOnLeft ? -9 : 9), y: y(eot) + (eot > 8 ? 16 : -10), "text-anchor": labelOnLeft ? "end" : "start" },
    `${formatDate(result.date, { day: "numeric", month: "short" })}: ${signedDuration(eot)}`));

  const extremes = curve.days.reduce((found, sample) => ({
    high: sample.equation_of_time_minutes > found.high.equation_of_time_minutes ? sample : found.high,
    low: sample.equation_of_time_minutes < found.low.equation_of_time_minutes ? sample : found.low,
  }), { high: curve.days[0], low: curve.days[0] });
  const shortDate = (iso) => formatDate(iso, { day: "numeric", month: "short" });
  const description = `In ${year} a sundial runs up to ${duration(extremes.high.equation_of_time_minutes)} ahead of mean time (${shortDate(extremes.high.date)}) and up to ${duration(extremes.low.equation_of_time_minutes)} behind (${shortDate(extremes.low.date)}); on ${formatDate(result.date)} the equation of time is ${signedDuration(eot)}.`;
  // Its title only names it: the note under it (its aria-describedby) gives the figures, read once that way.
  replacePicture(svg, `Chart of the equation of time over ${year}`, parts);
  note.textContent = `${description} Daily values at ${curve.utc_time} UTC; the same everywhere on Earth.`;
}

function replacePicture(svg, description, parts) {
  const title = svg.querySelector("title");
  title.textContent = description;
  svg.replaceChildren(title, ...parts);
}

function element(name, attributes = {}, text = null) {
  return decorated(document.createElement(name), attributes, text);
}

function svgElement(name, attributes = {}, text = null) {
  return decorated(document.createElementNS(SVG, name), attributes, text);
}

function decorated(node, attributes, text) {
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== null) node.textContent = text;
  return node;
}

// ---------------------------------------------------------------- formatting

/** "1 h 1 min 56 s", "1 h 5 s", "0 s": the size of a number of minutes, to the second, without its sign,
 *  its zero parts left out as the API's texts write it (duration in solarserv/formatting.py). */
function duration(minutes) {
  const total = wholeSeconds(minutes);
  const parts = [[Math.floor(total / 3600), "h"], [Math.floor((total % 3600) / 60), "min"], [total % 60, "s"]];
  const shown = parts.filter(([value]) => value).map(([value, unit]) => `${value} ${unit}`);
  return shown.length ? shown.join(" ") : "0 s";
}

/** "−1 h 1 min 56 s", "+3 min 2 s", "±0 s": with a real minus sign. */
function signedDuration(minutes) {
  const sign = wholeSeconds(minutes) === 0 ? "±" : minutes < 0 ? MINUS : "+";
  return `${sign}${duration(minutes)}`;
}

/** The API's figures have four decimals, and the page rounds them further as the texts do (solarserv/timefmt.py):
 *  the figure's size, half up, in whole ten-thousandths, so that a tie rounds as a reader rounds the number
 *  shown. Math.round(minutes * 60) and toFixed round the binary value: 1.025 min times 60 is 61.4999… s,
 *  and 0.15° is 0.1499…° (toFixed(1) gives "0.1"). */
function figureUnits(value) {
  return Math.round(Math.abs(value) * 10000);
}

/** The size of a number of minutes in whole seconds: n ten-thousandths of a minute are 3n/500 s. */
function wholeSeconds(minutes) {
  return Math.floor((figureUnits(minutes) * 3 + 250) / 500);
}

/** An elevation to the tenth, on the horizon when that reads 0.0° (as the summary says): "−0.0°" took a side
 * for a centre 0.03° below it. */
function elevationText(elevation) {
  const side = horizonSide(elevation);
  const figure = roundedFigure(elevation, 1);
  if (side === "on") return `${figure}° (on the horizon)`;
  return side === "below" ? `${MINUS}${figure}° (below the horizon)` : `${figure}°`;
}

/** "on" the horizon when the elevation reads 0.0° to the tenth, else "above" or "below": the texts, the figure and
 *  the sketches all read it so. */
function horizonSide(elevation) {
  if (roundedFigure(elevation, 1) === "0.0") return "on";
  return elevation < 0 ? "below" : "above";
}

/** The size of an angle to `digits` (at most 4) decimals: "0.2" for 0.15. */
function roundedFigure(degrees, digits) {
  const step = 10 ** (4 - digits);
  const units = Math.floor((figureUnits(degrees) + step / 2) / step);
  const scale = 10 ** digits;
  return digits ? `${Math.floor(units / scale)}.${String(units % scale).padStart(digits, "0")}` : String(units);
}

/** As the API writes a point (solarserv/timefmt.py): up to 4 decimals without trailing zeros, "48.85°N". */
function formatCoordinates(latitude, longitude) {
  return `${formatLatitude(latitude)}, ${formatLongitude(longitude)}`;
}

function formatLatitude(latitude) {
  const size = trimmedDegrees(latitude);
  return size === "0" ? "0°" : `${size}°${latitude > 0 ? "N" : "S"}`;
}

/** The prime meridian and 180° take no letter. */
function formatLongitude(longitude) {
  const size = trimmedDegrees(longitude);
  return size === "0" || size === "180" ? `${size}°` : `${size}°${longitude > 0 ? "E" : "W"}`;
}

function trimmedDegrees(value) {
  return String(Number(Math.abs(value).toFixed(4)));
}

function formatDate(iso, options = { day: "numeric", month: "long", year: "numeric" }) {
  return new Date(`${iso}T00:00:00Z`).toLocaleDateString("en-GB", { ...options, timeZone: "UTC" });
}

function compassPoint(azimuth) {
  const names = ["north", "north-east", "east", "south-east", "south", "south-west", "west", "north-west"];
  return names[Math.round(azimuth / 45) % 8];
}

// ---------------------------------------------------------------- copying the share link

async function copyShareLink() {
  const link = byId("share-link");
  const status = byId("copy-status");
  try {
    await navigator.clipboard.writeText(link.value);
    status.textContent = "Link copied.";
  } catch {
    // No clipboard API (a plain-HTTP page, a refused permission): leave it selected for Ctrl+C.
    link.focus();
    link.select();
    status.textContent = "Copying is not allowed here; the link is selected — press Ctrl+C (⌘C) to copy it.";
  }
}

// ---------------------------------------------------------------- start

function start() {
  for (const radio of form.elements.mode) radio.addEventListener("change", showModeFields);
  for (const field of form.querySelectorAll("[aria-describedby]")) {
    field.dataset.describedBy = field.getAttribute("aria-describedby");
  }
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const refused = fieldRefusedInPage();
    if (refused) {
      hideAnswers();
      showProblem(refused.message, refused.field, true);
      return;
    }
    calculate(queryFromForm(), true);
  });
  byId("copy-link").addEventListener("click", copyShareLink);
  window.addEventListener("popstate", showAddress);
  let resizing = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => shownResult && drawEquationOfTimeChart(shownResult), 200);
  });
  showAddress();
}

/** A share link (or a step back through history): fill the form from the address and show its result. */
function showAddress() {
  const query = queryFromAddress();
  fillForm(query);
  if (Object.keys(query).length) calculate(query, false);
  else hideAnswers();
}

/** Nothing shown below the form: no result, no candidates, no problem, and no announcement of them. */
function hideAnswers() {
  announce("");
  entitle();
  byId("result").hidden = true;
  byId("candidates").hidden = true;
  clearProblem();
}

start();
