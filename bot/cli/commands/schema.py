"""`patchgate schema`: print the published JSON Schemas (report, policy, rubric)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("which", choices=("report", "policy", "rubric"))


def schema(which: str) -> dict[str, Any]:
    """Return the JSON Schema named ``which``."""
    if which == "report":
        from checks.report import Report

        return Report.model_json_schema()
    if which == "policy":
        from checks.policy import Policy

        return Policy.model_json_schema()
    from checks.quality import rubric_schema

    result: dict[str, Any] = rubric_schema()
    return result


def command(args: argparse.Namespace) -> int:
    print(json.dumps(schema(args.which), indent=2, sort_keys=True))
    return 0
