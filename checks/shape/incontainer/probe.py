"""The shape layer's driver inside the sandbox: runs tools in batches, compiles and imports modules.

It runs under the container's own python3 and uses the standard library only;
patchgate mounts it read-only and passes one JSON plan. Everything it learns
goes to stdout as one JSON document; the host treats that document as hostile
input (the PR's code runs in the import subprocesses started here).

Plans:
- ``{"mode": "batch", "steps": [...]}``: run each step's argv over its file
  list, split into batches that fit a command line (or through an ``@file``
  when the tool reads one), each batch with a timeout;
- ``{"mode": "loads", "items": [...]}``: compile every file and import every
  importable module, each import in its own process with a timeout, so a
  module that exits, kills its interpreter or hangs affects nothing else.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import warnings
from typing import Any

OUTPUT_CAP = 32 * 1024 * 1024
STDERR_TAIL = 4000
SCRATCH = "/tmp/patchgate-probe"  # noqa: S108 - the container's private tmpfs

# Runs in a fresh `python3 -I -B` per module: argv is root, module, file, result path.
IMPORT_SNIPPET = r"""
import importlib, json, os, sys, traceback
root, name, target, out, strip = sys.argv[1:6]
sys.argv = [target]
sys.path.insert(0, root)

def where(exc):
    line = 0
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == target:
            line = frame.lineno or 0
    return line

def text(exc):
    try:
        return f"{type(exc).__name__}: {exc}".replace(strip, "")[:1000]
    except BaseException:
        return type(exc).__name__

def report(kind, line, message):
    with open(out, "w", encoding="utf-8") as fh:
        json.dump({"kind": kind, "line": line, "message": message}, fh)

try:
    importlib.import_module(name)
except SystemExit as exc:
    report("exit", where(exc), f"the module exits the interpreter when imported (SystemExit({exc.code!r}))")
except BaseException as exc:
    report("import", where(exc), text(exc))
else:
    report("ok", 0, "")
# Threads or atexit hooks the module left must not hold the process open.
os._exit(0)
"""


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _run(argv: list[str], cwd: str, env: dict[str, str], timeout: float) -> dict[str, Any]:
    """Run one batch; the tool's output is returned as text, its stderr as a tail."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        return {"exit_code": 127, "timed_out": False, "stdout": "", "stderr": str(exc), "seconds": 0.0}
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        out, err = proc.communicate()
    finally:
        _kill_group(proc)
    return {
        "exit_code": proc.returncode,
        "timed_out": timed_out,
        "truncated": len(out) > OUTPUT_CAP,
        "stdout": out[:OUTPUT_CAP].decode("utf-8", "replace"),
        "stderr": err[-STDERR_TAIL:].decode("utf-8", "replace"),
        "seconds": round(time.monotonic() - start, 3),
    }


def _batches(files: list[str], max_chars: int) -> list[list[str]]:
    batches: list[list[str]] = []
    current: list[str] = []
    size = 0
    for name in files:
        if current and size + len(name) + 1 > max_chars:
            batches.append(current)
            current, size = [], 0
        current.append(name)
        size += len(name) + 1
    if current:
        batches.append(current)
    return batches


def unpack(archive: str, into: str) -> None:
    """Unpack a tool's cache the host kept (a tarball it copied in); a broken one is no cache at all."""
    if not os.path.isfile(archive):
        return
    try:
        with tarfile.open(archive) as tar:
            # Regular files and folders inside ``into`` only (this Python predates tarfile's filters).
            members = [
                m for m in tar.getmembers()
                if (m.isreg() or m.isdir()) and not os.path.isabs(m.name) and ".." not in m.name.split("/")
            ]  # fmt: skip
            tar.extractall(into, members=members)  # noqa: S202 - members checked above
    except (OSError, tarfile.TarError):
        shutil.rmtree(into, ignore_errors=True)


def pack(folder: str, archive: str, max_bytes: int) -> None:
    """Write ``folder`` to ``archive`` for the host to collect, unless it holds more than ``max_bytes``."""
    total = 0
    for root, _, names in os.walk(folder):
        total += sum(os.path.getsize(os.path.join(root, n)) for n in names)
    if total == 0 or total > max_bytes:
        return
    os.makedirs(os.path.dirname(archive), exist_ok=True)
    with tarfile.open(archive, "w") as tar:
        tar.add(folder, arcname=".")


