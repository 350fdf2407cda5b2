"""The differential grader against a real subject process, over a socketpair (no Docker, no uids).

What crosses and what is decided where; the uid split and the private files
are proven against real Docker in tests/checks/behaviour/test_differential_runs.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.incontainer.channel.peer import Peer
from checks.behaviour.incontainer.grader import differential, references, timing
from tests.checks.behaviour.incontainer.test_bridge import SUBJECT

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[5]

CALC = """
import os, time

def right(x):
    return x // 2

def wrong(x):
    return x // 2 if x < 10 else 0

def picky(x):
    if x < 0:
        raise TypeError("negative")
    return x // 2

def opaque(x):
    class Always:
        def __eq__(self, other):
            return True
    return Always()

def dies(x):
    if x >= 3:
        os._exit(0)
    return x // 2

def hangs(x):
    if x >= 3:
        time.sleep(60)
    return x // 2

def total(xs):
    return sum(xs)

def total_slowly(xs):
    out = 0
    for i in range(len(xs)):
        out = sum(xs[: i + 1])
    return out
"""

REF = """
def half(x: int) -> int:
    if x < 0:
        raise ValueError("negative")
    return x // 2


def total(xs: list[int]) -> int:
    return sum(xs)


def numbers(n, rng):
    return ([rng.randrange(100) for _ in range(n)],)
"""


class Subject:
    """A real subject process serving the repository at ``repo``, and the grader's end of the channel."""

    def __init__(self, repo: Path) -> None:
        mine, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-B", "-c", SUBJECT, str(ROOT), str(repo), str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            env={k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        )
        theirs.close()
        self.sock = mine
        self.peer = Peer(mine, differential._refuse)

    def close(self) -> None:
        self.sock.close()
        self.process.kill()
        self.process.wait(timeout=30)


@pytest.fixture
def subject(tmp_path: Path) -> Iterator[Subject]:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    running = Subject(repo)
    yield running
    running.close()


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(sys, "path", list(sys.path))
    root = tmp_path / "suite"
    root.mkdir()
    # A name of its own: the grader imports the suite's modules into this test process.
    (root / f"ref_{tmp_path.name}.py").write_text(REF)
    return str(root)


def plan_of(suite: str, function: str, reference: str = "half", **more: Any) -> dict[str, Any]:
    module = f"ref_{Path(suite).parent.name}"
    return {
        "id": f"calc.diff.yml::calc.{function}", "module": "calc", "function": function,
        "reference": {"source": "suite", "module": module, "function": reference},
        "strategies": {}, "examples": 200, "seconds": 60, "call_timeout_s": 2, "seed": 1234, **more,
    }  # fmt: skip


def check(
    subject: Subject, suite: str, tmp_path: Path, fn: dict[str, Any]
) -> tuple[list[dict[str, Any]], bool]:
    out = tmp_path / "report.jsonl"
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    run = differential.Run({"roots": {"suite": suite}}, fd, subject.peer, timing.Clocks("wall"))
    try:
        agreed = run.check(fn)
        if agreed and fn.get("efficiency"):
            run.efficiency(fn)
    finally:
        os.close(fd)
    return [json.loads(line) for line in out.read_text().splitlines()], agreed


def test_a_right_function_agrees_on_every_input(subject: Subject, suite: str, tmp_path: Path) -> None:
    records, agreed = check(
        subject, suite, tmp_path, plan_of(suite, "right", strategies={"x": "st.integers(0, 10**6)"})
    )
    assert agreed
    assert records[0]["status"] == "agreed" and 150 <= records[0]["inputs"] <= 200


@pytest.mark.parametrize(
    "case",
    [
        ("wrong", [10], {"status": "returned", "value": 0}),  # shrunk to the smallest input that disagrees
        ("picky", [-1], {"status": "raised"}),  # TypeError where the reference raises ValueError
        ("opaque", [0], {"status": "unserializable"}),  # an object that claims to equal anything
        # The input that ended the subject, as drawn: nothing after it is compared, so none smaller.
        ("dies", None, {"status": "gone"}),
        ("hangs", [3], {"status": "timeout"}),
        ("absent", [0], {"status": "import_error"}),  # the change has no such function
    ],
)
def test_a_disagreement_names_the_smallest_input_and_what_each_side_did(
    subject: Subject, suite: str, tmp_path: Path, case: tuple[str, list[int] | None, dict[str, Any]]
) -> None:
    function, args, head = case
    # Drawn from 0 up (the reference raises below): only picky's own mistake is on a negative input.
    drawn = "st.integers()" if function == "picky" else "st.integers(min_value=0)"
    records, agreed = check(subject, suite, tmp_path, plan_of(suite, function, strategies={"x": drawn}))
    found = records[0]["found"]
    assert (agreed, records[0]["status"]) == (False, "disagreed")
    assert found["args"] == args if args is not None else found["args"][0] >= 3
    assert {k: found["head"][k] for k in head} == head
    if function == "picky":
        assert (found["head"]["exception"]["type"], found["reference"]["exception"]["type"]) == (
            "TypeError",
            "ValueError",
        )


