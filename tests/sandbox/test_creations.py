"""The creation gate and background removals: a terminating process starts no container and
waits for the creations and removals in flight; a failing removal is logged and tried again."""

from __future__ import annotations

import logging
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


def test_a_background_removal_runs_then_hands_back_and_is_waited_for() -> None:
    calls: list[str] = []
    release = threading.Event()

    def remove() -> None:
        release.wait(10)
        calls.append("removed")

    reaper.remove_later(remove, "patchgate-test", lambda: calls.append("done"))
    assert reaper.wait_removals(0.05) is False  # still removing
    release.set()
    assert reaper.wait_removals(10)
    assert calls == ["removed", "done"]


def test_closing_waits_for_background_removals() -> None:
    release = threading.Event()
    removed: list[bool] = []

    def remove() -> None:
        release.wait(10)
        removed.append(True)

    reaper.remove_later(remove, "patchgate-test", lambda: None)
    threading.Timer(0.3, release.set).start()
    assert reaper.close_creations(10)
    assert removed  # finished before closing returned


def test_closing_gives_up_on_a_removal_that_hangs() -> None:
    release = threading.Event()

    def remove() -> None:
        release.wait(10)

    reaper.remove_later(remove, "patchgate-test", lambda: None)
    try:
        assert reaper.close_creations(0.3) is False
    finally:
        release.set()
        assert reaper.wait_removals(10)


def test_a_failing_removal_is_logged_and_tried_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(reaper, "REMOVE_RETRY_S", (0.0, 0.0))
    attempts: list[int] = []
    done = threading.Event()

    def remove() -> None:
        attempts.append(1)
        if len(attempts) < 3:
            raise SandboxError("the engine said no")

    with caplog.at_level(logging.WARNING, logger="sandbox.reaper"):
        reaper.remove_later(remove, "patchgate-flaky", done.set)
        assert reaper.wait_removals(10)
    assert len(attempts) == 3
    assert done.is_set()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert all(
        "patchgate-flaky" in r.getMessage() and "the engine said no" in r.getMessage() for r in warnings
    )


def test_a_removal_that_keeps_failing_is_left_to_the_reaper_and_still_hands_back(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(reaper, "REMOVE_RETRY_S", (0.0,))
    done = threading.Event()

    def remove() -> None:
        raise SandboxError("the engine is gone")

    with caplog.at_level(logging.WARNING, logger="sandbox.reaper"):
        reaper.remove_later(remove, "patchgate-stuck", done.set)
        assert reaper.wait_removals(10)
    assert done.is_set()
    assert [r.levelno for r in caplog.records] == [logging.WARNING, logging.ERROR]
    assert "left to the reaper" in caplog.records[-1].getMessage()
