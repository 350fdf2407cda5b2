"""The head's environment image: the change's dependencies, installed through the way out to the index alone.

Real Docker and a real https index (the tests' fake, a certificate of its
own) on the bridge's gateway, beside a "neighbour" standing for anything
else the host offers.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.docker import DockerSandbox
from sandbox.engine import docker_client
from sandbox.errors import ImageBuildError
from sandbox.execution import SANDBOX_UID
from sandbox.grader import GRADER_UID
from sandbox.headimage import (
    BuildLimits,
    InstallFailed,
    ensure_head_image,
    has_credentials,
    head_requirements,
)
from sandbox.spec import Limits, RunSpec
from tests.fakes.package_index import Neighbour, PackageIndex, bridge_gateway, https_index, neighbour_on

pytestmark = pytest.mark.docker

TOKEN = "tok-head-build-5e1f"

# A build step of the change's choosing: an sdist whose setup.py tries every way out but the index,
# then claims the index was down (the words pip prints for an outage) and fails.
HOSTILE_SETUP = r"""
import socket, sys
seen = {}
for name, target in (("neighbour", ("{gateway}", {port})), ("a public name", ("example.com", 443)),
                     ("the index directly", ("{gateway}", {index_port}))):
    try:
        socket.create_connection(target, timeout=5).close()
        seen[name] = "connected"
    except Exception as exc:
        seen[name] = "error: " + type(exc).__name__
