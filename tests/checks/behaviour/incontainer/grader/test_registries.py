"""A codec the change registers at import is found by the test's own lookup (grader/registries.py)."""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from checks.behaviour.incontainer.grader.registries import install_codecs
from tests.checks.behaviour.incontainer.test_bridge_shapes import Load, load

pytestmark = pytest.mark.slow
__all__ = ["load"]

# The shape of idna.codec: a search function registered at import, a codec of functions and classes.
CODEC = """
import codecs

calls = []

def _encode(text, errors="strict"):
    calls.append(text)
    return text[::-1].encode("ascii", errors), len(text)

def _decode(data, errors="strict"):
    return str(data, "ascii", errors)[::-1], len(data)  # as idna's: a bytes-like object, read in C

class IncrementalEncoder(codecs.IncrementalEncoder):
    def encode(self, text, final=False):
        return _encode(text)[0]

def search(name):
    if name != "pgtest_reversed":
        return None
    return codecs.CodecInfo(_encode, _decode, incrementalencoder=IncrementalEncoder, name="pgtest-reversed")

codecs.register(search)
"""

# A change that claims every codec name there is, the standard library's included.
EVERY_NAME = """
import codecs

def _forged(text, errors="strict"):
    return b"forged", len(text)

def search(name):
    return codecs.CodecInfo(_forged, lambda data, errors="strict": ("forged", len(data)), name=name)

codecs.register(search)
"""


@contextmanager
def mirrored(lib: Any) -> Iterator[None]:
    """The grader's search function for ``lib``'s subject, for this test only (the registry is global)."""
    search = install_codecs(object.__getattribute__(lib, "_pg_bridge"))
    try:
        yield
    finally:
        codecs.unregister(search)


def test_a_codec_the_change_registers_encodes_decodes_and_is_looked_up_by_the_test(load: Load) -> None:
    lib = load(CODEC)
    with mirrored(lib):
        assert "abc".encode("pgtest_reversed") == b"cba"
        assert codecs.decode(b"cba", "pgtest_reversed") == "abc"
        assert b"cba".decode("pgtest_reversed") == "abc"  # CPython hands the codec a memoryview of it
        info = codecs.lookup("pgtest_reversed")
        assert info.name == "pgtest-reversed"
        assert info.incrementalencoder is lib.IncrementalEncoder  # the change's class, as in one process
        assert codecs.getincrementalencoder("pgtest_reversed")().encode("xy") == b"yx"
        assert list(lib.calls) == ["abc", "xy"]  # the change's code ran, in the subject
        with pytest.raises(LookupError):
            codecs.lookup("pgtest_unknown")


def test_a_change_claiming_every_name_never_answers_for_one_the_grader_knows(load: Load) -> None:
    lib = load(EVERY_NAME)
    with mirrored(lib):
        assert codecs.encode("é", "utf-8") == b"\xc3\xa9"
        assert codecs.lookup("latin-1").encode("é")[0] == b"\xe9"
        assert codecs.lookup("ascii").decode(b"ok")[0] == "ok"
        assert "x".encode("pgtest_nowhere_else") == b"forged"  # a name only the change knows is its own


def test_without_a_subject_an_unknown_name_is_unknown(load: Load) -> None:
    lib = load(CODEC)
    bridge = object.__getattribute__(lib, "_pg_bridge")
    with mirrored(lib):
        bridge.broken = "gone"
        with pytest.raises(LookupError):
            codecs.lookup("pgtest_reversed_again")
