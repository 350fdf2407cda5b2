"""The creation gate: a terminating process starts no container and waits for the ones in flight."""

from __future__ import annotations

import threading
import time

import pytest

from sandbox import reaper
from sandbox.errors import SandboxError


@pytest.fixture(autouse=True)
def fresh_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    # The gate is process-wide: a closed one would stop every later test's sandbox.
    monkeypatch.setattr(reaper, "_CREATIONS", reaper._Creations())


def test_after_closing_no_creation_starts() -> None:
    with reaper.creating():
        pass
    assert reaper.close_creations(1)
    with pytest.raises(SandboxError, match="terminating"), reaper.creating():
        pytest.fail("a creation ran after the gate closed")


def test_closing_waits_for_creations_in_flight_in_other_threads() -> None:
    entered, release = threading.Event(), threading.Event()
    finished: list[float] = []

    def create() -> None:
        with reaper.creating():
            entered.set()
            release.wait(10)
            finished.append(time.monotonic())

    worker = threading.Thread(target=create)
    worker.start()
    assert entered.wait(10)
    threading.Timer(0.5, release.set).start()
    assert reaper.close_creations(10)
    closed_at = time.monotonic()
    worker.join(10)
    assert finished and finished[0] <= closed_at


def test_closing_gives_up_after_its_timeout() -> None:
    entered, release = threading.Event(), threading.Event()

    def create() -> None:
        with reaper.creating():
            entered.set()
            release.wait(10)

    worker = threading.Thread(target=create)
    worker.start()
    assert entered.wait(10)
    try:
        assert reaper.close_creations(0.3) is False
    finally:
        release.set()
        worker.join(10)


def test_the_closing_threads_own_creation_is_not_waited_for() -> None:
    # A signal handler runs on top of its thread's creation, which cannot finish first.
    with reaper.creating():
        assert reaper.close_creations(5)
