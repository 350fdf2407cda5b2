"""What of the grader's environment reaches the subject: the test's own changes, never the runner's.

The suite's code and the runner's are told apart by where a write comes
from: code compiled under a folder standing for the suite, or anywhere else.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from checks.behaviour.incontainer.grader import ambient

SUITE = "/grader/suite/"
_WRITE = "def write(key, value):\n    os.environ[key] = value\n"
_AS_SUITE = compile(_WRITE, SUITE + "test_x.py", "exec")
_AS_RUNNER = compile(_WRITE, "/usr/_pytest/runner.py", "exec")
_DEL_AS_SUITE = compile("def remove(key):\n    del os.environ[key]\n", SUITE + "conftest.py", "exec")


def _writer(code: Any) -> Any:
    namespace: dict[str, Any] = {"os": os}
    exec(code, namespace)  # noqa: S102 - our own two-line functions, compiled under a chosen file name
    return namespace.get("write") or namespace["remove"]


suite_write, runner_write, suite_remove = _writer(_AS_SUITE), _writer(_AS_RUNNER), _writer(_DEL_AS_SUITE)


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[ambient.Environment]:
    ambient.install(SUITE)
    fresh = ambient.Environment()
    fresh.suite_prefix = SUITE
    monkeypatch.setattr(ambient, "ENVIRONMENT", fresh)
    saved = dict(os.environ)
    try:
        yield fresh
    finally:
        os.environ.clear()
        os.environ.update(saved)


def sent(outbound: ambient.Outbound) -> dict[str, Any]:
    message: dict[str, Any] = {}
    outbound.add(message, repr)
    return message.get("env", {})


def test_only_what_the_suite_wrote_crosses(environment: ambient.Environment) -> None:
    outbound = ambient.Outbound()
    runner_write("PYTEST_CURRENT_TEST", "test_calc.py::test_half[4-2] (call)")
    suite_write("PATCHGATE_PROBE", "on")
    assert sent(outbound) == {"PATCHGATE_PROBE": ["set", "on"]}
    assert sent(outbound) == {}  # nothing changed since
    # The runner's variable stays the runner's, whoever writes it later.
    suite_write("PYTEST_CURRENT_TEST", "chosen by the test")
    assert sent(outbound) == {}
    suite_remove("PATCHGATE_PROBE")
    assert sent(outbound) == {"PATCHGATE_PROBE": ["revert"]}  # as the grader started: the subject's own


def test_a_variable_the_grader_started_with_crosses_only_once_the_test_changes_it(
    environment: ambient.Environment,
) -> None:
    outbound = ambient.Outbound()
    key = next(iter(environment.baseline))
    assert sent(outbound) == {}
    suite_write(key, "changed by the test")
    assert sent(outbound) == {key: ["set", "changed by the test"]}
    runner_write(key, environment.baseline[key])  # monkeypatch's undo runs from pytest's own frames
    assert sent(outbound) == {key: ["revert"]}


def test_a_plain_copy_handed_over_loses_the_runner_s_variables(environment: ambient.Environment) -> None:
    runner_write("PYTEST_CURRENT_TEST", "test_calc.py::test_half[4-2] (call)")
    suite_write("MINE", "kept")
    copy = dict(os.environ)
    scrubbed = environment.scrub(copy)
    assert "PYTEST_CURRENT_TEST" not in scrubbed and scrubbed["MINE"] == "kept"
    # A value the test chose under that name is its own.
    assert environment.scrub({"PYTEST_CURRENT_TEST": "other"}) == {"PYTEST_CURRENT_TEST": "other"}


def test_a_swapped_environ_crosses_without_the_runner_s_variables(
    environment: ambient.Environment, monkeypatch: pytest.MonkeyPatch
) -> None:
    outbound = ambient.Outbound()
    runner_write("PYTEST_CURRENT_TEST", "test_calc.py::test_half[4-2] (call)")
    monkeypatch.setattr(os, "environ", {"ONLY": "this", "PYTEST_CURRENT_TEST": "x"})
    env = sent(outbound)
    assert env["ONLY"] == ["set", "this"]
    assert "PYTEST_CURRENT_TEST" not in env
    assert all(v == ["unset"] for k, v in env.items() if k != "ONLY")


def _module_function(source: str, module: str, filename: str) -> Any:
    namespace: dict[str, Any] = {"os": os, "__name__": module}
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - our own functions, under a chosen name
    return next(v for k, v in namespace.items() if callable(v) and not k.startswith("_") and k != "os")


# The suite's code calling another's: ``call(fn, *args)`` from a conftest.
_CALL = "def call(fn, *args):\n    return fn(*args)\n"
suite_call = _module_function(_CALL, "conftest", SUITE + "conftest.py")


def test_a_runner_s_write_is_the_runner_s_even_when_the_suite_drives_the_runner(
    environment: ambient.Environment,
) -> None:
    # A conftest's pytest_runtest_protocol that calls runtestprotocol itself: pytest writes
    # PYTEST_CURRENT_TEST (the running test's id) with the conftest's frame further out.
    from _pytest.runner import _update_current_test_var

    outbound = ambient.Outbound()

    class Item:
        nodeid = "test_held_out.py::test_secret_case[4-2]"

    suite_call(_update_current_test_var, Item(), "call")
    assert os.environ["PYTEST_CURRENT_TEST"].startswith(Item.nodeid)
    assert sent(outbound) == {}
    # pluggy's frames are the runner's too; a library's only pass the write on to their caller.
    pluggy_write = _module_function(_WRITE, "pluggy._callers", "/usr/pluggy/_callers.py")
    library_write = _module_function(_WRITE, "dotenv.main", "/usr/dotenv/main.py")
    suite_call(pluggy_write, "FROM_PLUGGY", "1")
    suite_call(library_write, "FROM_A_LIBRARY", "1")
    assert sent(outbound) == {"FROM_A_LIBRARY": ["set", "1"]}


def test_monkeypatch_writes_for_its_caller(environment: ambient.Environment) -> None:
    outbound = ambient.Outbound()
    patch = pytest.MonkeyPatch()
    try:
        suite_call(patch.setenv, "SET_BY_THE_TEST", "yes")  # the test's tool, called by the test
        assert sent(outbound) == {"SET_BY_THE_TEST": ["set", "yes"]}
        patch.setenv("SET_BY_THE_RUNNER", "yes")  # called by none of the suite's code
        assert sent(outbound) == {}
    finally:
        patch.undo()


_KEYS = st.text(st.characters(codec="ascii", categories=["Lu", "Ll", "Nd"]), min_size=1, max_size=12)
_VALUE_CHARS = st.characters(codec="ascii", exclude_characters="\x00")


@settings(max_examples=200, deadline=None)
@given(
    writes=st.lists(
        st.tuples(_KEYS, st.text(_VALUE_CHARS, max_size=8), st.sampled_from(["suite", "runner"])),
        max_size=30,
    )
)
def test_random_writes_cross_exactly_as_their_first_writer_decides(
    writes: list[tuple[str, str, str]],
) -> None:
    ambient.install(SUITE)
    fresh = ambient.Environment()
    fresh.suite_prefix = SUITE
    saved_env, saved_global = dict(os.environ), ambient.ENVIRONMENT
    ambient.ENVIRONMENT = fresh
    try:
        outbound = ambient.Outbound()
        first: dict[str, str] = {}
        crossed: dict[str, list[str]] = {}
        for key, value, who in writes:
            (suite_write if who == "suite" else runner_write)(key, value)
            first.setdefault(key, who)
            crossed.update(sent(outbound))
        for key, entry in crossed.items():
            assert first.get(key) == "suite", (key, entry)
        for key, who in first.items():
            if who == "runner":
                assert key not in crossed
            elif os.environ[key] != fresh.baseline.get(key):
                assert crossed[key] == ["set", os.environ[key]]
    finally:
        ambient.ENVIRONMENT = saved_global
        os.environ.clear()
        os.environ.update(saved_env)
