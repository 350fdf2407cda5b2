"""A refactor's changed functions, read from both trees: which are compared with base, which are not."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from checks.behaviour.refactor import module_name, refactor_seed, touched
from checks.workspace import Workspace, from_git
from tests.conftest import GitRepo

BASE = """
def parse(text: str) -> int:
    return int(text)


def scale(x: float, factor: float = 2.0) -> float:
    return x * factor


def loose(x):
    return x


def spread(*xs: int) -> int:
    return sum(xs)
"""


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("pkg/calc.py", "pkg.calc"),
        ("pkg/__init__.py", "pkg"),
        ("src/pkg/calc.py", "pkg.calc"),
        ("calc.py", "calc"),
        ("pkg/my-module.py", None),
        ("README.md", None),
    ],
)
def test_a_path_is_imported_as_its_dotted_module(path: str, module: str | None) -> None:
    assert module_name(path) == module


def change(make_repo: Callable[[str], GitRepo], tmp_path: object, head: dict[str, str | None]) -> Workspace:
    repo = make_repo("repo")
    repo.commit("base", {"pkg/__init__.py": "", "pkg/calc.py": BASE, "tests/test_calc.py": BASE})
    repo.branch("pr")
    repo.commit("pr", head)
    return from_git(repo.path, "main", "pr", repo.path.parent / "ws")


def test_the_changed_functions_are_compared_and_the_unchanged_ones_not(
    make_repo: Callable[[str], GitRepo], tmp_path: object
) -> None:
    head = BASE.replace("return int(text)", "return int(text.strip())")
    head = head.replace("return x * factor", "return factor * x")
    head = "\n\n# moved down a line: no change\n" + head.replace("return x\n", "return x  # same\n")
    found = touched(change(make_repo, tmp_path, {"pkg/calc.py": head, "tests/test_calc.py": head}))
    assert [(s.id, s.function, s.reference, s.source) for s in found.specs] == [
        ("base::pkg.calc.parse", "pkg.calc.parse", "pkg.calc.parse", "base"),
        ("base::pkg.calc.scale", "pkg.calc.scale", "pkg.calc.scale", "base"),
    ]
    assert found.left_out == ()


def test_a_function_inputs_cannot_be_drawn_for_is_named_not_compared(
    make_repo: Callable[[str], GitRepo], tmp_path: object
) -> None:
    head = BASE.replace("return x\n", "return x + 0\n").replace("sum(xs)", "sum(xs) + 0")
    found = touched(change(make_repo, tmp_path, {"pkg/calc.py": head}))
    assert found.specs == ()
    assert found.left_out == (
        "pkg.calc.loose: parameter x has no annotation",
        "pkg.calc.spread: it takes *args or **kwargs",
    )


def test_new_functions_and_those_a_suite_checks_are_left_to_it(
    make_repo: Callable[[str], GitRepo], tmp_path: object
) -> None:
    head = (
        BASE.replace("return int(text)", "return int(text.strip())")
        + "\n\ndef new(x: int) -> int:\n    return x\n"
    )
    ws = change(make_repo, tmp_path, {"pkg/calc.py": head})
    assert touched(ws, frozenset({"pkg.calc.parse"})).specs == ()


def test_the_seed_follows_base_and_the_suites_secrets_and_nothing_the_change_chooses() -> None:
    # The head sha and the functions touched are the change's author's to choose: a re-roll each.
    # Each function's draws are split from the run's seed by its own id (differential.function_seed).
    first = refactor_seed("b" * 40, ["1" * 32])
    assert len(first) == 32 and first == refactor_seed("b" * 40, ["1" * 32])
    assert first != refactor_seed("c" * 40, ["1" * 32])
    # The hidden and held-out suites' own seeds are what the change cannot compute.
    assert first != refactor_seed("b" * 40, ["2" * 32])
    assert first != refactor_seed("b" * 40, [])
