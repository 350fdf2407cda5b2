"""The recorder's per-test figures: each test's own share of the grader's messages to the subject."""

from __future__ import annotations

import json
import os
from pathlib import Path

from checks.behaviour.incontainer.grader.recorder import Recorder


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _run(recorder: Recorder, test_id: str, sends: list[int], count: int) -> None:
    recorder.pytest_runtest_logstart(test_id)
    sends[0] += count  # what the test's own calls into the change sent
    recorder.pytest_runtest_logfinish(test_id)


def test_a_test_s_messages_are_those_sent_between_its_start_and_its_end(tmp_path: Path) -> None:
    path = tmp_path / "report.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        recorder = Recorder(fd, messages=False)
        sends = [7]  # the imports' messages, before any test
        recorder.exchanges = lambda: sends[0]
        _run(recorder, "t.py::a", sends, 120)
        _run(recorder, "t.py::b", sends, 0)
    finally:
        os.close(fd)
    tests = {r["id"]: r for r in _records(path) if r["kind"] == "test"}
    assert (tests["t.py::a"]["messages"], tests["t.py::b"]["messages"]) == (120, 0)


def test_in_process_no_count_is_written(tmp_path: Path) -> None:
    path = tmp_path / "report.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        _run(Recorder(fd, messages=False), "t.py::a", [0], 3)
    finally:
        os.close(fd)
    (test,) = [r for r in _records(path) if r["kind"] == "test"]
    assert "messages" not in test
