"""Peer: each request and answer carries its own number, never written into a caller's or handler's dict."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from checks.behaviour.incontainer.channel import peer as peer_module
from checks.behaviour.incontainer.channel import wire
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


def test_each_end_counts_the_messages_it_sent_requests_and_answers_alike() -> None:
    mine, theirs = socket.socketpair()
    try:
        server = Peer(theirs, lambda request: {"ok": None}, free_threads=2)
        client = Peer(mine, lambda request: {"raise": {"text": "nothing to serve"}})
        for _ in range(3):
            client.request({"op": "get"}, timeout=10)
        assert (client.sent, server.sent) == (3, 3)
    finally:
        mine.close()
        theirs.close()


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


def frame(message: dict[str, Any]) -> bytes:
    import json

    payload = json.dumps(message).encode()
    return len(payload).to_bytes(4, "big") + payload


def test_a_reader_spins_for_a_message_only_on_a_core_of_its_own_and_rests_after_a_spin_for_nothing() -> None:
    mine, theirs = socket.socketpair()
    try:
        peer = Peer(mine, lambda request: {})
        peer._multicore = True
        # As a waiting thread reads: with the read lock, the reader thread staying out of its way.
        peer._waiting_count += 1
        peer._read_lock.acquire()
        theirs.sendall(frame({"r": 1, "ok": 1}))
        assert peer._spin()  # it had come: read without a select
        assert peer._reader.next() == {"r": 1, "ok": 1}
        assert not peer._spin()  # nothing comes: it gives up after SPIN_S, and rests
        assert peer._spin_rest == peer_module._SPIN_REST
        theirs.sendall(frame({"r": 2, "ok": 2}))
        # Resting, it leaves the next waits to select (which reads it), however soon a message comes.
        assert [peer._spin() for _ in range(peer_module._SPIN_REST)] == [False] * peer_module._SPIN_REST
        assert peer._spin() and peer._reader.next() == {"r": 2, "ok": 2}
        peer._multicore = False  # pinned to one core: spinning would hold the core the answer needs
        theirs.sendall(frame({"r": 3, "ok": 3}))
        assert not peer._spin() and not peer._reader.pending()
    finally:
        mine.close()
        theirs.close()


def test_requests_read_at_once_up_to_the_pool_are_each_served_at_once() -> None:
    # Requests in one read, routed one after another while a worker waited idle: each counted on that
    # one worker (it counted itself idle until it woke), none started a worker of its own, and with the
    # worker then busy (here, waiting for the others) they waited for ever (cachetools' lock tests, ten
    # of the test's threads meeting in the change's code).
    parties = 4
    meeting = threading.Barrier(parties, timeout=5)

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        return {"ok": meeting.wait() if request["op"] == "meet" else None}

    mine, theirs = socket.socketpair()
    try:
        server = Peer(theirs, handler, free_threads=parties)
        server._route({"q": 1, "op": "hello", "main": False})
        assert wire.receive(mine, timeout=30)["r"] == 1
        waited = time.monotonic() + 10
        while server._idle < 1 and time.monotonic() < waited:  # its worker, back at the pool, waits idle
            time.sleep(0.001)
        for n in range(2, parties + 2):
            server._route({"q": n, "op": "meet", "main": False})  # as the reader routes what one read held
        answers = [wire.receive(mine, timeout=10) for _ in range(parties)]
    finally:
        mine.close()
        theirs.close()
    assert not meeting.broken
    assert sorted(a["ok"] for a in answers) == list(range(parties))


def test_requests_past_the_pool_wait_for_a_worker_to_finish() -> None:
    mine, theirs = socket.socketpair()
    try:
        Peer(theirs, lambda request: {"ok": request["op"]}, free_threads=2)
        client = Peer(mine, lambda request: {"raise": {"text": "nothing to serve"}})
        answers: list[str] = []

        def ask(n: int) -> None:
            for i in range(20):
                answers.append(client.request({"op": f"{n}-{i}"}, timeout=30)["ok"])

        threads = [threading.Thread(target=ask, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert sorted(answers) == sorted(f"{n}-{i}" for n in range(8) for i in range(20))
    finally:
        mine.close()
        theirs.close()


def test_a_worker_that_could_not_be_started_leaves_its_request_to_the_one_that_came_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Red-team: the pool decided to start a worker, one busy worker finished and counted itself idle,
    # then no thread could be had (the pids limit). The request was queued for the next to finish and
    # the idle one took it - still counted idle, so the next request counted on it and started nothing.
    meeting = threading.Barrier(2, timeout=5)

    def handler(request: dict[str, Any]) -> dict[str, Any]:
        if request["op"] == "slow":
            time.sleep(0.2)
            return {"ok": "slow"}
        return {"ok": meeting.wait()}

    mine, theirs = socket.socketpair()
    real = threading.Thread
    failed: list[bool] = []
    server: Peer

    class Failing(threading.Thread):
        def start(self) -> None:
            if self._target is not None and not failed and server._workers == 2:  # type: ignore[attr-defined]
                failed.append(True)
                waited = time.monotonic() + 10
                while server._idle < 1 and time.monotonic() < waited:  # the busy one comes free meanwhile
                    time.sleep(0.001)
                raise RuntimeError("can't start new thread")
            super().start()

    try:
        server = Peer(theirs, handler, free_threads=2)
        server._route({"q": 1, "op": "slow", "main": False})
        monkeypatch.setattr(threading, "Thread", Failing)
        server._route({"q": 2, "op": "meet", "main": False})  # its worker cannot be started
        monkeypatch.setattr(threading, "Thread", real)
        server._route({"q": 3, "op": "meet", "main": False})
        answers = [wire.receive(mine, timeout=10) for _ in range(3)]
    finally:
        mine.close()
        theirs.close()
    assert failed and not meeting.broken
    assert sorted(str(a.get("ok")) for a in answers) == ["0", "1", "slow"]
