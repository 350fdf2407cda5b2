# ruff: noqa: E501 - hostile patches read best as the source they are
"""Differential and efficiency checks against real Docker, through the two trust domains.

Honest changes first (what a maintainer sees), then hostile ones: the code
under test has read patchgate's source and tries to read the reference, the
seed of the inputs still to come, or the grader's measurements, or to make
the reference look slow while its own cost is measured.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.behaviour import run_behaviour
from checks.behaviour.suites import Suites
from checks.policy import Policy
from checks.report import BehaviourResult, DifferentialResult
from checks.runner import LayerContext
from checks.workspace import Workspace, from_git
from tests.checks.behaviour.test_layer import Files, Gate, gate

pytestmark = pytest.mark.docker
__all__ = ["gate"]

BASE: Files = {
    "calc/__init__.py": "def half(x):\n    raise NotImplementedError\n\n\ndef total(xs):\n    raise NotImplementedError\n"
}
REF = """
from hypothesis import strategies as st

naturals = st.integers(min_value=0, max_value=10**6)


def half(x: int) -> int:
    if x < 0:
        raise ValueError("negative")
    return x // 2


def total(xs: list[int]) -> int:
    out = 0
    for x in xs:
        out += x
    return out


def numbers(n, rng):
    return ([rng.randrange(1000) for _ in range(n)],)
"""
HALF = "functions:\n  - function: calc.half\n    reference: ref.half\n    examples: 300\n"
TOTAL = """
functions:
  - function: calc.total
    reference: ref.total
    examples: 30
    strategies:
      xs: st.lists(st.integers(0, 999), max_size=20)
    efficiency:
      sizes: [10000, 30000, 100000]
      input: ref.numbers
      repetitions: 3
