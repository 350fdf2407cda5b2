"""Who owns each importable name in the grader: tools, suite or subject (pure rules, then a real subject)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.behaviour.incontainer.channel.peer import Peer
from checks.behaviour.incontainer.grader.bridge import Bridge
from checks.behaviour.incontainer.grader.names import (
    STDLIB,
    Importer,
    Owners,
    SuiteImports,
    importable,
    runner_names,
)
from tests.checks.behaviour.incontainer.test_bridge import ROOT, start_subject

# Every top-level name this interpreter's own path offers: the grader's tools, as the grader computes them.
TOOLS = sorted(importable(sys.path) - STDLIB)
RUNNER = runner_names()
_NAMES = st.one_of(
    st.sampled_from(TOOLS),
    st.sampled_from(sorted(STDLIB)),
    st.from_regex(r"\A[a-z_][a-z0-9_]{0,8}\Z"),
)


@settings(max_examples=300, deadline=None)
@given(subject=st.sets(_NAMES, max_size=20), suite=st.sets(_NAMES, max_size=8))
def test_every_name_has_one_owner_and_no_tool_name_is_served_to_the_tools(
    subject: set[str], suite: set[str]
) -> None:
    owners = Owners.of(subject, suite, TOOLS, RUNNER)
    served, suite_only = owners.served, owners.suite_only
    assert not served & owners.tools  # no tool's own import can ever reach the subject
    assert not (served | suite_only) & suite  # the suite's names are the suite's
    assert not (served | suite_only) & (STDLIB | RUNNER)  # the stdlib and the runner are never the subject's
    assert served | suite_only == subject - suite - STDLIB - RUNNER  # every other name of the tree is served
    assert not served & suite_only
    for name in subject | suite:
        expected = "suite" if name in suite else "subject" if name in served | suite_only else "tools"
        assert owners.owner(name) == expected


def test_the_tools_are_what_the_interpreter_s_own_path_holds() -> None:
    assert {"pytest", "_pytest", "pluggy"} <= set(TOOLS)
    # The runner: pytest's own distribution (its assertion rewriter imports _pytest inside test modules).
    assert {"pytest", "_pytest", "pytest_timeout", "patchgate_harness"} <= RUNNER and "pluggy" not in RUNNER
    assert "json" in STDLIB and "checks" in importable(sys.path) | {"checks"}


TREE = {
    # A library named like one of pytest's own dependencies, with an API pytest does not have.
    "pluggy/__init__.py": "WHO = 'the tree'\n\ndef half(x):\n    return x // 2\n",
    "pluggy/sub.py": "VALUE = 7\n",
    "_pytest/__init__.py": "raise RuntimeError('a tree package named like pytest internals')\n",
}


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[Bridge]:
    for rel, text in TREE.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    process, mine = start_subject(tmp_path)
    bridge = Bridge(Peer(mine, lambda request: {}), suite_root=str(ROOT / "tests"))
    owners = Owners.of(["pluggy", "_pytest"], [], importable(sys.path), runner_names())
    importer = Importer(bridge, owners)
    sys.meta_path.insert(0, importer)
    imports = SuiteImports(bridge, owners.suite_only, str(ROOT / "tests"))
    imports.install()
    try:
        yield bridge
    finally:
        imports.uninstall()
        sys.meta_path.remove(importer)
        mine.close()
        process.wait(timeout=30)


@pytest.mark.slow
def test_a_tree_named_like_a_tool_is_served_to_the_suite_and_the_tools_keep_theirs(bridge: Bridge) -> None:
    import pluggy

    tree: Any = pluggy  # the tree's, not the one mypy knows
    assert tree.WHO == "the tree" and tree.half(9) == 4
    from pluggy import sub as found

    sub: Any = found
    assert sub.VALUE == 7
    assert importlib.import_module("pluggy.sub").VALUE == 7
    # The test runner's own pluggy (and _pytest) are untouched: pytest goes on working.
    assert sys.modules["pluggy"] is not pluggy and hasattr(sys.modules["pluggy"], "PluginManager")
    assert "_pytest" in sys.modules and not hasattr(sys.modules["_pytest"], "WHO")
    # Code outside the suite importing the name gets the tool's.
    assert not hasattr(__import__("pluggy"), "PluginManager")  # from here: the suite
    assert hasattr(__import__("pluggy", {"__file__": "/usr/lib/python3/x.py"}), "PluginManager")
