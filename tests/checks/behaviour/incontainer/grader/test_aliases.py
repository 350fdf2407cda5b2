"""Strings back from the subject get the suite's real names again; nothing else about a value changes."""

from __future__ import annotations

from checks.behaviour.incontainer.grader.aliases import Aliases


def aliases_in_use() -> tuple[Aliases, str]:
    aliases = Aliases("/suite/")
    alias = aliases._of("tests.test_cached", "m")
    return aliases, alias


def test_a_string_holding_an_alias_comes_back_with_the_real_name() -> None:
    aliases, alias = aliases_in_use()
    found = aliases.restore_in({"where": [f"{alias}.helper"], "n": (1,)})
    assert found == {"where": ["tests.test_cached.helper"], "n": (1,)}


def test_a_container_with_no_alias_in_it_is_the_same_object() -> None:
    # A test's dict the change returned (cachetools' wrapper.cache is cache) must stay itself.
    aliases, _ = aliases_in_use()
    plain = {"a": [1, "x"], "b": {2}}
    assert aliases.restore_in(plain) is plain
    items = ["x", (1, "y")]
    assert aliases.restore_in(items) is items


def test_a_kept_container_is_the_test_s_whatever_it_holds() -> None:
    aliases, alias = aliases_in_use()
    mine = [f"{alias}.helper"]
    outer = [mine, alias]
    found = aliases.restore_in(outer, lambda v: v is mine)
    assert found == [mine, "tests.test_cached"] and found[0] is mine


def test_a_qualified_name_hides_the_test_it_is_local_to_and_keeps_its_class_path() -> None:
    # pluggy matches "TimeoutHooks.pytest_timeout_set_timer" after the last "<locals>.".
    aliases = Aliases("/suite/")
    aliases.suite_module = lambda name: True  # type: ignore[method-assign]
    local = aliases.attribute("m", "__qualname__", "test_x.<locals>.helper.<locals>.Hooks.pytest_hook")
    head, rest = str(local).split(".<locals>.", 1)
    assert rest == "Hooks.pytest_hook" and "test_x" not in head and head.startswith("_pgq")
    assert aliases.restore(str(local)) == "test_x.<locals>.helper.<locals>.Hooks.pytest_hook"
    top = aliases.attribute("m", "__qualname__", "TestParse.test_one")
    assert "Test" not in str(top) and "test" not in str(top) and str(top).count(".") == 1
    assert aliases.restore(str(top)) == "TestParse.test_one"
    assert aliases.attribute("m", "__qualname__", "Helper.run") == "Helper.run"
