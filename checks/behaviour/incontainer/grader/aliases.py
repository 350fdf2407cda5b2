"""Opaque names for the suite's own definitions, wherever one would reach the subject.

A test hands the code under test its callbacks, doubles and exception
classes, and decorators read their metadata. Their ``__module__`` names a
test module and their ``__qualname__`` the test function they were defined
in (``test_parse_garbage.<locals>.callback``): the test's name, a held-out
one too. What crosses instead is an alias per distinct name (``_pgm1``,
``_pgq1.<locals>.Hooks.callback``: the functions a local is defined in are
one alias; the classes under them and the object's own name stay), and a
name that is itself a test's (``test_*``, ``Test*``) is aliased too.
Strings that come back from the subject carry the aliases back to the real
names, so ``functools.wraps`` in the change still gives a test the metadata
it expects.
"""

from __future__ import annotations

import operator
import re
import sys
import threading
import types
from collections.abc import Callable

# The names patchgate's own pytest configuration collects as tests (checks/behaviour/plan.py).
_TEST_NAME = re.compile(r"^(test|Test)")
# The same, as a word in a text (``testMethod=test_x`` in a TestCase's repr).
# (And a module named as pytest collects ``*_test.py``.)
_TEST_WORD = re.compile(r"(?<![A-Za-z0-9_])(?:(?:test|Test)[A-Za-z0-9_]*|[A-Za-z0-9_]+_test(?![A-Za-z0-9_]))")
_ALIAS = re.compile(r"_pg[mqnf]\d+")
_FILE_ALIAS = re.compile(r"_pgf\d+")
# The rest of a path after the suite's folder, in a text: up to a space, a quote, a bracket or a colon.
_PATH_REST = r"[^\s'\"():,\[\]<>]*"
# How many restored strings a run remembers, and how many characters in all (``Aliases.restore``).
MAX_GIVEN = 4096
MAX_GIVEN_CHARS = 16 * 1024 * 1024


def named_like_a_test(name: str) -> bool:
    """Whether ``name`` is one patchgate's pytest configuration collects as a test's (``test_*``)."""
    return _TEST_NAME.match(name) is not None


