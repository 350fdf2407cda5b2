"""Differential suites read statically: what a *.diff.yml says, and every way it can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from checks.behaviour.diffsuite import DiffSpec, Efficiency, load_diff_file
from checks.behaviour.errors import SuiteError
from checks.behaviour.suites import load_suite

REF = """
from datetime import timedelta

from hypothesis import strategies as st

texts = st.text(alphabet="0123456789dhms x", max_size=12)


def parse_duration(text: str) -> timedelta:
    raise ValueError(text)


def bare(text, count=1):
    return text


def loose(*texts):
    return texts


def spaced(n, rng):
    return (" " * n,)
"""

DIFF = """
functions:
  - function: durations.parse.parse_duration
    reference: ref.parse_duration
    examples: 500
    strategies:
      text: texts
    efficiency:
      sizes: [1e5, 1e4, 3e4]
      input: ref.spaced
      repetitions: 3
  - function: durations.bare
    reference: ref.bare
    strategies:
      text: st.text()
"""


def make(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_a_differential_file_names_functions_references_strategies_and_sizes(tmp_path: Path) -> None:
    make(tmp_path, {"ref.py": REF, "parse.diff.yml": DIFF})
    first, second = load_diff_file(tmp_path / "parse.diff.yml", "parse.diff.yml", tmp_path)
    assert first == DiffSpec(
        id="parse.diff.yml::durations.parse.parse_duration",
        function="durations.parse.parse_duration",
        reference="ref.parse_duration",
        strategies=(("text", "texts"),),
        examples=500,
        efficiency=Efficiency(sizes=(10_000, 30_000, 100_000), input="ref.spaced", repetitions=3),
    )
    assert (first.module, first.name) == ("durations.parse", "parse_duration")
    # A parameter with a default needs neither an annotation nor a strategy: it keeps its default.
    assert (second.examples, second.efficiency, second.strategies) == (None, None, (("text", "st.text()"),))


def test_base_as_a_function_s_reference_needs_no_reference_in_the_suite(tmp_path: Path) -> None:
    timed = "    efficiency: {sizes: [10, 100], input: ref.spaced}\n    strategies: {text: st.text()}\n"
    make(tmp_path, {"ref.py": REF, "base.diff.yml": ONE.format(ref="base", more=timed)})
    [spec] = load_diff_file(tmp_path / "base.diff.yml", "base.diff.yml", tmp_path)
    assert (spec.source, spec.reference, spec.function) == ("base", spec.function, "durations.parse_duration")
    assert spec.efficiency == Efficiency(sizes=(10, 100), input="ref.spaced")
    # The suite's generator is still read and checked: it lives in the suite.
    make(tmp_path, {"bad.diff.yml": ONE.format(ref="base", more=timed.replace("ref.spaced", "ref.gone"))})
    with pytest.raises(SuiteError, match="ref defines no function gone"):
        load_diff_file(tmp_path / "bad.diff.yml", "bad.diff.yml", tmp_path)


def test_a_suite_of_differential_files_only_is_a_suite(tmp_path: Path) -> None:
    make(tmp_path, {"ref.py": REF, "parse.diff.yml": DIFF})
    suite = load_suite(tmp_path, "hidden")
    assert [d.function for d in suite.diffs] == ["durations.parse.parse_duration", "durations.bare"]
    assert (suite.pytest_files, suite.cases) == ((), ())


ONE = "functions:\n  - function: durations.parse_duration\n    reference: {ref}\n{more}"


@pytest.mark.parametrize(
    ("diff", "message"),
    [
        ("functions: []\n", "functions: List should have at least 1 item"),
        ("functions: [\n", "invalid YAML"),
        (
            ONE.format(ref="ref.parse_duration", more="    surprise: 1\n"),
            "surprise: Extra inputs are not permitted",
        ),
        (ONE.format(ref="parse_duration", more=""), "'parse_duration' is not module.function"),
        (ONE.format(ref="Base", more=""), "'Base' is not module.function"),
        (ONE.format(ref="nowhere.parse_duration", more=""), "the suite has no module nowhere"),
        (ONE.format(ref="ref.missing", more=""), "ref defines no function missing at its top level"),
        (ONE.format(ref="ref.loose", more=""), "takes \\*args or \\*\\*kwargs"),
        (ONE.format(ref="ref.bare", more=""), "parameter text has no annotation and no strategy"),
        (
            ONE.format(ref="ref.parse_duration", more="    strategies: {txt: st.text()}\n"),
            "strategies for txt, which the reference does not take",
        ),
        (
            ONE.format(ref="ref.parse_duration", more="    strategies: {text: 'st.text('}\n"),
            "strategies.text: not a Python expression",
        ),
        (
            ONE.format(ref="ref.parse_duration", more="    examples: 0\n"),
            "examples: Input should be greater than or equal to 1",
        ),
        (
            ONE.format(ref="ref.parse_duration", more="    efficiency: {sizes: [10], input: ref.spaced}\n"),
            "List should have at least 2 items",
        ),
        (
            ONE.format(
                ref="ref.parse_duration", more="    efficiency: {sizes: [10, 10], input: ref.spaced}\n"
            ),
            "sizes must differ",
        ),
        (
            ONE.format(
                ref="ref.parse_duration", more="    efficiency: {sizes: [10, 1.5], input: ref.spaced}\n"
            ),
            "sizes are whole numbers",
        ),
        (
            ONE.format(
                ref="ref.parse_duration",
                more="    efficiency: {sizes: [10, 100], input: ref.parse_duration}\n",
            ),
            "efficiency.input ref.parse_duration must take \\(n, rng\\)",
        ),
        (
            ONE.format(ref="ref.parse_duration", more="")
            + ONE.format(ref="ref.parse_duration", more="").removeprefix("functions:\n"),
            "function durations.parse_duration appears twice",
        ),
    ],
)
def test_a_differential_file_that_cannot_run_as_written_is_refused_naming_it(
    tmp_path: Path, diff: str, message: str
) -> None:
    make(tmp_path, {"ref.py": REF, "bad.diff.yml": diff})
    with pytest.raises(SuiteError, match=f"bad.diff.yml: .*{message}"):
        load_suite(tmp_path, "hidden")