"""
RIGHT_HALF = "def half(x):\n    if x < 0:\n        raise ValueError(x)\n    return x // 2\n"
LINEAR = "def total(xs):\n    return sum(xs)\n"
# Right, and quadratic: a running check that sums the prefix again every hundred items.
QUADRATIC = "def total(xs):\n    for i in range(0, len(xs), 100):\n        assert sum(xs[: i + 1]) >= 0\n    return sum(xs)\n"


def run(gate: Gate, ws: Workspace, hidden: Path | None, held_out: Path | None = None, *, seed: str | None = None,
        **efficiency: object) -> BehaviourResult:  # fmt: skip
    policy = Policy.model_validate({"behaviour": {"efficiency": efficiency}, "strength": {"max_mutants": 0}})
    ctx = LayerContext(ws, policy, gate.sandbox, gate.image)
    return run_behaviour(ctx, Suites(hidden=hidden, held_out=held_out, differential_seed=seed))


def only(result: BehaviourResult) -> DifferentialResult:
    [found] = result.differential
    return found


def test_a_right_change_agrees_and_a_wrong_one_shows_its_smallest_counterexample(gate: Gate) -> None:
    hidden = gate.suite("hidden", {"ref.py": REF, "half.diff.yml": HALF})
    right = only(run(gate, gate.change({"calc/__init__.py": RIGHT_HALF}, BASE), hidden))
    assert (right.status, right.agreed, right.checked) == ("passed", 1, 1)
    assert 250 <= right.functions[0].inputs <= 300
    wrong = gate.change(
        {"calc/__init__.py": RIGHT_HALF.replace("return x // 2", "return x // 2 if x < 10 else 0")},
        BASE,
        name="wrong",
    )
    result = run(gate, wrong, hidden)
    assert (result.status, only(result).functions[0].status) == ("failed", "disagreed")
    assert only(result).functions[0].counterexample == "head returned 0 for half(10); reference returned 5"


def test_the_same_change_draws_the_same_inputs_and_a_recorded_seed_replays_them(gate: Gate) -> None:
    hidden = gate.suite("hidden", {"ref.py": REF, "half.diff.yml": HALF})
    # Wrong on one residue only: which input finds it first depends on the draws.
    ws = gate.change(
        {"calc/__init__.py": RIGHT_HALF.replace("return x // 2", "return x // 2 if x % 97 != 13 else -1")},
        BASE,
    )
    first, again = only(run(gate, ws, hidden)), only(run(gate, ws, hidden))
    assert first.seed == again.seed and len(first.seed) == 32
    assert first.functions[0].model_dump() == again.functions[0].model_dump()
    replayed = only(run(gate, ws, hidden, seed="0123456789abcdef0123456789abcdef"))
    assert replayed.seed == "0123456789abcdef0123456789abcdef"


def test_the_same_code_pushed_again_as_a_new_commit_draws_the_same_inputs(gate: Gate) -> None:
    # The head sha was in the seed: a change caught on one push could be pushed again unchanged
    # (a new commit, a new sha) until a seed's draws missed its bug. Nothing of the head's goes in.
    hidden = gate.suite("hidden", {"ref.py": REF, "half.diff.yml": HALF})
    repo = gate.make_repo("repo")
    repo.commit("base", dict(BASE))
    repo.branch("pr")
    repo.commit(
        "pr",
        {"calc/__init__.py": RIGHT_HALF.replace("return x // 2", "return x // 2 if x % 97 != 13 else -1")},
    )
    first_ws = from_git(repo.path, "main", "pr", gate.tmp_path / "ws-1")
    repo.commit("the same code again")
    again_ws = from_git(repo.path, "main", "pr", gate.tmp_path / "ws-2")
    assert first_ws.head_sha != again_ws.head_sha and first_ws.base_sha == again_ws.base_sha
    first, again = only(run(gate, first_ws, hidden)), only(run(gate, again_ws, hidden))
    assert first.seed == again.seed
    assert first.functions[0].model_dump() == again.functions[0].model_dump()


def test_a_held_out_differential_suite_shows_its_counts_only(gate: Gate) -> None:
    held_out = gate.suite("held-out", {"ref.py": REF, "half.diff.yml": HALF})
    wrong = gate.change({"calc/__init__.py": "def half(x):\n    return 0\n"}, BASE)
    result = only(run(gate, wrong, None, held_out))
    assert (result.source, result.status, result.agreed, result.checked) == ("held_out", "failed", 0, 1)
    assert (result.functions, result.inputs) == ([], None)


def test_efficiency_fails_a_quadratic_change_that_agrees_and_passes_a_linear_one(gate: Gate) -> None:
    hidden = gate.suite("hidden", {"ref.py": REF, "total.diff.yml": TOTAL})
    linear = only(run(gate, gate.change({"calc/__init__.py": LINEAR}, BASE), hidden))
    assert (linear.status, linear.agreed, linear.efficiency_passed) == ("passed", 1, 1), linear
    quadratic = only(run(gate, gate.change({"calc/__init__.py": QUADRATIC}, BASE, name="quadratic"), hidden))
    assert (quadratic.status, quadratic.agreed, quadratic.efficiency_passed) == ("failed", 1, 0), quadratic
    efficiency = quadratic.functions[0].efficiency
    assert efficiency is not None and efficiency.ratio is not None and efficiency.ratio > 5
    assert (efficiency.clock, efficiency.largest) == ("cpu", 100_000)


def test_a_change_that_ends_itself_on_an_input_fails_on_that_input(gate: Gate) -> None:
    hidden = gate.suite("hidden", {"ref.py": REF, "half.diff.yml": HALF})
    dies = "import os\n\n\ndef half(x):\n    if x < 0:\n        raise ValueError(x)\n    if x > 100:\n        os._exit(0)\n    return x // 2\n"
    result = only(run(gate, gate.change({"calc/__init__.py": dies}, BASE), hidden))
    [check] = result.functions
    assert (result.status, check.status) == ("failed", "disagreed")
    assert check.counterexample.startswith(
        "head stopped answering (the code under test's process ended) for half("
    )


# -- hostile ------------------------------------------------------------------------------------

# Everything the subject can reach, searched for the reference's text and anything shaped like the
# run's seed or the nonce (32 hex digits: the grader's plan and report hold them) or a function's seed
# (an integer of 30 digits or more).
SCRAPE = r"""
import os, re

SEEDS = re.compile(r"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])|(?<!\d)\d{30,}(?!\d)")


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read(1 << 20).decode("latin-1")
    except OSError:
        return ""


