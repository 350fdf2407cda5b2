"""Read what one sandboxed run reported: our own report file, size-capped, never stdout.

A log is trusted only as far as its protocol holds: the first line must be
this run's ``start`` record with the host's nonce; one test at a time, each
result right after its own ``begin``; for pytest, tests only after the
``collected`` record and in its order, each once; nothing after the final
record. A log that breaks the protocol is not believed at all: every test
of that run counts as an error (against the change, not the gate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from checks.behaviour.grade import MISSING, OutcomeKind, TestOutcome

Part = Literal["pytest", "cases"]
MAX_LOG_BYTES = 32 * 1024 * 1024
# A test's reported duration past which it is not believed (a day): a report the code wrote is bounded.
_MAX_SECONDS = 86_400.0


def _seconds(took: float) -> float | None:
    """A test's reported duration, if it is one (a bool is not; nor past a day)."""
    return float(took) if not isinstance(took, bool) and 0 <= took < _MAX_SECONDS else None


_PYTEST_OUTCOMES: dict[str, OutcomeKind] = {
    "passed": "passed", "failed": "failed", "error": "error", "skipped": "skipped", "xfailed": "xfailed",
}  # fmt: skip
_MESSAGE_CHARS = 300
_LAST: dict[Part, str] = {"pytest": "exit", "cases": "finish"}


def clean(value: object) -> str:
    """Make a sandbox-supplied string safe to show: printable and short."""
    text = value if isinstance(value, str) else ""
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"


@dataclass(frozen=True)
class CollectProblem:
    """A test module that did not collect (an import error, or a skip at module level)."""

    path: str
    missing_module: str | None
    message: str
    skipped: bool
    # The last traceback entry (file:line) pytest printed for it, when it printed one.
    where: str = ""


@dataclass(frozen=True)
class RunLog:
    """One part's log, parsed. ``problems`` non-empty means: do not believe it."""

    part: Part
    started: bool = False
    finished: bool = False
    exit_status: int | None = None
    # pytest got as far as the end of collection (even if every module failed to import).
    collection_done: bool = False
    collected: frozenset[str] = frozenset()
    tests: Mapping[str, TestOutcome] = field(default_factory=dict)
    cases: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    unfinished: frozenset[str] = frozenset()
    collect_problems: tuple[CollectProblem, ...] = ()
    problems: tuple[str, ...] = ()
    # What the grader saw go wrong with the code under test (it did not start, it stopped answering).
    subject_errors: tuple[str, ...] = ()
    # The report came from a grader in its own trust domain (version 2), not from in-process pytest.
    isolated: bool = False
    # Changed lines the code under test ran, per file (the subject's own report; hidden suites only);
    # None when the run recorded none.
    lines: Mapping[str, frozenset[int]] | None = None

    @property
    def reported(self) -> frozenset[str]:
        return self.collected | frozenset(self.tests) | frozenset(self.cases)


