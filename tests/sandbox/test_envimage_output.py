"""Reading which requirement failed from pip's output (the build's own tests need Docker: test_envimage)."""

from __future__ import annotations

import pytest

from sandbox.depfiles import Requirement
from sandbox.envimage import failing_requirement

REQUIREMENTS = [Requirement("pgdemo==1.0", "requirements.txt"), Requirement("Other_Pkg>=2", "setup.cfg")]
CONFLICT = " because these package versions have conflicting dependencies."


@pytest.mark.parametrize(
    ("output", "failing"),
    [
        ("ERROR: No matching distribution found for pgdemo==1.0\n", REQUIREMENTS[0]),
        ("ERROR: Invalid requirement: 'other-pkg>=2'\n", REQUIREMENTS[1]),
        ("ERROR: Cannot install pgdemo==1.0" + CONFLICT + "\n", REQUIREMENTS[0]),
        ("ERROR: Cannot install other.pkg and x" + CONFLICT, REQUIREMENTS[1]),  # by its name
        ("Cannot install zz and x" + CONFLICT, Requirement("zz and x", "the dependency files")),
        # The reason is looked for on the same line, at least one character on.
        ("Cannot install pgdemo\n" + CONFLICT, None),
        ("Cannot install" + CONFLICT, None),
        (
            "Cannot install a Cannot install b" + CONFLICT,
            Requirement("a Cannot install b", "the dependency files"),
        ),
        ("Cannot install \nCannot install b" + CONFLICT, Requirement("b", "the dependency files")),
        # Earlier kinds win over a conflict anywhere in the output.
        ("Cannot install a" + CONFLICT + "\nFailed to build other_pkg\n", REQUIREMENTS[1]),
        ("all good\n", None),
    ],
)
def test_the_failing_requirement_is_named(output: str, failing: Requirement | None) -> None:
    assert failing_requirement(output, REQUIREMENTS) == failing


def test_a_line_of_conflicts_is_read_in_linear_time() -> None:
    # As a regular expression ("Cannot install (.+?) because ...") each "Cannot install " rescanned
    # the rest of its line: 1.3 s for 64k characters, minutes for these. Now milliseconds; a
    # regression hangs here until the suite's timeout.
    line = "Cannot install " * 70_000
    assert failing_requirement(line, REQUIREMENTS) is None
    assert failing_requirement(line + "x" + CONFLICT, REQUIREMENTS) == Requirement(
        line[len("Cannot install ") :] + "x", "the dependency files"
    )
