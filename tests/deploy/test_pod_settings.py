"""The settings a pod of the chart really gets resolve to the database in the App Secret.

A pod's settings come from three places: the image's ENV, the container's env
from the chart, and the config file mounted from the App Secret. The
environment wins over the file, so an image or chart default for the
database would hide the PostgreSQL URL the docs tell operators to put in the
Secret - and each pod would write a SQLite file of its own.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from bot.settings import load_settings
from bot.store.topology import check_store
from tests.deploy.chart import one, render

DOCKERFILES = sorted((Path(__file__).resolve().parents[2] / "deploy").glob("*Dockerfile"))
PG = "postgresql+psycopg://gate:s3cret@postgres.db.svc:5432/patchgate"


def image_env(dockerfile: Path) -> dict[str, str]:
    """Return the ENV a Dockerfile bakes into its final image (``ENV K=V`` lines, continued)."""
    text = dockerfile.read_text().replace("\\\n", " ")
    final = text.split("\nFROM ")[-1]
    env: dict[str, str] = {}
    for line in final.splitlines():
        if line.startswith("ENV "):
            env.update(dict(re.findall(r"(\w+)=(\S+)", line)))
    return env


def pod_env(container: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: str(e["value"]) for e in container.get("env", []) if "value" in e}


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("component", ["web", "worker"])
def test_a_pod_reads_the_postgres_url_from_the_app_secret(
    dockerfile: Path, component: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects = render({"settings": {"broker": "redis://redis:6379/0"}})
    deployment = one(objects, "Deployment", f"-{component}")
    spec = deployment["spec"]["template"]["spec"]
    [container] = [c for c in spec["containers"] if c["name"] == component]
    env = {**image_env(dockerfile), **pod_env(container)}
    # The Secret's file, where the chart mounts it (moved under tmp_path for the test).
    config = Path(env["PATCHGATE_CONFIG"])
    mount = next(m for m in container["volumeMounts"] if config.is_relative_to(m["mountPath"]))
    volume = next(v for v in spec["volumes"] if v["name"] == mount["name"])
    assert "secret" in volume, f"{config} is not mounted from a Secret"
    local = tmp_path / config.relative_to("/")
    local.parent.mkdir(parents=True)
    local.write_text(f"PATCHGATE_APP_ID=1\nPATCHGATE_WEBHOOK_SECRET=w\nPATCHGATE_DATABASE_URL={PG}\n")
    env["PATCHGATE_CONFIG"] = str(local)
    for key in list(os.environ):
        if key.startswith("PATCHGATE_"):
            monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = load_settings()
    assert settings.database_url == PG
    assert settings.broker == "redis://redis:6379/0"
    check_store(settings, jobs_elsewhere=True)


def test_the_chart_refuses_a_sqlite_database_url() -> None:
    import helm_python as helm

    # The values schema refuses it (and the template would too, were the schema skipped).
    with pytest.raises(helm.HelmError, match="databaseUrl"):
        render({"settings": {"databaseUrl": "sqlite:////var/lib/patchgate/patchgate.db"}})
