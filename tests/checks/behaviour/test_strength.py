# ruff: noqa: E501 - tables of cases read best one case a line
"""Suite strength: the floors (pure) and the figures against real Docker."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from checks.behaviour.changedlines import MAX_SOURCE_BYTES
from checks.behaviour.mutants import apply, find
from checks.behaviour.strength import _Source, floors, source_of
from checks.policy import Strength
from checks.report import StrengthResult

MEASURED = StrengthResult(status="measured", changed_lines=40, hidden_covered=38, mutants=20, killed=14)


@pytest.mark.parametrize(
    ("result", "settings", "reasons"),
    [
        (MEASURED, Strength(), []),
        (MEASURED, Strength(min_changed_line_coverage=0.95, min_mutation_score=0.7), []),
        (
            MEASURED,
            Strength(min_changed_line_coverage=0.96),
            ["hidden suite runs 38/40 changed lines (95%), needs 96%"],
        ),
        (MEASURED, Strength(min_mutation_score=0.8), ["hidden suite kills 14/20 mutants (70%), needs 80%"]),
        # Mutants not run (time budget) are out of the score: 9 killed of the 10 that ran.
        (MEASURED.model_copy(update={"not_run": 10, "killed": 9}), Strength(min_mutation_score=0.8), []),
        (
            MEASURED.model_copy(update={"hidden_covered": None}),
            Strength(min_changed_line_coverage=0.1),
            ["changed-line coverage could not be measured"],
        ),
        # No mutant ran (behaviour failed, or none fit): no score to hold against the suite.
        (MEASURED.model_copy(update={"mutants": 0, "killed": 0}), Strength(min_mutation_score=0.9), []),
        (
            MEASURED.model_copy(update={"hidden_covered": 0}),
            Strength(min_changed_line_coverage=0.5),
            ["hidden suite runs 0/40 changed lines (0%), needs 50%"],
        ),
    ],
)
def test_floors(result: StrengthResult, settings: Strength, reasons: list[str]) -> None:
    assert floors(result, settings) == reasons


def test_files_that_were_not_mutated_fail_a_mutation_floor_closed() -> None:
    result = MEASURED.model_copy(update={"not_mutated": ["pkg/big.py: over 2 MiB, not parsed"]})
    assert floors(result, Strength()) == []  # no floor: reported only
    assert floors(result, Strength(min_mutation_score=0.5)) == ["1 changed file could not be mutated"]
    # Even with no mutant at all to score.
    none = result.model_copy(update={"mutants": 0, "killed": 0})
    assert floors(none, Strength(min_mutation_score=0.5)) == ["1 changed file could not be mutated"]


SIGN_LINES = "def sign(x):\n    return x > 0\n"


def _mutants_of(source: _Source | str, lines: set[int]) -> list[bytes]:
    assert not isinstance(source, str), source
    out = []
    for mutant in find(source.text, "calc/sign.py", lines):
        mutated = apply(source.text, mutant)
        assert mutated is not None
        data = source.encode(mutated)
        assert data is not None
        out.append(data)
    return out


def test_a_file_with_a_bom_is_mutated_and_keeps_its_bom(tmp_path: Path) -> None:
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc/sign.py").write_bytes(b"\xef\xbb\xbf" + SIGN_LINES.encode())
    mutants = _mutants_of(source_of(tmp_path, "calc/sign.py", {}), {2})
    assert mutants
    for data in mutants:
        assert data.startswith(b"\xef\xbb\xbfdef sign(x):\n    return ")
        ast.parse(data)


def test_a_latin_1_file_is_mutated_and_written_back_in_latin_1(tmp_path: Path) -> None:
    # read_text(utf-8) raised on it and the file was skipped without a word.
    text = "# -*- coding: latin-1 -*-\nUNIT = 'm\xe8tre'\n" + SIGN_LINES
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc/sign.py").write_bytes(text.encode("latin-1"))
    mutants = _mutants_of(source_of(tmp_path, "calc/sign.py", {}), {4})
    assert mutants
    for data in mutants:
        # Only the mutated line differs: the string keeps its latin-1 byte, not UTF-8's two.
        assert data.splitlines()[:3] == text.encode("latin-1").splitlines()[:3]
        assert data.splitlines()[3] != b"    return x > 0"
        ast.parse(data)


def test_bytes_python_leaves_undecoded_in_a_comment_are_written_back_as_they_were(tmp_path: Path) -> None:
    data = b"# caf\xe9\n" + SIGN_LINES.encode()
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc/sign.py").write_bytes(data)
    mutants = _mutants_of(source_of(tmp_path, "calc/sign.py", {}), {3})
    assert mutants
    assert all(m.startswith(b"# caf\xe9\ndef sign(x):\n") for m in mutants)


def test_files_that_cannot_be_mutated_say_why(tmp_path: Path) -> None:
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc/big.py").write_text(SIGN_LINES + "#" * MAX_SOURCE_BYTES + "\n")
    (tmp_path / "calc/target.txt").write_text(SIGN_LINES)
    (tmp_path / "calc/link.py").symlink_to("target.txt")
    assert source_of(tmp_path, "calc/big.py", {}) == "over 2 MiB, not parsed"
    assert source_of(tmp_path, "calc/link.py", {}) == "a symlink, not read"
    # What the changed lines found unreadable is not read again.
    (tmp_path / "calc/broken.py").write_text("def broken(:\n")
    assert source_of(tmp_path, "calc/broken.py", {"calc/broken.py": "does not parse"}) == "does not parse"


def test_scores() -> None:
    assert MEASURED.hidden_coverage == 0.95
    assert MEASURED.mutation_score == 0.7
    assert MEASURED.model_copy(update={"not_run": 20}).mutation_score is None
    assert StrengthResult().hidden_coverage is None


# -- against real Docker --------------------------------------------------------------------------

from checks.decide import decide  # noqa: E402 - the Docker half of this file
from checks.policy import Policy  # noqa: E402
from checks.report import QualityResult, ShapeResult  # noqa: E402
from tests.checks.behaviour.test_layer import BASE, Files, Gate, gate  # noqa: E402

__all__ = ["gate"]

SIGN = "def sign(x):\n    return x > 0\n"
ONLY_DOUBLE = {
    "test_double.py": "from calc import double\n\n\ndef test_double():\n    assert double(2) == 4\n"
}
STRONG = {
    "test_sign.py": "import pytest\n\nfrom calc.sign import sign\n\n\n"
                    "@pytest.mark.parametrize(('x', 'y'), [(-1, False), (0, False), (1, True), (2, True)])\n"
                    "def test_sign(x, y):\n    assert sign(x) is y\n",
}  # fmt: skip
WEAK_SUITE = {
    "test_sign.py": "from calc.sign import sign\n\n\ndef test_sign_returns():\n    assert sign(5) is not None\n"
}


@pytest.mark.docker
def test_changed_lines_no_test_runs_ask_a_maintainer_under_a_floor(gate: Gate) -> None:
    ws = gate.change({"calc/extra.py": "def triple(x):\n    return x * 3\n"})
    result = gate.run(ws, gate.suite("hidden", ONLY_DOUBLE), gate.suite("held-out", ONLY_DOUBLE), strength={})
    assert result.status == "passed", result
    strength = result.strength
    assert (strength.changed_lines, strength.hidden_covered, strength.held_out_covered) == (2, 0, None)
    assert strength.uncovered == ["calc/extra.py:1", "calc/extra.py:2"]
    # No suite ran any of the change's lines: a maintainer must look, whatever the floors say.
    policy = Policy.model_validate({"strength": {"min_changed_line_coverage": 0.5}})
    decision = decide(ShapeResult(status="passed"), result, QualityResult(), Policy())
    assert decision.conclusion == "action_required"
    assert decision.reasons == ("behaviour: no suite ran the change's code (0 of 2 changed lines)",)
    # Under a floor the floor's reason is given too; never failure.
    floored = gate.run(ws, gate.suite("hidden-2", ONLY_DOUBLE), strength={"min_changed_line_coverage": 0.5})
    decision = decide(ShapeResult(status="passed"), floored, QualityResult(), policy)
    assert decision.conclusion == "action_required"
    assert decision.reasons[1] == (
        "behaviour: hidden suite too weak for this change (hidden suite runs 0/2 changed lines (0%), needs 50%)"
    )


@pytest.mark.docker
def test_a_strong_suite_kills_every_mutant(gate: Gate) -> None:
    result = gate.run(gate.change({"calc/sign.py": SIGN}), gate.suite("hidden", STRONG), strength={})
    assert result.status == "passed", result
    strength = result.strength
    assert (strength.changed_lines, strength.hidden_covered) == (2, 2)
    assert strength.mutants > 3 and strength.killed == strength.mutants, strength
    assert strength.survivors == [] and strength.mutation_score == 1.0


@pytest.mark.docker
def test_a_suite_that_only_checks_a_return_lets_mutants_survive_and_lists_them(gate: Gate) -> None:
    result = gate.run(
        gate.change({"calc/sign.py": SIGN}), gate.suite("hidden", WEAK_SUITE), strength={"max_mutants": 6}
    )
    assert result.status == "passed", result
    strength = result.strength
    assert strength.mutants == 6
    assert strength.mutation_score is not None and strength.mutation_score <= 0.5, strength
    assert strength.survivors and all((s.path, s.line) == ("calc/sign.py", 2) for s in strength.survivors)
    assert all(s.mutated.startswith("return ") and s.mutated != "return x > 0" for s in strength.survivors)


@pytest.mark.docker
def test_a_held_out_suite_publishes_no_strength_figure_and_names_nothing(gate: Gate) -> None:
    from checks.render.markdown import render_markdown
    from checks.render.text import render_text
    from checks.report import Report

    marker = "quagga_ocelot_5512"
    held_out = gate.suite(
        "held-out",
        {
            f"test_{marker}.py": f"from calc.sign import sign\n\n\ndef test_{marker}():\n    assert sign(3) is True, '{marker}'\n"
        },
    )
    result = gate.run(gate.change({"calc/sign.py": SIGN}), gate.suite("hidden", WEAK_SUITE), held_out)
    # Coverage is the code under test's own report: nothing of it is published about a held-out run.
    assert (result.strength.hidden_covered, result.strength.held_out_covered) == (2, None)
    report = Report(conclusion="success", behaviour=result)
    for output in (report.model_dump_json(), *render_markdown(report), render_text(report)):
        assert marker not in output


@pytest.mark.docker
def test_an_untested_function_in_a_module_the_suite_imports_asks_a_maintainer(gate: Gate) -> None:
    # Hostile: the suite imports calc, so the new function's def line ran and the change counted as
    # run (1 of 2): its wrong body, which no test calls, passed as success.
    head: Files = {
        "calc/__init__.py": str(BASE["calc/__init__.py"]) + "\n\ndef triple(x):\n    return x * 4\n"
    }
    result = gate.run(gate.change(head), gate.suite("hidden", ONLY_DOUBLE), strength={})
    assert result.status == "passed", result
    strength = result.strength
    assert (strength.changed_lines, strength.hidden_covered) == (2, 1), strength
    assert (strength.body_lines, strength.body_covered) == (1, 0), strength
    decision = decide(ShapeResult(status="passed"), result, QualityResult(), Policy())
    assert decision.conclusion == "action_required"
    assert decision.reasons == (
        "behaviour: no suite called the change's code (0 of 1 changed lines in function bodies ran; only "
        "lines an import runs did)",
    )


# -- changed files the host reads in their own encoding, or not at all (against real Docker) ------

BOM = b"\xef\xbb\xbf"
LATIN_1 = "# -*- coding: latin-1 -*-\nUNIT = 'm\xe8tre'\n"


@pytest.mark.docker
def test_an_untested_function_added_to_a_file_with_a_bom_asks_a_maintainer(gate: Gate) -> None:
    # The red team's case: base's code right and tested, the change adds a wrong function no test
    # runs, in a file with a BOM. Its lines vanished (strength skipped) and the verdict was success.
    base: Files = {**BASE, "calc/extra.py": BOM + b"def triple(x):\n    return x * 3\n"}
    head: Files = {
        "calc/extra.py": BOM + b"def triple(x):\n    return x * 3\n\n\ndef quadruple(x):\n    return x * 5\n"
    }
    ws = gate.change(head, base=base)
    result = gate.run(ws, gate.suite("hidden", ONLY_DOUBLE), strength={})
    assert result.status == "passed", result
    strength = result.strength
    assert (strength.changed_lines, strength.hidden_covered) == (2, 0), strength
    assert strength.uncovered == ["calc/extra.py:5", "calc/extra.py:6"]
    decision = decide(ShapeResult(status="passed"), result, QualityResult(), Policy())
    assert decision.conclusion == "action_required"
    assert decision.reasons == ("behaviour: no suite ran the change's code (0 of 2 changed lines)",)


@pytest.mark.docker
@pytest.mark.parametrize(
    ("head", "lines"),
    [(BOM + SIGN.encode(), 2), ((LATIN_1 + SIGN).encode("latin-1"), 3)],
    ids=["bom", "latin-1"],
)
def test_a_file_in_its_own_encoding_is_traced_and_mutated_like_any_other(
    gate: Gate, head: bytes, lines: int
) -> None:
    # coverage.py reads the file as Python does; the host's lines and mutants now do too (the
    # latin-1 file was skipped: no lines, no mutants; a mutant written back as UTF-8 under its
    # cookie would change its string too).
    result = gate.run(gate.change({"calc/sign.py": head}), gate.suite("hidden", STRONG), strength={})
    assert result.status == "passed", result
    strength = result.strength
    assert (strength.changed_lines, strength.hidden_covered, strength.read_whole) == (lines, lines, []), (
        strength
    )
    assert strength.mutants > 3 and strength.killed == strength.mutants, strength
    assert strength.not_mutated == []


@pytest.mark.docker
def test_a_symlinked_module_counts_its_changed_line_and_is_not_mutated(gate: Gate) -> None:
    from checks.workspace import from_git

    repo = gate.make_repo("repo")
    repo.commit("base", dict(BASE))
    repo.branch("pr")
    repo.write({"calc/code.txt": SIGN})
    (repo.path / "calc/sign.py").symlink_to("code.txt")
    repo.commit("pr")
    ws = from_git(repo.path, "main", "pr", gate.tmp_path / "ws")
    result = gate.run(ws, gate.suite("hidden", STRONG), strength={})
    assert result.status == "passed", result
    # Its one changed line (the link) counts; coverage.py keys what ran by the real path, so the
    # link's is never shown run: a maintainer is asked. It was skipped, and the verdict success.
    strength = result.strength
    assert (strength.changed_lines, strength.hidden_covered) == (1, 0), strength
    assert strength.read_whole == ["calc/sign.py: a symlink, not read; every changed line counted"]
    assert strength.not_mutated == ["calc/sign.py: a symlink, not read"]
    decision = decide(ShapeResult(status="passed"), result, QualityResult(), Policy())
    assert decision.reasons == ("behaviour: no suite ran the change's code (0 of 1 changed lines)",)
