"""WarmPool: a container made ahead of need goes to one run of its own shape, once, while fresh."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from tempfile import TemporaryDirectory

import pytest

from sandbox.pool import Warm, WarmPool


class Engine:
    """Makes and discards fake containers, counting both."""

    def __init__(self) -> None:
        self.made: list[Warm] = []
        self.discarded: list[Warm] = []
        self.lock = threading.Lock()

    def maker(self, shape: str, gate: threading.Event | None = None) -> Callable[[], Warm]:
        def make() -> Warm:
            if gate is not None:
                assert gate.wait(30)
            warm = Warm(f"{shape}-{len(self.made)}", object(), TemporaryDirectory(), made=clock.now)
            with self.lock:
                self.made.append(warm)
            return warm

        return make

    def discard(self, warm: Warm) -> None:
        self.discarded.append(warm)
        warm.inbox.cleanup()


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


clock = Clock()


@pytest.fixture
def engine() -> Iterator[Engine]:
    clock.now = 1000.0
    made = Engine()
    yield made
    for warm in made.made:  # the claimed ones: a run would have removed them
        warm.inbox.cleanup()


@pytest.fixture
def pool(engine: Engine) -> Iterator[WarmPool]:
    made = WarmPool(engine.discard, per_shape=1, shapes=2, max_idle_s=60, clock=clock)
    yield made
    made.close()


def recurred(pool: WarmPool, *shapes: str) -> None:
    """Two runs of each shape asked for a container (and found none): from now on it is made ahead."""
    for shape in shapes:
        for _ in range(2):
            assert pool.claim(shape) is None


def settle(pool: WarmPool) -> None:
    for thread in list(pool._threads):
        thread.join(30)


def test_a_container_made_ahead_is_claimed_once_and_never_handed_out_again(
    pool: WarmPool, engine: Engine
) -> None:
    recurred(pool, "a")
    pool.refill("a", engine.maker("a"))
    settle(pool)
    first = pool.claim("a")
    assert first is engine.made[0]
    assert pool.claim("a") is None  # claimed for good: a second run never gets it


def test_a_shape_holds_at_most_per_shape_idle_or_coming(pool: WarmPool, engine: Engine) -> None:
    gate = threading.Event()
    recurred(pool, "a")
    for _ in range(5):
        pool.refill("a", engine.maker("a", gate))
    gate.set()
    settle(pool)
    for _ in range(5):
        pool.refill("a", engine.maker("a"))
    settle(pool)
    assert len(engine.made) == 1
    assert pool.idle() == {"a": 1}


def test_a_container_goes_to_its_own_shape_only(pool: WarmPool, engine: Engine) -> None:
    recurred(pool, "memory=256")
    pool.refill("memory=256", engine.maker("memory=256"))
    settle(pool)
    assert pool.claim("memory=512") is None
    assert pool.claim("memory=256") is engine.made[0]


def test_one_idle_too_long_is_removed_not_handed_out(pool: WarmPool, engine: Engine) -> None:
    recurred(pool, "a")
    pool.refill("a", engine.maker("a"))
    settle(pool)
    clock.now += 61  # past max_idle_s: its waiter's deadline started when it was made
    assert pool.claim("a") is None
    assert engine.discarded == engine.made


def test_the_least_recently_used_shape_is_evicted_beyond_the_limit(pool: WarmPool, engine: Engine) -> None:
    for shape in ("a", "b"):
        recurred(pool, shape)
        pool.refill(shape, engine.maker(shape))
        settle(pool)
    assert pool.claim("a") is not None  # "a" was used last: "b" is the older shape now
    pool.refill("a", engine.maker("a"))
    settle(pool)
    recurred(pool, "c")
    pool.refill("c", engine.maker("c"))
    settle(pool)
    assert sorted(pool.idle()) == ["a", "c"]
    assert [warm.name for warm in engine.discarded] == ["b-1"]


def test_close_removes_every_idle_one_and_refuses_refills(pool: WarmPool, engine: Engine) -> None:
    recurred(pool, "a")
    pool.refill("a", engine.maker("a"))
    recurred(pool, "b")
    pool.refill("b", engine.maker("b"))
    settle(pool)
    pool.close()
    assert sorted(w.name for w in engine.discarded) == sorted(w.name for w in engine.made)
    pool.refill("a", engine.maker("a"))
    settle(pool)
    assert len(engine.made) == 2
    assert pool.claim("a") is None


def test_one_made_while_closing_is_removed_too(engine: Engine) -> None:
    gate = threading.Event()
    pool = WarmPool(engine.discard, clock=clock)
    recurred(pool, "a")
    pool.refill("a", engine.maker("a", gate))
    closer = threading.Thread(target=pool.close)
    closer.start()
    gate.set()
    closer.join(30)
    assert not closer.is_alive()
    assert [w.name for w in engine.discarded] == ["a-0"]
    assert pool.idle() == {}


def test_a_failed_make_leaves_the_pool_short_and_the_next_refill_tries_again(
    pool: WarmPool, engine: Engine
) -> None:
    def broken() -> Warm:
        raise RuntimeError("the engine said no")

    recurred(pool, "a")
    pool.refill("a", broken)
    settle(pool)
    assert pool.claim("a") is None
    pool.refill("a", engine.maker("a"))
    settle(pool)
    assert pool.claim("a") is engine.made[0]


def test_a_pool_holds_something() -> None:
    with pytest.raises(ValueError, match="at least one"):
        WarmPool(lambda warm: None, per_shape=0)


def test_a_shape_run_once_gets_nothing_made_ahead(pool: WarmPool, engine: Engine) -> None:
    assert pool.claim("one-off") is None
    pool.refill("one-off", engine.maker("one-off"))
    settle(pool)
    assert engine.made == []
    assert pool.claim("one-off") is None  # its second run: the third finds one made ahead
    pool.refill("one-off", engine.maker("one-off"))
    settle(pool)
    assert pool.claim("one-off") is engine.made[0]