def _scrape():
    texts = [" ".join(f"{k}={v}" for k, v in os.environ.items())]
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        for part in ("cmdline", "environ", "mem", "fd/3", "fd/4", "fd/5", "root/grader/plan.json", "root/grader/report.jsonl"):
            texts.append(_read(f"/proc/{pid}/{part}"))
    for top in ("/grader", "/suite", "/tmp", "/run", "/work", "/patchgate", "/dev/shm"):
        for dirpath, _, files in os.walk(top):
            texts += [_read(os.path.join(dirpath, name)) for name in files]
    found = set()
    for text in texts:
        found |= set(SEEDS.findall(text))
        # Spelt apart: this very file is in the tree it walks.
        found |= {m for m in ("REFERENCE" + "-MARKER",) if m in text}
    return " ".join(sorted(found))[:150]


def half(x):
    if x < 0:
        raise ValueError(x)
    return _scrape() or x // 2
"""


def test_the_subject_cannot_read_the_reference_the_seed_or_the_grader_s_figures(gate: Gate) -> None:
    # Fails when the suite is readable by the subject, or the seed is on a command line or in an
    # environment it can read, or the grader's plan or report is.
    ref = REF.replace("naturals = ", "# REFERENCE-MARKER\nnaturals = ")
    hidden = gate.suite("hidden", {"ref.py": ref, "half.diff.yml": HALF.replace("300", "40")})
    result = only(run(gate, gate.change({"calc/__init__.py": SCRAPE}, BASE), hidden))
    [check] = result.functions
    # Whatever it found would be its answer: it found nothing, so it agrees with the reference.
    assert (check.status, check.counterexample) == ("agreed", ""), check.counterexample
    assert check.inputs == 40


# Sixteen times the reference's work, honestly: its burners spin while the reference is timed (between
# the requests it serves) and are stopped while its own call is timed.
BURNER = """
import os, signal

_BURNERS = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        while True:
            pass
    _BURNERS.append(pid)


def total(xs):
    for pid in _BURNERS:
        os.kill(pid, signal.SIGSTOP)
    try:
        for _ in range(16):
            out = 0
            for x in xs:
                out += x
        return out
    finally:
        for pid in _BURNERS:
            os.kill(pid, signal.SIGCONT)
