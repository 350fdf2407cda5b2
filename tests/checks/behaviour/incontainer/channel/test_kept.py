"""Kept containers, one side at a time: what a message carries and what a receiver accepts."""

from __future__ import annotations

from typing import Any

import pytest

from checks.behaviour.incontainer.channel import codec
from checks.behaviour.incontainer.channel.kept import MAX_ITEMS, MAX_KEPT, Kept, keepable


def encoder_of(kept: Kept) -> codec.Encoder:
    encoder = codec.Encoder(extended=True)
    encoder.kept = kept.tag
    return encoder


def pair() -> tuple[Kept, Kept]:
    return Kept(), Kept()


def send(grader: Kept, subject: Kept, value: object) -> Any:
    """The grader hands ``value`` over: the subject's object for it."""
    grader.keep(value)
    data = encoder_of(grader)(value)
    return codec.decode(data, lambda tag: subject.resolve(tag, decode_for(subject), make=True))


def decode_for(side: Kept) -> Any:
    return lambda data: codec.decode(data, lambda tag: side.resolve(tag, decode_for(side), make=False))


def carry(sender: Kept, receiver: Kept, *, let_go: bool = False) -> dict[str, Any]:
    message: dict[str, Any] = {}
    sender.outbound(message, lambda: encoder_of(sender), let_go=let_go)
    receiver.inbound(message, decode_for(receiver))
    return message


def test_a_container_crosses_once_with_its_contents_then_by_number() -> None:
    grader, subject = pair()
    items = [1, "a"]
    theirs = send(grader, subject, items)
    assert theirs == items and theirs is not items
    assert encoder_of(grader)(items) == {"__type__": "kept", "n": 1}
    assert send(grader, subject, items) is theirs  # one object there however often it is handed


def test_each_side_s_changes_reach_the_other_in_place() -> None:
    grader, subject = pair()
    mapping: dict[Any, Any] = {"a": 1}
    theirs = send(grader, subject, mapping)
    theirs["b"] = [2]
    del theirs["a"]
    carry(subject, grader)
    assert mapping == {"b": [2]}
    mapping.clear()
    carry(grader, subject)
    assert theirs == {}
    assert carry(grader, subject) == {}  # nothing changed since: nothing is carried


def test_a_change_is_seen_by_identity_never_by_asking_an_item() -> None:
    class Touchy:
        def __eq__(self, other: object) -> bool:
            raise AssertionError("an item was compared")

        __hash__ = object.__hash__

    grader, subject = pair()
    items: list[object] = [1]
    theirs = send(grader, subject, items)
    items.append(Touchy())  # the grader's side would make a request of a handle's __eq__
    message: dict[str, Any] = {}
    grader.outbound(message, lambda: codec.Encoder(ref=lambda v: {"__type__": "obj", "side": "g", "id": 9}))
    assert message["kept"]["set"] == {"1": [1, {"__type__": "obj", "side": "g", "id": 9}]}
    assert theirs == [1]


def test_what_nothing_holds_any_more_is_let_go_of_after_its_last_contents() -> None:
    grader, subject = pair()
    items = [1]
    send(grader, subject, items).append(2)  # the subject's object is held by nothing after this
    message = carry(subject, grader, let_go=True)
    assert message["kept"] == {"set": {"1": [1, 2]}, "drop": [1]}
    assert items == [1, 2] and len(grader) == 0 and len(subject) == 0
    held = send(grader, subject, items)
    carry(subject, grader, let_go=True)
    assert len(subject) == len(grader) == 1 and held == [1, 2]


def test_a_reset_reaches_the_other_side_and_numbers_are_never_reused() -> None:
    grader, subject = pair()
    first = send(grader, subject, [1])
    grader.reset()
    assert carry(grader, subject)["kept"] == {"reset": True}
    assert len(subject) == 0
    first.append(2)
    assert carry(subject, grader) == {}
    fresh = [3]
    assert encoder_of(grader)(fresh) == [3]  # not kept: nothing was handed since
    grader.keep(fresh)
    assert encoder_of(grader)(fresh)["n"] == 2


def test_the_receiver_writes_only_into_what_it_keeps_and_only_its_kind() -> None:
    # Hostile: the subject names numbers it was never given, and sends the wrong kind of contents.
    grader, subject = pair()
    items, mapping = [1], {"a": 1}
    send(grader, subject, items)
    send(grader, subject, mapping)
    decode = decode_for(grader)
    grader.inbound({"kept": {"set": {"1": {"x": 1}, "2": [1, 2], "7": [9], "x": [9], "-1": [9]}}}, decode)
    assert items == [1] and mapping == {"a": 1}
    grader.inbound({"kept": {"set": {"1": {"__type__": "kept", "n": 99}}}}, decode)  # unknown number
    assert items == [1]
    grader.inbound({"kept": "nonsense"}, decode)
    grader.inbound({"kept": {"drop": ["1", None, 99], "set": []}}, decode)
    assert len(grader) == 2
    with pytest.raises(ValueError, match="no kept container 5"):
        grader.resolve({"__type__": "kept", "n": 5}, decode, make=False)


def test_a_container_that_holds_itself_crosses_as_one_object() -> None:
    grader, subject = pair()
    mine: list[object] = [1]
    mine.append(mine)
    theirs = send(grader, subject, mine)
    assert theirs[1] is theirs and theirs[0] == 1


def test_what_is_kept_is_bounded() -> None:
    assert keepable([0] * MAX_ITEMS) and not keepable([0] * (MAX_ITEMS + 1))
    assert not keepable((1,)) and not keepable(type("L", (list,), {})())
    grader = Kept()
    many = [[i] for i in range(MAX_KEPT + 5)]
    for items in many:
        grader.keep(items)
    assert len(grader) == MAX_KEPT
    assert not grader.holds(many[-1])


def test_what_the_subject_sends_never_breaks_the_grader_s_side() -> None:
    # Hostile: numbers that are digits only to str.isdigit, and a kept tag carrying contents, which
    # only the grader may send (decoded, it would restart the codec's depth count at each level).
    grader, subject = pair()
    items = [1]
    send(grader, subject, items)
    decode = decode_for(grader)
    grader.inbound({"kept": {"set": {"\u00b2": [9], "\u0661": [9]}}}, decode)
    assert items == [1]
    nested: Any = []
    for _ in range(300):
        nested = {"__type__": "kept", "n": 1, "value": [nested]}
    with pytest.raises(ValueError, match="only the grader"):
        grader.resolve(nested, decode, make=False)


def test_a_container_first_met_in_a_resend_that_fails_is_sent_again_with_its_contents() -> None:
    # The outer list's changes fail to encode after the inner kept list was tagged inside them: the
    # inner one never reached the other side, so the next resend must carry its contents again.
    grader, subject = pair()
    outer: list[object] = [1]
    theirs = send(grader, subject, outer)
    inner = [2, 3]
    grader.keep(inner)
    outer += [inner, object()]  # the object cannot be encoded without a handle

    def to_subject() -> None:  # the subject makes a container the grader introduces (agent.py)
        message: dict[str, Any] = {}
        grader.outbound(message, lambda: encoder_of(grader))
        made = lambda tag: subject.resolve(tag, decode_for(subject), make=True)  # noqa: E731
        subject.inbound(message, lambda data: codec.decode(data, made))

    to_subject()
    assert theirs == [1]  # nothing of that pass crossed
    outer.pop()
    to_subject()
    assert theirs == [1, [2, 3]]
