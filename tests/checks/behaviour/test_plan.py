# ruff: noqa: E501 - tables of cases read best one case a line
from __future__ import annotations

import json
import stat
from pathlib import Path

from checks.behaviour.plan import (
    CONTAINER_HARNESS,
    CONTAINER_REPO,
    CONTAINER_SUITE,
    parts,
    plan_runs,
    stage_suite,
    write_harness,
)
from checks.behaviour.store import load_suite
from checks.policy import Behaviour

CASES = "module: m\ncases:\n  - {id: one, call: f(), equals: {__type__: timedelta, seconds: 5400}}\n"


def suite_dir(tmp_path: Path) -> Path:
    root = tmp_path / "store/hidden"
    root.mkdir(parents=True)
    (root / "test_a.py").write_text("def test_a():\n    pass\n")
    (root / "a.cases.yml").write_text(CASES)
    (root / "__pycache__").mkdir()
    (root / "__pycache__/junk.pyc").write_bytes(b"x")
    root.chmod(0o700)
    return root


def test_harness_holds_our_scripts_and_a_plan_without_expectations(tmp_path: Path) -> None:
    suite = load_suite(suite_dir(tmp_path), "hidden")
    harness = write_harness(tmp_path / "harness", suite, Behaviour(timeout_s=20))
    assert sorted(p.name for p in harness.iterdir()) == ["case_runner.py", "cases.json", "pytest.ini", "pytest_plugin.py"]
    assert "timeout = 20\n" in (harness / "pytest.ini").read_text()
    assert "timeout_method = signal" in (harness / "pytest.ini").read_text()
    plan = (harness / "cases.json").read_text()
    assert "5400" not in plan and "timedelta" not in plan
    assert json.loads(plan)["cases"][0]["call"] == "f()"
    for path in [harness, *harness.iterdir()]:
        assert path.stat().st_mode & stat.S_IROTH, path


def test_staged_suite_is_a_readable_snapshot(tmp_path: Path) -> None:
    suite = load_suite(suite_dir(tmp_path), "hidden")
    staged = stage_suite(suite, tmp_path / "staged")
    assert sorted(p.name for p in staged.iterdir()) == ["a.cases.yml", "test_a.py"]
    assert staged.stat().st_mode & stat.S_IXOTH
    (suite.root / "test_a.py").write_text("changed later")
    assert (staged / "test_a.py").read_text() == "def test_a():\n    pass\n"


def test_plan_runs_base_once_and_head_twice_with_our_configuration(tmp_path: Path) -> None:
    suite = load_suite(suite_dir(tmp_path), "hidden")
    base, head = tmp_path / "base", tmp_path / "head"
    base.mkdir()
    (head / "src").mkdir(parents=True)
    harness, staged = tmp_path / "harness", tmp_path / "staged"
    policy = Behaviour(timeout_s=30, memory_mb=512)
    assert parts(suite) == ("pytest", "cases")
    plans = plan_runs(
        suite, "pytest", image="img", trees={"base": base, "head": head}, harness=harness, staged=staged,
        policy=policy, messages=True,
    )  # fmt: skip
    assert [(p.label, p.tree) for p in plans] == [("base", "base"), ("head 1", "head"), ("head 2", "head")]
    assert len({p.nonce for p in plans}) == 3 and len({p.report for p in plans}) == 3
    for plan in plans:
        spec = plan.spec
        assert spec.image == "img"
        assert [(m.source, m.target) for m in spec.mounts] == [(harness, CONTAINER_HARNESS), (staged, CONTAINER_SUITE)]
        assert [(m.source, m.target) for m in spec.copy_in] == [(base if plan.tree == "base" else head, CONTAINER_REPO)]
        assert spec.collect == (plan.report,)
        assert plan.report.startswith("/tmp/pg-")
        assert (spec.limits.timeout_s, spec.limits.memory_mb) == (30, 512)
        argv = " ".join(spec.argv)
        assert argv.startswith("python3 -I -B /patchgate/pytest_plugin.py -c /patchgate/pytest.ini")
        for option in ("--rootdir /suite", "--confcutdir /suite", "-p no:cacheprovider", "-p pytest_timeout",
                       "--continue-on-collection-errors"):  # fmt: skip
            assert option in argv
        assert spec.env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] == "1"
        assert spec.env["PATCHGATE_NONCE"] == plan.nonce and spec.env["PATCHGATE_REPORT"] == plan.report
        assert spec.env["PATCHGATE_MESSAGES"] == ("1" if plan.tree == "head" else "0")
        src = "/work/repo /work/repo/src" if plan.tree == "head" else "/work/repo"
        assert f"pythonpath={src}" in spec.argv


def test_case_runs_carry_the_nonce_and_no_expectation(tmp_path: Path) -> None:
    suite = load_suite(suite_dir(tmp_path), "hidden")
    plans = plan_runs(
        suite, "cases", image="img", trees={"base": tmp_path, "head": tmp_path}, harness=tmp_path,
        staged=tmp_path, policy=Behaviour(), messages=False,
    )  # fmt: skip
    for plan in plans:
        assert plan.spec.argv == (
            "python3", "-I", "-B", "/patchgate/case_runner.py", "/patchgate/cases.json", plan.report, plan.nonce,
            "/work/repo",
        )  # fmt: skip
        assert "5400" not in " ".join(plan.spec.argv)
