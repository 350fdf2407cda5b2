"""Agent: a request that reaches a starting agent is served with the agent's state complete."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from checks.behaviour.incontainer.channel import wire
from checks.behaviour.incontainer.subject import agent as agent_module
from checks.behaviour.incontainer.subject import ambient
from checks.behaviour.incontainer.subject.standins import Standins


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    mine, theirs = socket.socketpair()
    yield mine, theirs
    mine.close()
    theirs.close()


def test_a_request_waiting_when_the_agent_starts_is_answered_not_dropped(
    pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    grader, subject = pair
    # A request from a test's own thread (served on a free thread) is already on the wire when the
    # agent starts. Before, the peer started serving halfway through the agent's set-up, and the
    # handler met an agent without its thread-local state: the serving thread died, the request was
    # never answered and the grader wedged.
    wire.send(grader, {"op": "lines_report", "q": 1, "main": False})

    class SlowStandins(Standins):
        def __init__(self, agent: agent_module.Agent) -> None:
            time.sleep(0.3)  # a loaded machine: set-up takes long enough for the request to be read
            super().__init__(agent)

    monkeypatch.setattr(agent_module, "Standins", SlowStandins)
    monkeypatch.setattr(ambient, "install_warning_hook", lambda: None)  # not in our process
    agent_module.Agent(subject, "/nonexistent")
    grader.settimeout(30)
    answer = wire.Reader(grader)
    answer.fill()
    message = answer.next()
    assert message.get("r") == 1
    assert "dead" not in message
    assert "ok" in message or "raise" in message
