"""Base runs kept across jobs: a suite's run on the base tree, reused while nothing it saw changed.

A base run's container holds only trusted inputs: the base tree (the
repository at the base sha), the environment image built from it, the
staged suite, patchgate's harness and the grader's plan. The PR's code is
not in it; all the run takes from the head is the list of top-level module
names the grader imports as proxies. So the run is a function of:

- the caller's ``salt``: repository, base sha, the suites' digest, the
  effective policy, patchgate's code and the sandbox (``bot.service.reuse``);
- per run (:func:`run_key`): the environment image (its content id when
  ``identify`` is given: a tag rebuilt with other package versions is
  another image), the suite's kind, the part, the run's label, whether the
  suite runs in-process, and the module names (a head that adds a
  top-level module gets runs of its own).

A kept run is reused for a day at most (``max_age_s``): a suite whose
outcome depends on the date is sampled again.

The key is computed on the host from those alone; no byte the PR's code
wrote enters it, and an entry is only ever written from a base run.

Only a clean run is kept: its report started and finished with this run's
nonce and broke no rule of the protocol, the grader saw the code under test
start and keep answering, no test (or case) timed out, no module failed to
import for any reason other than a module the base does not have, and the
container stayed within every limit. What load can change (a timeout, a
slow import) is never frozen into the store. A reused run is re-read
exactly as a fresh one is (``parse_log`` with the nonce it was written
with), and the suite's report says its base runs were reused.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checks.behaviour.outcomes import Part, RunLog, RunView, parse_log
from checks.hostfiles import evict, keyed, write_whole
from sandbox.spec import RunResult

log = logging.getLogger(__name__)

_VERSION = 1
# A stored run's grader output is only read when its report is missing, which a kept run never is.
_OUTPUT_TAIL = 64 * 1024
# Past this many entries the oldest (by last use) are removed when one is added.
DEFAULT_MAX_ENTRIES = 2000
DEFAULT_MAX_AGE_S = 24 * 3600.0
# The folder's bytes, all entries together; the least recently used go first past it.
DEFAULT_MAX_BYTES = 1024 * 1024 * 1024
# A run whose report is larger than this is not kept (a suite that large pays for its base runs).
MAX_ENTRY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class CachedRun:
    """One stored base run: the nonce and file its report was written with, what the sandbox returned."""

    nonce: str
    report: str
    result: RunResult


def run_key(
    salt: str, *, image: str, kind: str, part: Part, label: str, in_process: bool, modules: tuple[str, ...]
) -> str:
    """Return the key of one base run: the caller's salt and what this run's plan adds to it."""
    fields = [_VERSION, salt, image, kind, part, label, in_process, list(modules)]
    return hashlib.sha256(json.dumps(fields, separators=(",", ":")).encode()).hexdigest()


def keepable(result: RunResult, run_log: RunLog, view: RunView) -> bool:
    """Return True when a base run is clean enough to stand for every later run with its key."""
    if result.timed_out or result.oom_killed or result.output_limit_exceeded or result.limit_hit:
        return False
    if not (run_log.started and run_log.finished) or run_log.problems or run_log.subject_errors:
        return False
    if run_log.unfinished:
        return False
    if any(p.missing_module is None and not p.skipped for p in run_log.collect_problems):
        return False  # a module that did not import for another reason: maybe the import budget
    # The view's outcomes: a case's timeout is known only once the case is judged.
    return not any(o.timed_out or o.kind == "timeout" for o in view.outcomes.values())


@dataclass(frozen=True)
class BaseRuns:
    """Base runs on the host, one JSON file per key under ``root`` (the service's work folder).

    ``read`` False: runs are stored but never reused (an explicit rerun gates afresh and
    refreshes what it finds).
    """

    root: Path
    salt: str
    read: bool = True
    max_entries: int = DEFAULT_MAX_ENTRIES
    max_bytes: int = DEFAULT_MAX_BYTES
    max_age_s: float = DEFAULT_MAX_AGE_S
    # The environment image's content id from its tag (sandbox.images.image_id); None: the tag.
    identify: Callable[[str], str] | None = None

    def key(self, *, image: str, kind: str, part: Part, label: str, in_process: bool,
            modules: tuple[str, ...]) -> str:  # fmt: skip
        """Return one base run's key; raises what ``identify`` raises (the image is gone)."""
        image = self.identify(image) if self.identify is not None else image
        return run_key(self.salt, image=image, kind=kind, part=part, label=label,
                       in_process=in_process, modules=modules)  # fmt: skip

    def get(self, key: str) -> CachedRun | None:
        """Return the run stored under ``key``; None when there is none or it cannot be read."""
        if not self.read:
            return None
        path = self._path(key)
        try:
            data = json.loads(path.read_bytes())
            if not isinstance(data, dict) or data.get("version") != _VERSION or data.get("key") != key:
                return None
            stored_at = data["stored_at"]
            if not isinstance(stored_at, (int, float)) or not 0 <= time.time() - stored_at <= self.max_age_s:
                return None
            found = CachedRun(str(data["nonce"]), str(data["report"]), _result(data["result"]))
            part = _part(data)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("base run %s is unreadable (%s): running it again", key[:12], exc)
            return None
        # Read back as the layer will read it: a report that is not this run's, whole, is not a run.
        stored = parse_log(found.result.files.get(found.report), found.nonce, part)
        if not (stored.started and stored.finished) or stored.problems:
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # last use, for eviction
        return found

    def put(self, key: str, nonce: str, report: str, part: Part, result: RunResult) -> None:
        """Store a clean base run under ``key`` (written whole, then renamed into place)."""
        data = {"version": _VERSION, "key": key, "nonce": nonce, "report": report, "part": part,
                "stored_at": time.time(), "result": _encoded(result)}  # fmt: skip
        text = json.dumps(data)
        if len(text) > min(MAX_ENTRY_BYTES, self.max_bytes):
            return
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self._path(key)
        try:
            write_whole(path, text.encode("utf-8"))
        except OSError as exc:
            log.warning("base run %s not stored: %s", key[:12], exc)
            return
        evict(self.root, "*.json", self.max_entries, self.max_bytes)

    def _path(self, key: str) -> Path:
        return keyed(self.root, key, ".json", "base run key")


def _part(data: dict[str, Any]) -> Part:
    part = data.get("part")
    if part not in ("pytest", "cases"):
        raise ValueError(f"not a part: {part!r}")
    return "pytest" if part == "pytest" else "cases"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _encoded(result: RunResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "stdout": _b64(result.stdout[-_OUTPUT_TAIL:]),
        "stderr": _b64(result.stderr[-_OUTPUT_TAIL:]),
        "wall_s": result.wall_s,
        "peak_memory_bytes": result.peak_memory_bytes,
        "files": {name: _b64(body) for name, body in result.files.items()},
        "subject_output": _b64(result.subject_output[-_OUTPUT_TAIL:]),
        "subject_exit_code": result.subject_exit_code,
    }


def _result(data: dict[str, Any]) -> RunResult:
    def raw(value: object) -> bytes:
        if not isinstance(value, str):
            raise TypeError("not base64 text")
        return base64.b64decode(value, validate=True)

    def number(value: object) -> int | None:
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise TypeError("not an integer")
        return value

    files = data["files"]
    if not isinstance(files, dict):
        raise TypeError("files is not a mapping")
    wall = data["wall_s"]
    if not isinstance(wall, (int, float)) or isinstance(wall, bool):
        raise TypeError("wall_s is not a number")
    return RunResult(
        exit_code=number(data["exit_code"]),
        stdout=raw(data["stdout"]),
        stderr=raw(data["stderr"]),
        wall_s=float(wall),
        peak_memory_bytes=number(data["peak_memory_bytes"]),
        files={str(name): raw(body) for name, body in files.items()},
        subject_output=raw(data["subject_output"]),
        subject_exit_code=number(data["subject_exit_code"]),
    )