def run_batches(plan: dict[str, Any]) -> dict[str, Any]:
    """Run every step of a batch plan and return their outputs by step name.

    ``unpack`` (archive, folder) pairs are unpacked first; ``pack`` (folder, archive,
    max_bytes) is written last: a tool's cache in and out.
    """
    scratch = plan.get("scratch", SCRATCH)
    os.makedirs(scratch, exist_ok=True)
    for archive, into in plan.get("unpack", []):
        unpack(archive, into)
    results: dict[str, Any] = {}
    for step in plan["steps"]:
        env = {**os.environ, **step.get("env", {})}
        files: list[str] = step["files"]
        if step.get("compilable_only"):
            # One file that does not parse stops mypy from checking any; loads reports it.
            files = [f for f in files if compile_file(os.path.join(step["cwd"], f), f) is None]
        if not files:
            results[step["name"]] = []
            continue
        if step.get("argfile"):
            # The tool reads its arguments from a file: one invocation, any number of files.
            argfile = os.path.join(scratch, f"{step['name']}.args")
            with open(argfile, "w", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write("".join(f"{name}\n" for name in files))
            groups = [[f"@{argfile}"]]
        else:
            groups = _batches(files, int(step.get("max_chars", 100_000)))
        results[step["name"]] = [
            _run([*step["argv"], *group], step["cwd"], env, float(step["timeout"])) for group in groups
        ]
    if "pack" in plan:
        folder, archive, max_bytes = plan["pack"]
        pack(folder, archive, int(max_bytes))
    return {"steps": results}


def compile_file(path: str, display: str) -> tuple[int, str] | None:
    """Compile one file; return (line, message) when it does not compile."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return 1, f"cannot read the file: {exc.strerror}"
    try:
        compile(data, display, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return max(exc.lineno or 1, 1), f"{type(exc).__name__}: {exc.msg}"
    except (ValueError, MemoryError, RecursionError, OverflowError) as exc:
        return 1, f"{type(exc).__name__}: {exc}"
    return None


def import_module(entry: dict[str, Any], key: str, timeout: float, scratch: str = SCRATCH) -> dict[str, Any]:
    """Import one module in a fresh interpreter and say how that went."""
    result_path = os.path.join(scratch, f"{key}.json")
    err_path = os.path.join(scratch, f"{key}.err")
    target = os.path.join(entry["tree"], entry["path"])
    strip = entry["tree"].rstrip("/") + "/"
    argv = [sys.executable, "-I", "-B", "-c", IMPORT_SNIPPET, entry["root"], entry["module"], target,
            result_path, strip]  # fmt: skip
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            argv, cwd=entry["tree"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=err, start_new_session=True,
        )  # fmt: skip
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.wait()
            message = f"importing the module did not finish in {timeout:g} s"
            return {"kind": "timeout", "line": 0, "message": message}
        finally:
            _kill_group(proc)
    try:
        with open(result_path, encoding="utf-8") as fh:
            found: dict[str, Any] = json.load(fh)
    except (OSError, ValueError):
        with open(err_path, "rb") as fh:
            fh.seek(max(os.path.getsize(err_path) - 500, 0))
            tail = fh.read().decode("utf-8", "replace").strip().replace(strip, "")
        detail = f": {tail}" if tail else ""
        message = f"the interpreter ended (exit code {proc.returncode}) while importing the module{detail}"
        return {"kind": "crash", "line": 0, "message": message}
    if proc.returncode != 0 and found.get("kind") == "ok":
        return {"kind": "crash", "line": 0, "message": f"the interpreter exited with code {proc.returncode}"}
    return found


def _examine(entry: dict[str, Any], side: str, key: str, timeout: float, scratch: str) -> dict[str, Any]:
    failed = compile_file(os.path.join(entry["tree"], entry["path"]), entry["path"])
    if failed is not None:
        line, message = failed
        return {"side": side, "path": entry["path"], "kind": "syntax", "line": line, "message": message}
    if not entry.get("module"):
        return {"side": side, "path": entry["path"], "kind": "ok", "line": 0, "message": ""}
    return {"side": side, "path": entry["path"], **import_module(entry, key, timeout, scratch)}


def check_item(item: dict[str, Any], index: int, timeout: float, scratch: str) -> list[dict[str, Any]]:
    """Examine one changed file at head; a failure is examined at base too, to tell if it is new."""
    head = _examine(item, "head", f"{index}-head", timeout, scratch)
    records = [head]
    base = item.get("base")
    if head["kind"] != "ok" and base is not None:
        records.append(_examine(base, "base", f"{index}-base", timeout, scratch))
    return records


def run_loads(plan: dict[str, Any]) -> dict[str, Any]:
    """Compile and import every item of a loads plan, ``jobs`` at a time, until the deadline."""
    scratch = plan.get("scratch", SCRATCH)
    os.makedirs(scratch, exist_ok=True)
    deadline = time.monotonic() + float(plan["deadline"])
    timeout = float(plan["import_timeout"])
    records: list[dict[str, Any]] = []
    skipped: list[str] = []

    def work(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
        if time.monotonic() > deadline:
            skipped.append(item["path"])
            return []
        return check_item(item, index, timeout, scratch)

    with concurrent.futures.ThreadPoolExecutor(max_workers=int(plan.get("jobs", 2))) as pool:
        for found in pool.map(work, range(len(plan["items"])), plan["items"]):
            records.extend(found)
    return {"records": records, "not_examined": sorted(skipped)}


def main() -> int:
    # Compiling old code warns (invalid escapes, ...): noise, not findings.
    warnings.simplefilter("ignore")
    with open(sys.argv[1], encoding="utf-8") as fh:
        plan = json.load(fh)
    result = run_loads(plan) if plan["mode"] == "loads" else run_batches(plan)
    sys.stdout.write(json.dumps(result))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
