"""Environment images: built from a tree's dependency files, cached, secrets kept out."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox
from sandbox.engine import docker_client
from sandbox.envimage import ensure_env_image, env_image_tag
from sandbox.errors import ImageBuildError
from sandbox.spec import Limits, Mount, RunSpec
from tests.fakes.package_index import PackageIndex, serve_index

pytestmark = pytest.mark.docker

TOKEN = "tok-d0n0tl3ak-7f3a"


@pytest.fixture(scope="module")
def index(base_image: str) -> Iterator[PackageIndex]:
    client = docker_client()
    ipam = client.networks.get("bridge").attrs["IPAM"]["Config"][0]
    client.close()
    # The engine may omit the gateway; Docker gives the bridge the subnet's first address.
    gateway = ipam.get("Gateway") or str(ipaddress.ip_network(ipam["Subnet"])[1])
    served = PackageIndex(user="builder", password=TOKEN)
    served.add("pgdemo", "1.0", "VALUE = 42\n")
    served.add("pgextra", "2.0", "NAME = 'extra'\n")
    # A repository's own versions of what bandit and semgrep import (hostile: unusable).
    for shadowing in ("click", "rich", "stevedore"):
        served.add(shadowing, "1.0", f"raise ImportError('the repository pinned {shadowing} 1.0')\n")
    with serve_index(served, gateway) as running:
        yield running


def _remove_image(tag: str) -> None:
    client = docker_client()
    client.images.remove(tag, force=True)
    client.close()


def test_tree_without_dependency_files_runs_in_the_base_image(base_image: str, tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text("print('hi')\n")
    assert ensure_env_image(tmp_path) == base_image


def test_build_installs_requirements_and_extras_then_reuses_the_image(
    index: PackageIndex, sandbox: DockerSandbox, tmp_path: Path
) -> None:
    tree = tmp_path / "repo"
    tree.mkdir()
    # A unique comment makes a fresh tag, so the first call really builds.
    (tree / "requirements.txt").write_text(f"pgdemo==1.0  # {tmp_path.name}\n-e .\n")
    (tree / "pyproject.toml").write_text(
        '[project]\nname = "repo"\ndependencies = []\n'
        '[project.optional-dependencies]\ntest = ["pgextra>=2", "repo[docs]"]\ndocs = ["sphinx"]\n'
    )
    tag = env_image_tag(tree)
    assert tag is not None
    try:
        built = ensure_env_image(tree, index_url=index.url)
        assert built == tag
        asked = len(index.requests)
        assert asked > 0

        assert ensure_env_image(tree, index_url=index.url) == tag
        assert len(index.requests) == asked, "a cached image asked the index again"

        result = sandbox.run(
            RunSpec(
                image=tag,
                argv=("python3", "-c", "import pgdemo, pgextra, pytest; print(pgdemo.VALUE, pgextra.NAME)"),
                copy_in=(Mount(tree, "/work"),),
                limits=Limits(timeout_s=30),
            )
        )
        assert result.ok, result
        assert result.stdout == b"42 extra\n"

        client = docker_client()
        image = client.images.get(tag)
        history = image.history()
        client.close()
        assert TOKEN not in repr(image.attrs), "the index credentials reached the image config"
        assert TOKEN not in repr(history), "the index credentials reached the image history"
        assert image.attrs["Config"]["User"] == "10001:10001"
        assert not any("PIP_" in e for e in image.attrs["Config"]["Env"])
    finally:
        _remove_image(tag)


def test_a_failing_requirement_is_named(index: PackageIndex, tmp_path: Path) -> None:
    (tmp_path / "requirements-dev.txt").write_text(f"pgdemo==1.0\npgmissing==3.1  # {tmp_path.name}\n")
    with pytest.raises(ImageBuildError, match=r"'pgmissing==3\.1' \(from requirements-dev\.txt\)") as info:
        ensure_env_image(tmp_path, index_url=index.url)
    assert TOKEN not in str(info.value), "the error shows the index credentials"
    tag = env_image_tag(tmp_path)
    assert tag is not None
    client = docker_client()
    assert not client.images.list(name=tag), "a failed build left an image behind"
    leftovers = client.containers.list(all=True, filters={"label": f"patchgate.env-build={tag}"}, sparse=True)
    client.close()
    assert leftovers == []


def test_the_repositorys_tool_pins_never_replace_the_gates_tools(
    index: PackageIndex, sandbox: DockerSandbox, tmp_path: Path
) -> None:
    # The fake index has no mypy or ruff: asking it for them would fail the build.
    (tmp_path / "requirements-dev.txt").write_text(
        f"pgdemo==1.0\nmypy==1.4.0\nRuff>=0.1  # {tmp_path.name}\npytest_timeout<2\n"
    )
    tag = ensure_env_image(tmp_path, index_url=index.url)
    try:
        result = sandbox.run(
            RunSpec(
                image=tag,
                argv=("sh", "-c", "mypy --version && ruff --version && python3 -c 'import pgdemo'"),
                limits=Limits(timeout_s=60),
            )
        )
        assert result.ok, result
        assert b"mypy 2.4.1" in result.stdout
        assert b"ruff 0.17.6" in result.stdout
    finally:
        _remove_image(tag)


def test_the_repositorys_dependencies_never_move_bandits_or_semgreps(
    index: PackageIndex, sandbox: DockerSandbox, tmp_path: Path
) -> None:
    # The repository gets its click, rich and stevedore (the system site-packages now hold
    # versions semgrep and bandit cannot import); their own copies live apart and still run.
    (tmp_path / "requirements.txt").write_text("click==1.0\nrich==1.0\nstevedore==1.0\n")
    (tmp_path / "app.py").write_text("import subprocess\nsubprocess.call('ls', shell=True)\n")
    tmp_path.chmod(0o755)  # read by the sandbox's user
    tag = ensure_env_image(tmp_path, index_url=index.url)
    script = (
        "python3 -c 'import click' 2>&1 | tail -n 1; "
        "pysemgrep --version && semgrep --version && "
        "bandit -q -f json /src/app.py | python3 -c 'import json,sys; "
        'print(sorted(r["test_id"] for r in json.load(sys.stdin)["results"]))\''
    )
    try:
        result = sandbox.run(
            RunSpec(
                image=tag,
                argv=("sh", "-c", script),
                mounts=(Mount(tmp_path, "/src"),),
                env={"SEMGREP_ENABLE_VERSION_CHECK": "0"},
                limits=Limits(timeout_s=120, memory_mb=1024),
            )
        )
        assert result.ok, result
        out = result.stdout.decode()
        assert "ImportError: the repository pinned click 1.0" in out  # the project's pin is installed
        assert out.count("1.185.0") == 2
        assert "'B602'" in out  # bandit loaded its plugins (through stevedore): shell=True found
    finally:
        _remove_image(tag)


def test_without_tools_splits_on_project_names(tmp_path: Path) -> None:
    from sandbox.depfiles import read_dependencies
    from sandbox.envimage import without_tools

    (tmp_path / "requirements.txt").write_text("requests>=2\nMyPy==1.4\nruff[x]>=0.1\nmypy-extensions\n")
    keep, dropped = without_tools(read_dependencies(tmp_path).requirements)
    assert [r.text for r in keep] == ["requests>=2", "mypy-extensions"]
    assert [r.text for r in dropped] == ["MyPy==1.4", "ruff[x]>=0.1"]
