"""What free text may not hold (solarserv.text): the rule for every code point, as its comments state it."""

from __future__ import annotations

import sys
import unicodedata

from solarserv.text import has_hidden_characters, without_hidden_characters

# Control characters, surrogates, private-use and unassigned code points, line and paragraph separators,
# and the bidirectional embeddings, overrides and isolates.
HIDDEN_CATEGORIES = {"Cc", "Cs", "Co", "Cn", "Zl", "Zp"}
BIDI_CONTROLS = {0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069}


def hidden(code_point: int) -> bool:
    return code_point in BIDI_CONTROLS or unicodedata.category(chr(code_point)) in HIDDEN_CATEGORIES


def test_every_code_point_alone_and_inside_a_word():
    wrong = [code_point for code_point in range(sys.maxunicode + 1)
             if has_hidden_characters(chr(code_point)) != hidden(code_point)
             or has_hidden_characters(f"Paris{chr(code_point)}°E") != hidden(code_point)]
    assert wrong == []


def test_what_stays_allowed():
    # The space, a zero-width non-joiner inside a Persian word, a no-break space, signs and letters of any script.
    for text in ("São Paulo", "می\u200cخواهم", "12\u00a0km", "−5 min 31 s, 48.85°N", "Αθήνα", "東京", ""):
        assert not has_hidden_characters(text), text
        assert without_hidden_characters(text) == text


def test_hidden_characters_are_dropped_and_nothing_else():
    assert without_hidden_characters("Pa\u202eris\n, \x00France\u2028") == "Paris, France"
