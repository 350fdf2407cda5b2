from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
import yaml

from checks.quality.rubric import RubricError, load_rubric, load_rubrics, parse_rubric, rubric_schema
from rubrics import RUBRIC_DIR

CRITERION: dict[str, object] = {
    "id": "errors",
    "question": "q?",
    "pass": "p",
    "fail": "f",
    "n_a": "n",
    "severity": "blocking",
}


def _with(**changes: object) -> str:
    return yaml.safe_dump({"name": "mini", "criteria": [{**CRITERION, **changes}]})


def test_shipped_rubrics_load_and_cover_their_topics() -> None:
    default, security = load_rubrics(["default", "security"])
    assert [c.id for c in default.criteria] == [
        "error_handling",
        "input_validation",
        "naming_and_idiom",
        "dead_or_duplicated_code",
        "docstring_accuracy",
        "unbounded_resources",
    ]
    assert {c.severity for c in default.criteria} == {"blocking", "advisory"}
    assert len(security.criteria) >= 5
    assert {"injection", "path_traversal", "secrets_handling"} <= {c.id for c in security.criteria}


@pytest.mark.parametrize("path", sorted(RUBRIC_DIR.glob("*.yml")), ids=lambda p: p.name)
def test_shipped_rubrics_match_the_published_schema(path: Path) -> None:
    jsonschema.validate(yaml.safe_load(path.read_text()), rubric_schema())


def test_schema_describes_the_yaml_keys() -> None:
    criterion = rubric_schema()["$defs"]["Criterion"]
    assert set(criterion["required"]) == {"id", "question", "pass", "fail", "n_a"}
    assert criterion["properties"]["severity"]["enum"] == ["blocking", "advisory"]
    assert criterion["additionalProperties"] is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- just a list", "must be a mapping"),
        ("name: [unclosed", "invalid YAML"),
        (_with(severity="critical"), "criteria.0.severity"),
        (_with(id="Bad Id"), "criteria.0.id"),
        (_with(question=""), "criteria.0.question"),
        (_with(colour="red"), "criteria.0.colour"),
        (_with(files=[]), "criteria.0.files"),
        (yaml.safe_dump({"name": "mini", "criteria": []}), "criteria"),
        (yaml.safe_dump({"name": "mini", "criteria": [CRITERION, CRITERION]}), "appears twice"),
        (yaml.safe_dump({"criteria": [CRITERION]}), "name"),
    ],
)
def test_invalid_rubrics_are_rejected_with_the_field(text: str, message: str) -> None:
    with pytest.raises(RubricError, match=r"x\.yml") as caught:
        parse_rubric(text, "x.yml")
    assert message in str(caught.value)


def test_file_globs_select_paths() -> None:
    rubric = parse_rubric(_with(files=["*.py", "docs/*"]))
    criterion = rubric.criteria[0]
    assert criterion.applies_to("pkg/mod.py")
    assert criterion.applies_to("docs/a/b.md")
    assert not criterion.applies_to("README.md")
    assert parse_rubric(_with()).criteria[0].applies_to("anything/at/all.txt")


def test_digest_changes_with_any_instruction() -> None:
    a, b = parse_rubric(_with()), parse_rubric(_with(fail="something else"))
    assert a.digest == parse_rubric(_with()).digest
    assert a.digest != b.digest


def test_load_searches_extra_dirs_and_checks_names(tmp_path: Path) -> None:
    (tmp_path / "mini.yml").write_text(_with())
    (tmp_path / "other.yml").write_text(_with())
    assert load_rubric("mini", [tmp_path]).name == "mini"
    with pytest.raises(RubricError, match="does not match the file name"):
        load_rubric("other", [tmp_path])
    with pytest.raises(RubricError, match="unknown rubric 'absent'"):
        load_rubric("absent", [tmp_path])
    for bad in ("../default", "a/b", "Default", ""):
        with pytest.raises(RubricError, match="invalid rubric name"):
            load_rubric(bad)
    assert [r.name for r in load_rubrics(["default", "default"])] == ["default"]
