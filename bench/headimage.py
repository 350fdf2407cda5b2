"""What a change that adds a dependency costs: the head image build, cold and cached (not a test).

The day-one example (examples/dayone) gated through the real pipeline and
Docker, three ways per round, alternating, each on a repository of its own:

- **baseline**: the Kelvin PR as it is (no dependency file touched: head
  runs in base's environment image);
- **cold**: the same PR with a ``requirements.txt`` asking for a real
  package from the index (``--dependency``, default humanize), its head
  image removed first: the build (the egress proxy, pip through it, the
  commit) is on the path;
- **cached**: the same again, its head image kept from the cold run.

Prints each time, the head image's own share (the report's ``head
environment image`` timing), and the ratios to the baseline with the load
average (the machine may be shared). The index is ``PIP_INDEX_URL``
(default PyPI, https) with the host's CA bundle, as in production.

Usage: .venv/bin/python bench/headimage.py [--rounds 3] [--dependency REQ]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bot.cli.demo_repo import build_example, bundled_example  # noqa: E402 - after the path set-up above
from checks.pipeline import PipelineInputs, run_pipeline  # noqa: E402
from checks.policyfile import load_policy  # noqa: E402
from checks.report import Report  # noqa: E402
from checks.workspace import from_git  # noqa: E402
from sandbox.docker import DockerSandbox  # noqa: E402
from sandbox.engine import docker_client  # noqa: E402
from sandbox.envimage import ensure_env_image  # noqa: E402
from sandbox.headimage import ensure_head_image  # noqa: E402
from sandbox.host import run_process  # noqa: E402

BRANCH = "agent/kelvin"


def git(repo: Path, *args: str) -> None:
    run_process(("git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=b@example.com", *args),
                timeout=60, check=True, what="git")  # fmt: skip


def make_repo(dest: Path, dependency: str | None) -> Path:
    """The day-one example at ``dest``; with ``dependency``, the Kelvin PR also asks for it."""
    build_example(bundled_example("dayone"), dest)
    if dependency is not None:
        git(dest, "checkout", "-q", BRANCH)
        (dest / "requirements.txt").write_text(f"{dependency}\n")
        git(dest, "add", "requirements.txt")
        git(dest, "commit", "-q", "-m", "needs a dependency")
        git(dest, "checkout", "-q", "main")
    return dest


def gate(repo: Path, work: Path, sandbox: DockerSandbox) -> tuple[float, Report]:
    ws = from_git(repo, "main", BRANCH, work)
    policy = load_policy((repo / ".github" / "patchgate.yml").read_text())
    start = time.monotonic()
    report = run_pipeline(PipelineInputs(workspace=ws, policy=policy, runner=sandbox))
    return time.monotonic() - start, report


def remove_head_image(repo: Path, work: Path) -> None:
    """Remove the head image this repository's change would use, so the next gate builds it."""
    ws = from_git(repo, "main", BRANCH, work)
    tag = ensure_head_image(ensure_env_image(ws.base_dir), ws.head_dir)
    client = docker_client()
    try:
        client.images.remove(tag, force=True)
    finally:
        client.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dependency", default="humanize==4.12.3")
    args = parser.parse_args()
    sandbox = DockerSandbox()
    ratios: dict[str, list[float]] = {"cold": [], "cached": []}
    builds: list[float] = []
    print(
        f"dependency: {args.dependency}; index: {os.environ.get('PIP_INDEX_URL', 'https://pypi.org/simple')}"
    )
    for n in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory(prefix="patchgate-bench-head-") as tmp:
            scratch = Path(tmp)
            plain = make_repo(scratch / "plain", None)
            needing = make_repo(scratch / "needing", args.dependency)
            remove_head_image(needing, scratch / "ws-remove")
            base_s, base_report = gate(plain, scratch / "ws-base", sandbox)
            cold_s, cold_report = gate(needing, scratch / "ws-cold", sandbox)
            cached_s, cached_report = gate(needing, scratch / "ws-cached", sandbox)
            build = cold_report.timings.get("head environment image", 0.0)
            builds.append(build)
            for name, report in (("baseline", base_report), ("cold", cold_report), ("cached", cached_report)):
                if report.conclusion != "success":
                    print(f"  round {n}: {name} concluded {report.conclusion}: {report.reasons}")
            ratios["cold"].append(cold_s / base_s)
            ratios["cached"].append(cached_s / base_s)
            load = os.getloadavg()[0]
            cached_build = cached_report.timings.get("head environment image", 0.0)
            print(
                f"round {n}: baseline {base_s:.1f} s · cold {cold_s:.1f} s (head image {build:.1f} s) = "
                f"{cold_s / base_s:.2f}x · cached {cached_s:.1f} s (head image {cached_build:.1f} s) = "
                f"{cached_s / base_s:.2f}x · load {load:.1f}"
            )
    print(
        f"median: cold {statistics.median(ratios['cold']):.2f}x, "
        f"cached {statistics.median(ratios['cached']):.2f}x of the baseline; "
        f"head image build {statistics.median(builds):.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
