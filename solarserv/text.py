"""Free text that people type and others read back (place names, API-key labels): what it may not hold, and
how a log line shows what a client sent (``escaped``)."""

from __future__ import annotations

import unicodedata

# Characters that change how the text around them is shown instead of being shown: control characters
# (C0, DEL and C1, which terminals obey), surrogates (bytes that were not UTF-8), private-use and
# unassigned code points, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Co", "Cn", "Zl", "Zp"})
# Bidirectional embeddings, overrides and isolates reorder what follows them ("Trojan Source"); text in
# right-to-left scripts needs none of them. Other format characters stay allowed: Persian writes U+200C
# (zero-width non-joiner) inside words.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def has_hidden_characters(text: str) -> bool:
    return any(character in _BIDI_CONTROLS or unicodedata.category(character) in _HIDDEN_CATEGORIES
               for character in text)


def escaped(text: str) -> str:
    """``text`` for a log line: each character that is not printable written as repr() writes it (\\x85,
    \\u202e). Those are the hidden characters above, which would split the line for a log reader (U+0085,
    U+2028) or steer a terminal (U+009B), and the other invisible ones (format characters, spaces but " ")."""
    if text.isprintable():  # nearly always: a C loop, and the text as it is
        return text
    return "".join(character if character.isprintable() else character.encode("unicode_escape").decode("ascii")
                   for character in text)
