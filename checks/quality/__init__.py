"""The quality layer: a per-criterion rubric judge with verified citations, and its calibration.

Its output is labelled as judged, never as correctness: execution decides
whether a patch works; the judge only answers what execution cannot.
"""

from __future__ import annotations

from checks.quality.cache import MemoryVerdictCache, VerdictCache, cache_key
from checks.quality.calibration import (
    JudgeRecord,
    ModelCalibration,
    Rate,
    calibration_table,
    false_acceptance_label,
    render_calibration,
)
from checks.quality.inputs import JudgeSettings, QualityInputs, Task
from checks.quality.pairwise import (
    PairwiseResult,
    PositionConsistency,
    compare_pairwise,
    position_consistency,
)
from checks.quality.review import run_quality
from checks.quality.rubric import Criterion, Rubric, RubricError, load_rubric, load_rubrics, rubric_schema
from checks.quality.shadow import ShadowVerdict, run_shadow, should_shadow

__all__ = [
    "Criterion",
    "JudgeRecord",
    "JudgeSettings",
    "MemoryVerdictCache",
    "ModelCalibration",
    "PairwiseResult",
    "PositionConsistency",
    "QualityInputs",
    "Rate",
    "Rubric",
    "RubricError",
    "ShadowVerdict",
    "Task",
    "VerdictCache",
    "cache_key",
    "calibration_table",
    "compare_pairwise",
    "false_acceptance_label",
    "load_rubric",
    "load_rubrics",
    "position_consistency",
    "render_calibration",
    "rubric_schema",
    "run_quality",
    "run_shadow",
    "should_shadow",
]
