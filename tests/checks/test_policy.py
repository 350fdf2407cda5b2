from __future__ import annotations

import re
from pathlib import Path

import pytest

from checks.policy import Policy
from checks.policyfile import PolicyError, load_policy


def test_missing_file_means_defaults() -> None:
    assert load_policy(None) == Policy()
    assert load_policy("") == Policy()
    assert load_policy("# only a comment\n") == Policy()


def test_valid_policy() -> None:
    policy = load_policy(
        "agents:\n  authors: ['devin-ai[bot]']\ngates:\n  mypy:\n    max_new_errors: 2\n"
        "behaviour:\n  min_hidden_pass_rate: 0.9\n"
    )
    assert policy.gates.mypy.max_new_errors == 2
    assert policy.behaviour.min_hidden_pass_rate == 0.9
    assert policy.agents.authors == ["devin-ai[bot]"]
    assert (policy.gates.mypy.timeout_s, policy.gates.mypy.memory_mb) == (None, None)
    budget = load_policy("gates:\n  mypy: {timeout_s: 1800, memory_mb: 4096}\n")
    assert (budget.gates.mypy.timeout_s, budget.gates.mypy.memory_mb) == (1800, 4096)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gates:\n  mypy:\n    max_new_errors: lots\n", "line 3: gates.mypy.max_new_errors"),
        ("gates:\n  rufff: {}\n", "line 2: gates.rufff: Extra inputs are not permitted"),
        ("behaviour:\n  min_hidden_pass_rate: 2\n", "line 2: behaviour.min_hidden_pass_rate"),
        ("agents: [unclosed\n", "invalid YAML at line 2"),
        ("- a list\n", "line 1: the policy must be a mapping"),
        ("agents:\n  authors:\n    - ok\n    - {x: 1}\n", "line 4: agents.authors.1"),
        # Suite locations are server-side only: the repository cannot point its gate elsewhere.
        ("behaviour:\n  hidden: /tmp/mine\n", "line 2: behaviour.hidden"),
        ("gates:\n  mypy: {timeout_s: 5}\n", "line 2: gates.mypy.timeout_s"),
        ("gates:\n  ruff: {memory_mb: 99999}\n", "line 2: gates.ruff.memory_mb"),
        ("gates:\n  loads: {timeout_s: 60}\n", "line 2: gates.loads.timeout_s"),
    ],
)
def test_invalid_policy_names_field_and_line(text: str, expected: str) -> None:
    with pytest.raises(PolicyError) as info:
        load_policy(text)
    assert expected in str(info.value)
    assert str(info.value).startswith(".github/patchgate.yml")


@pytest.mark.parametrize(
    ("author", "labels", "branch", "expected"),
    [
        ("coder-agent[bot]", [], "feature", True),
        ("alice", ["agent"], "feature", True),
        ("alice", [], "agent/fix-1", True),
        ("alice", ["bug"], "feature", False),
        ("bot-alice", [], "main", False),
    ],
)
def test_agent_detection(author: str, labels: list[str], branch: str, expected: bool) -> None:
    assert Policy().agents.matches(author, labels, branch) is expected


@pytest.mark.parametrize(
    ("switch", "labels", "title", "expected"),
    [
        (True, ["refactor"], "Tidy the parser", True),
        (True, ["Refactor"], "Tidy the parser", True),  # labels and prefixes regardless of case
        (True, [], "refactor: tidy the parser", True),
        (True, [], "  Refactor(parse): tidy", True),
        (True, ["bug"], "Fix refactor: crash", False),  # a prefix, not a word anywhere
        (False, ["refactor"], "refactor: tidy", False),  # off unless the policy asks
    ],
)
def test_a_refactor_is_compared_with_base_only_when_the_policy_asks(
    switch: bool, labels: list[str], title: str, expected: bool
) -> None:
    policy = Policy.model_validate({"behaviour": {"differential": {"compare_refactors_with_base": switch}}})
    assert policy.behaviour.differential.is_refactor(labels, title) is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: &a [on, *a]\n", "aliases of aliases"),  # a list that holds itself
        (  # aliases of aliases: 340 bytes that expand into millions of values
            "a: &a [on,on,on,on,on,on,on,on,on,on]\n"
            + "".join(
                f"{x}: &{x} [{', '.join(['*' + y] * 10)}]\n" for x, y in zip("bcde", "abcd", strict=True)
            )
            + "f: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n",
            "aliases of aliases",
        ),
        ("a: " + "[" * 600 + "]" * 600 + "\n", "nested too deeply"),
        # A merge key would carry a bare yes/no past the true/false rule: refused outright.
        ("behaviour: {<<: {require_suites: no, allow_in_process_success: yes}}\n", "merge keys (<<)"),
    ],
)
def test_a_hostile_policy_file_is_a_policy_error_never_a_crash(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(message)):
        load_policy(text)


def test_a_yes_no_field_is_known_by_its_type_whatever_its_shape() -> None:
    from pydantic import BaseModel

    from checks.policyfile import _is_flag

    class Shapes(BaseModel):
        plain: bool = False
        optional: bool | None = None
        many: list[bool] = []
        words: list[str] = []

    assert _is_flag(("plain",), Shapes) and _is_flag(("optional",), Shapes) and _is_flag(("many", 0), Shapes)
    assert not _is_flag(("words", 0), Shapes) and not _is_flag(("nothing",), Shapes)
    assert _is_flag(("quality", "enabled")) and not _is_flag(("report", "comment"))


def test_the_readme_s_policy_is_the_defaults_written_out() -> None:
    # README.md shows every setting with its default: it must load, and mean exactly the defaults.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("```yaml\nagents:", 1)[1].split("```", 1)[0]
    assert load_policy("agents:" + block) == Policy()
