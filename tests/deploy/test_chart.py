"""The Helm chart, rendered by Helm's own engine and validated strictly against Kubernetes' schemas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.chart import CHART, one, render

ALL_OPTIONS = CHART / "ci" / "all-options-values.yaml"
KUBERNETES = "1.30.0"
HARDENED = {
    "runAsNonRoot": True,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def all_options() -> dict[str, Any]:
    values: dict[str, Any] = yaml.safe_load(ALL_OPTIONS.read_text())
    return values


def chart_version() -> tuple[str, str]:
    meta = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return meta["version"], meta["appVersion"]


def pod_specs(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o["spec"]["template"] for o in objects if o["kind"] == "Deployment"]


@pytest.mark.parametrize("values", [None, "all-options"], ids=["defaults", "all-options"])
def test_every_object_is_valid_kubernetes(values: str | None) -> None:
    import kubernetes_validate

    objects = render(all_options() if values else None)
    assert objects
    for obj in objects:
        # strict: a field Kubernetes does not know (a typo in a template) is an error too.
        kubernetes_validate.validate(obj, KUBERNETES, strict=True)


def test_the_optional_parts_render_when_asked() -> None:
    kinds = sorted({o["kind"] for o in render(all_options())})
    assert kinds == [
        "Deployment",
        "HorizontalPodAutoscaler",
        "Ingress",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Secret",
        "Service",
    ]
    assert sorted({o["kind"] for o in render()}) == ["Deployment", "Service"]


@pytest.mark.parametrize("values", [None, "all-options"], ids=["defaults", "all-options"])
def test_patchgates_containers_are_hardened_and_bounded(values: str | None) -> None:
    for template in pod_specs(render(all_options() if values else None)):
        spec = template["spec"]
        assert spec["automountServiceAccountToken"] is False
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        ours = [c for c in spec["containers"] if c["name"] in ("web", "worker")]
        assert len(ours) == 1
        for container in ours:
            assert HARDENED.items() <= container["securityContext"].items(), container["name"]
            assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
            for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                assert probe in container, f"{container['name']} has no {probe}"
            # A read-only root needs a writable /tmp.
            assert any(m["mountPath"] == "/tmp" for m in container["volumeMounts"])


def test_labels_annotations_and_image_tag() -> None:
    version, app_version = chart_version()
    objects = render()
    for obj in objects:
        labels = obj["metadata"]["labels"]
        assert labels["helm.sh/chart"] == f"patchgate-{version}"
        assert labels["app.kubernetes.io/name"] == "patchgate"
        assert labels["app.kubernetes.io/instance"] == "gate"
        assert labels["app.kubernetes.io/version"] == app_version
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
    for template in pod_specs(objects):
        assert {"checksum/app-secret", "checksum/settings"} <= set(template["metadata"]["annotations"])
        assert template["spec"]["containers"][0]["image"] == f"patchgate:{app_version}"
    [pinned] = {t["spec"]["containers"][0]["image"] for t in pod_specs(render(all_options()))}
    assert pinned == "registry.example.org/patchgate:0.1.0-test"


def test_a_changed_setting_changes_the_pods_checksum() -> None:
    def checksum(values: dict[str, Any] | None) -> str:
        web = one(render(values), "Deployment", "-web")
        annotation: str = web["spec"]["template"]["metadata"]["annotations"]["checksum/settings"]
        return annotation

    assert checksum(None) != checksum({"settings": {"concurrency": 5}})


SECRET_FILE = "PATCHGATE_APP_ID=1\nPATCHGATE_WEBHOOK_SECRET=first\n"


@pytest.mark.parametrize("deployment", ["-web", "-worker"])
def test_a_changed_secret_changes_the_pods_checksum_and_the_same_one_does_not(deployment: str) -> None:
    def checksums(secret: dict[str, str], **more: Any) -> dict[str, str]:
        template = one(render({"appSecretData": secret, **more}), "Deployment", deployment)["spec"][
            "template"
        ]
        annotations: dict[str, str] = template["metadata"]["annotations"]
        return annotations

    first = checksums({"patchgate.env": SECRET_FILE})
    assert first == checksums({"patchgate.env": SECRET_FILE})
    changed = checksums({"patchgate.env": SECRET_FILE.replace("first", "second")})
    assert changed["checksum/app-secret"] != first["checksum/app-secret"]
    assert changed["checksum/settings"] == first["checksum/settings"]
    added = checksums({"patchgate.env": SECRET_FILE, "judge.key": "k"})
    assert added["checksum/app-secret"] not in (first["checksum/app-secret"], changed["checksum/app-secret"])
    # A setting that is not the Secret's leaves the Secret's checksum alone.
    other = checksums({"patchgate.env": SECRET_FILE}, settings={"concurrency": 5})
    assert other["checksum/app-secret"] == first["checksum/app-secret"]


def test_the_chart_creates_the_secret_the_pods_mount_from_its_values() -> None:
    objects = render({"appSecret": "gate-app", "appSecretData": {"patchgate.env": SECRET_FILE}})
    secret = one(objects, "Secret", "gate-app")
    assert secret["stringData"] == {"patchgate.env": SECRET_FILE}
    for template in pod_specs(objects):
        volumes = {v["name"]: v for v in template["spec"]["volumes"]}
        assert volumes["app-config"]["secret"]["secretName"] == "gate-app"
    # Without values the Secret is the operator's (kubectl create secret): the chart leaves it alone.
    assert not [o for o in render() if o["kind"] == "Secret"]


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"web": {"replicas": "many"}}, "replicas"),
        ({"worker": {"replicas": -1}}, "replicas"),
        ({"worker": {"docker": {"mode": "dind"}}}, "mode"),
        ({"settings": {"broker": "memory"}}, "broker"),
        ({"settings": {"databaseUrl": "mysql://x/y"}}, "databaseUrl"),
        ({"web": {"replica": 2}}, "replica"),
        ({"appSecretData": {"patchgate.env": 5}}, "appSecretData"),
        ({"worker": {"autoscaling": {"jobsPerWorker": 0}}}, "jobsPerWorker"),
        ({"worker": {"autoscaling": {"metricName": "jobs unfinished"}}}, "metricName"),
        (
            {"worker": {"autoscaling": {"enabled": True, "minReplicas": 5, "maxReplicas": 2}}},
            "above maxReplicas",
        ),
    ],
)
def test_the_values_schema_refuses_nonsense(values: dict[str, Any], complaint: str) -> None:
    import helm_python as helm

    with pytest.raises(helm.HelmError, match=complaint):
        render(values)


def test_the_worker_autoscaler_follows_the_unfinished_jobs_and_owns_the_replica_count() -> None:
    objects = render(all_options())
    hpa = one(objects, "HorizontalPodAutoscaler", "-worker")
    worker = one(objects, "Deployment", "-worker")
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": worker["metadata"]["name"],
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 6)
    [target] = hpa["spec"]["metrics"]
    assert target["external"]["metric"]["name"] == "patchgate_jobs_unfinished"
    assert target["external"]["target"] == {"type": "AverageValue", "averageValue": "4"}
    assert hpa["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] == 600
    # With an autoscaler the Deployment names no replica count: a `helm upgrade` would reset it.
    assert "replicas" not in worker["spec"]
    assert one(render(), "Deployment", "-worker")["spec"]["replicas"] == 2
    assert not [o for o in render() if o["kind"] == "HorizontalPodAutoscaler"]


def test_the_autoscalers_metric_is_one_the_service_exports() -> None:
    from prometheus_client import REGISTRY

    import bot.metrics  # noqa: F401 - registers the service's metrics

    exported = {m.name for m in REGISTRY.collect()}
    name = yaml.safe_load((CHART / "values.yaml").read_text())["worker"]["autoscaling"]["metricName"]
    assert name in exported


def test_the_remote_engine_needs_its_address() -> None:
    import helm_python as helm

    with pytest.raises(helm.HelmError, match="dockerHost"):
        render({"worker": {"docker": {"mode": "remote"}}})
    worker = one(
        render({"worker": {"docker": {"mode": "remote", "dockerHost": "tcp://e:2376"}}}),
        "Deployment",
        "-worker",
    )
    env = {e["name"]: e.get("value") for e in worker["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["DOCKER_HOST"] == "tcp://e:2376"
    assert not any(
        v.get("hostPath", {}).get("type") == "Socket" for v in worker["spec"]["template"]["spec"]["volumes"]
    )


def test_helm_lint_is_clean() -> None:
    import helm_python as helm

    for values in (None, all_options()):
        report = helm.lint(CHART, values, strict=True)
        problems = [m for m in report["messages"] if m["severity"] >= 2]
        assert problems == [] and report["errors"] == [], report


def test_values_yaml_matches_its_schema() -> None:
    import json

    import jsonschema

    schema = json.loads((CHART / "values.schema.json").read_text())
    for values in (yaml.safe_load((CHART / "values.yaml").read_text()), all_options()):
        jsonschema.validate(values, schema)
    assert Path(CHART / "values.schema.json").is_file()
