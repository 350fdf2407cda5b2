"""Base runs kept across jobs: the key, what is kept and read back, and the layer reusing them in Docker."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from checks.behaviour.baseruns import BaseRuns, keepable, run_key
from checks.behaviour.grade import TestOutcome
from checks.behaviour.outcomes import RunView, parse_log
from checks.behaviour.result import BASE_REUSED
from checks.workspace import Workspace
from sandbox.errors import ImageMissing
from sandbox.spec import RunResult, RunSpec
from tests.checks.behaviour.test_layer import HIDDEN, RIGHT, WRONG, WRONG_NUMBERS, Gate, gate
from tests.fakes.recording import Recording

__all__ = ["gate"]  # the layer tests' fixture, used below

REPORT = "/grader/report.jsonl"
KEY_FIELDS: dict[str, Any] = {
    "image": "patchgate-env:1", "kind": "hidden", "part": "pytest", "label": "base",
    "in_process": False, "modules": ("calc",),
}  # fmt: skip


def log_bytes(*records: dict[str, object], nonce: str = "n0", finish: bool = True) -> bytes:
    start = {"kind": "start", "runner": "pytest", "nonce": nonce, "version": 2}
    end = [{"kind": "finish", "exit_status": 1}, {"kind": "exit", "code": 1}] if finish else []
    return b"".join(json.dumps(r).encode() + b"\n" for r in (start, *records, *end))


def ran(test_id: str, outcome: str, **extra: object) -> list[dict[str, object]]:
    return [{"kind": "begin", "id": test_id}, {"kind": "test", "id": test_id, "outcome": outcome, **extra}]


CLEAN = log_bytes(
    {"kind": "collected", "ids": ["t.py::a", "t.py::b"]}, *ran("t.py::a", "passed"), *ran("t.py::b", "failed")
)


def result(report: bytes = CLEAN, **changes: Any) -> RunResult:
    fields: dict[str, Any] = {
        "exit_code": 0, "stdout": b"out", "stderr": b"err", "wall_s": 1.5, "peak_memory_bytes": 1 << 20,
        "files": {REPORT: report}, "subject_output": b"subject", "subject_exit_code": 0,
    }  # fmt: skip
    return RunResult(**{**fields, **changes})


def view_of(data: RunResult, nonce: str = "n0") -> tuple[Any, RunView]:
    run_log = parse_log(data.files.get(REPORT), nonce, "pytest")
    unfinished = {i: TestOutcome("error", "died") for i in run_log.unfinished}
    return run_log, RunView("base", dict(run_log.tests), run_log.reported, unfinished=unfinished)


def test_a_stored_run_reads_back_as_it_was_written(tmp_path: Path) -> None:
    store = BaseRuns(tmp_path / "runs", "salt")
    key = store.key(**KEY_FIELDS)
    assert store.get(key) is None
    store.put(key, "n0", REPORT, "pytest", result())
    found = store.get(key)
    assert found is not None
    assert (found.nonce, found.report) == ("n0", REPORT)
    assert found.result == result()
    # Only the service reads the folder.
    assert (tmp_path / "runs").stat().st_mode & 0o077 == 0


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("image", "patchgate-env:2"), ("kind", "held_out"), ("part", "cases"), ("label", "head 1"),
        ("in_process", True), ("modules", ("calc", "evil")),
    ],
)  # fmt: skip
def test_every_input_of_a_base_run_is_in_its_key(field: str, other: object) -> None:
    assert run_key("salt", **KEY_FIELDS) != run_key("salt", **{**KEY_FIELDS, field: other})


def test_a_run_stored_under_another_salt_is_not_found(tmp_path: Path) -> None:
    # The salt carries the repository, the base sha, the suites, the policy and patchgate's code.
    BaseRuns(tmp_path, "base sha A").put(
        run_key("base sha A", **KEY_FIELDS), "n0", REPORT, "pytest", result()
    )
    other = BaseRuns(tmp_path, "base sha B")
    assert other.get(other.key(**KEY_FIELDS)) is None


def test_the_image_is_keyed_by_its_content_when_it_can_be(tmp_path: Path) -> None:
    # The same tag rebuilt (unpinned requirements resolving anew) is another image.
    before = BaseRuns(tmp_path, "salt", identify=lambda tag: "sha256:" + "1" * 64)
    rebuilt = BaseRuns(tmp_path, "salt", identify=lambda tag: "sha256:" + "2" * 64)
    assert before.key(**KEY_FIELDS) != rebuilt.key(**KEY_FIELDS)
    before.put(before.key(**KEY_FIELDS), "n0", REPORT, "pytest", result())
    assert rebuilt.get(rebuilt.key(**KEY_FIELDS)) is None


def test_a_run_older_than_a_day_is_run_again(tmp_path: Path) -> None:
    store = BaseRuns(tmp_path, "salt")
    key = store.key(**KEY_FIELDS)
    store.put(key, "n0", REPORT, "pytest", result())
    path = tmp_path / f"{key}.json"
    data = json.loads(path.read_text())
    now, day = time.time(), store.max_age_s
    cases: list[tuple[object, bool]] = [(now - day + 60, True), (now - day - 60, False), (now + 3600, False),
                                        ("yesterday", False)]  # fmt: skip
    for stored_at, found in cases:
        path.write_text(json.dumps(data | {"stored_at": stored_at}))
        assert (store.get(key) is not None) is found, stored_at


def test_an_explicit_rerun_stores_but_never_reads(tmp_path: Path) -> None:
    rerun = BaseRuns(tmp_path, "salt", read=False)
    key = rerun.key(**KEY_FIELDS)
    rerun.put(key, "n0", REPORT, "pytest", result())
    assert rerun.get(key) is None
    assert BaseRuns(tmp_path, "salt").get(key) is not None


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d | {"key": "0" * 64},  # a file moved under another key's name
        lambda d: d | {"version": 0},
        lambda d: d | {"nonce": "planted"},  # the report no longer starts with its own nonce
        lambda d: d | {"part": "cases"},
        lambda d: d | {"part": "bogus"},
        lambda d: d | {"result": "not a mapping"},
        lambda d: [d],
        lambda d: d | {"result": d["result"] | {"files": {}}},  # no report at all
        lambda d: d | {"result": d["result"] | {"exit_code": "0"}},
        lambda d: d | {"result": d["result"] | {"stdout": "not base64!"}},
        lambda d: {},
    ],
)
def test_a_damaged_entry_is_run_again_not_believed(tmp_path: Path, damage: Any) -> None:
    store = BaseRuns(tmp_path, "salt")
    key = store.key(**KEY_FIELDS)
    store.put(key, "n0", REPORT, "pytest", result())
    path = tmp_path / f"{key}.json"
    path.write_text(json.dumps(damage(json.loads(path.read_text()))))
    assert store.get(key) is None
    path.write_bytes(b"\x00not json")
    assert store.get(key) is None


def test_keys_are_hex_digests_only(tmp_path: Path) -> None:
    store = BaseRuns(tmp_path, "salt")
    for key in ("../../etc/passwd", "A" * 64, "0" * 63):
        with pytest.raises(ValueError, match="not a base run key"):
            store.get(key)


def test_the_least_recently_used_entries_go_past_the_limit(tmp_path: Path) -> None:
    store = BaseRuns(tmp_path, "salt", max_entries=2)
    keys = [run_key("salt", **{**KEY_FIELDS, "label": f"base {i}"}) for i in range(3)]
    for age, key in enumerate(keys[:2]):
        store.put(key, "n0", REPORT, "pytest", result())
        os.utime(tmp_path / f"{key}.json", (1000 + age, 1000 + age))
    assert store.get(keys[0]) is not None  # used: now the newest
    store.put(keys[2], "n0", REPORT, "pytest", result())
    assert [store.get(k) is not None for k in keys] == [True, False, True]


def test_the_folder_keeps_within_its_bytes_and_a_huge_report_is_not_kept(tmp_path: Path) -> None:
    keys = [run_key("salt", **{**KEY_FIELDS, "label": f"base {i}"}) for i in range(3)]
    store = BaseRuns(tmp_path, "salt")
    store.put(keys[0], "n0", REPORT, "pytest", result())
    one = (tmp_path / f"{keys[0]}.json").stat().st_size
    # Room for two entries: the least recently used goes when the third arrives.
    store = BaseRuns(tmp_path, "salt", max_bytes=2 * one + one // 2)
    os.utime(tmp_path / f"{keys[0]}.json", (1000, 1000))
    store.put(keys[1], "n0", REPORT, "pytest", result())
    store.put(keys[2], "n0", REPORT, "pytest", result())
    assert [store.get(k) is not None for k in keys] == [False, True, True]
    # A report past MAX_ENTRY_BYTES (here: past the whole budget) is never written.
    huge = result(CLEAN + b" " * (3 * one))
    store.put(keys[0], "n0", REPORT, "pytest", huge)
    assert not (tmp_path / f"{keys[0]}.json").exists()


def test_a_clean_base_run_is_kept() -> None:
    clean = result()
    assert keepable(clean, *view_of(clean))
    # A test module that needs a module the base does not have (the change adds it) is a fact of the base.
    needs: dict[str, object] = {
        "kind": "collect_error",
        "path": "t_new.py",
        "missing_module": "newpkg",
        "message": "No module",
    }
    missing = result(log_bytes(needs, {"kind": "collected", "ids": []}))
    assert keepable(missing, *view_of(missing))


TIMED_OUT = log_bytes({"kind": "collected", "ids": ["t.py::a"]}, *ran("t.py::a", "failed", timed_out=True))
STILL_RUNNING = log_bytes({"kind": "collected", "ids": ["t.py::a"]}, {"kind": "begin", "id": "t.py::a"})
SLOW_IMPORT = log_bytes(
    {"kind": "collect_error", "path": "t.py", "message": "the import took too long"},
    {"kind": "collected", "ids": []},
)


@pytest.mark.parametrize(
    ("name", "run"),
    [
        ("the run used up its budget", result(timed_out=True)),
        ("out of memory", result(oom_killed=True)),
        ("too much output", result(output_limit_exceeded=True)),
        ("a limit hit", result(limit_hit="pids")),
        ("no report", result(files={})),
        ("a report from another run", result(log_bytes(nonce="other"))),
        ("a report that did not finish", result(log_bytes({"kind": "collected", "ids": []}, finish=False))),
        ("a protocol violation", result(log_bytes(*ran("t.py::a", "passed")))),
        ("a test that timed out", result(TIMED_OUT)),
        ("a test still running at the end", result(STILL_RUNNING)),
        ("the code under test did not answer", result(log_bytes({"kind": "subject_error", "detail": "x"}))),
        ("a module that did not import in time", result(SLOW_IMPORT)),
    ],
)
def test_a_run_load_or_trouble_could_have_shaped_is_not_kept(name: str, run: RunResult) -> None:
    assert not keepable(run, *view_of(run)), name


# The layer with a real sandbox: what a second job on the same base runs, and what it reports.


def base_specs(recording: Recording, ws: Workspace) -> list[RunSpec]:
    return [s for s in recording.specs if s.copy_in[0].source == ws.base_dir]


def test_a_later_job_on_the_same_base_reuses_its_clean_base_runs(gate: Gate, tmp_path: Path) -> None:
    hidden = gate.suite("hidden", HIDDEN)
    runs = BaseRuns(tmp_path / "base-runs", "octo/calc at the base sha")
    first, second = Recording(gate.sandbox), Recording(gate.sandbox)
    wrong = gate.change({"calc/__init__.py": WRONG})
    before = gate.run(wrong, hidden, runner=first, base_runs=runs)
    # pytest and cases: base once and head twice each, and base's in-process collection of the pytest
    # part; those three base runs were clean and are kept. And base in-process for the pytest tests
    # failing isolated on base and head (tier.py), never kept: its tests are chosen by a head's runs.
    assert (len(first.specs), len(base_specs(first, wrong))) == (8, 4)
    assert len(list((tmp_path / "base-runs").glob("*.json"))) == 3
    assert BASE_REUSED not in before.suites[0].detail

    right = gate.change({"calc/__init__.py": RIGHT}, name="repo2")
    after = gate.run(right, hidden, runner=second, base_runs=runs)
    assert (len(second.specs), base_specs(second, right)) == (4, [])
    assert BASE_REUSED in after.suites[0].detail
    assert (before.suites[0].base_reused, after.suites[0].base_reused) == (False, True)  # for /metrics
    # The same verdict, the same transitions as with base run afresh.
    fresh = gate.run(gate.change({"calc/__init__.py": RIGHT}, name="repo3"), hidden)
    figures = ("status", "regressions", "fail_to_pass", "fail_to_pass_total", "pass_to_pass")
    assert [getattr(after, f) for f in figures] == [getattr(fresh, f) for f in figures]
    assert (after.suites[0].passed, after.suites[0].total) == (fresh.suites[0].passed, 6)
    assert (before.suites[0].passed, before.fail_to_pass_total) == (
        WRONG_NUMBERS[0],
        fresh.fail_to_pass_total,
    )


def test_an_in_process_suites_base_runs_are_reused_too(gate: Gate, tmp_path: Path) -> None:
    # Its report goes to a path of its own per run: the reused run is read from the one it wrote.
    suite = gate.suite("hidden", {**HIDDEN, "patchgate-suite.yml": "isolation: in-process\n"})
    runs = BaseRuns(tmp_path / "base-runs", "salt")
    first = gate.run(gate.change({"calc/__init__.py": WRONG}), suite, base_runs=runs)
    recording = Recording(gate.sandbox)
    ws = gate.change({"calc/__init__.py": RIGHT}, name="repo2")
    second = gate.run(ws, suite, runner=recording, base_runs=runs)
    assert base_specs(recording, ws) == []
    assert BASE_REUSED in second.suites[0].detail
    assert (second.status, second.fail_to_pass_total, second.suites[0].passed) == ("passed", 5, 6)
    assert (first.suites[0].passed, first.fail_to_pass_total) == (WRONG_NUMBERS[0], 5)


def test_without_the_images_id_every_base_run_runs_and_none_is_kept(gate: Gate, tmp_path: Path) -> None:
    def gone(tag: str) -> str:
        raise ImageMissing(tag, "patchgate image build")

    runs = BaseRuns(tmp_path / "base-runs", "salt", identify=gone)
    recording = Recording(gate.sandbox)
    ws = gate.change({"calc/__init__.py": RIGHT})
    assert gate.run(ws, gate.suite("hidden", HIDDEN), runner=recording, base_runs=runs).status == "passed"
    assert len(base_specs(recording, ws)) == 3  # pytest, cases, pytest's collection in-process
    assert not (tmp_path / "base-runs").exists()


def test_a_head_that_adds_a_module_gets_base_runs_of_its_own(gate: Gate, tmp_path: Path) -> None:
    # The grader imports the trees' top-level modules as proxies: a new one changes what base runs.
    hidden = gate.suite("hidden", HIDDEN)
    runs = BaseRuns(tmp_path / "base-runs", "octo/calc at the base sha")
    gate.run(gate.change({"calc/__init__.py": RIGHT}), hidden, base_runs=runs)
    recording = Recording(gate.sandbox)
    ws = gate.change({"calc/__init__.py": RIGHT, "json.py": "raise SystemExit(0)\n"}, name="repo2")
    result = gate.run(ws, hidden, runner=recording, base_runs=runs)
    assert len(base_specs(recording, ws)) == 3
    assert BASE_REUSED not in result.suites[0].detail
    assert result.status == "passed"
