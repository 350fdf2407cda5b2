"""Small helpers for human-written durations."""

from durations.format import format_duration
from durations.parse import parse_duration

__all__ = ["format_duration", "parse_duration"]
