"""The built wheel on its own: a fresh virtualenv runs `patchgate demo` and `patchgate setup`.

The wheel is built offline from a copy of the sources (no build isolation: the
dev extra installs the backend) and installed with ``--no-deps`` into a new
virtualenv; the dependencies come from the project's .venv through a ``.pth``
line. That line adds the directory only: the editable install's own ``.pth``
there is not processed, so patchgate itself can only come from the wheel - the
first test checks it does. The commands run from a directory outside the
checkout.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import site
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.bot.harness import free_port, wait_for

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PROJECT_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
# What `pip wheel .` reads (as sandbox/serviceimage.py's SOURCES, plus the licence file).
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "bot", "checks", "sandbox", "rubrics")
_NOT_SOURCES = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache", ".pytest_cache")


@dataclass(frozen=True)
class Installed:
    wheel: Path
    venv: Path
    site_packages: Path
    elsewhere: Path  # a working directory outside the checkout

    @property
    def patchgate(self) -> str:
        return str(self.venv / "bin" / "patchgate")

    def env(self, **extra: str) -> dict[str, str]:
        kept = {
            k: v for k, v in os.environ.items() if not k.startswith(("PATCHGATE_", "PYTHON", "VIRTUAL_ENV"))
        }
        return {**kept, "PATCHGATE_CONFIG": str(self.elsewhere / "absent.env"), **extra}


def _run(
    argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    top = tmp_path_factory.mktemp("wheel")
    src = top / "src"
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=_NOT_SOURCES)
        else:
            src.mkdir(exist_ok=True)
            shutil.copyfile(ROOT / name, src / name)
    dist = top / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", str(dist), str(src)])
    [wheel] = dist.glob("patchgate-*.whl")
    venv = top / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    _run([*pip, "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)])
    found = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    site_packages = Path(found.stdout.strip())
    (site_packages / "patchgate-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    elsewhere = top / "elsewhere"
    elsewhere.mkdir()
    return Installed(wheel, venv, site_packages, elsewhere)


def test_patchgate_comes_from_the_wheel(installed: Installed) -> None:
    script = (
        "import importlib.metadata as m, bot, checks, sandbox, rubrics\n"
        "print(*[p.__file__ for p in (bot, checks, sandbox, rubrics)], sep='\\n')\n"
        "print(m.distribution('patchgate').read_text('INSTALLER').strip())\n"
    )
    done = _run(
        [str(installed.venv / "bin" / "python"), "-c", script], cwd=installed.elsewhere, env=installed.env()
    )
    *files, installer = done.stdout.splitlines()
    for file in files:
        assert Path(file).is_relative_to(installed.site_packages), file
    assert installer == "pip"
    shown = _run([installed.patchgate, "--version"], env=installed.env()).stdout.strip()
    assert shown == f"patchgate {PROJECT_VERSION}"


def test_the_wheel_carries_the_example_the_manifest_and_the_image_recipes(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    for tree in ("bot/cli/examples", "sandbox/images"):
        on_disk = {
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / tree).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert on_disk, tree
        assert on_disk <= names, sorted(on_disk - names)
    assert "bot/cli/app-manifest.json" in names
    assert "bot/cli/examples/duration/repo/.github/patchgate.yml" in names  # a dot-directory too
    # the store finds its migrations beside it (bot/store/migrations/__init__.py), in the wheel too
    assert "bot/store/alembic.ini" in names
    assert "bot/web/templates/run.html" in names  # the run page's markup
    assert "bot/store/migrations/script.py.mako" in names
    assert "bot/store/migrations/versions/0001_initial.py" in names


@pytest.mark.docker
def test_patchgate_demo_runs_from_the_installed_wheel(installed: Installed) -> None:
    db = installed.elsewhere / "demo.db"
    done = subprocess.run(
        [installed.patchgate, "demo", "--database", f"sqlite:///{db}"],
        cwd=installed.elsewhere,
        env=installed.env(),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    # The demo exits 0 only when each PR's conclusion is the one its pr.yml expects.
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.split("=== summary ===")[1]
    for branch in ("agent/parse-duration ", "agent/parse-duration-regex", "agent/parse-duration-green"):
        assert f"✓ {branch}" in summary
    assert "hidden 21/21 (100%)" in done.stdout
    assert db.is_file()


@pytest.fixture
def setup_process(installed: Installed) -> Iterator[tuple[subprocess.Popen[str], int]]:
    port = free_port()
    proc = subprocess.Popen(
        [installed.patchgate, "setup", "--port", str(port), "--config", str(installed.elsewhere / "cfg.env")],
        cwd=installed.elsewhere,  # no deploy/ here: the manifest must come from the package
        env=installed.env(
            PATCHGATE_GITHUB_URL="https://github.example",
            PATCHGATE_GITHUB_API_URL="https://api.github.example",
            PATCHGATE_PUBLIC_URL="https://gate.example.org",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        yield proc, port
    finally:
        proc.kill()
        proc.wait(timeout=30)
        assert proc.stdout is not None
        proc.stdout.close()


def test_patchgate_setup_serves_the_packaged_manifest(
    installed: Installed, setup_process: tuple[subprocess.Popen[str], int]
) -> None:
    # Offline, the flow goes as far as the page that would send the manifest to GitHub.
    proc, port = setup_process

    def page() -> str | None:
        if proc.poll() is not None:
            assert proc.stdout is not None
            raise AssertionError(f"patchgate setup exited {proc.returncode}: {proc.stdout.read()}")
        try:
            return httpx.get(f"http://127.0.0.1:{port}/", timeout=5).text
        except httpx.TransportError:
            return None

    text = wait_for(page, 60, "the set-up page")
    field = re.search(r'name=manifest value="([^"]+)"', text)
    assert field is not None, text
    manifest = json.loads(html.unescape(field.group(1)))
    packaged = json.loads((installed.site_packages / "bot" / "cli" / "app-manifest.json").read_text())
    assert manifest["hook_attributes"]["url"] == "https://gate.example.org/webhook"
    assert manifest["redirect_url"] == f"http://127.0.0.1:{port}/callback"
    assert manifest["default_permissions"] == packaged["default_permissions"]
    assert manifest["default_events"] == packaged["default_events"]
    assert 'action="https://github.example/settings/apps/new?state=' in text
    proc.send_signal(signal.SIGINT)  # what Ctrl-C does: the command stops waiting for GitHub
    assert proc.wait(timeout=30) == 130
    assert proc.stdout is not None
    assert "open http://127.0.0.1:" in proc.stdout.read()
    assert not (installed.elsewhere / "cfg.env").exists()
