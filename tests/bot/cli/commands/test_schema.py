from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest
import yaml

from checks.policy import Policy
from rubrics import RUBRIC_DIR


def schema(which: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "schema", which], capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("which", ["report", "policy", "rubric"])
def test_schemas_are_valid_json_schema(which: str) -> None:
    jsonschema.Draft202012Validator.check_schema(schema(which))


def test_report_schema_names_the_public_keys() -> None:
    props = schema("report")["properties"]
    assert isinstance(props, dict)
    assert {"conclusion", "reasons", "shape", "behaviour", "quality", "timings", "version"} <= set(props)


@pytest.mark.slow
def test_default_policy_and_bundled_rubrics_validate() -> None:
    jsonschema.validate(Policy().model_dump(mode="json"), schema("policy"))
    rubric = schema("rubric")
    for path in sorted(RUBRIC_DIR.glob("*.yml")):
        jsonschema.validate(yaml.safe_load(path.read_text()), rubric)
