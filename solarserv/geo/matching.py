"""How a typed place name meets the names in the data, shared by the offline gazetteer and the
online providers: folding, qualifiers, and the rules that turn the places a name matched into one
place, an ambiguity (409) or a not-found (404).
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from solarserv.errors import ApiError
from solarserv.geo import Located
from solarserv.models import Place
from solarserv.text import in_words
from solarserv.timefmt import format_latitude, format_longitude

# Latin letters that Unicode does not decompose into a base letter plus an accent.
_UNDECOMPOSED_LETTERS = str.maketrans({
    "ø": "o", "đ": "d", "ð": "d", "ł": "l", "ı": "i", "ħ": "h", "ŀ": "l", "þ": "th", "æ": "ae", "œ": "oe",
})
_SEPARATORS = re.compile(r"[\W_]+")
# Initials with full stops, each letter standing alone ("D.C.", "U.S.A.", "a.M."): one word, as written without
# them ("DC"), where splitting at every stop made them letters apart ("d c") that no qualifier or name matched.
_INITIALS = re.compile(r"(?<![^\W_])[^\W\d_](?:\.[^\W\d_])+\.?(?![^\W_])")
# Abbreviations written both ways in place names ("St. Louis" / "Saint Louis"), expanded on both sides.
_ABBREVIATIONS = {"st": "saint", "ste": "sainte", "mt": "mount", "ft": "fort"}

# An alternate name (exonym, former name, transliteration) only counts for a place with at least this
# share of the population of the biggest place the name matched: "Peking" is also listed as a name of
# Kosciusko, Mississippi, which must not stand beside Beijing.
ALTERNATE_NAME_MIN_SHARE = 0.1
# The country recommended for a name is weighed by its places' populations, but a place bearing the name as an
# alternate name (not a short form) weighs only its population divided by this, at most ALTERNATE_NAME_WEIGHT_CAP.
# GeoNames' transliterations make "Porto" a name of Bordeaux (265,328 people; Porto 252,687) and "Dili" one of Delhi
# (74 times Dili), while "Roma" is still Rome, 163 times Roma, Lesotho.
ALTERNATE_NAME_WEIGHT_DIVISOR = 30
ALTERNATE_NAME_WEIGHT_CAP = 100_000
# A 409 lists the most populous place of every country the name is in, then more up to this many.
MAX_CANDIDATES = 10
# A 409's message names this many of the countries, then says how many more (a name can be in dozens).
COUNTRIES_NAMED = 10
# Left off the ends of the name in a 409's example of narrowing it: "Paris/" is to try "Paris, FR", not "Paris/, FR"
# ("/" and ";" are read as commas before a country or region).
STRAY_SEPARATORS = " /;"
# Candidates of one display name (two Lisbons in Ohio) are told apart by their position to this many
# decimals, about a kilometre: places closer than that are one place for the Sun.
TELLING_APART_DECIMALS = 2


def fold(text: str) -> str:
    """The form names are compared in: case, accents, punctuation and spacing removed, common
    abbreviations spelt out, initials joined. "  St. Étienne-du-Rouvray " → "saint etienne du rouvray",
    "D.C." → "dc". Scripts other than Latin are kept as they are (casefolded), so "Москва" matches the
    data's "Москва"."""
    if text.isascii():  # most names: nothing to decompose (a fast path, same result)
        letters = text.lower()
    else:
        decomposed = unicodedata.normalize("NFKD", text.casefold())
        letters = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
        letters = letters.translate(_UNDECOMPOSED_LETTERS)
    if "." in letters:
        letters = _INITIALS.sub(lambda initials: initials[0].replace(".", ""), letters)
    words = _SEPARATORS.split(letters)
    return " ".join(_ABBREVIATIONS.get(word, word) for word in words if word)