print("PROBE", seen, file=sys.stderr)
print("ProxyError('Cannot connect to proxy.') Max retries exceeded: the index is down", file=sys.stderr)
sys.exit(1)
"""


@pytest.fixture(scope="module")
def gateway(base_image: str) -> str:
    return bridge_gateway()


@pytest.fixture(scope="module")
def neighbour(gateway: str) -> Iterator[Neighbour]:
    with neighbour_on(gateway) as found:
        yield found


@pytest.fixture(scope="module")
def private_index(
    gateway: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[PackageIndex, Path]]:
    served = PackageIndex(user="builder", password=TOKEN)
    served.add("pghead", "1.0", "VALUE = 'from the index'\n")
    served.add_sdist("pgsdist", "1.0", "raise SystemExit('an sdist ran with the credentials present')\n")
    # An sdist that shows what it can read where it is built: pip prints it, the finding shows pip.
    served.add_sdist(
        "pgleak",
        "1.0",
        ("import sys\nsys.exit(open('/run/patchgate-build/pip.conf').read().splitlines()[1])\n"),
    )
    with https_index(served, gateway, tmp_path_factory.mktemp("private-certs")) as running:
        yield running


@pytest.fixture(scope="module")
def public_index(
    gateway: str, neighbour: Neighbour, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[PackageIndex, Path]]:
    served = PackageIndex()
    with https_index(served, gateway, tmp_path_factory.mktemp("public-certs")) as running:
        port = int(running[0].url.rsplit(":", 1)[1].split("/")[0])
        setup = HOSTILE_SETUP.replace("{gateway}", gateway).replace("{port}", str(neighbour.port))
        served.add_sdist("pgprobe", "1.0", setup.replace("{index_port}", str(port)))
        served.add_sdist("pgsleeper", "1.0", "import time\ntime.sleep(600)\n")
        # A build step that plants a .pth in the image's own site-packages, where the grader would run it.
        served.add_sdist("pgplant", "1.0", (
            "import site, sys\n"
            "try:\n"
            "    open(site.getsitepackages()[0] + '/pgplant.pth', 'w').write('import os\\n')\n"
            "    print('PLANTED', file=sys.stderr)\n"
            "except OSError as exc:\n"
            "    print('REFUSED', type(exc).__name__, file=sys.stderr)\n"
            "sys.exit(1)\n"
        ))  # fmt: skip
        served.add(
            "pgpth",
            "1.0",
            "VALUE = 'head'\n",
            extra={"pgpth.pth": "import os; os.environ['PGPTH'] = 'ran'\n"},
        )
        # A build step that talks without end: 64 MiB on stdout, then a failure.
        served.add_sdist(
            "pgtalk",
            "1.0",
            "import os\nfor _ in range(1024):\n    os.write(1, b'x' * 65535 + b'\\n')\nraise SystemExit(1)\n",
        )
        yield running


def _tree(root: Path, requirements: str) -> Path:
    root.mkdir(parents=True)
    (root / "requirements.txt").write_text(requirements)
    return root


@contextlib.contextmanager
def _removed_after(tag: str | None = None) -> Iterator[list[str]]:
    made: list[str] = [tag] if tag else []
    try:
        yield made
    finally:
        client = docker_client()
        for image in made:
            with contextlib.suppress(Exception):
                client.images.remove(image, force=True)
        client.close()


def test_a_new_dependency_is_installed_from_the_index_and_the_image_is_reused(
    private_index: tuple[PackageIndex, Path], base_image: str, sandbox: DockerSandbox, tmp_path: Path
) -> None:
    index, ca = private_index
    # A comment no other test writes: the requirement set, so the tag, is this test's own.
    head = _tree(tmp_path / "head", f"pghead==1.0  # {tmp_path.name}\n")
    with _removed_after() as made:
        tag = ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
        made.append(tag)
        asked = len(index.requests)
        assert ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca) == tag
        assert len(index.requests) == asked, "an image already built asked the index again"
        ran = sandbox.run(
            RunSpec(image=tag, argv=("python3", "-c", "import pghead; print(pghead.VALUE)"),
                    limits=Limits(timeout_s=60))
        )  # fmt: skip
        assert ran.stdout.decode().strip() == "from the index", ran.stderr
        # The credentials reached pip through the build's mount only: nothing of them is in the image.
        client = docker_client()
        try:
            image = client.images.get(tag)
            assert TOKEN not in str(image.attrs["Config"]) and TOKEN not in str(image.history())
        finally:
            client.close()
        found = sandbox.run(
            RunSpec(image=tag, argv=("sh", "-c", f"grep -rl {TOKEN} /etc /usr /root /tmp 2>/dev/null; true"),
                    limits=Limits(timeout_s=120))
        )  # fmt: skip
        assert found.stdout.strip() == b"", found.stdout


def test_a_dependency_the_index_does_not_have_is_the_changes_failure_naming_it(
    private_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = private_index
    head = _tree(tmp_path / "head", "pghead==1.0\nno-such-project-pg==3.1\n")
    with pytest.raises(InstallFailed, match="no-such-project-pg") as failed:
        ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
    assert "No matching distribution" in failed.value.output


def test_with_credentials_in_the_index_url_no_sdist_is_built(
    private_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = private_index
    assert has_credentials(index.url)
    head = _tree(tmp_path / "head", "pgsdist==1.0\n")
    with pytest.raises(InstallFailed) as failed:
        ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
    assert "an sdist ran" not in failed.value.output
    assert "pgsdist" in str(failed.value)


def test_a_build_step_reaches_nothing_but_the_index_and_cannot_pass_for_an_outage(
    public_index: tuple[PackageIndex, Path], neighbour: Neighbour, base_image: str, tmp_path: Path
) -> None:
    index, ca = public_index
    assert not has_credentials(index.url)
    before = len(neighbour.connections)
    head = _tree(tmp_path / "head", "pgprobe==1.0\n")
    with pytest.raises(InstallFailed) as failed:
        ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
    output = failed.value.output
    # The setup.py ran (pip printed its probe), and every way out it tried was closed.
    assert "PROBE" in output, output
    probe = output[output.index("PROBE") :].splitlines()[0]
    assert "connected" not in probe, probe
    assert probe.count("error: ") == 3, probe
    assert neighbour.connections[before:] == []


def test_an_index_that_does_not_answer_is_infrastructure_not_the_change(
    base_image: str, gateway: str, tmp_path: Path
) -> None:
    served = PackageIndex()
    with https_index(served, gateway, tmp_path / "certs") as (running, ca):
        url = running.url
    # The index is gone (its server stopped): pip cannot reach it, and neither can the host's probe.
    head = _tree(tmp_path / "head", "pghead==1.0\n")
    with pytest.raises(ImageBuildError, match="did not answer"):
        ensure_head_image(base_image, head, index_url=url, ca_bundle=ca)


def test_requirements_that_name_a_url_or_a_path_are_never_installed(tmp_path: Path) -> None:
    head = _tree(
        tmp_path / "head",
        "pghead==1.0\nevil @ https://example.com/evil.whl\ngit+https://example.com/x.git\n./local\n",
    )
    assert [r.text for r in head_requirements(head)] == ["pghead==1.0"]


def test_a_build_past_its_time_is_the_changes_failure_and_leaves_no_container(
    public_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = public_index
    head = _tree(tmp_path / "head", "pgsleeper==1.0\n")
    said: list[str] = []
    limits = BuildLimits(timeout_s=8)
    with pytest.raises(InstallFailed, match="took more than 8 s"):
        ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca, limits=limits, log=said.append)
    # The build and its proxy, by the names the build gave them (other builds may share the engine).
    names = re.findall(r"patchgate-(?:headbuild|egress)-[0-9a-f]{12}", "\n".join(said))
    assert len(set(names)) == 2, said
    client = docker_client()
    try:
        assert [c.name for c in client.containers.list(all=True) if c.name in names] == []
    finally:
        client.close()


def test_a_requirement_string_cannot_smuggle_pip_options_past_wheels_only(
    private_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = private_index
    head = tmp_path / "head"
    head.mkdir()
    # A TOML string holds a newline: written a line a requirement, the second line was a pip option
    # of the build's requirements file, which turned `--only-binary :all:` around (an sdist ran
    # beside pip.conf and printed the token into the finding).
    (head / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["pghead==1.0", "pgleak==1.0\\n--no-binary :all:"]\n'
    )
    # The option after the newline is no part of a PEP 508 string: only the requirement reaches pip.
    assert [r.text for r in head_requirements(head)] == ["pghead==1.0", "pgleak==1.0"]
    with pytest.raises(InstallFailed) as failed:
        ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
    # Wheels only: pgleak has none, and its setup.py never ran beside the credentials.
    assert TOKEN not in failed.value.output
    assert "pgleak" in str(failed.value)


def test_a_token_given_as_the_index_urls_user_never_reaches_the_finding(
    base_image: str, gateway: str, tmp_path: Path
) -> None:
    # Gemfury's form, https://TOKEN:@host/...: pip masks the empty password and prints the token.
    served = PackageIndex(user=TOKEN, password="")
    with https_index(served, gateway, tmp_path / "certs") as (running, ca):
        assert f"//{TOKEN}:@" in running.url
        head = _tree(tmp_path / "head", "no-such-project-pg==3.1\n")
        with pytest.raises(InstallFailed) as failed:
            ensure_head_image(base_image, head, index_url=running.url, ca_bundle=ca)
    assert "no-such-project-pg" in str(failed.value)
    assert TOKEN not in str(failed.value)
    assert TOKEN not in failed.value.output


def test_what_a_build_step_prints_is_bounded_on_the_host(
    public_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = public_index
    head = _tree(tmp_path / "head", "pgtalk==1.0\n")
    with pytest.raises(InstallFailed) as failed:
        ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
    # The engine's log of the build and the host's copy of it: neither grows with what the step prints.
    assert len(failed.value.output) <= 4 * 1024 * 1024


def test_a_build_step_cannot_write_the_images_own_site_packages(
    public_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = public_index
    head = _tree(tmp_path / "head", "pgplant==1.0\n")
    with pytest.raises(InstallFailed) as failed:
        ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
    assert "REFUSED PermissionError" in failed.value.output
    assert "PLANTED" not in failed.value.output


def test_the_changes_packages_reach_every_process_but_the_graders(
    public_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = public_index
    head = _tree(tmp_path / "head", f"pgpth==1.0  # {tmp_path.name}\n")
    show = (
        "import os\ntry:\n    import pgpth\n    print(pgpth.VALUE, os.environ.get('PGPTH'))\n"
        "except ImportError:\n    print('absent', os.environ.get('PGPTH'))\n"
    )
    with _removed_after() as made:
        tag = ensure_head_image(base_image, head, index_url=index.url, ca_bundle=ca)
        made.append(tag)
        client = docker_client()
        try:
            seen = {
                uid: client.containers.run(tag, ["python3", "-P", "-s", "-c", show], user=f"{uid}:{uid}",
                                           network_mode="none", remove=True).decode().strip()
                for uid in (SANDBOX_UID, GRADER_UID)
            }  # fmt: skip
        finally:
            client.close()
    # The subject imports the change's package (its .pth ran); the grader neither.
    assert seen == {SANDBOX_UID: "head ran", GRADER_UID: "absent None"}


def test_an_index_refusing_the_gates_credentials_is_infrastructure_not_the_change(
    private_index: tuple[PackageIndex, Path], base_image: str, tmp_path: Path
) -> None:
    index, ca = private_index
    # The service's token expired (or was revoked): every change adding a dependency would fail for it.
    expired = index.url.replace(TOKEN, "tok-expired-0000")
    head = _tree(tmp_path / "head", "pghead==1.0\n")
    with pytest.raises(ImageBuildError, match="refused"):
        ensure_head_image(base_image, head, index_url=expired, ca_bundle=ca)
