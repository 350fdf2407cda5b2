"""Bridge.encode: its fast path (lists of handles and plain scalars) writes what the encoder writes."""

from __future__ import annotations

import datetime
import enum
import fractions
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.grader import bridge as bridge_module
from checks.behaviour.incontainer.grader.bridge import FAST_ITEMS, Bridge
from checks.behaviour.incontainer.grader.handles import RemoteModule, is_handle, remote_class

BRIDGE = Bridge(None)  # no channel: encoding alone sends nothing
HANDLES: list[object] = [remote_class(None)(BRIDGE, 1), remote_class(["__len__"])(BRIDGE, 2)]
HANDLES.append(RemoteModule("lib", remote_class([])(BRIDGE, 3), []))


class Colour(enum.IntEnum):
    RED = 1


class Label(str):
    pass


# A test's own objects: each goes as a grader handle, one number per object whatever pass meets it.
OBJECTS = [object(), print, len, fractions.Fraction(1, 3), datetime.date(2026, 1, 2), b"x", Colour.RED,
           Label("x"), (1, "a"), {"a": 1}, {1: 2}, {3}, ...]  # fmt: skip


def _one_of(items: list[Any]) -> st.SearchStrategy[Any]:
    # By index: sampled_from hashes its items, and a handle's hash is a request to the subject.
    return st.integers(0, len(items) - 1).map(items.__getitem__)


_PLAIN = st.one_of(st.integers(), st.text(max_size=5), st.booleans(), st.none(), _one_of(HANDLES))
_OTHER = st.one_of(st.floats(), _one_of(OBJECTS), st.lists(_PLAIN, max_size=3))


def _json(encoded: Any) -> str:
    # As it crosses: True and 1, or 1 and 1.0, are equal in Python but not on the wire.
    return json.dumps(encoded)


@settings(max_examples=400, deadline=None)
@given(value=st.lists(st.one_of(_PLAIN, _OTHER), max_size=12))
def test_a_list_encodes_as_the_encoder_encodes_it(value: list[Any]) -> None:
    assert _json(BRIDGE.encode(value)) == _json(BRIDGE.encoder()(value))


@settings(max_examples=200, deadline=None)
@given(value=st.lists(_PLAIN, max_size=FAST_ITEMS))
def test_handles_and_plain_scalars_take_the_fast_path_and_give_the_same(value: list[Any]) -> None:
    fast = bridge_module._fast(value)
    assert fast is not None
    assert _json(fast) == _json(BRIDGE.encoder()(value))


@pytest.mark.parametrize("size", [FAST_ITEMS - 1, FAST_ITEMS, FAST_ITEMS + 1, codec.MAX_NODES - 1])
def test_a_list_within_the_codec_s_limit_is_written_out_whatever_its_length(size: int) -> None:
    value = ([0, "a", None, True, *HANDLES] * size)[:size]
    assert len(value) == size
    assert _json(BRIDGE.encode(value)) == _json(BRIDGE.encoder()(value))


@pytest.mark.parametrize("size", [codec.MAX_NODES, codec.MAX_NODES + 1])
@pytest.mark.parametrize("item", [0, "a", None, HANDLES[0]], ids=["int", "str", "none", "handle"])
def test_a_list_over_the_codec_s_limit_goes_as_a_handle_as_the_encoder_does(size: int, item: object) -> None:
    value = [item] * size
    with pytest.raises(codec.Unserializable):
        codec.Encoder(BRIDGE._ref, extended=True, names="all", handle=is_handle)(value)
    encoded = BRIDGE.encode(value)
    assert isinstance(encoded, dict)
    assert (encoded[codec.TYPE], encoded["side"]) == ("obj", "g")
    assert BRIDGE.handed.resolve(encoded["id"]) is value


def test_the_fast_path_stays_far_inside_the_codec_s_limit() -> None:
    assert FAST_ITEMS + 1 < codec.MAX_NODES // 10