def test_a_suite_s_broken_strategy_is_its_problem_not_a_disagreement(
    subject: Subject, suite: str, tmp_path: Path
) -> None:
    records, agreed = check(
        subject, suite, tmp_path, plan_of(suite, "right", strategies={"x": "st.nothing_at_all()"})
    )
    assert (agreed, records[0]["status"]) == (False, "error")
    assert "does not evaluate" in records[0]["detail"]


def test_efficiency_is_measured_after_agreement_on_the_suite_s_inputs(
    subject: Subject, suite: str, tmp_path: Path
) -> None:
    ref = Path(suite).parent.name
    efficiency = {"sizes": [200, 2000], "input": {"module": f"ref_{ref}", "function": "numbers"},
                  "repetitions": 2, "seconds": 60, "call_timeout_s": 10}  # fmt: skip
    fn = plan_of(suite, "total", reference="total", examples=20, efficiency=efficiency)
    records, agreed = check(subject, suite, tmp_path, fn)
    measured = records[1]
    assert (agreed, measured["kind"], measured["status"]) == (True, "efficiency", "measured")
    assert sorted(measured["samples"]) == ["200", "2000"]
    assert all(len(side) == 2 for size in measured["samples"].values() for side in size.values())


def test_efficiency_stops_at_a_disagreement_on_a_large_input(
    subject: Subject, suite: str, tmp_path: Path
) -> None:
    # Right on every small drawn input, wrong past a size: the timed inputs are compared too.
    (Path(suite).parent / "repo" / "calc.py").write_text(
        CALC + "\n\ndef total(xs):\n    return sum(xs) if len(xs) < 1000 else 0\n"
    )
    ref = Path(suite).parent.name
    efficiency = {"sizes": [100, 5000], "input": {"module": f"ref_{ref}", "function": "numbers"},
                  "repetitions": 2, "seconds": 60, "call_timeout_s": 10}  # fmt: skip
    fn = plan_of(suite, "total", reference="total", examples=20, efficiency=efficiency,
                 strategies={"xs": "st.lists(st.integers(), max_size=20)"})  # fmt: skip
    records, agreed = check(subject, suite, tmp_path, fn)
    assert agreed
    assert (records[1]["status"], records[1]["size"], records[1]["found"]["head"]["value"]) == (
        "disagreed",
        5000,
        0,
    )


class Counting(timing.Clocks):
    """Clocks that tick once a reading: the figures are made up, the protocol is real."""

    def __init__(self) -> None:
        super().__init__("cpu")
        self.ticks = 0.0

    def reference(self) -> float:
        self.ticks += 1.0
        return self.ticks

    def subject(self) -> float:
        self.ticks += 1.0
        return self.ticks


def test_each_repetition_is_a_new_input_and_the_same_seed_draws_them_again(subject: Subject) -> None:
    seen: list[tuple[int, int]] = []

    def generate(n: int, rng: Any) -> tuple[list[int]]:
        xs = [rng.randrange(10**6) for _ in range(n)]
        seen.append((n, sum(xs)))
        return (xs,)

    def total(xs: list[int]) -> int:
        return sum(xs)

    ref = references.Reference(total, sys.modules[__name__], ("xs",), ())
    target = timing.Target("calc", "total", 10.0)
    runs = []
    for seed in (5, 5, 6):
        seen.clear()
        measured = timing.measure(subject.peer, Counting(), target, ref, generate, sizes=[10, 100, 1000],
                                  repetitions=3, seed=seed, seconds=60)  # fmt: skip
        assert measured.status == "measured"
        runs.append(list(seen))
    assert len(runs[0]) == 9 and len(set(runs[0])) == 9  # every (size, repetition) its own input
    assert sorted(runs[0]) == sorted(runs[1]) and sorted(runs[0]) != sorted(runs[2])
    assert runs[0] != sorted(runs[0], key=lambda x: x[0])  # the sizes are visited in an order of their own
