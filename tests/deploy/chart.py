"""Render the Helm chart offline (helm-python-sdk: Helm's own Go engine, no helm binary)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "patchgate"
RELEASE = "gate"
NAMESPACE = "patchgate"


def render(values: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Return every object the chart renders with ``values`` (Helm raises on a schema violation)."""
    import helm_python as helm

    chart = helm.Chart.load(CHART)
    manifests = chart.render(values or {}, name=RELEASE, namespace=NAMESPACE, is_install=True)
    objects: list[dict[str, Any]] = []
    for path, text in sorted(manifests.items()):
        if not path.endswith((".yaml", ".yml")):
            continue  # NOTES.txt
        objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return objects


def one(objects: list[dict[str, Any]], kind: str, suffix: str) -> dict[str, Any]:
    """Return the single object of ``kind`` whose name ends with ``suffix``."""
    [found] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"].endswith(suffix)]
    return found