"""


def test_a_subject_that_slows_the_reference_while_it_is_timed_cannot_hide_its_own_cost(gate: Gate) -> None:
    # Fails when the grader times by the wall clock (the burners then stretch the reference's time,
    # and an 8x slowdown passed a 3x bound at 1.1x; 16x passed at 1.6x), and when an empty round trip measured on the
    # subject was subtracted from its times (the burners spin through it too: 2.06x under load).
    diff = TOTAL.replace("sizes: [10000, 30000, 100000]", "sizes: [30000, 100000]")
    hidden = gate.suite("hidden", {"ref.py": REF, "total.diff.yml": diff})
    result = only(run(gate, gate.change({"calc/__init__.py": BURNER}, BASE), hidden, max_slowdown=3.0))
    [check] = result.functions
    assert check.status == "agreed"
    assert check.efficiency is not None and check.efficiency.status == "failed", check.efficiency
    assert check.efficiency.ratio is not None and check.efficiency.ratio > 3


# -- base as the reference ---------------------------------------------------------------------

REFACTOR_BASE: Files = {
    "calc/__init__.py": "",
    "calc/text.py": (
        "def shout(text: str, times: int = 1) -> str:\n"
        "    out = ''\n"
        "    for _ in range(times):\n"
        "        out += text.upper()\n"
        "    return out\n"
    ),
}
SMOKE = {
    "test_smoke.py": "from calc.text import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n"
}


def refactor(
    gate: Gate, ws: Workspace, hidden: Path, labels: tuple[str, ...], title: str = "Tidy calc"
) -> BehaviourResult:
    policy = Policy.model_validate(
        {"behaviour": {"differential": {"compare_refactors_with_base": True, "max_examples": 200}},
         "strength": {"max_mutants": 0}}
    )  # fmt: skip
    suites = Suites(hidden=hidden, labels=labels, title=title)
    return run_behaviour(LayerContext(ws, policy, gate.sandbox, gate.image), suites)


def test_a_faithful_refactor_agrees_with_base_and_a_change_not_labelled_one_is_not_compared(
    gate: Gate,
) -> None:
    hidden = gate.suite("hidden", SMOKE)
    faithful = "def shout(text: str, times: int = 1) -> str:\n    return text.upper() * times\n"
    ws = gate.change({"calc/text.py": faithful}, REFACTOR_BASE)
    same = refactor(gate, ws, hidden, (), "refactor: tidy shout")
    [found] = same.differential
    assert (same.status, found.source, found.agreed, found.checked) == ("passed", "base", 1, 1)
    [check] = found.functions
    assert (check.function, check.reference) == ("calc.text.shout", "base") and 150 <= check.inputs <= 200
    # Not a refactor by its labels or its title: nothing is compared with base.
    assert refactor(gate, ws, hidden, ("bug",), "Fix shout").differential == []


def test_a_refactor_that_changes_what_a_function_returns_fails_with_the_smallest_input(gate: Gate) -> None:
    changed = "def shout(text: str, times: int = 1) -> str:\n    return text.upper() * times + ('!' if text else '')\n"
    ws = gate.change({"calc/text.py": changed}, REFACTOR_BASE)
    result = refactor(gate, ws, gate.suite("hidden", SMOKE), ("refactor",))
    [check] = result.differential[0].functions
    assert (result.status, check.status) == ("failed", "disagreed")
    assert check.counterexample == "head returned '0!' for shout('0'); reference returned '0'"


# A suite's function may name base's own as its reference: timed against base on the suite's inputs.
# Base's total counts every item twice, which the suite's own reference (REF) does not.
DOUBLE_BASE: Files = {"calc/__init__.py": "def total(xs: list[int]) -> int:\n    return 2 * sum(xs)\n"}
DOUBLE = "def total(xs):\n    once = sum(xs)\n    return once + once\n"
DOUBLE_QUADRATIC = QUADRATIC.replace("return sum(xs)", "return 2 * sum(xs)")
TOTAL_FROM_BASE = TOTAL.replace("reference: ref.total", "reference: base")


def test_a_function_timed_against_base_fails_when_it_grows_faster_and_passes_when_it_keeps_up(
    gate: Gate,
) -> None:
    # Fails when `reference: base` takes the suite's reference instead (the faithful change then
    # disagrees, and the wrong one agrees), or when base's tree is not the grader's to import (an error).
    hidden = gate.suite("hidden", {"ref.py": REF, "total.diff.yml": TOTAL_FROM_BASE})
    kept_up = only(run(gate, gate.change({"calc/__init__.py": DOUBLE}, DOUBLE_BASE), hidden))
    assert (kept_up.status, kept_up.agreed, kept_up.efficiency_passed) == ("passed", 1, 1), kept_up
    [check] = kept_up.functions
    assert check.reference == "base" and check.inputs == 30
    slower = gate.change({"calc/__init__.py": DOUBLE_QUADRATIC}, DOUBLE_BASE, name="quadratic")
    grew = only(run(gate, slower, hidden))
    assert (grew.status, grew.agreed, grew.efficiency_passed) == ("failed", 1, 0), grew
    efficiency = grew.functions[0].efficiency
    assert efficiency is not None and efficiency.ratio is not None and efficiency.ratio > 5
    # What the suite's reference would return is a disagreement with base.
    wrong = gate.change({"calc/__init__.py": LINEAR}, DOUBLE_BASE, name="wrong")
    [disagreed] = only(run(gate, wrong, hidden)).functions
    assert disagreed.status == "disagreed" and "reference returned" in disagreed.counterexample


def test_a_refactor_is_compared_with_base_on_day_one_with_no_test_store(gate: Gate) -> None:
    # No hidden or held-out suite: base's own tests are the suite, and the refactor is still compared.
    own_tests = {
        "tests/test_text.py": "from calc.text import shout\n\n\ndef test_s():\n    assert shout('a') == 'A'\n"
    }
    changed = "def shout(text: str, times: int = 1) -> str:\n    return text.upper() * times + ('!' if text else '')\n"
    ws = gate.change({"calc/text.py": changed}, {**REFACTOR_BASE, **own_tests})
    policy = Policy.model_validate(
        {"behaviour": {"differential": {"compare_refactors_with_base": True, "max_examples": 200}},
         "strength": {"max_mutants": 0}}
    )  # fmt: skip
    result = run_behaviour(LayerContext(ws, policy, gate.sandbox, gate.image), Suites(labels=("refactor",)))
    [found] = result.differential
    assert (found.source, found.checked, found.agreed) == ("base", 1, 0)
    assert result.status == "failed" and [s.kind for s in result.suites] == ["repository"]