class _Parser:
    def __init__(self, part: Part) -> None:
        self.part = part
        self.finished = False
        self.ended = False
        self.exit_status: int | None = None
        self.collection_done = False
        self.collected: set[str] = set()
        self.order: dict[str, int] = {}
        self.position = -1
        self.tests: dict[str, TestOutcome] = {}
        self.cases: dict[str, Mapping[str, object]] = {}
        self.open: str | None = None
        self.collect_problems: list[CollectProblem] = []
        self.subject_errors: list[str] = []
        self.lines: dict[str, frozenset[int]] | None = None

    def feed(self, record: dict[str, object]) -> str | None:
        """Take one record; return a protocol violation, if it is one."""
        if self.ended:
            return "records after the end of the run"
        kind = record.get("kind")
        test_id = record.get("id")
        if kind == "begin" and isinstance(test_id, str):
            if self.open is not None:
                return f"{test_id!r} began while {self.open!r} was still running"
            if self.part == "pytest":
                # pytest runs what it collected, in that order, each test once.
                index = self.order.get(test_id)
                if index is None or index <= self.position:
                    return f"{test_id!r} began out of the collected order"
                self.position = index
            elif test_id in self.cases:
                return f"{test_id!r} ran twice"
            self.open = test_id
        elif kind in ("test", "case") and isinstance(test_id, str):
            if test_id != self.open:
                return f"a result for {test_id!r} without its begin record"
            self.open = None
            if kind == "case" and self.part == "cases":
                self.cases[test_id] = record
            elif kind == "test" and self.part == "pytest":
                outcome = _PYTEST_OUTCOMES.get(str(record.get("outcome")))
                if outcome is None:
                    return f"an unknown outcome {record.get('outcome')!r}"
                message = clean(record.get("message"))
                skipped = record.get("skipped_subtests", 0)
                if not isinstance(skipped, int) or isinstance(skipped, bool) or skipped < 0:
                    return f"an unknown skipped_subtests {skipped!r}"
                took = record.get("seconds")
                seconds = _seconds(took) if isinstance(took, int | float) else None
                sent = record.get("messages")
                messages = sent if type(sent) is int and sent >= 0 else None  # a count (a bool is no count)
                self.tests[test_id] = TestOutcome(
                    outcome,
                    message,
                    record.get("timed_out") is True,
                    skipped,
                    seconds=seconds,
                    messages=messages,
                )
            else:
                return f"a {kind} record in a {self.part} log"
        elif kind == "collected" and isinstance(ids := record.get("ids"), list) and not self.collection_done:
            self.collection_done = True
            self.collected = {i for i in ids if isinstance(i, str)}
            self.order = {}
            for index, i in enumerate(ids):
                if isinstance(i, str):
                    self.order.setdefault(i, index)
        elif kind == "collect_error" and isinstance(record.get("path"), str):
            missing = record.get("missing_module")
            self.collect_problems.append(
                CollectProblem(
                    str(record["path"]),
                    missing if isinstance(missing, str) else None,
                    clean(record.get("message")),
                    record.get("skipped") is True,
                    clean(record.get("where")),
                )
            )
        elif kind == "lines" and self.lines is None:
            covered = record.get("covered")
            self.lines = {}
            if isinstance(covered, dict):
                self.lines = {
                    str(path): frozenset(n for n in numbers if isinstance(n, int))
                    for path, numbers in covered.items()
                    if isinstance(numbers, list)
                }
        elif kind == "subject_error":
            # The grader's own word that the code under test did not start or stopped answering.
            self.subject_errors.append(clean(record.get("detail")))
        elif kind == "finish" and not self.finished:
            self.finished = True
            status = record.get("exit_status")
            self.exit_status = status if isinstance(status, int) else self.exit_status
        elif kind == "exit" and self.part == "pytest":
            code = record.get("code")
            self.exit_status = code if isinstance(code, int) else self.exit_status
        else:
            return f"an unexpected {kind!r} record"
        if kind == _LAST[self.part]:
            self.ended = True
        return None


def parse_log(data: bytes | None, nonce: str, part: Part) -> RunLog:
    """Parse one part's report file (None: the run produced none)."""
    if data is None:
        return RunLog(part)
    if len(data) > MAX_LOG_BYTES:
        return RunLog(part, started=True, problems=(f"the report is larger than {MAX_LOG_BYTES} bytes",))
    lines = data.split(b"\n")
    # A run killed mid-write leaves at most one partial last line; it is not a violation.
    lines = [line for line in lines[:-1] if line.strip()]
    records: list[dict[str, object]] = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            return RunLog(part, started=number > 1, problems=(f"line {number} is not a JSON object",))
        records.append(record)
    first = records[0] if records else {}
    # Version 2 comes from a grader in its own trust domain; version 1 from in-process pytest.
    version = first.get("version")
    expected = {"kind": "start", "runner": part, "nonce": nonce, "version": version}
    if first != expected or version not in (1, 2):
        return RunLog(part, problems=("the report does not start with this run's start record",))
    parser = _Parser(part)
    problems = [p for record in records[1:] if (p := parser.feed(record)) is not None]
    return RunLog(
        part,
        started=True,
        finished=parser.finished,
        exit_status=parser.exit_status,
        collection_done=parser.collection_done,
        collected=frozenset(parser.collected),
        tests=parser.tests,
        cases=parser.cases,
        unfinished=frozenset({parser.open} if parser.open else ()),
        collect_problems=tuple(parser.collect_problems),
        problems=tuple(problems[:5]),
        subject_errors=tuple(parser.subject_errors[:5]),
        isolated=first.get("version") == 2,
        lines=parser.lines,
    )


@dataclass(frozen=True)
class RunView:
    """Every test outcome of one run (all its parts), with what to assume for unreported tests."""

    label: str
    outcomes: Mapping[str, TestOutcome]
    reported: frozenset[str]
    # By module path: why a test module did not collect.
    broken_modules: Mapping[str, TestOutcome] = field(default_factory=dict)
    unfinished: Mapping[str, TestOutcome] = field(default_factory=dict)
    default: TestOutcome = MISSING
    # Set when the log broke its protocol: every test of the run gets this.
    distrust: TestOutcome | None = None

    def outcome(self, test_id: str) -> TestOutcome:
        """Return the outcome of ``test_id`` in this run, never a pass it did not report."""
        if self.distrust is not None:
            return self.distrust
        if test_id in self.outcomes:
            return self.outcomes[test_id]
        if test_id in self.unfinished:
            return self.unfinished[test_id]
        module = test_id.partition("::")[0]
        return self.broken_modules.get(module, self.default)
