"""Peer: each request and answer carries its own number, never written into a caller's or handler's dict."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from checks.behaviour.incontainer.channel.peer import Handler, Peer, PeerGone


@pytest.fixture
def connect() -> Iterator[Any]:
    socks: list[socket.socket] = []

    def make(handler: Handler) -> Peer:
        """A client peer whose requests ``handler`` serves on threads of the other end."""
        mine, theirs = socket.socketpair()
        socks.extend((mine, theirs))
        Peer(theirs, handler, free_threads=4)
        return Peer(mine, lambda request: {"raise": {"text": "nothing to serve"}})

    yield make
    for sock in socks:
        sock.close()


def test_a_shared_answer_is_sent_as_a_copy_and_each_request_gets_its_own(connect: Any) -> None:
    shared = {"ok": "cached"}  # a handler's constant (or cached) answer, served on several threads at once
    client = connect(lambda request: shared)
    answers: list[dict[str, Any]] = []

    def ask() -> None:
        for _ in range(50):
            answers.append(client.request({"op": "get"}, timeout=10))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared == {"ok": "cached"}
    assert len(answers) == 200
    assert {answer["ok"] for answer in answers} == {"cached"}
    assert len({answer["r"] for answer in answers}) == 200


def test_the_caller_s_message_is_left_as_it_was_and_may_be_sent_again(connect: Any) -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"ok": request["q"]}

    client = connect(handler)
    message = {"op": "get"}
    first = client.request(message, timeout=10)
    second = client.request(message, timeout=10)
    assert message == {"op": "get"}
    assert (first["ok"], second["ok"]) == (first["r"], second["r"])
    assert first["r"] != second["r"]
    assert [request["op"] for request in seen] == ["get", "get"]


def test_a_handler_that_fails_breaks_the_channel_on_both_sides_instead_of_leaving_a_request_unanswered(
    connect: Any,
) -> None:
    def handler(request: dict[str, Any]) -> dict[str, Any]:
        raise AttributeError("'Agent' object has no attribute '_local'")

    client = connect(handler)
    # Without a deadline: before, the serving thread died and this waited for ever.
    outcome: list[BaseException] = []

    def ask() -> None:
        try:
            client.request({"op": "get"})
        except BaseException as exc:
            outcome.append(exc)

    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    asker.join(30)
    assert not asker.is_alive(), "the request waited for ever"
    assert [type(exc) for exc in outcome] == [PeerGone]
    assert "AttributeError" in str(outcome[0])
    with pytest.raises(PeerGone):
        client.request({"op": "get"}, timeout=10)
