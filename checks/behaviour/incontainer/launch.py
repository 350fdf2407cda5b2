"""Start one in-container role: ``python3 -P -s -B /patchgate/launch.py ROLE ARGS...``.

``-P`` keeps the script's own directory off ``sys.path``; the harness package
is put there by name, so no module of the repository can stand in for it.
"""

from __future__ import annotations

import importlib
import os
import sys

if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    roles = {
        "subject": "subject.main",
        "cases": "grader.cases_runner",
        "differential": "grader.differential",
        "pytest": "grader.pytest_runner",
        "pytest-in-process": "grader.inprocess",
    }
    role, args = sys.argv[1], sys.argv[2:]
    if role not in roles:
        sys.exit(f"unknown role {role!r}")
    module = importlib.import_module(f"patchgate_harness.{roles[role]}")
    sys.exit(module.main(args))
