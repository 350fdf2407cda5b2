"""`patchgate demo`, the README's main job: each example's agent PRs, each its expected conclusion."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.docker
def test_demo_gates_every_example_pr(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "demo", "--database", f"sqlite:///{db}", "--progress"],
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.split("=== summary ===")[1]
    # The four PRs compete for issue #1: ranked by execution, held-out first.
    best = done.stdout.split("=== best of 4 ===")[1].split("=== summary ===")[0]
    rows = [line for line in best.splitlines() if "agent/parse-duration" in line]
    assert [line.split("│")[1].strip() for line in rows] == ["1", "2", "3", "4"], best
    assert [line.split("│")[2].strip() for line in rows] == [
        "agent/parse-duration",
        "agent/parse-duration-scann…",  # every test passes; the efficiency check does not
        "agent/parse-duration-regex",  # held-out 7/14
        "agent/parse-duration-green",  # held-out 6/14
    ]
    passing = "1 of 4 candidates pass · pass@1 25%, pass@2 50%, pass@3 75%, pass@4 100%"
    assert passing in " ".join(best.split())
    for branch in ("agent/parse-duration ", "agent/parse-duration-regex", "agent/parse-duration-green",
                   "agent/parse-duration-scanner"):  # fmt: skip
        assert f"✓ {branch}" in summary
    # Day one: no test store; the repository's own tests from base, and the change's own tests.
    for branch in ("agent/kelvin", "agent/round-results", "agent/round-results-tests"):
        assert f"✓ {branch} " in summary, summary
    dayone = " ".join(done.stdout.split("##### example dayone #####")[1].split())  # the table wraps lines
    assert "the change's own tests (written by its author) 3/3 (100%)" in dayone
    assert "1 test the change did not touch fails on head" in dayone
    assert "the change rewrote 1 repository test whose base version fails on head" in dayone
    assert "best of" not in dayone  # its PRs close different issues: nothing to rank
    assert "hidden 21/21 (100%)" in done.stdout
    assert "expected ValueError to be raised, got datetime.timedelta(0)" in done.stdout
    # The plausible regex PR: a minimal counterexample; the quadratic one: its growth.
    text = " ".join(done.stdout.split())
    assert "head returned datetime.timedelta(0) for parse_duration(''); reference raised ValueError" in text
    scanner = text.split("=== agent/parse-duration-scanner")[1]
    assert "differential (hidden) 1/1 functions agree in 2,000 inputs · efficiency 0/1 within" in scanner
    assert "slower than the reference at the largest size" in scanner
    # Progress, per PR, on stderr only: the reports are stdout.
    finished = [line for line in done.stderr.splitlines() if line.startswith("patchgate: finished: ")]
    assert [line.split()[2] for line in finished] == [
        "success", "failure", "failure", "failure", "success", "failure", "action_required",
    ], done.stderr[-2000:]  # fmt: skip
    assert "patchgate: shape " in done.stderr
    assert "patchgate: " not in done.stdout.replace("patchgate demo", "")
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT conclusion FROM runs ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [
        "success", "failure", "failure", "failure", "success", "failure", "action_required",
    ]  # fmt: skip
