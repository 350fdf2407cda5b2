"""Rubrics: the criteria the judge answers, read from `rubrics/*.yml` and validated here.

A rubric is maintainers' data (picked by the base branch's policy), so it is
trusted; it is still validated strictly because a typo in it would silently
change what the judge is asked.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rubrics import RUBRIC_DIR

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")


class RubricError(Exception):
    """A rubric is missing or invalid; the message names the file and the field."""


class Criterion(BaseModel):
    """One question the judge answers PASS, FAIL or N/A, with what each answer means."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=64)
    question: str = Field(min_length=1)
    pass_: str = Field(alias="pass", min_length=1, description="What counts as PASS.")
    fail: str = Field(min_length=1, description="What counts as FAIL.")
    n_a: str = Field(min_length=1, description="When the criterion does not apply (N/A).")
    severity: Literal["blocking", "advisory"] = "advisory"
    files: tuple[str, ...] = Field(
        default=("*",),
        min_length=1,
        description="fnmatch globs over paths relative to the repository root; '*' also matches '/'.",
    )

    def applies_to(self, path: str) -> bool:
        """Return True when ``path`` matches one of the criterion's file globs."""
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.files)


class Rubric(BaseModel):
    """A named list of criteria; the name is the YAML file's stem."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=_NAME.pattern)
    description: str = ""
    criteria: tuple[Criterion, ...] = Field(min_length=1)

    @field_validator("criteria")
    @classmethod
    def _unique_ids(cls, criteria: tuple[Criterion, ...]) -> tuple[Criterion, ...]:
        seen: set[str] = set()
        for c in criteria:
            if c.id in seen:
                raise ValueError(f"criterion id {c.id!r} appears twice")
            seen.add(c.id)
        return criteria

    @property
    def digest(self) -> str:
        """Return a hash of everything the judge is told by this rubric (a cache-key part)."""
        canonical = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()


def rubric_schema() -> dict[str, Any]:
    """Return the JSON Schema of a rubric file (printed by `patchgate schema rubric`)."""
    schema = Rubric.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "patchgate rubric"
    return schema


def parse_rubric(text: str, source: str = "<rubric>") -> Rubric:
    """Parse and validate rubric YAML; ``source`` names it in error messages."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise RubricError(f"{source}: invalid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise RubricError(f"{source}: a rubric must be a mapping")
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors())
        raise RubricError(f"{source}: {problems}") from exc


def load_rubric(name: str, dirs: Sequence[Path] = ()) -> Rubric:
    """Load the rubric called ``name`` from ``dirs`` (searched first) or the shipped rubrics."""
    # Names come from policy and become file names: no separators, no dots.
    if not _NAME.match(name):
        raise RubricError(f"invalid rubric name {name!r}: use lowercase letters, digits, '-' and '_'")
    for folder in (*dirs, RUBRIC_DIR):
        path = folder / f"{name}.yml"
        if path.is_file():
            rubric = parse_rubric(path.read_text(encoding="utf-8"), str(path))
            if rubric.name != name:
                raise RubricError(f"{path}: name {rubric.name!r} does not match the file name {name!r}")
            return rubric
    raise RubricError(f"unknown rubric {name!r} (looked in {', '.join(str(d) for d in (*dirs, RUBRIC_DIR))})")


def load_rubrics(names: Sequence[str], dirs: Sequence[Path] = ()) -> tuple[Rubric, ...]:
    """Load each named rubric, in order; a name listed twice is loaded once."""
    return tuple(load_rubric(n, dirs) for n in dict.fromkeys(names))
