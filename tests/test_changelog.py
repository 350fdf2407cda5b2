"""CHANGELOG.md keeps the Keep a Changelog 1.1.0 form and names the packaged version."""

from __future__ import annotations

import itertools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
SECTIONS = frozenset({"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"})
RELEASE = re.compile(r"## \[(\d+)\.(\d+)\.(\d+)\] - (\d{4}-\d{2}-\d{2})")


@dataclass(frozen=True)
class Release:
    version: tuple[int, int, int]
    date: str


def parse(text: str) -> list[Release]:
    """Check the changelog's form and return its releases, newest first."""
    lines = text.splitlines()
    headings = [line for line in lines if line.startswith("#")]
    if not headings or headings[0] != "# Changelog":
        raise ValueError("the first heading must be '# Changelog'")
    if len(headings) < 2 or headings[1] != "## [Unreleased]":
        raise ValueError("'## [Unreleased]' must come first")
    releases: list[Release] = []
    section: str | None = None
    section_has_entry = True
    in_release = False

    def close_section() -> None:
        if section is not None and not section_has_entry:
            raise ValueError(f"empty section '### {section}'")

    for line in lines[lines.index("## [Unreleased]") + 1 :]:
        if line.startswith("## "):
            close_section()
            section, section_has_entry = None, True
            match = RELEASE.fullmatch(line)
            if match is None:
                raise ValueError(f"bad release heading {line!r}")
            major, minor, patch, date = match.groups()
            releases.append(Release((int(major), int(minor), int(patch)), date))
            in_release = True
        elif line.startswith("### "):
            close_section()
            name = line[4:]
            if name not in SECTIONS:
                raise ValueError(f"unknown section '### {name}'")
            section, section_has_entry = name, False
        elif line.startswith("#"):
            raise ValueError(f"unexpected heading {line!r}")
        elif line.strip() and section is not None:
            section_has_entry = True
        elif line.strip() and in_release:
            raise ValueError(f"text outside a section: {line!r}")
    close_section()
    for newer, older in itertools.pairwise(releases):
        if newer.version <= older.version:
            raise ValueError(f"versions not descending: {newer.version} then {older.version}")
        if newer.date < older.date:
            raise ValueError(f"dates increase: {newer.date} then {older.date}")
    return releases


GOOD = """# Changelog

Intro.

## [Unreleased]

## [0.2.0] - 2026-12-02

### Added

- b

## [0.1.0] - 2026-11-30

### Fixed

- a
"""


def test_the_planted_good_changelog_parses() -> None:
    assert parse(GOOD) == [Release((0, 2, 0), "2026-12-02"), Release((0, 1, 0), "2026-11-30")]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("# Changelog", "# Changes", "first heading"),
        ("## [Unreleased]\n", "", "Unreleased"),
        ("## [0.2.0] - 2026-12-02", "## 0.2.0 - 2026-12-02", "bad release heading"),
        ("## [0.2.0] - 2026-12-02", "## [0.2.0] 2026-12-02", "bad release heading"),
        ("## [0.2.0] - 2026-12-02", "## [0.1.0] - 2026-12-02", "not descending"),
        ("## [0.2.0] - 2026-12-02", "## [0.0.9] - 2026-12-02", "not descending"),
        ("## [0.2.0] - 2026-12-02", "## [0.2.0] - 2026-11-01", "dates increase"),
        ("### Added", "### New", "unknown section"),
        ("### Added\n\n- b\n", "### Added\n\n", "empty section"),
        ("### Fixed\n\n- a\n", "### Fixed\n", "empty section"),
        ("#### x", "#### x", "unexpected heading"),
    ],
)
def test_a_drifted_changelog_is_refused(old: str, new: str, message: str) -> None:
    text = GOOD + "\n#### x\n" if old == "#### x" else GOOD.replace(old, new, 1)
    assert text != GOOD
    with pytest.raises(ValueError, match=message):
        parse(text)


def test_the_changelog_keeps_the_form() -> None:
    releases = parse((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    assert releases


def test_the_newest_release_is_the_packaged_version() -> None:
    releases = parse((ROOT / "CHANGELOG.md").read_text(encoding="utf-8"))
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    newest = ".".join(str(part) for part in releases[0].version)
    assert project["version"] == newest
    chart = yaml.safe_load((ROOT / "deploy/helm/patchgate/Chart.yaml").read_text(encoding="utf-8"))
    assert (chart["version"], chart["appVersion"]) == (newest, newest)
