"""What goes wrong with a suite itself: a gate configuration problem, never a PR failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class SuiteError(Exception):
    """A suite cannot run as written (syntax error, bad case file, no tests, missing dependency).

    The message names the suite file. It is shown for hidden suites only;
    for a held-out suite it goes to the server log and the report says less.
    """


class NoTests(SuiteError):
    """A suite folder holds no test a suite's pytest collects and no case (for a repository: none to run)."""


def read_yaml(path: Path, rel: str, max_bytes: int) -> Any:
    """Read a suite's YAML file; raise SuiteError naming it (``rel``) when it is too large or unreadable."""
    if path.stat().st_size > max_bytes:
        raise SuiteError(f"{rel}: larger than {max_bytes} bytes")
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise SuiteError(f"{rel}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise SuiteError(f"{rel}: invalid YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
