"""The intake's writer: every delivery gets its own answer, waiting ones share a transaction."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from bot.github.events import GateRequest, Ignore
from bot.store import Incoming, Recorded, Store
from bot.web.intake import Intake, lane, record_all


def incoming(name: str) -> Incoming:
    return Incoming(delivery_id=name, event="ping", action="", actions=[Ignore("ping")])


class FakeStore:
    """Records by name; a delivery named ``bad*`` makes its whole batch fail, as a constraint would."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()

    def record(self, batch: Sequence[Incoming]) -> list[Recorded]:
        self.entered.set()
        self.gate.wait()
        names = [one.delivery_id for one in batch]
        self.calls.append(names)
        if any(n.startswith("bad") for n in names):
            raise ValueError(f"cannot record {names}")
        return [Recorded(duplicate=False, notes=(n,), outcome="ignored") for n in names]


@pytest.mark.parametrize(
    ("names", "calls", "answers"),
    [
        (["a"], [["a"]], ["a"]),
        (["a", "b", "c"], [["a", "b", "c"]], ["a", "b", "c"]),
        # the batch fails: each alone, and only the bad one fails
        (["a", "bad", "c"], [["a", "bad", "c"], ["a"], ["bad"], ["c"]], ["a", ValueError, "c"]),
        # a lone delivery is tried once more (a broken connection has been replaced by then)
        (["bad"], [["bad"], ["bad"]], [ValueError]),
        (["bad1", "bad2"], [["bad1", "bad2"], ["bad1"], ["bad2"]], [ValueError, ValueError]),
    ],
)
def test_record_all_gives_each_delivery_its_own_outcome(
    names: list[str], calls: list[list[str]], answers: list[object]
) -> None:
    fake = FakeStore()
    got = record_all(fake.record, [incoming(n) for n in names])
    assert fake.calls == calls
    shown = [type(o) if isinstance(o, BaseException) else o.notes[0] for o in got]
    assert shown == answers


@pytest.mark.parametrize(
    ("installation", "writers", "turn", "expected"),
    [
        (None, 1, 5, 0),
        (7, 1, 5, 0),
        (7, 4, 0, 3),
        (7, 4, 9, 3),  # an installation always has the same writer, whatever the turn
        (8, 4, 1, 0),
        (None, 4, 0, 0),  # without one, the writers take turns
        (None, 4, 6, 2),
        ("7", 4, 1, 1),  # not an id GitHub sends: no rows of its own either
    ],
)
def test_each_installation_has_one_writer(
    installation: object, writers: int, turn: int, expected: int
) -> None:
    assert lane(installation, writers, turn) == expected  # type: ignore[arg-type]


def test_an_installations_deliveries_are_recorded_by_one_writer_in_order() -> None:
    seen: list[tuple[str, str]] = []

    def record(batch: Sequence[Incoming]) -> list[Recorded]:
        seen.extend((threading.current_thread().name, one.delivery_id) for one in batch)
        return [Recorded(duplicate=False, notes=(one.delivery_id,), outcome="ignored") for one in batch]

    intake = Intake(record, writers=3)
    intake.start()
    names = [f"d{i}" for i in range(20)]

    async def scenario() -> None:
        await asyncio.gather(
            *(
                intake.record(Incoming(delivery_id=n, event="ping", action="", actions=[], installation_id=5))
                for n in names
            )
        )

    try:
        asyncio.run(scenario())
    finally:
        intake.stop()
    assert len({thread for thread, _ in seen}) == 1
    assert [name for _, name in seen] == names


def test_a_store_answering_the_wrong_count_fails_every_delivery_of_the_batch() -> None:
    got = record_all(lambda batch: [], [incoming("a"), incoming("b")])
    assert all(isinstance(o, RuntimeError) for o in got)


def test_deliveries_waiting_while_the_writer_is_busy_share_one_transaction() -> None:
    fake = FakeStore()
    intake = Intake(fake.record)
    intake.start()

    async def scenario() -> list[Recorded | BaseException]:
        fake.gate.clear()
        first = asyncio.ensure_future(intake.record(incoming("first")))
        await asyncio.to_thread(fake.entered.wait)  # the writer holds "first" and waits on the gate
        rest = [asyncio.ensure_future(intake.record(incoming(n))) for n in ("a", "bad", "c")]
        await asyncio.sleep(0)  # each has been handed to the writer's queue
        fake.gate.set()
        return await asyncio.gather(first, *rest, return_exceptions=True)

    try:
        first, a, bad, c = asyncio.run(scenario())
    finally:
        intake.stop()
    assert fake.calls[0] == ["first"]
    assert fake.calls[1] == ["a", "bad", "c"]  # one transaction for the three that waited
    assert [o.notes for o in (first, a, c) if isinstance(o, Recorded)] == [("first",), ("a",), ("c",)]
    assert isinstance(bad, ValueError)


def test_several_writers_run_transactions_at_once() -> None:
    # Both transactions must be open together to pass the barrier: one writer alone would break it.
    barrier = threading.Barrier(2, timeout=30)
    entered = threading.Event()

    def record(batch: Sequence[Incoming]) -> list[Recorded]:
        entered.set()
        barrier.wait()
        return [Recorded(duplicate=False, notes=(one.delivery_id,), outcome="ignored") for one in batch]

    intake = Intake(record, writers=2)
    intake.start()

    async def scenario() -> list[Recorded]:
        first = asyncio.ensure_future(intake.record(incoming("a")))
        await asyncio.to_thread(entered.wait)  # one writer holds "a"; "b" can only reach the other
        return list(await asyncio.gather(first, intake.record(incoming("b"))))

    try:
        assert [r.notes for r in asyncio.run(scenario())] == [("a",), ("b",)]
    finally:
        intake.stop()


def test_a_request_that_went_away_does_not_stop_the_writer() -> None:
    fake = FakeStore()
    intake = Intake(fake.record)
    intake.start()

    async def scenario() -> Recorded:
        fake.gate.clear()
        gone = asyncio.ensure_future(intake.record(incoming("gone")))
        await asyncio.to_thread(fake.entered.wait)
        gone.cancel()  # the client hung up while its delivery was being committed
        fake.gate.set()
        return await intake.record(incoming("next"))

    try:
        assert asyncio.run(scenario()).notes == ("next",)
    finally:
        intake.stop()
    assert fake.calls == [["gone"], ["next"]]  # the delivery was recorded all the same


def test_a_stopped_writer_refuses_rather_than_leaving_a_request_waiting() -> None:
    intake = Intake(FakeStore().record)
    intake.start()
    intake.stop()
    with pytest.raises(RuntimeError, match="not running"):
        asyncio.run(intake.record(incoming("late")))


def test_the_intake_records_into_the_real_store(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'store.db'}")
    store.migrate()
    intake = Intake(lambda batch: store.deliveries.record_batch(batch, enqueued=True))
    intake.start()
    gate = GateRequest(11, "octo/repo", "1" * 40, "pull_request.opened", 7)

    async def scenario() -> list[Recorded]:
        return list(
            await asyncio.gather(
                intake.record(
                    Incoming(delivery_id="d1", event="pull_request", action="opened", actions=[gate])
                ),
                intake.record(
                    Incoming(delivery_id="d1", event="pull_request", action="opened", actions=[gate])
                ),
                intake.record(incoming("d2")),
            )
        )

    try:
        first, again, ping = asyncio.run(scenario())
    finally:
        intake.stop()
        store.close()
    assert (first.outcome, again.outcome, ping.outcome) == ("queued", "duplicate", "ignored")
    assert len(first.job_ids) == 1
