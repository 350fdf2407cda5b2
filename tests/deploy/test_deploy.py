"""The deployment files agree with the code: chart values exist, compose wires web, workers and services."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.settings import Settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
CHART = DEPLOY / "helm" / "patchgate"


def _lookup(values: dict[str, Any], dotted: str) -> bool:
    node: Any = values
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def test_every_value_the_chart_templates_use_is_defined() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["apiVersion"] == "v2"
    used = set()
    for template in (CHART / "templates").iterdir():
        used |= set(re.findall(r"\.Values\.([A-Za-z0-9_.]+)", template.read_text()))
    assert used, "the templates use no values?"
    missing = sorted(u for u in used if not _lookup(values, u))
    assert missing == []


def test_the_chart_sets_only_real_settings() -> None:
    fields = {f"PATCHGATE_{name.upper()}" for name in Settings.model_fields} | {"PATCHGATE_CONFIG"}
    text = "".join(t.read_text() for t in (CHART / "templates").iterdir())
    assert set(re.findall(r"PATCHGATE_[A-Z_]+", text)) <= fields


def test_compose_runs_web_workers_postgres_and_redis() -> None:
    compose = yaml.safe_load((DEPLOY / "compose.yml").read_text())
    services = compose["services"]
    assert set(services) == {"web", "worker", "postgres", "redis"}
    assert services["web"]["command"] == ["serve", "--no-workers"]
    assert services["worker"]["command"] == ["worker"]
    env = services["worker"]["environment"]
    assert env["PATCHGATE_BROKER"] == "redis://redis:6379/0"
    assert env["PATCHGATE_DATABASE_URL"].startswith("postgresql+psycopg://")
    fields = {f"PATCHGATE_{name.upper()}" for name in Settings.model_fields}
    assert set(env) <= fields
    # The workers hand paths to the host's engine: the state directory is at the same path.
    assert "/var/lib/patchgate:/var/lib/patchgate" in services["worker"]["volumes"]


@pytest.mark.parametrize("name", ["Dockerfile", "registry.Dockerfile"])
def test_the_dockerfiles_run_the_cli_as_a_non_root_user(name: str) -> None:
    text = (DEPLOY / name).read_text()
    assert 'ENTRYPOINT ["patchgate"]' in text
    assert "USER 10001:10001" in text
    assert "TMPDIR=/var/lib/patchgate/tmp" in text
    # The environment beats the Secret's config file: no database default in an image.
    assert "PATCHGATE_DATABASE_URL" not in text.split("ENV ", 1)[1].split("\n\n")[0]


def test_the_service_image_needs_no_registry() -> None:
    froms = [line for line in (DEPLOY / "Dockerfile").read_text().splitlines() if line.startswith("FROM ")]
    assert froms and all("${ROOTFS}" in line for line in froms)
