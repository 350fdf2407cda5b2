"""Fixtures for the quality layer: a real git change, a small rubric, and a fake judge server."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from checks.policy import Policy, Quality
from checks.quality.inputs import JudgeSettings
from checks.workspace import Workspace, from_git
from tests.conftest import GitRepo
from tests.fakes.openai_server import FakeOpenAI, Reply, serve

MODEL = "openai/judge-under-test"
HIDDEN_MARKER = "HIDDEN-SUITE-MARKER-7f3a"
PR_TEST_MARKER = "PR-TEST-FILE-MARKER-91bc"
CONFTEST_MARKER = "PR-CONFTEST-MARKER-44de"

BASE_FILES = {
    "src/shop/cart.py": (
        "class Cart:\n"
        "    def __init__(self):\n"
        "        self.items = []\n"
        "\n"
        "    def add(self, name, price):\n"
        "        self.items.append((name, price))\n"
    ),
    "src/shop/util.py": "def unchanged():\n    return 1\n",
    "README.md": "# shop\n",
}
HEAD_FILES = {
    "src/shop/cart.py": (
        "class Cart:\n"
        "    def __init__(self):\n"
        "        self.items = []\n"
        "\n"
        "    def add(self, name, price):\n"
        '        """Add an item; the price must not be negative."""\n'
        "        if price < 0:\n"
        '            raise ValueError(f"negative price for {name}: {price}")\n'
        "        self.items.append((name, price))\n"
        "\n"
        "    def total(self):\n"
        "        return sum(price for _, price in self.items)\n"
    ),
    "README.md": "# shop\n\nA cart.\n",
    "tests/test_cart.py": f"# {PR_TEST_MARKER}\ndef test_total():\n    assert True\n",
    "conftest.py": f"# {CONFTEST_MARKER}\n",
    "src/shop/cart_test.py": f"# {PR_TEST_MARKER}\n",
}
CART_RAISE = 'raise ValueError(f"negative price for {name}: {price}")'

RUBRIC = """\
name: mini
description: A two-criterion rubric for tests.
criteria:
  - id: errors
    question: Are errors raised with clear messages?
    pass: Errors are explicit and say what went wrong.
    fail: Errors are swallowed or vague.
    n_a: No code that can fail.
    severity: blocking
    files: ["*.py"]
  - id: naming
    question: Are names clear?
    pass: Names say what things are.
    fail: Names mislead.
    n_a: No new names.
    severity: advisory
    files: ["*.py"]
"""


@pytest.fixture(scope="session")
def change(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    """A real change: a validated cart method, a README edit, and PR test files (to be filtered)."""
    root = tmp_path_factory.mktemp("change")
    repo = GitRepo(root / "repo")
    repo.commit("base", dict(BASE_FILES))
    repo.branch("feature")
    repo.commit("head", dict(HEAD_FILES))
    return from_git(repo.path, "main", "feature", root / "ws")


@pytest.fixture(scope="session")
def hidden_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A server-side hidden suite: the judge must never see any of it."""
    suite = tmp_path_factory.mktemp("hidden")
    (suite / "test_hidden.py").write_text(f"# {HIDDEN_MARKER}\ndef test_total():\n    assert False\n")
    return suite


@pytest.fixture(scope="session")
def rubric_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rubrics")
    (folder / "mini.yml").write_text(RUBRIC)
    return folder


def policy(**quality: Any) -> Policy:
    """Return a policy using the test rubric and model, with quality fields overridden."""
    fields: dict[str, Any] = {"model": MODEL, "rubrics": ["mini"], **quality}
    return Policy(quality=Quality(**fields))


def settings(server: FakeOpenAI, **kw: Any) -> JudgeSettings:
    fields: dict[str, Any] = {
        "api_base": server.url,
        "api_key": "sk-test-secret-key",
        "timeout_s": 5.0,
        "num_retries": 0,
        "cost_per_token": (0.0, 0.0),
        **kw,
    }
    return JudgeSettings(**fields)


def criterion_of(request: dict[str, Any]) -> str:
    """Return which criterion question a judge request asks (from its system message)."""
    system = request["messages"][0]["content"]
    found = re.search(r"^Criterion: (.*)$", system, re.MULTILINE)
    return found.group(1) if found else ""


def verdict(
    word: str,
    *,
    path: str = "src/shop/cart.py",
    quote: str = CART_RAISE,
    start: int = 8,
    end: int = 8,
    reason: str = "scripted",
) -> Reply:
    evidence = [] if word == "N/A" else [{"path": path, "start_line": start, "end_line": end, "quote": quote}]
    return Reply(content=json.dumps({"verdict": word, "reason": reason, "evidence": evidence}))


def by_criterion(replies: dict[str, Reply]) -> Callable[[dict[str, Any]], Reply]:
    """A responder answering each criterion (keyed by a word of its question) with a fixed reply."""

    def respond(request: dict[str, Any]) -> Reply:
        question = criterion_of(request)
        for word, reply in replies.items():
            if word in question:
                return reply
        return Reply.error(500, f"no scripted reply for {question!r}")

    return respond


@pytest.fixture
def judge_server() -> Iterator[FakeOpenAI]:
    with serve() as server:
        yield server
