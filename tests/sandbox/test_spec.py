"""Limits are validated when configured, not when a run uses them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sandbox.spec import Limits


@pytest.mark.parametrize(
    "bad",
    [
        {"memory_mb": -1},
        {"memory_mb": 0},
        {"timeout_s": 0},
        {"timeout_s": -5},
        {"pids": 0},
        {"cpus": 0},
        {"output_bytes": 0},
        {"tmpfs_mb": -64},
        {"swap_mb": 10},
    ],
)
def test_invalid_limits_fail_at_configuration(bad: dict[str, float]) -> None:
    with pytest.raises(ValidationError):
        Limits(**bad)  # type: ignore[arg-type]


def test_valid_limits() -> None:
    limits = Limits(memory_mb=256, timeout_s=0.5, cpus=0.25)
    assert (limits.memory_mb, limits.timeout_s, limits.cpus) == (256, 0.5, 0.25)
