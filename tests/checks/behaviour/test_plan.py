from __future__ import annotations

import json
import stat
from pathlib import Path

from checks.behaviour.owners import module_names
from checks.behaviour.plan import (
    CONTAINER_HARNESS,
    CONTAINER_REPO,
    CONTAINER_SUITE,
    GRADER_PLAN,
    GRADER_REPORT,
    GRADER_SUITE,
    Staging,
    parts,
    plan_runs,
    stage_suite,
    write_harness,
)
from checks.behaviour.suites import load_suite
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


def test_harness_holds_our_package_and_no_suite_data(tmp_path: Path) -> None:
    harness = write_harness(tmp_path / "harness", Behaviour(timeout_s=20))
    assert sorted(p.name for p in harness.iterdir()) == ["launch.py", "patchgate_harness", "pytest.ini"]
    package = harness / "patchgate_harness"
    assert {
        "subject/main.py",
        "grader/bridge.py",
        "channel/codec.py",
        "grader/cases_runner.py",
        "grader/pytest_runner.py",
        "channel/protocol.py",
    } <= {str(p.relative_to(package)) for p in package.rglob("*.py")}
    assert not list(package.rglob("__pycache__")) and not (package / "launch.py").exists()
    assert "timeout = 20\n" in (harness / "pytest.ini").read_text()
    for path in [harness, *harness.rglob("*")]:
        assert path.stat().st_mode & stat.S_IROTH, path


def test_staged_suite_is_a_private_snapshot(tmp_path: Path) -> None:
    suite = load_suite(suite_dir(tmp_path), "hidden")
    staged = stage_suite(suite, tmp_path / "staged")
    assert sorted(p.name for p in staged.iterdir()) == ["a.cases.yml", "test_a.py"]
    (suite.root / "test_a.py").write_text("changed later")
    assert (staged / "test_a.py").read_text() == "def test_a():\n    pass\n"


def test_module_names_are_the_trees_top_level_importables(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "single.py").write_text("")
    (tmp_path / "src/inner").mkdir(parents=True)
    (tmp_path / "not-a-name").mkdir()
    (tmp_path / "README.md").write_text("")
    assert module_names(tmp_path) == ["inner", "pkg", "single", "src"]


def test_every_run_has_a_grader_with_private_files_and_a_subject(tmp_path: Path) -> None:
    suite = load_suite(suite_dir(tmp_path), "hidden")
    base, head = tmp_path / "base", tmp_path / "head"
    (base / "calc").mkdir(parents=True)
    (head / "src/calc").mkdir(parents=True)
    harness, staged = tmp_path / "harness", tmp_path / "staged"
    policy = Behaviour(timeout_s=30, memory_mb=512, import_timeout_s=7)
    assert parts(suite) == ("pytest", "cases")
    lines = {"calc/__init__.py": [1, 2]}
    staging = Staging(suite=suite, image="img", harness=harness, staged=staged, work=tmp_path, policy=policy,
                      messages=True, modules=tuple(module_names(base, head)), lines=lines)  # fmt: skip
    for part in ("pytest", "cases"):
        plans = plan_runs(staging, part, {"base": base, "head": head})
        assert [(p.label, p.tree) for p in plans] == [
            ("base", "base"),
            ("head 1", "head"),
            ("head 2", "head"),
        ]
        assert len({p.nonce for p in plans}) == 3
        for plan in plans:
            spec, grader = plan.spec, plan.spec.grader
            assert grader is not None
            assert [(m.source, m.target) for m in spec.mounts] == [(harness, CONTAINER_HARNESS)]
            assert [(m.source, m.target) for m in spec.copy_in] == [
                (base if plan.tree == "base" else head, CONTAINER_REPO)
            ]
            assert spec.argv == (
                "python3",
                "-P",
                "-s",
                "-B",
                "/patchgate/launch.py",
                "subject",
                "/run/patchgate-rpc/grader.sock",
                CONTAINER_REPO,
            )
            assert (spec.limits.timeout_s, spec.limits.memory_mb) == (30, 512)
            # Both sides hash strings alike (one seed per run, a fresh one each run).
            assert spec.env["PYTHONHASHSEED"] == grader.env["PYTHONHASHSEED"]
            assert grader.collect == (GRADER_REPORT,) and plan.report == GRADER_REPORT
            private = dict((m.target, m.source) for m in grader.private)
            assert private[GRADER_SUITE] == staged
            data = json.loads(private[GRADER_PLAN].read_text())
            assert data["nonce"] == plan.nonce
            # Head runs of a hidden suite trace the change's lines; base runs do not.
            assert data.get("lines") == (lines if plan.tree == "head" else None)
            if part == "cases":
                # Calls go to the subject one at a time; the expectation never leaves the host.
                assert data["cases"][0]["call"] == "f()"
                assert "5400" not in json.dumps(data) and "timedelta" not in json.dumps(data)
            else:
                assert data["modules"] == ["calc", "src"] and data["import_budget_s"] == 7
                assert data["messages"] is (plan.tree == "head")
                argv = " ".join(grader.argv)
                launch = "python3 -P -s -B /patchgate/launch.py pytest /grader/plan.json"
                assert argv.startswith(f"{launch} -- -c /patchgate/pytest.ini")
                for option in (
                    "--rootdir /grader/suite",
                    "--confcutdir /grader/suite",
                    "-p no:cacheprovider",
                    "-p pytest_timeout",
                ):
                    assert option in argv
                assert "pythonpath" not in argv


