"""Free text that people type and others read back (place names, API-key labels): what it may not hold, and
how a message or a log line shows what a client sent (``shortened``, ``escaped``), and how wide a terminal
shows it (``terminal_width``)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence

# The longest a client's value (a date, a time, a number, a header) is quoted whole: any that is meant.
VALUE_SHOWN = 40
# The longest a request's target (path and query) is shown whole: any the API, the page and its share links make.
TARGET_SHOWN = 400

# Characters that change how the text around them is shown instead of being shown: control characters
# (C0, DEL and C1, which terminals obey), surrogates (bytes that were not UTF-8), private-use and
# unassigned code points, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Co", "Cn", "Zl", "Zp"})
# Bidirectional embeddings, overrides and isolates reorder what follows them ("Trojan Source"); text in
# right-to-left scripts needs none of them. Other format characters stay allowed: Persian writes U+200C
# (zero-width non-joiner) inside words.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Nonspacing and enclosing marks, drawn over the character before them, and format characters take no column.
_ZERO_WIDTH_CATEGORIES = frozenset({"Mn", "Me", "Cf"})


def has_hidden_characters(text: str) -> bool:
    # Every hidden character is one str.isprintable() refuses (Unicode's "Other" and "Separator" but the space), so
    # a printable text, nearly every one, is decided in C; a character at a time cost 70 µs on an answer's texts.
    return not text.isprintable() and any(_hidden(character) for character in text)


def hidden_characters(text: str) -> str:
    """Each hidden character of ``text`` once, in the order they come: for a message saying which."""
    if not has_hidden_characters(text):
        return ""
    return "".join(dict.fromkeys(character for character in text if _hidden(character)))


def in_words(items: Sequence[str], conjunction: str = "and", *, serial: bool = False) -> str:
    """``items`` as a sentence lists them: "a", "a and b", "a, b and c" (or "a, b or c"); with ``serial`` a comma
    before the conjunction too, "a, and b", for items that hold a conjunction of their own."""
    *others, last = items
    if not others:
        return last
    return f"{', '.join(others)}{',' if serial else ''} {conjunction} {last}"


def terminal_width(text: str) -> int:
    """The columns ``text`` takes on a terminal, as wcswidth counts them: two for a wide or full-width character
    (CJK, most emoji), none for a combining mark or a format character (a zero-width joiner), one for the rest.
    A mark is known by its category, not its combining class, which is 0 for Thai's vowel marks and a keycap's."""
    return sum(0 if unicodedata.category(character) in _ZERO_WIDTH_CATEGORIES
               else 2 if unicodedata.east_asian_width(character) in "WF" else 1 for character in text)


def without_hidden_characters(text: str) -> str:
    """``text`` less the characters has_hidden_characters finds: for names another service gave, which are shown
    and logged as they come."""
    if not has_hidden_characters(text):
        return text
    return "".join(character for character in text if not _hidden(character))


def _hidden(character: str) -> bool:
    return character in _BIDI_CONTROLS or unicodedata.category(character) in _HIDDEN_CATEGORIES


def shortened(text: str, show: Callable[[str], str] = str, longest: int = VALUE_SHOWN) -> str:
    """What a client sent, for a message or a log line: whole up to ``longest`` characters, else the first half of
    that and its length. A client can send tens of thousands of characters in a field or a path, and every line
    that quoted them whole wrote them again. ``show`` writes the part shown (``repr``: in quotes)."""
    if len(text) <= longest:
        return show(text)
    return f"{show(text[:longest // 2])}… ({len(text)} characters)"


def escaped(text: str) -> str:
    """``text`` for a log line: each character that is not printable written as repr() writes it (\\x85,
    \\u202e). Those are the hidden characters above, which would split the line for a log reader (U+0085,
    U+2028) or steer a terminal (U+009B), and the other invisible ones (format characters, spaces but " ")."""
    if text.isprintable():  # nearly always: a C loop, and the text as it is
        return text
    return "".join(character if character.isprintable() else character.encode("unicode_escape").decode("ascii")
                   for character in text)
