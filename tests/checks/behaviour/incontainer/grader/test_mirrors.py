"""An exception the subject describes, rebuilt here: what the description may and may not make of it."""

from __future__ import annotations

from typing import Any

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.grader.handed import Handed
from checks.behaviour.incontainer.grader.mirrors import MAX_CAUSES, Mirrors


def described(text: str, cause: dict[str, Any] | None = None) -> dict[str, Any]:
    value_error = {"__type__": "builtin", "name": "ValueError"}
    found: dict[str, Any] = {"cls": value_error, "args": [text], "text": text}
    if cause is not None:
        found["cause"] = cause
    return found


def test_a_chain_of_causes_is_rebuilt_a_few_links_deep_whatever_the_subject_sends() -> None:
    # Hostile: the subject sends four links; a longer chain (one per recursion here) is cut.
    info: dict[str, Any] = described("0")
    for i in range(1, 400):
        info = described(str(i), info)
    exc = Mirrors(codec.decode, Handed()).exception(info)
    links = []
    found: BaseException | None = exc
    while found is not None:
        links.append(str(found))
        found = found.__cause__
    assert links == [str(399 - i) for i in range(MAX_CAUSES + 1)]