def is_short_form(name: str, own_name: str) -> bool:
    """Whether `name` is the first words of `own_name` (both folded): the place's own name without what sets
    it apart from its namesakes, as "Halle" is of "Halle (Saale)" and "Frankfurt" of "Frankfurt am Main". A
    lone letter next sets nothing apart: it is what folding leaves of a possessive ("Saint John" is not
    St. John's, "saint john s")."""
    rest = own_name.removeprefix(f"{name} ")
    return rest != own_name and len(rest.partition(" ")[0]) > 1


def tidy(text: str) -> str:
    """The name as it is quoted back in messages: spacing collapsed, empty comma parts dropped."""
    name, qualifiers = split_qualifiers(" ".join(text.split()))
    return ", ".join([name, *qualifiers])


def split_qualifiers(text: str) -> tuple[str, list[str]]:
    """"Springfield, IL, US" → ("Springfield", ["IL", "US"]): the name, then what narrows it."""
    name, *qualifiers = (part.strip() for part in text.split(","))
    return name, [qualifier for qualifier in qualifiers if qualifier]


@dataclass(frozen=True)
class Match:
    """One place a name matched, and whether it matched the place's own name or an alternate one."""

    place: Place
    by_own_name: bool
    admin1_code: str = ""  # the place's first-level region, where the source gives it
    admin2_code: str = ""  # its county (admin1.admin2), where the gazetteer qualifies names by county
    short_form: bool = False  # an alternate name that is the first words of the own name (is_short_form)

    def within(self, regions: set[tuple[str, str]]) -> bool:
        """In one of `regions`: (country code, admin1 code) pairs, admin1 '' meaning the whole country, and
        admin1.admin2 a county."""
        country = self.place.country_code
        return bool({(country, ""), (country, self.admin1_code), (country, self.admin2_code)} & regions)


def relevant(matches: Iterable[Match]) -> list[Match]:
    """The matches that count, the recommended one first, then the others most populous first.

    A place's own name always counts. An alternate name counts only for a place in a country where no
    place bears the name as its own, more populous than every place that does, and with at least
    ALTERNATE_NAME_MIN_SHARE of the population of the biggest match. So "Bombay" finds Mumbai and
    "Florence" still offers Firenze beside the American Florences; but "Rome" does not drag in Lomé (whose
    data lists "Rome" among its names), "Peking" does not drag in a village that lists it, and "Great Falls"
    is Great Falls, Montana, not Paterson, New Jersey, whose data lists it as a nickname.

    A short form of the place's own name (`Match.short_form`) is no nickname: it counts in a country where a
    smaller place bears it as its own, so "Halle, Germany" is Halle (Saale), not Halle (Westf.), a tenth of its
    size. (Taking "Halle" as the own name of Halle (Saale) would also make "Frankfurt" the own name of
    Frankfurt (Oder), which lists it, and shut Frankfurt am Main out.)

    A place of unknown population (an online provider's) cannot be weighed so: its alternate name counts
    when the source ranks it above every place bearing the name as its own. Photon names places in English,
    hiding their own names: its Munich, first for "München", is not set aside for a village München.

    The recommended one is the most populous place of the country of most weight (`_weight`): an alternate name,
    unless a short form, outranks a place of another country bearing the name only when that place has at most
    ALTERNATE_NAME_WEIGHT_CAP people and it ALTERNATE_NAME_WEIGHT_DIVISOR times as many or more. So "Porto"
    recommends Porto, not Bordeaux, "Salem" Salem, India, not Jerusalem, and "Marburg" Marburg an der Lahn, not
    Maribor; they stay candidates. Within a country population still decides.
    """
    matches = list(matches)
    biggest_own = max((_people(m) for m in matches if m.by_own_name), default=-1)
    biggest = max((_people(m) for m in matches), default=0)
    # Within a country a place's own name wins: the data's alternate names include nicknames, districts,
    # former names and misspellings ("Waterloo" for Austin, "Newton" for Tallahassee).
    own_name_countries = {m.place.country_code for m in matches if m.by_own_name}
    first_own_name = next((rank for rank, m in enumerate(matches) if m.by_own_name), len(matches))

    def counts(rank: int, match: Match) -> bool:
        if match.by_own_name:
            return True
        if match.place.population is None:
            return rank < first_own_name
        in_its_own_right = match.place.country_code not in own_name_countries or match.short_form
        return (in_its_own_right and _people(match) > biggest_own
                and _people(match) >= ALTERNATE_NAME_MIN_SHARE * biggest)

    kept = [match for rank, match in enumerate(matches) if counts(rank, match)]
    return _recommended_first(sorted(kept, key=_rank))


