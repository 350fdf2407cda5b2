"""Rubric data: one YAML file per rubric, loaded by `checks.quality.rubric`."""

from __future__ import annotations

from pathlib import Path

RUBRIC_DIR = Path(__file__).parent
