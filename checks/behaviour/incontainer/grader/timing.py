"""An efficiency check's measurements: the change and the reference, interleaved, on the same inputs.

Only ratios measured here, in one run, are ever judged (the host fits the
growth exponents: ``checks/behaviour/growth.py``); no absolute time is
compared with anything from another run or machine.

Which clock. The reference runs in this process and is timed by this
thread's CPU time: another process's load - a busy machine, or the code under
test spinning while the reference runs, to make it look slow - does not
lengthen it. The change runs in the subject, whose word about its own time
is worth nothing; it is timed by the container's CPU time (its cgroup's
usage, which every process of the subject adds to, whatever it forks) from
the request's sending to its answer: work it does outside that window cannot
help it, since the input arrives with the request and comes from a seed it
never sees. Nothing measured on the subject is ever subtracted from that
(``growth.py`` says why). Where the cgroup cannot be read, both sides fall
back to wall time, and the report says so (``clock: wall``).

The inputs: the suite's generator is called with ``n`` and a
``random.Random`` seeded from the host's seed, the size and the repetition,
so each repetition is a new input (memoising an earlier answer does not
help) and ``patchgate run`` draws the same ones again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..channel.observations import agree
from ..channel.peer import Peer
from . import references

_CGROUP_V2 = "/sys/fs/cgroup/cpu.stat"
_CGROUP_V1 = "/sys/fs/cgroup/cpuacct/cpuacct.usage"
_ANSWER_GRACE_S = 30.0


def container_cpu() -> float | None:
    """Return the container's CPU time so far, in seconds (None where its cgroup cannot be read)."""
    try:
        with open(_CGROUP_V2, encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
    except (OSError, ValueError):
        pass
    try:
        with open(_CGROUP_V1, encoding="ascii") as f:
            return int(f.read().strip()) / 1e9
    except (OSError, ValueError):
        return None


def cpu_quota() -> float | None:
    """Return the container's CPU quota in CPUs (None: unlimited, or not readable)."""
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as f:
            quota, _, period = f.read().strip().partition(" ")
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", encoding="ascii") as f:
            quota_us = int(f.read().strip())
        with open("/sys/fs/cgroup/cpu/cpu.cfs_period_us", encoding="ascii") as f:
            period_us = int(f.read().strip())
        return None if quota_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None


@dataclass
class Clocks:
    """The two clocks of one run: ``cpu`` (the reference's thread, the container's) or ``wall`` for both."""

    kind: str = field(default_factory=lambda: "cpu" if container_cpu() is not None else "wall")

    def reference(self) -> float:
        return time.thread_time() if self.kind == "cpu" else time.perf_counter()

    def subject(self) -> float:
        return (container_cpu() or 0.0) if self.kind == "cpu" else time.perf_counter()


@dataclass(frozen=True)
class Target:
    """The change's function, as the subject is asked for it."""

    module: str
    function: str
    timeout_s: float


@dataclass
class Measured:
    """What one efficiency check measured: seconds per size and repetition, or why it stopped."""

    samples: dict[int, dict[str, list[float]]] = field(default_factory=dict)
    status: str = "measured"  # or "disagreed", "timeout" (the change at ``size``), "time" (the budget)
    size: int | None = None
    args: Any = None
    reference: dict[str, Any] | None = None
    head: dict[str, Any] | None = None


def measure(
    peer: Peer,
    clocks: Clocks,
    target: Target,
    ref: references.Reference,
    generate: Callable[[int, random.Random], Any],
    *,
    sizes: list[int],
    repetitions: int,
    seed: int,
    seconds: float,
) -> Measured:
    """Time the change and the reference on ``repetitions`` inputs of each size, interleaved.

    Each round visits every size in an order of its own, and at each size runs the two sides in an
    order of its own (both drawn from ``seed``), so drift in the machine's speed falls on both.
    A disagreement on a timed input, or a change that does not answer in time, ends the check.
    Raises SuiteProblem when the generator or the reference fails (the suite's fault).
    """
    # Reproducible draws from the host's seed, which the subject never sees (not a secret of their own).
    order = random.Random(f"{seed}:order")  # noqa: S311
    out = Measured(samples={n: {"reference": [], "head": []} for n in sizes})
    deadline = time.monotonic() + seconds
    for rep in range(repetitions):
        for n in order.sample(sizes, len(sizes)):
            if time.monotonic() > deadline:
                out.status = "time"
                return out
            args, kwargs = _input(generate, n, random.Random(f"{seed}:{n}:{rep}"))  # noqa: S311
            sides = ["reference", "head"]
            order.shuffle(sides)
            seen: dict[str, dict[str, Any]] = {}
            for side in sides:
                if side == "reference":
                    start = clocks.reference()
                    seen[side] = references.observe(ref, args, kwargs, target.timeout_s)
                    out.samples[n][side].append(clocks.reference() - start)
                else:
                    start = clocks.subject()
                    seen[side] = apply(peer, target, args, kwargs)
                    spent = clocks.subject() - start
                    if seen[side].get("status") == "timeout":
                        out.status, out.size = "timeout", n
                        return out
                    out.samples[n][side].append(spent)
            if not agree(seen["reference"], seen["head"]):
                out.status, out.size, out.args = "disagreed", n, [args, kwargs]
                out.reference, out.head = seen["reference"], seen["head"]
                return out
    return out


def _input(generate: Callable[[int, random.Random], Any], n: int, rng: random.Random) -> tuple[Any, Any]:
    try:
        made = generate(n, rng)
    except Exception as exc:
        raise references.SuiteProblem(
            f"the input generator failed at n = {n}: {type(exc).__name__}"
        ) from None
    if not isinstance(made, tuple):
        raise references.SuiteProblem("the input generator must return a tuple of positional arguments")
    return references.encode_input(list(made), f"the generated input at n = {n}"), {}


def apply(peer: Peer, target: Target, args: Any, kwargs: Any) -> dict[str, Any]:
    """Call the change's function in the subject on one input; return what it did (``observed``)."""
    request = {
        "op": "apply",
        "module": target.module,
        "function": target.function,
        "args": args,
        "kwargs": kwargs,
        "deadline": target.timeout_s,
    }
    answer = peer.request(request, timeout=target.timeout_s + _ANSWER_GRACE_S)
    return observed(answer)


def observed(answer: dict[str, Any]) -> dict[str, Any]:
    """The observation in the subject's answer (a timeout that escaped the call is one too)."""
    ok = answer.get("ok")
    if isinstance(ok, dict) and isinstance(ok.get("status"), str):
        return ok
    raised = answer.get("raise")
    if isinstance(raised, dict) and raised.get("timeout"):
        return {"status": "timeout"}
    return {"status": "crashed"}
