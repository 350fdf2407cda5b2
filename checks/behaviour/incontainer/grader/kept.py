"""Which of a test's containers the grader keeps in step with the subject (``channel/kept.py``).

Kept: an exact ``list``, ``dict``, ``set`` or ``bytearray`` a test hands as
an argument of a call into the change, or that the change reaches through a
test's object it was handed (an attribute, what a test's callback returns) -
the test's data, which one process would let the change's code fill, sort,
empty or hold on to.

Never kept, whoever hands it over, because writing into it would reach the
grader's own process rather than a test's data: the namespace of any module
(a test's ``globals()`` too: the change would rebind the test's names), every
container a module outside the suite holds at its top level or in a class
of its own - ``sys.path``, ``sys.modules``, ``sys.meta_path``,
``warnings.filters``, ``ConfigParser.BOOLEAN_STATES``, pytest's and
patchgate's own registries - and a suite module's ``__path__`` or
``__all__``. What the change reaches through a test's object is kept only
when it is that object's own attribute and the object's class is the
suite's, or what a function of the suite's returned (``bridge.py``). Those cross by value, as every
container did before: the change gets a copy, and its changes stay with it.
A suite module's top-level data (``CASES = [...]``) is the test's and may be
kept. ``sys``'s own attributes are read at each decision (a test may have
replaced ``sys.path`` with a list of its own); the rest is read again
whenever a module was imported since.
"""

from __future__ import annotations

import collections
import sys
import threading
import warnings

from ..channel.kept import MAX_KEPT, keepable

_KEPT_TYPES = (list, dict, set, bytearray, collections.defaultdict)
# What ``candidates`` looks into for containers a container holds, and how deep.
_WALKED = (*_KEPT_TYPES, tuple)
_NESTED_DEPTH = 4


class ProcessState:
    """The containers that are the grader process's state, not a test's data."""

    def __init__(self, suite_prefix: str) -> None:
        self.suite_prefix = suite_prefix
        # Each by its id, held: an object held cannot be freed, so its id is never another's.
        self._held: dict[int, object] = {}
        self._modules = -1
        self._lock = threading.Lock()

    def owns(self, value: object) -> bool:
        # Read at each decision: modules that rebind their containers while tests run (a test may
        # replace sys.path; warnings.catch_warnings, entered around every test, rebinds filters).
        if any(item is value for module in (sys, warnings) for item in list(vars(module).values())):
            return True
        with self._lock:
            if len(sys.modules) != self._modules:
                self._modules = len(sys.modules)
                self._held = self._scan()
            return self._held.get(id(value)) is value

    def _scan(self) -> dict[int, object]:
        found: dict[int, object] = {}
        for module in list(sys.modules.values()):
            try:
                namespace = object.__getattribute__(module, "__dict__")
            except Exception:  # noqa: S112 - a lazy module object (six.moves) may refuse; it holds nothing
                continue
            if type(namespace) is not dict:
                continue
            found[id(namespace)] = namespace
            origin, prefix = namespace.get("__file__"), self.suite_prefix
            suite = bool(prefix and isinstance(origin, str) and origin.startswith(prefix))
            for name, value in list(namespace.items()):
                # The suite's own module: its top-level data is the test's (not __path__ or __all__).
                if type(value) in _KEPT_TYPES and (not suite or str(name).startswith("__")):
                    found[id(value)] = value
                elif not suite and isinstance(value, type) and value.__module__ == namespace.get("__name__"):
                    # A library class's own containers (configparser's BOOLEAN_STATES): every instance's.
                    found.update((id(v), v) for v in list(vars(value).values()) if type(v) in _KEPT_TYPES)
        return found


def candidates(state: ProcessState, values: list[object]) -> list[object]:
    """Which of a call's arguments may be kept: a test's own containers, small enough to follow, and
    the containers they hold (``{1: [1]}``: the change that stores the list hands back the test's
    own, so ``cache[1] is copy(cache)[1]``), at most ``MAX_KEPT`` in all."""
    found: list[object] = []
    seen: set[int] = set()
    # Breadth first, by identity; what no kept container could hold (a tuple's lists) is walked too.
    level = list(values)
    for _ in range(_NESTED_DEPTH):
        below: list[object] = []
        for value in level:
            kind = type(value)
            if id(value) in seen or kind not in _WALKED:
                continue
            seen.add(id(value))
            if kind is not tuple:
                if not keepable(value) or state.owns(value):
                    continue
                found.append(value)
                if len(found) >= MAX_KEPT:
                    return found
            if isinstance(value, list | tuple):  # exactly one of them: the kind was checked above
                below.extend(value)
            elif isinstance(value, dict):
                below.extend(value.values())
        level = below
    return found
