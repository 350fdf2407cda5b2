"""A test's enum, made here as an enum of our own (see ``grader/enums.py``).

The grader describes the class once per crossing: its names (the suite's
as aliases), its standard-library family, its mixin type, its members and
values in order, and which of its mixin's built-in methods it takes as its
own. The class is made the first time and kept; a member is found by its
place. One of our members goes back by the class's number and its place,
and the grader hands the test its own member again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

from ..channel import codec
from ..channel.protocol import ENUM_FAMILIES, ENUM_MAX_MEMBERS, ENUM_MIXINS, ENUM_PLAIN_METHODS

# How many test enums are made here; past it, a member is what it was before (its value or a handle).
MAX_ENUMS = 1000


class TestEnums:
    """The enums made here for a test's, by the grader's number of the class."""

    def __init__(self) -> None:
        self._made: dict[int, type[enum.Enum] | None] = {}
        # Ours -> the grader's number of the class, and each member's place by its name.
        self._numbers: dict[type, tuple[int, dict[str, int]]] = {}

    def resolve(self, tag: dict[str, Any], decode: Callable[[Any], Any]) -> object:
        """The class or member ``tag`` names; the tag's fallback if the class cannot be made here."""
        number = int(tag["id"])
        cls = self._made.get(number) if number in self._made else self._make(number, tag, decode)
        if cls is None:
            return decode(tag.get("fallback"))
        if "flag" in tag and type(tag["flag"]) is int and issubclass(cls, enum.Flag):
            return cls(tag["flag"])  # a combination of the flag's members
        if "member" not in tag:
            return cls
        place = tag["member"]
        members = list(cls.__members__.values())
        if type(place) is not int or not 0 <= place < len(members):
            raise ValueError(f"patchgate: no member {place!r} of a test's enum")
        return members[place]

    def claims(self, value: object) -> bool:
        """Whether ``value`` is one of the members made here, or a combination of a flag's: it goes back
        as the test's member (or the test's flag's combination of the same value)."""
        found = self._numbers.get(type(value))
        return found is not None and (getattr(value, "_name_", None) in found[1] or _combined(value))

    def ref(self, value: object) -> dict[str, Any] | None:
        """The tag ``value`` goes back by, if it is one of our enums or one of its members."""
        if isinstance(value, type):
            found = self._numbers.get(value)
            return None if found is None else {codec.TYPE: "obj", "side": "g", "id": found[0]}
        found = self._numbers.get(type(value))
        if found is None:
            return None
        name = getattr(value, "_name_", None)
        if name in found[1]:
            return {codec.TYPE: "obj", "side": "g", "id": found[0], "member": found[1][name]}
        if _combined(value):
            return {codec.TYPE: "obj", "side": "g", "id": found[0], "flag": value._value_}  # type: ignore[attr-defined]
        return None

    def _make(self, number: int, tag: dict[str, Any], decode: Callable[[Any], Any]) -> type[enum.Enum] | None:
        made: type[enum.Enum] | None = None
        if len(self._made) < MAX_ENUMS:
            try:
                made = _build(tag, decode)
            except Exception:  # a form we do not read, a value the functional API refuses: as before
                made = None
        self._made[number] = made
        if made is not None:
            self._numbers[made] = (number, {name: i for i, name in enumerate(made.__members__)})
        return made


def _combined(value: object) -> bool:
    """Whether ``value`` is a combination of a flag's members (``R | W``, or none of them)."""
    return isinstance(value, enum.Flag) and type(value._value_) is int


def _build(tag: dict[str, Any], decode: Callable[[Any], Any]) -> type[enum.Enum] | None:
    family = ENUM_FAMILIES[str(tag.get("family"))]
    mixin = ENUM_MIXINS.get(str(tag.get("mixin")))
    names = tag.get("names")
    members = tag.get("members")
    if not (isinstance(names, list) and len(names) == 3 and all(isinstance(n, str) for n in names)):
        return None
    if not (isinstance(members, list) and 0 < len(members) <= ENUM_MAX_MEMBERS):
        return None
    pairs = [(str(m[0]), decode(m[1])) for m in members if isinstance(m, list) and len(m) == 2]
    extra = mixin if mixin is not None and not issubclass(family, mixin) else None
    functional: Any = family  # the functional API: ``Enum(name, pairs, module=, qualname=, type=)``
    made: type[enum.Enum] = functional(names[0], pairs, module=names[2], qualname=names[1], type=extra)
    if list(made.__members__) != [p[0] for p in pairs]:
        return None  # a name the functional API read otherwise: places would not match
    for name in tag.get("plain") or []:
        if name in ENUM_PLAIN_METHODS and mixin is not None:
            setattr(made, name, getattr(mixin, name))
    return made