def _recommended_first(ranked: list[Match]) -> list[Match]:
    """`ranked` with the first match of the country of most weight (`_weight` of its heaviest match) moved to the
    front; of countries of equal weight the first ranked, so that without populations nothing moves."""
    weights: dict[str, float] = {}
    for match in ranked:
        country = match.place.country_code
        weights[country] = max(weights.get(country, 0), _weight(match))
    heaviest = max(weights, key=weights.__getitem__, default=None)
    recommended = next((match for match in ranked if match.place.country_code == heaviest), None)
    return [recommended, *(match for match in ranked if match is not recommended)] if recommended else ranked


def _rank(match: Match) -> tuple[int, bool]:
    """Most populous first; at one known population a place's own name first. The sort is stable, so
    places of unknown population keep the source's order (an online provider's relevance)."""
    known = match.place.population is not None
    return -_people(match), known and not match.by_own_name


def _weight(match: Match) -> float:
    """What the match weighs for its country to be recommended: its population if it bears the name as its own or
    in a short form of it, else that divided by ALTERNATE_NAME_WEIGHT_DIVISOR, at most ALTERNATE_NAME_WEIGHT_CAP."""
    if match.by_own_name or match.short_form:
        return _people(match)
    return min(_people(match) / ALTERNATE_NAME_WEIGHT_DIVISOR, ALTERNATE_NAME_WEIGHT_CAP)


def _people(match: Match) -> int:
    """The match's population for ranking: 0 where the source gives none."""
    return match.place.population or 0


def choose(asked: str, matches: Sequence[Match], *, narrowed_from: int | None = None) -> Located:
    """One place for a name, from the matches that survived any qualifiers (at least one).

    Matches in more than one country → 409 AMBIGUOUS_LOCATION with the candidates, the first of relevant()
    recommended. Several in one country → the most populous, said in the notes. `narrowed_from`, when
    qualifiers were applied, is how many places the bare name matched before them.
    """
    ranked = relevant(matches)
    chosen = ranked[0]
    countries = list(dict.fromkeys(m.place.country_code for m in ranked))
    if len(countries) > 1:
        named = ", ".join(countries[:COUNTRIES_NAMED])
        if len(countries) > COUNTRIES_NAMED:
            named += f" and {len(countries) - COUNTRIES_NAMED} more"
        raise ApiError(
            "AMBIGUOUS_LOCATION", 409,
            f"'{asked}' matches places in {len(countries)} countries ({named}). "
            f"Resend with the latitude and longitude of one of the candidates, or narrow the name with a "
            f"country or region, e.g. '{asked.strip(STRAY_SEPARATORS)}, {chosen.place.country_code}'.",
            candidates=_told_apart([candidate_json(m.place, recommended=m is chosen) for m in _candidates(ranked)]),
        )
    notes = []
    if narrowed_from is not None and narrowed_from > len(ranked):
        notes.append(f"'{asked}': the qualifiers kept {len(ranked)} of the {narrowed_from} places "
                     f"with that name.")
    name = split_qualifiers(asked)[0]
    if not chosen.by_own_name:
        notes.append(f"'{name}' is another name of {chosen.place.display_name}.")
    passed_over = _bigger_bearer_of_another_name(chosen, matches)
    if passed_over:
        # Qualifiers narrow before relevant() applies, so a region reaches it when it is another one.
        how = ("add its region to the name, or send its latitude and longitude"
               if passed_over.admin1_code != chosen.admin1_code else "send its latitude and longitude")
        notes.append(f"'{name}' is also another name of {passed_over.place.display_name} (population "
                     f"{passed_over.place.population:,}); the place with it as its own name was taken. To "
                     f"choose the other, {how}.")
    if len(ranked) > 1:
        place = chosen.place
        taken = (f"the most populous was taken: {place.display_name} (population {place.population:,})"
                 if place.population is not None else
                 f"with no populations given, the geocoder's order ranked them: its first was taken, "
                 f"{place.display_name}")
        notes.append(f"'{asked}' matches {len(ranked)} places in {place.country_code}; {taken}.")
    return Located(place=chosen.place, notes=tuple(notes), chosen_among_several=len(ranked) > 1)