def test_a_mutant_overlay_reaches_both_kinds_of_run(tmp_path: Path) -> None:
    from checks.behaviour.plan import plan_one
    from sandbox.spec import Mount

    root = suite_dir(tmp_path)
    overlay = (Mount(tmp_path / "module.py", f"{CONTAINER_REPO}/calc/__init__.py"),)
    for in_process in (False, True):
        if in_process:
            (root / "patchgate-suite.yml").write_text("isolation: in-process\n")
        suite = load_suite(root, "hidden")
        assert suite.in_process is in_process
        staging = Staging(suite=suite, image="img", harness=tmp_path, staged=tmp_path, work=tmp_path,
                          policy=Behaviour(), messages=False)  # fmt: skip
        plan = plan_one(staging, "pytest", "mutant 1", "head", tmp_path, overlay=overlay, timeout_s=30)
        # In-process, the suite is copied in too (writable, as bare pytest has it), before the overlay.
        suite_copy = (Mount(tmp_path, CONTAINER_SUITE),) if in_process else ()
        assert plan.spec.copy_in == (Mount(tmp_path, CONTAINER_REPO), *suite_copy, *overlay)
        assert plan.spec.limits.timeout_s == 30


def test_a_held_out_suite_s_runs_trace_nothing_and_the_grader_knows_the_suite_s_names(tmp_path: Path) -> None:
    # Coverage is the subject's own report: a held-out run publishes nothing the subject measures.
    root = suite_dir(tmp_path)
    (root / "helpers.py").write_text("X = 1\n")
    lines = {"calc/__init__.py": [1, 2]}
    for kind, traced in (("hidden", lines), ("held_out", None)):
        suite = load_suite(root, kind)  # type: ignore[arg-type]
        assert suite.names == ("helpers", "test_a")
        staging = Staging(suite=suite, image="img", harness=tmp_path / f"h-{kind}", staged=root,
                          work=tmp_path, policy=Behaviour(), messages=False, modules=("calc",),
                          lines=lines)  # fmt: skip
        for plan in plan_runs(staging, "pytest", {"base": tmp_path, "head": tmp_path}):
            assert plan.spec.grader is not None
            data = json.loads(
                dict((m.target, m.source) for m in plan.spec.grader.private)[GRADER_PLAN].read_text()
            )
            assert data.get("lines") == (traced if plan.tree == "head" else None)
            assert (data["suite_names"], data["modules"]) == (["helpers", "test_a"], ["calc"])
