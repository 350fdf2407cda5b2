"""The reference for parse_duration: a plain scanner, written to be read rather than to be fast.

Differential checks (parse_duration.diff.yml) compare the change's parse_duration with this
one on inputs Hypothesis draws, and time both on long inputs. It lives in the suite, never in
the repository: the change's code cannot read it.
"""

from __future__ import annotations

import random
from datetime import timedelta

from hypothesis import strategies as st

UNITS = {"d": "days", "h": "hours", "m": "minutes", "s": "seconds"}
ORDER = "dhms"

# What people type, and what they get wrong: digits, the units, spaces and a stray letter.
texts = st.text(alphabet="0123456789dhms x", max_size=12)


def parse_duration(text: str) -> timedelta:
    parts: dict[str, int] = {}
    i, last = 0, -1
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i == len(text):
            break
        start = i
        while i < len(text) and text[i].isdecimal():
            i += 1
        if i == start or i == len(text) or text[i] not in UNITS or ORDER.index(text[i]) <= last:
            raise ValueError(f"not a duration: {text!r}")
        last = ORDER.index(text[i])
        parts[UNITS[text[i]]] = int(text[start:i])
        i += 1
    if not parts:
        raise ValueError(f"not a duration: {text!r}")
    return timedelta(**parts)


def spaced(n: int, rng: random.Random) -> tuple[str]:
    """Hours and minutes n spaces apart: what a pasted, badly aligned table cell looks like."""
    return (f"{rng.randrange(1, 24)}h" + " " * n + f"{rng.randrange(1, 60)}m",)
