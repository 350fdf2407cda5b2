"""The grader of differential checks: the reference here, the change in the subject, Hypothesis between.

Usage: ``python3 -P -s -B /patchgate/launch.py differential PLAN``

PLAN (a private file under /grader) holds the report path, the nonce, the
rendezvous directory, where the references live (``/grader/suite``, and
``/grader/base`` for a refactor compared with base) and, per function, its
reference, strategies, budgets, seed and efficiency check. For each
function this process draws inputs (``search.py``), calls the reference
itself and asks the subject to apply the change's function to the same
values (``subject/calls.py``), compares the two observations
(``channel/observations.py``) and writes what it found; then, if they
agreed, times both on the suite's large inputs (``timing.py``). The subject
is only ever given a module, a function name and argument values: never the
reference, the strategies, the seed or a time the grader measured.
"""

from __future__ import annotations

import json
from typing import Any

import hypothesis
import hypothesis.errors

from .. import process
from ..channel import rendezvous
from ..channel.observations import agree
from ..channel.peer import Peer, PeerGone
from . import references, timing
from .search import Found, search

CONNECT_S = 120.0


def _refuse(request: dict[str, Any]) -> dict[str, Any]:
    # The differential grader never hands the subject anything to call back.
    return {"raise": {"text": "the grader serves no requests"}}


class Run:
    """One differential run: the plan, the report, the channel to the subject."""

    def __init__(self, plan: dict[str, Any], fd: int, peer: Peer, clocks: timing.Clocks) -> None:
        self.plan = plan
        self.fd = fd
        self.roots: dict[str, str] = plan.get("roots") or {}
        self.clocks = clocks
        self.peer = peer
        self.gone: str | None = None

    def write(self, record: dict[str, Any]) -> None:
        _write(self.fd, record)

    def check(self, fn: dict[str, Any]) -> bool:
        """Search for a disagreement on one function and write it; True when they agreed."""
        record: dict[str, Any] = {"kind": "function", "id": fn["id"], "inputs": 0}
        target = timing.Target(str(fn["module"]), str(fn["function"]), float(fn["call_timeout_s"]))
        try:
            ref = references.load(fn["reference"], self.roots)
            draws = references.arguments(ref, fn.get("strategies") or {})
            searched = search(
                draws,
                lambda a, k: (
                    references.encode_input(list(a), "a drawn input"),
                    references.encode_input(dict(k), "a drawn input"),
                ),
                lambda a, k: self._compare(ref, target, a, k),
                examples=int(fn["examples"]),
                seconds=float(fn["seconds"]),
                seed=int(fn["seed"]),
                halted=lambda: self.gone is not None,
            )
        except references.SuiteProblem as exc:
            self.write({**record, "status": "error", "detail": str(exc)})
            return False
        except hypothesis.errors.HypothesisException as exc:
            detail = f"Hypothesis refused the strategies: {type(exc).__name__}: {str(exc)[:300]}"
            self.write({**record, "status": "error", "detail": detail})
            return False
        found = searched.found
        record.update(inputs=searched.inputs, stopped=searched.stopped)
        if found is None:
            self.write({**record, "status": "agreed"})
            return True
        shown = {"args": found.args, "kwargs": found.kwargs, "reference": found.reference, "head": found.head}
        self.write({**record, "status": "disagreed", "found": shown})
        return False

    def _compare(
        self, ref: references.Reference, target: timing.Target, args: Any, kwargs: Any
    ) -> Found | None:
        expected = references.observe(ref, args, kwargs, target.timeout_s)
        head = self._apply(target, args, kwargs)
        return None if agree(expected, head) else Found(args, kwargs, expected, head)

    def _apply(self, target: timing.Target, args: Any, kwargs: Any) -> dict[str, Any]:
        try:
            return timing.apply(self.peer, target, args, kwargs)
        except PeerGone as exc:
            # The input that ended the subject is the counterexample; nothing after it is compared.
            self.gone = f"the code under test stopped answering: {exc}"
            return {"status": "gone"}

    def efficiency(self, fn: dict[str, Any]) -> None:
        """Time the change against the reference on the suite's inputs; write what was measured."""
        spec = fn["efficiency"]
        record: dict[str, Any] = {"kind": "efficiency", "id": fn["id"]}
        target = timing.Target(str(fn["module"]), str(fn["function"]), float(spec["call_timeout_s"]))
        try:
            ref = references.load(fn["reference"], self.roots)
            generate = references.load({**spec["input"], "source": "suite"}, self.roots).function
            measured = timing.measure(
                self.peer,
                self.clocks,
                target,
                ref,
                generate,
                sizes=[int(n) for n in spec["sizes"]],
                repetitions=int(spec["repetitions"]),
                seed=int(fn["seed"]),
                seconds=float(spec["seconds"]),
            )
        except references.SuiteProblem as exc:
            self.write({**record, "status": "error", "detail": str(exc)})
            return
        except PeerGone as exc:
            self.gone = f"the code under test stopped answering: {exc}"
            self.write({**record, "status": "gone", "detail": self.gone})
            return
        record.update(
            status=measured.status,
            size=measured.size,
            samples={str(n): s for n, s in measured.samples.items()},
        )
        if measured.status == "disagreed":
            args, kwargs = measured.args
            record["found"] = {
                "args": args,
                "kwargs": kwargs,
                "reference": measured.reference,
                "head": measured.head,
            }
        self.write(record)


def _write(fd: int, record: dict[str, Any]) -> None:
    process.write_all(fd, json.dumps(record, ensure_ascii=True, allow_nan=False).encode() + b"\n")


def main(argv: list[str]) -> int:
    """Run every function of the plan through the subject and write the report; 0 unless the harness broke."""
    with open(argv[0], encoding="utf-8") as f:
        plan = json.load(f)
    fd = rendezvous.open_report(plan["report"])
    clocks = timing.Clocks()
    _write(fd, {"kind": "start", "runner": "differential", "nonce": plan["nonce"], "version": 1,
                "hypothesis": hypothesis.__version__, "clock": clocks.kind,
                "cpu_quota": timing.cpu_quota()})  # fmt: skip
    server, _ = rendezvous.listen(plan["rendezvous"])
    try:
        run = Run(plan, fd, Peer(rendezvous.accept(server, CONNECT_S), _refuse), clocks)
    except rendezvous.NoSubject as exc:
        _write(fd, {"kind": "subject_error", "detail": str(exc)})
        return 0
    for fn in plan["functions"]:
        if run.gone is not None:
            break
        if run.check(fn) and fn.get("efficiency") and run.gone is None:
            run.efficiency(fn)
    if run.gone is not None:
        run.write({"kind": "subject_error", "detail": run.gone})
    run.write({"kind": "finish"})
    return 0
