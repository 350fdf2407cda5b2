"""A test's enum, as an enum of the subject's own.

A test defines ``class Exit(enum.IntEnum): FAILED = 1`` and hands
``Exit.FAILED`` to the change. As a plain value it would arrive as ``1``
(``repr`` ``1``, no ``.name``); as a handle it would be no ``enum.Enum`` at
all. Instead the subject makes an enum of its own with the same members,
values and mixin type (``subject/enums.py``), so ``repr``, ``.name``,
``isinstance(x, enum.Enum)`` and ``int`` arithmetic behave as in one
process, and a member that comes back is the test's own member again
(``is`` holds): the subject names it by the class's number and the member's
place, never by a value the grader would look up.

Only an enum that adds no behaviour of its own is made there: every
function in its class is the ``enum`` module's, every built-in method is
its mixin type's (``__str__ = str.__str__``), its bases are the standard
library's. A test's enum with methods of its own crosses as before.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Callable
from typing import Any

from ..channel import codec
from ..channel.protocol import ENUM_FAMILIES, ENUM_MAX_MEMBERS, ENUM_MIXINS, ENUM_PLAIN_METHODS

FAMILIES: dict[type, str] = {cls: name for name, cls in ENUM_FAMILIES.items()}  # most derived first
MIXINS: dict[type, str] = {cls: name for name, cls in ENUM_MIXINS.items()}
PLAIN_METHODS = ENUM_PLAIN_METHODS
MAX_MEMBERS = ENUM_MAX_MEMBERS
EnumType = enum.EnumType
_ALLOWED_BASES = frozenset({*FAMILIES, enum.ReprEnum, *MIXINS, object})


def mirrorable(cls: type, suite_module: Callable[[object], bool], test_like: Callable[[str], bool]) -> bool:
    """Whether ``cls`` is a test's enum the subject makes one of its own for (see the module doc); not
    one with a member named like a test (``test_like``): a member's name crosses in clear."""
    if type(cls) is not enum.EnumType or not suite_module(type.__dict__["__module__"].__get__(cls)):
        return False
    mro = type.__dict__["__mro__"].__get__(cls)
    if not all(k in _ALLOWED_BASES for k in mro[1:]):
        return False
    members = cls.__dict__.get("_member_map_")
    if not isinstance(members, dict) or not 0 < len(members) <= MAX_MEMBERS:
        return False
    if any(not isinstance(name, str) or test_like(name) for name in members):
        return False
    mixin = _mixin(mro)
    member_ids = {id(m) for m in members.values()}
    for name, value in cls.__dict__.items():
        if id(value) in member_ids:
            continue
        if name == "_member_type_":
            if value is not mixin and value is not object:
                return False
            continue
        if isinstance(value, types.FunctionType):
            if value.__code__.co_filename != enum.__file__:
                return False  # a method of the test's own
        elif isinstance(value, (classmethod, staticmethod, property, types.DynamicClassAttribute)) or (
            callable(value) and not _builtin_of(value, (mixin, object))
        ):
            return False  # a descriptor, or a built-in method of no mixin's
        elif not name.startswith("_"):
            return False  # a public attribute that is not a member
    return True


def tag(
    cls: type,
    number: int,
    names: list[str],
    encode: Callable[[object], Any],
    handle: dict[str, Any],
    *,
    member: enum.Enum | None = None,
) -> dict[str, Any]:
    """What the subject needs to make the test's enum ``cls`` (its number ``number``), and to find
    ``member`` in it when a member crosses rather than the class; ``handle`` is the ordinary tag of
    what crosses, what it is when the subject cannot make the class (a member with a mixin type: its
    value, as before)."""
    mro = type.__dict__["__mro__"].__get__(cls)
    mixin = _mixin(mro)
    members = list(cls.__dict__["_member_map_"].items())
    plain = [n for n in PLAIN_METHODS if n in cls.__dict__ and _builtin_of(cls.__dict__[n], (mixin,))]
    found = {
        codec.TYPE: "obj", "side": "g", "id": number, "kind": "tenum", "names": names,
        "family": next(name for k, name in FAMILIES.items() if k in mro),
        "mixin": MIXINS.get(mixin) if mixin is not None else None,
        "members": [[name, encode(m._value_)] for name, m in members],
        "plain": plain, "fallback": handle,
    }  # fmt: skip
    if member is None:
        return found
    if mixin is not None:
        found["fallback"] = encode(member._value_)
    place = next((i for i, (_, m) in enumerate(members) if m is member), None)
    if place is not None:
        found["member"] = place
    elif isinstance(member, enum.Flag) and type(member._value_) is int:
        found["flag"] = member._value_  # a combination of a flag's members (``R | W``): by its value
    else:
        return handle
    return found


REFUSED = "patchgate: the code under test named no member of a test's enum it was given"


def member(cls: type, tag: dict[str, Any]) -> enum.Enum:
    """The member of the test's enum ``cls`` a tag names: by its place among the members, or a flag's
    combination by its value (``cls(value)``, the standard library's lookup: no ``_missing_``)."""
    if "flag" in tag:
        value = tag["flag"]
        if not (issubclass(cls, enum.Flag) and type(value) is int):
            raise ValueError(REFUSED)
        made: enum.Enum = cls(value)
        return made
    members = list(cls.__dict__["_member_map_"].values())
    place = tag.get("member")
    if type(place) is not int or not 0 <= place < len(members):
        raise ValueError(REFUSED)
    found: enum.Enum = members[place]
    return found


def _mixin(mro: tuple[type, ...]) -> type | None:
    return next((k for k in mro if k in MIXINS), None)


def _builtin_of(value: object, owners: tuple[type | None, ...]) -> bool:
    """Whether ``value`` is a built-in method of one of ``owners`` (``str.__str__``, ``int.__new__``)."""
    owner = getattr(value, "__objclass__", None)
    if owner is None and isinstance(value, types.BuiltinMethodType):
        owner = value.__self__
    return owner is not None and any(owner is o for o in owners)
