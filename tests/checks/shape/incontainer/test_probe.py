"""The in-container probe, run on the host's python3 against test-made trees (our own code, not a PR's).

The same probe runs in the sandbox in the Docker tests; here its edge cases
(modules that exit, kill their interpreter, hang, print) are checked fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from checks.shape.incontainer import probe
from sandbox.host import run_process

PROBE = Path(probe.__file__)


def run(tmp_path: Path, plan: dict[str, Any], timeout: float = 120) -> dict[str, Any]:
    plan = {**plan, "scratch": str(tmp_path / "scratch")}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    result = run_process((sys.executable, "-I", str(PROBE), str(path)), timeout=timeout, check=True)
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    return root


def item(tree: Path, path: str, module: str | None, base: dict[str, Any] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"path": path, "tree": str(tree), "module": module, "root": str(tree)}
    if base is not None:
        entry["base"] = base
    return entry


HEAD: dict[str, str | bytes] = {
    "pkg/__init__.py": "",
    "pkg/ok.py": "import json\n\nVALUE = json.dumps([1])\n",
    "pkg/noisy.py": 'print("{not json")\nimport sys\nsys.stderr.write("x" * 100000)\n',
    "pkg/exits.py": "import sys\n\nsys.exit(3)\n",
    "pkg/hard.py": "import os\n\nos._exit(0)\n",
    "pkg/killed.py": "import os, signal\n\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "pkg/hang.py": "import subprocess, time\n\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)\n",
    "pkg/name.py": "def helper():\n    return 1\n\nVALUE = helpr()\n",
    "pkg/missing.py": "from pkg.ok import nothing_here\n",
    "pkg/threads.py": "import threading, time\n\nthreading.Thread(target=time.sleep, args=(60,)).start()\n",
    "pkg/syntax.py": "def f(:\n    pass\n",
    "pkg/nul.py": b"X = 1\n\x00\n",
    "pkg/latin.py": b"NAME = '\xff caf\xe9'\n",
    "scripts/tool.py": "import sys\nsys.exit(1)\n",
}


@pytest.fixture(scope="module")
def loads_result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = tmp_path_factory.mktemp("probe")
    head = write(root / "head", HEAD)
    base = write(
        root / "base",
        {"pkg/__init__.py": "", "pkg/name.py": "def helper():\n    return 1\n\nVALUE = helpr()\n"},
    )
    items = [item(head, p, p[:-3].replace("/", ".")) for p in HEAD if p.startswith("pkg/")]
    items = [
        i if i["path"] != "pkg/name.py" else {**i, "base": item(base, "pkg/name.py", "pkg.name")}
        for i in items
    ]
    items.append(item(head, "scripts/tool.py", None))
    plan = {"mode": "loads", "items": items, "import_timeout": 3, "deadline": 100, "jobs": 2}
    out = run(root, plan)
    assert out["not_examined"] == []
    return {f"{r['side']}:{r['path']}": r for r in out["records"]}


@pytest.mark.parametrize(
    ("path", "kind", "line", "message"),
    [
        ("pkg/ok.py", "ok", 0, ""),
        ("pkg/noisy.py", "ok", 0, ""),
        ("pkg/__init__.py", "ok", 0, ""),
        ("pkg/exits.py", "exit", 3, "SystemExit(3)"),
        ("pkg/hard.py", "crash", 0, "exit code 0"),
        ("pkg/killed.py", "crash", 0, "exit code -9"),
        ("pkg/hang.py", "timeout", 0, "did not finish in 3 s"),
        ("pkg/threads.py", "ok", 0, ""),
        ("pkg/name.py", "import", 4, "NameError: name 'helpr' is not defined"),
        ("pkg/missing.py", "import", 1, "ImportError: cannot import name 'nothing_here'"),
        ("pkg/syntax.py", "syntax", 1, "SyntaxError"),
        ("pkg/nul.py", "syntax", 1, "null bytes"),
        ("pkg/latin.py", "syntax", 1, "utf-8"),
        # Not importable (a script): compiled only, never run.
        ("scripts/tool.py", "ok", 0, ""),
    ],
)
def test_loads_records(
    loads_result: dict[str, dict[str, Any]], path: str, kind: str, line: int, message: str
) -> None:
    record = loads_result[f"head:{path}"]
    assert (record["kind"], record["line"]) == (kind, line), record
    assert message in record["message"]


def test_a_failure_is_tried_at_base_too(loads_result: dict[str, dict[str, Any]]) -> None:
    assert loads_result["base:pkg/name.py"]["kind"] == "import"
    # Only failing files with a base counterpart are tried there.
    assert [k for k in loads_result if k.startswith("base:")] == ["base:pkg/name.py"]


def test_messages_do_not_carry_the_tree_path(loads_result: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    message = loads_result["head:pkg/missing.py"]["message"]
    assert "(pkg/ok.py)" in message
    assert "/head/" not in message


def test_nothing_starts_after_the_deadline(tmp_path: Path) -> None:
    head = write(tmp_path / "head", {"a.py": "X = 1\n"})
    plan = {
        "mode": "loads",
        "items": [item(head, "a.py", "a")],
        "import_timeout": 3,
        "deadline": -1,
        "jobs": 1,
    }
    out = run(tmp_path, plan)
    assert out == {"records": [], "not_examined": ["a.py"]}


def step(name: str, argv: list[str], files: list[str], **more: Any) -> dict[str, Any]:
    return {"name": name, "argv": argv, "cwd": "/", "files": files, "timeout": 30, **more}


COUNT_ARGS = [sys.executable, "-c", "import sys; print(len(sys.argv) - 1)"]


def test_long_file_lists_are_split_into_batches(tmp_path: Path) -> None:
    files = [f"dir/{'x' * 40}_{i:05}.py" for i in range(100)]
    out = run(tmp_path, {"mode": "batch", "steps": [step("s", COUNT_ARGS, files, max_chars=1000)]})
    batches = out["steps"]["s"]
    assert len(batches) > 1
    assert sum(int(b["stdout"]) for b in batches) == 100
    assert all(b["exit_code"] == 0 and not b["timed_out"] for b in batches)


def test_an_argfile_carries_every_file_in_one_invocation(tmp_path: Path) -> None:
    files = [f"f{i}.py" for i in range(5000)]
    read = [sys.executable, "-c", "import sys; print(len(open(sys.argv[1][1:]).read().split()))"]
    out = run(tmp_path, {"mode": "batch", "steps": [step("s", read, files, argfile=True)]})
    assert [b["stdout"].strip() for b in out["steps"]["s"]] == ["5000"]


def test_files_that_do_not_compile_can_be_left_out(tmp_path: Path) -> None:
    tree = write(tmp_path / "t", {"good.py": "X = 1\n", "bad.py": "def (:\n"})
    names = [sys.executable, "-c", "import sys; print(' '.join(sys.argv[1:]))"]
    plan = {"mode": "batch", "steps": [{**step("s", names, ["good.py", "bad.py"]), "cwd": str(tree),
                                        "compilable_only": True}]}  # fmt: skip
    out = run(tmp_path, plan)
    assert out["steps"]["s"][0]["stdout"].strip() == "good.py"
    only_bad = {
        "mode": "batch",
        "steps": [{**step("s", names, ["bad.py"]), "cwd": str(tree), "compilable_only": True}],
    }
    assert run(tmp_path, only_bad)["steps"]["s"] == []


def test_a_tool_that_hangs_or_is_missing_is_reported_not_fatal(tmp_path: Path) -> None:
    plan = {
        "mode": "batch",
        "steps": [
            step("hang", [sys.executable, "-c", "import time; time.sleep(30)"], ["a.py"], timeout=0.5),
            step("missing", ["no-such-tool-patchgate"], ["a.py"]),
            step(
                "fails", [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(2)"], ["a.py"]
            ),
        ],
    }
    out = run(tmp_path, plan)["steps"]
    assert out["hang"][0]["timed_out"] is True
    assert out["missing"][0]["exit_code"] == 127
    assert (out["fails"][0]["exit_code"], out["fails"][0]["stderr"]) == (2, "boom")
