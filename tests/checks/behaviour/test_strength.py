# ruff: noqa: E501 - tables of cases read best one case a line
"""Suite strength: the floors (pure) and the figures against real Docker."""

from __future__ import annotations

import pytest

from checks.behaviour.strength import floors
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


def test_scores() -> None:
    assert MEASURED.hidden_coverage == 0.95
    assert MEASURED.mutation_score == 0.7
    assert MEASURED.model_copy(update={"not_run": 20}).mutation_score is None
    assert StrengthResult().hidden_coverage is None


# -- against real Docker --------------------------------------------------------------------------

from checks.decide import decide  # noqa: E402 - the Docker half of this file
from checks.policy import Policy  # noqa: E402
from checks.report import QualityResult, ShapeResult  # noqa: E402
from tests.checks.behaviour.test_layer import Gate, gate  # noqa: E402

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