def _candidates(ranked: Sequence[Match]) -> list[Match]:
    """Each country's most populous match, so that a candidate can be resent for every country the name
    is in, then the next most populous up to MAX_CANDIDATES; in `ranked`'s order, the recommended first."""
    first_of_country: dict[str, Match] = {}
    for match in ranked:
        first_of_country.setdefault(match.place.country_code, match)
    picked = {id(match) for match in first_of_country.values()}
    others = [match for match in ranked if id(match) not in picked]
    picked.update(id(match) for match in others[:max(MAX_CANDIDATES - len(picked), 0)])
    return [match for match in ranked if id(match) in picked]


def _told_apart(candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates, each whose display name another one shares written with its position too: the data
    names no county, and a person choosing between two "Lisbon, Ohio, United States" could not tell which."""
    shared = Counter(candidate["display_name"] for candidate in candidates)
    for candidate in candidates:
        if shared[candidate["display_name"]] > 1:
            position = (f"{format_latitude(candidate['latitude'], TELLING_APART_DECIMALS)}, "
                        f"{format_longitude(candidate['longitude'], TELLING_APART_DECIMALS)}")
            candidate["display_name"] += f" ({position})"
    return candidates


def _bigger_bearer_of_another_name(chosen: Match, matches: Sequence[Match]) -> Match | None:
    """The most populous match in the chosen one's country that bears the name only as another name and
    is bigger than it: the place relevant() set aside for the one whose own name it is."""
    country, population = chosen.place.country_code, _people(chosen)
    bigger = [m for m in matches if not m.by_own_name and m.place.country_code == country and _people(m) > population]
    return max(bigger, key=_people, default=None)


def candidate_json(place: Place, *, recommended: bool) -> dict[str, Any]:
    """One element of a 409's `candidates`: the spec's four fields, then what helps a person choose."""
    return {
        "display_name": place.display_name,
        "latitude": place.latitude,
        "longitude": place.longitude,
        "recommended": recommended,
        "country_code": place.country_code,
        "population": place.population,
        "timezone": place.timezone,
    }


# A point written as a name: "48.8566°N, 2.3522°E" (a result's own place_name, sent back), "-33.87 151.21".
_POINT_AS_TEXT = re.compile(r"[-+]?\d+(?:\.\d+)?\s*°?\s*[NSns]?\s*[,;\s]\s*[-+]?\d+(?:\.\d+)?\s*°?\s*[EWew]?")


def not_found(asked: str, suggestions: Sequence[str] = (), reason: str = "") -> ApiError:
    """404 PLACE_NOT_FOUND, suggesting close names when there are some, and coordinate mode for a point. The
    names are also in ``suggestions``, always a list, so that a client can offer them without reading English."""
    message = f"No place found for '{asked}'{': ' + reason if reason else ''}."
    if suggestions:
        quoted = [f"'{name}'" for name in suggestions]
        message += f" Did you mean {in_words(quoted, 'or')}?"
    if _POINT_AS_TEXT.fullmatch(asked):
        message += " To ask for a point, send its latitude and longitude as numbers, without place_name."
    return ApiError("PLACE_NOT_FOUND", 404, message, suggestions=list(suggestions))
