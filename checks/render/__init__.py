"""Renderings of a report: the check-run summary (markdown), annotations, a terminal view."""

from checks.render.annotations import render_annotations
from checks.render.markdown import MAX_SUMMARY_BYTES, render_document, render_markdown
from checks.render.text import render_text

__all__ = ["MAX_SUMMARY_BYTES", "render_annotations", "render_document", "render_markdown", "render_text"]
