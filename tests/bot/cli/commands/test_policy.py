# ruff: noqa: E501 - policy files and commands read best on one line
"""`patchgate policy check`, as a user runs it, and the policy file's editor-facing schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks.policy import POLICY_SCHEMA_ID, Policy
from checks.policyfile import PolicyError, load_policy
from tests.bot.cli.commands.test_run import patchgate


def test_a_valid_file_passes(tmp_path: Path) -> None:
    policy = tmp_path / "p.yml"
    policy.write_text(
        f"# yaml-language-server: $schema={POLICY_SCHEMA_ID}\n$schema: {POLICY_SCHEMA_ID}\nbehaviour:\n  enabled: true\n"
        "strength:\n  report_first: true\n"
    )
    done = patchgate("policy", "check", policy)
    assert (done.returncode, done.stdout.strip()) == (0, f"{policy}: valid")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("behaviour:\n  min_hidden_pass_rate: lots\n", "line 2: behaviour.min_hidden_pass_rate"),
        ("behaviour:\n  enabled: yes\n", "line 2: behaviour.enabled: 'yes': write true or false"),
        ("gates: [\n", "invalid YAML"),
        ("- a\n", "line 1: the policy must be a mapping"),
        ("bogus: 1\n", "bogus: Extra inputs are not permitted"),
        ("strength:\n  report_first: later\n", "line 2: strength.report_first"),
    ],
)
def test_an_invalid_file_names_itself_the_field_and_the_line(tmp_path: Path, text: str, message: str) -> None:
    policy = tmp_path / "mine.yml"
    policy.write_text(text)
    done = patchgate("policy", "check", policy)
    assert done.returncode == 2
    assert done.stderr.startswith(f"patchgate policy check: {policy}: ")
    assert message in done.stderr
    assert ".github/patchgate.yml" not in done.stderr


def test_a_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    done = patchgate("policy", "check", tmp_path / "absent.yml")
    assert done.returncode == 2 and "absent.yml" in done.stderr


def test_the_default_is_the_repositorys_policy_file(tmp_path: Path) -> None:
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github/patchgate.yml").write_text("quality: {enabled: false}\n")
    done = patchgate("policy", "check", cwd=tmp_path)
    assert (done.returncode, done.stdout.strip()) == (0, ".github/patchgate.yml: valid")


def test_the_schema_has_an_id_and_takes_a_schema_key() -> None:
    schema = Policy.model_json_schema(by_alias=True)
    assert schema["$id"] == POLICY_SCHEMA_ID
    assert "$schema" in schema["properties"]
    # Quoted, the YAML 1.1 words are text: no ambiguity, no refusal.
    assert load_policy('agents: {labels: ["on", "yes"]}\n').agents.labels == ["on", "yes"]
    with pytest.raises(PolicyError, match=r"line 1: quality\.enabled: 'off': write true or false"):
        load_policy("quality: {enabled: off}\n")
    json.dumps(schema)


def test_patchgate_run_names_the_policy_file_it_read(tmp_path: Path) -> None:
    from tests.conftest import GitRepo

    repo = GitRepo(tmp_path / "repo")
    repo.commit("base", {"a.py": "x = 1\n"})
    policy = tmp_path / "override.yml"
    policy.write_text("behaviour: {enabled: maybe}\n")
    done = patchgate(
        "run", "--repo", repo.path, "--base", "main", "--head", "main", "--policy", policy, "--format", "json"
    )
    report = json.loads(done.stdout)
    assert report["conclusion"] == "action_required"
    assert report["reasons"][0].startswith(f"{policy}: line 1: behaviour.enabled")


# Bare YAML 1.1 words (on/off/yes/no) where the field takes words, a yes/no, or a list of text,
# and files of other kinds: the checker and the published schema must agree on each.
AGREEMENT = [
    ("report: {comment: off}\n", True),
    ("report: {comment: always}\n", True),
    ("report: {comment: yes}\n", False),
    ("agents: {labels: [on, yes, agent]}\n", True),
    ("quality: {enabled: off}\n", False),
    ("behaviour: {enabled: true}\n", True),
    ("behaviour: {enabled: maybe}\n", False),
    ("agents: {others: neutral}\n", True),
    ("agents: {others: no}\n", False),
    ("gates: {hygiene: {on_finding: warn}}\n", True),
    ("bogus: 1\n", False),
]


@pytest.mark.parametrize(("text", "valid"), AGREEMENT)
def test_the_checker_and_the_published_schema_agree(text: str, valid: bool) -> None:
    import jsonschema
    import yaml

    from checks.policyfile import _set_at, _yaml11_booleans

    # What an editor sees: YAML 1.2, where the bare words are text.
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    data = yaml.safe_load(text)
    for _line, word, path in _yaml11_booleans(node):
        data = _set_at(data, path, word)
    schema = Policy.model_json_schema(by_alias=True)
    schema_ok = jsonschema.Draft202012Validator(schema).is_valid(data)
    try:
        load_policy(text)
        checker_ok = True
    except PolicyError:
        checker_ok = False
    assert (checker_ok, schema_ok) == (valid, valid)
