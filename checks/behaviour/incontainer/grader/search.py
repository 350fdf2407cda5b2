"""The search for a disagreement: Hypothesis draws inputs in the grader and shrinks what it finds.

Hypothesis runs here, seeded by the host (the seed reaches the grader in its
private plan, never the subject), with no example database (nothing is read
from, or written to, a folder the subject could have planted) and no
deadline per example (a slow call is the subject's to answer for, within
the request's own deadline). Each distinct input is compared once: a repeat,
and the replays of shrinking, are answered from what was seen, so the
verdict of an input never changes and the count is of distinct inputs.

Two budgets: ``examples`` (Hypothesis's ``max_examples``) and ``seconds``
of wall time. Past the time, no new input is compared; the shrinker can then
only keep the smallest disagreement it already has.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as seeded
from hypothesis import strategies as st

Compare = Callable[[Any, Any], "Found | None"]


@dataclass(frozen=True)
class Found:
    """One input on which the change and the reference disagree, and what each did with it."""

    args: Any
    kwargs: Any
    reference: dict[str, Any]
    head: dict[str, Any]


@dataclass(frozen=True)
class Searched:
    """How a search ended: the distinct inputs compared, the smallest disagreement found, why it stopped."""

    inputs: int
    found: Found | None
    stopped: str  # "examples" (the budget was spent, or the strategy ran dry) or "time"


class _Disagreed(Exception):
    def __init__(self, found: Found) -> None:
        super().__init__("the change disagrees with the reference")
        self.found = found


def search(
    draws: st.SearchStrategy[Any],
    encode: Callable[[Any, Any], tuple[Any, Any]],
    compare: Compare,
    *,
    examples: int,
    seconds: float,
    seed: int,
    halted: Callable[[], bool] = lambda: False,
) -> Searched:
    """Draw inputs from ``draws`` until a disagreement (then shrink it) or a budget runs out.

    ``encode`` turns drawn arguments into what crosses (raising the suite's problem when they
    cannot); ``compare`` runs both sides on the encoded input and returns a Found or None.
    Anything else they raise ends the search and is raised here. Once ``halted()`` (the subject
    is gone), no new input is compared either.
    """
    seen: dict[str, Found | None] = {}
    stopped = {"why": "examples"}
    deadline = time.monotonic() + seconds

    def body(drawn: tuple[Any, Any]) -> None:
        args, kwargs = encode(*drawn)
        key = json.dumps([args, kwargs], sort_keys=True)
        if key not in seen:
            if halted():
                return
            if time.monotonic() > deadline:
                stopped["why"] = "time"
                return
            seen[key] = compare(args, kwargs)
        found = seen[key]
        if found is not None:
            raise _Disagreed(found)

    run = settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=False,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        print_blob=False,
        verbosity=Verbosity.quiet,
    )(seeded(seed)(given(draws)(body)))
    try:
        run()
    except _Disagreed as exc:
        # Hypothesis raises the smallest failing example's exception last.
        return Searched(len(seen), exc.found, stopped["why"])
    return Searched(len(seen), None, stopped["why"])
