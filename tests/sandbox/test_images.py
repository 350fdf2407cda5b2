"""The base image recipe: hashed tags, both Dockerfiles, and a no-op second build."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sandbox.engine import docker_client
from sandbox.errors import ImageMissing
from sandbox.host import run_process
from sandbox.images import (
    ISOLATED_TOOLS,
    TOOLS_REQUIREMENTS,
    _remove_scratch,
    base_image_tag,
    dockerfile_text,
    ensure_base_image,
    image_id,
    rootfs_tag,
)


def test_tags_are_hashes_of_their_recipes() -> None:
    packages, registry = base_image_tag(), base_image_tag(from_registry=True)
    assert packages.startswith("patchgate-base:") and registry.startswith("patchgate-base:")
    assert packages != registry
    assert base_image_tag() == packages  # stable
    assert rootfs_tag().startswith("patchgate-rootfs:")


def test_both_dockerfiles_install_the_tools_and_the_sandbox_user() -> None:
    # The registry path cannot be built here (no registry); its text is what we can check.
    registry = dockerfile_text(from_registry=True)
    packages = dockerfile_text()
    assert "FROM python:3.11-slim AS tools" in registry
    assert "FROM ${ROOTFS} AS tools" in packages
    for text in (registry, packages):
        assert "tools-requirements.txt" in text
        assert "--target /opt/patchgate/tools" in text and "wrap_tools.py" in text
        assert "COPY --from=tools /opt/patchgate /opt/patchgate" in text
        assert "ENV PATH=/opt/patchgate/bin:" in text
        assert "--uid 10001" in text
        assert "USER 10001:10001" in text
        assert "COPY --from=tools /usr/local /usr/local" in text
        assert "LABEL patchgate.stage=tools" in text.split("FROM ")[1]
        # The index URL is a build argument of the tools stage only.
        final_stage = text.rsplit("FROM ", 1)[1]
        assert "PIP_INDEX_URL" not in final_stage


def test_tools_are_pinned() -> None:
    def pins(path: Path) -> tuple[set[str], list[str]]:
        lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
        return {ln.split("==")[0].lower() for ln in lines}, lines

    shared, shared_lines = pins(TOOLS_REQUIREMENTS)
    isolated, isolated_lines = pins(ISOLATED_TOOLS)
    # pytest and mypy must see the repository's packages; bandit and semgrep only read files.
    assert {"pytest", "pytest-timeout", "ruff", "mypy", "pyyaml"} <= shared
    assert isolated == {"bandit", "semgrep"}
    assert all("==" in ln for ln in [*shared_lines, *isolated_lines])


@pytest.mark.docker
def test_second_build_is_a_no_op_and_the_image_has_the_tools(base_image: str) -> None:
    started = time.monotonic()
    assert ensure_base_image() == base_image
    # A build (debootstrap) takes minutes; finding the image, a second at most on any machine.
    assert time.monotonic() - started < 60
    client = docker_client()
    try:
        image = client.images.get(base_image)
        assert image.id == client.images.get("patchgate-base:latest").id
        assert image.attrs["Config"]["User"] == "10001:10001"
        assert "PIP_INDEX_URL" not in repr(image.history())
        # The tools stage saw the index URL as a build argument; its images are deleted.
        assert client.api.images(all=True, filters={"label": "patchgate.stage=tools"}) == []
        output = client.containers.run(
            base_image,
            [
                "sh",
                "-c",
                "python3 --version; pytest --version; ruff --version; mypy --version; "
                "bandit --version >/dev/null && echo bandit; semgrep --version; id -u",
            ],
            remove=True,
            network_mode="none",
            environment={"SEMGREP_ENABLE_VERSION_CHECK": "0"},
        ).decode()
    finally:
        client.close()
    assert "Python 3.11" in output
    for tool in ("pytest 9.2.0", "ruff 0.17.6", "mypy 2.4.1", "bandit", "1.185.0"):
        assert tool in output
    assert output.strip().endswith("10001")


@pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root (as debootstrap does)")
def test_scratch_cleanup_never_deletes_through_a_leftover_mount(tmp_path: Path) -> None:
    # A failed debootstrap can leave e.g. the host's /dev bind-mounted inside its target.
    precious = tmp_path / "host-dev"
    precious.mkdir()
    (precious / "node").write_text("keep me")
    scratch = tmp_path / "scratch"
    inside = scratch / "root" / "dev"
    inside.mkdir(parents=True)
    run_process(["mount", "--bind", str(precious), str(inside)], check=True)
    try:
        _remove_scratch(scratch, lambda _: None)
    finally:
        run_process(["umount", "-l", str(inside)])
    assert (precious / "node").read_text() == "keep me"
    assert not scratch.exists()


def test_an_image_id_names_the_content_not_the_tag(base_image: str) -> None:
    found = image_id(base_image)
    assert found.startswith("sha256:") and len(found) == 71
    client = docker_client()
    try:
        assert found == client.images.get(base_image).id
    finally:
        client.close()
    with pytest.raises(ImageMissing):
        image_id("patchgate-no-such-image:0")