class Aliases:
    """One run's aliases: real name -> alias and back."""

    def __init__(self, suite_prefix: str = "") -> None:
        self.prefix = suite_prefix
        self._alias: dict[str, str] = {}
        self._real: dict[str, str] = {}
        self._lock = threading.Lock()
        # Strings ``restore`` made (by id, held so the id stays theirs), with what the subject wrote.
        self._given: dict[int, tuple[str, str]] = {}
        self._given_chars = 0

    def suite_module(self, name: object) -> bool:
        """Whether ``name`` is a module of the suite (a test module, a conftest, a helper).

        Only a module of this process's own says so: a module of the change's (``RemoteModule``)
        answers ``__file__`` from the subject, which could name a suite file whenever it liked.
        """
        module = sys.modules.get(name) if isinstance(name, str) else None
        if type(module) is not types.ModuleType:
            return False
        found = vars(module).get("__file__")
        return bool(self.prefix) and isinstance(found, str) and found.startswith(self.prefix)

    def suite_function(self, value: object) -> bool:
        """Whether ``value`` is a plain function of the suite's own: by its code, which the change cannot
        set (its ``__module__`` it may, as ``functools.wraps`` does)."""
        return type(value) is types.FunctionType and self.suite_file(value.__code__.co_filename)

    def _of(self, real: str, kind: str) -> str:
        with self._lock:
            found = self._alias.get(real)
            if found is None:
                found = f"_pg{kind}{len(self._alias) + 1}"
                self._alias[real], self._real[found] = found, real
            return found

    def suite_file(self, path: object) -> bool:
        """Whether ``path`` is a file of the suite (a generator's code says where it was defined)."""
        return bool(self.prefix) and isinstance(path, str) and path.startswith(self.prefix)

    def file(self, path: str) -> str | None:
        """The alias of a suite file's path (what a test function's code says of where it was defined),
        or None for any other file: the suite's paths name its tests, and stay with the grader."""
        return self._of(path, "f") if self.suite_file(path) else None

    def attribute(self, owner_module: object, name: str, value: object, *, suite: bool = False) -> object:
        """Return what the subject may see of ``value``, the ``name`` attribute of a suite object
        (one of a suite module's, or ``suite`` when the caller knows it is the suite's)."""
        if not (isinstance(value, str) and (suite or self.suite_module(owner_module))):
            return value
        if name == "__module__":
            return self._of(value, "m")
        if name == "__qualname__":
            parts = value.split(".")
            # One alias for the functions whose locals hold the object (``test_x.<locals>``: a test's
            # name); the classes below them and the object's own name stay, a test's aliased. What a
            # library reads of a method's place (pluggy's ``TimeoutHooks.pytest_timeout_set_timer``).
            local = max((i for i, part in enumerate(parts) if part == "<locals>"), default=-1)
            prefix = [self._of(".".join(parts[:local]), "q"), "<locals>"] if local > 0 else []
            return ".".join([*prefix, *(self.name(part) for part in parts[local + 1 :])])
        if name == "__name__":
            return self.name(value)
        return value

    def name(self, own: str) -> str:
        """An object's own name: kept, unless it is a test's."""
        return self._of(own, "n") if named_like_a_test(own) else own

    def names_in(self, text: str) -> str:
        """``text`` with every word named like a test's aliased, as ``name`` aliases it, and every path
        of a suite file as the file's alias (a test's exception may name its file, or a helper's)."""
        if self.prefix and self.prefix in text:
            path = re.escape(self.prefix) + _PATH_REST
            text = re.sub(path, lambda found: self._of(found.group(0), "f"), text)
        return _TEST_WORD.sub(lambda found: self.name(found.group(0)), text)

    def names_a_file(self, text: str) -> bool:
        """Whether ``text`` holds a suite file's alias (a file is never a function's name or place)."""
        return _FILE_ALIAS.search(text) is not None

    def restore_in(self, value: object, kept: Callable[[object], bool] = lambda v: False) -> object:
        """Return ``value`` with the real names back in every string it holds.

        A container none of whose strings changed is returned as it is (its identity holds), and a
        ``kept`` one (a test's own, ``channel/kept.py``) always is: it is the test's object.
        """
        if not self._real:
            return value
        if type(value) is str:
            return self.restore(value)
        if kept(value):
            return value
        if type(value) in (list, tuple, set, frozenset):
            items = [self.restore_in(v, kept) for v in value]  # type: ignore[attr-defined]
            same = all(map(operator.is_, items, value))  # type: ignore[call-overload]
            return value if same else type(value)(items)  # type: ignore[call-arg]
        if type(value) is dict:
            pairs = [(self.restore_in(k, kept), self.restore_in(v, kept)) for k, v in value.items()]
            same = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items(), strict=True))
            return value if same else dict(pairs)
        return value

    def whole_aliases(self, text: str) -> bool:
        """Whether every alias in ``text`` is a whole dotted part of it (``_pgq1.<locals>.f``), never
        glued to other characters (``x_pgq1.y`` would read back as ``xtest_name.y``, in clear)."""
        return all(_ALIAS.fullmatch(part) or not _ALIAS.search(part) for part in text.split("."))

    def names_a_test(self, text: str) -> bool:
        """Whether ``text`` holds, in clear, a word named like a test's (what ``names_in`` would alias)."""
        return _TEST_WORD.search(_ALIAS.sub("", text)) is not None

    def restore(self, text: str) -> str:
        """Put the real names back into a string that came from the subject.

        The string made is remembered (``given_back``): handed to the subject again, by the test or
        in a kept container it is, it goes as the subject wrote it, never with the real names in
        clear. Past the bound on what is remembered a string keeps its aliases.
        """
        if not self._real or "_pg" not in text:
            return text
        found = _ALIAS.sub(lambda m: self._real.get(m.group(0), m.group(0)), text)
        if found == text:
            return text
        with self._lock:
            if len(self._given) >= MAX_GIVEN or self._given_chars + len(found) > MAX_GIVEN_CHARS:
                return text
            self._given[id(found)] = (found, text)
            self._given_chars += len(found)
        return found

    @property
    def given(self) -> bool:
        """Whether any string was restored (``given_back`` can change one)."""
        return bool(self._given)

    def given_back(self, value: str) -> str:
        """What the subject is given of ``value``: as it wrote it, if this is a string ``restore`` made."""
        found = self._given.get(id(value))
        return found[1] if found is not None and found[0] is value else value
