"""How much a sandboxed run costs: prints numbers (not a test).

1. `python3 -c pass` in the sandbox vs on the host: medians, absolute overhead, ratio;
2. a run with a grader (a private file in, a report collected) and a subject that
   meet through /tmp: the median run, and its median outside the grader's own wall
   time (the run's lifecycle: create, start, copy, sweep, collect);
3. 20 short runs submitted at once: runs per second at the sandbox's concurrency;
4. an environment image: cold build vs cached lookup.

Runs follow one another as a layer's do: a container's removal, which ends after
run() returns, overlaps the next run.

``--warm 0,1`` measures 1 and 2 once per value, alternating ``--rounds`` times:
without and with containers made ahead of need (sandbox/pool.py; `patchgate run`
keeps one per shape), beside each other in one run.

Usage: .venv/bin/python bench/sandbox_overhead.py [--repeat 10] [--parallel 20]
       [--concurrency 4] [--requirement six==1.16.0] [--index-url URL]
       [--warm 1] [--rounds 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.copyin import CONTAINER_TMP  # noqa: E402 - after the path set-up above
from sandbox.docker import WARM_PER_SHAPE, DockerSandbox  # noqa: E402
from sandbox.engine import docker_client  # noqa: E402
from sandbox.envimage import ensure_env_image  # noqa: E402
from sandbox.host import run_process  # noqa: E402
from sandbox.images import ensure_base_image  # noqa: E402
from sandbox.reaper import wait_removals  # noqa: E402
from sandbox.spec import Grader, Limits, Mount, RunSpec  # noqa: E402

TRIVIAL = ("python3", "-c", "pass")
LIMITS = Limits(timeout_s=60, memory_mb=256, tmpfs_mb=64)
# The grader waits for the subject's mark, as a real one waits for the subject to connect.
GRADER = """
import os, time
plan = open("/grader/plan").read()
while not os.path.exists("/tmp/ready"):
    time.sleep(0.002)
open("/grader/report", "w").write(plan)
"""
SUBJECT = ("python3", "-c", "open('/tmp/ready', 'w').close()")


def timed(action: object) -> float:
    started = time.perf_counter()
    action()  # type: ignore[operator]
    return time.perf_counter() - started


def lifecycle(box: DockerSandbox, image: str, spec: RunSpec, host_med: float, repeat: int) -> None:
    """Print sections 1 and 2 for ``box``: runs one after another, as a layer's."""
    box.run(spec)  # the first run of a shape makes its own (and, warm, the next one's)

    def one() -> None:
        result = box.run(spec)
        assert result.ok, result

    boxed = [timed(one) for _ in range(repeat)]
    box_med = statistics.median(boxed)
    print(f"  python3 -c pass, median of {repeat}:")
    print(
        f"    sandbox  {box_med * 1000:8.1f} ms   (min {min(boxed) * 1000:.1f}, max {max(boxed) * 1000:.1f})"
    )
    print(f"    overhead {(box_med - host_med) * 1000:8.1f} ms per run, ratio {box_med / host_med:.1f}x")
    with tempfile.TemporaryDirectory() as scratch:
        plan = Path(scratch) / "plan"
        plan.write_text("the plan\n")
        graded = RunSpec(
            image=image,
            argv=SUBJECT,
            workdir=CONTAINER_TMP,
            limits=LIMITS,
            grader=Grader(
                argv=("python3", "-c", GRADER),
                private=(Mount(plan, "/grader/plan"),),
                collect=("/grader/report",),
            ),
        )
        box.run(graded)
        totals, outside = [], []
        for _ in range(repeat):
            started = time.perf_counter()
            result = box.run(graded)
            totals.append(time.perf_counter() - started)
            outside.append(totals[-1] - result.wall_s)
            assert result.ok, result
            assert result.files == {"/grader/report": b"the plan\n"}, result
    print(f"  a run with a grader, median of {repeat}:")
    print(f"    run      {statistics.median(totals) * 1000:8.1f} ms   (min {min(totals) * 1000:.1f})")
    print(f"    outside the grader's wall time {statistics.median(outside) * 1000:8.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--parallel", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--requirement", default="six==1.16.0", help="what the env image installs")
    parser.add_argument("--index-url", default=None, help="package index for the env image build")
    parser.add_argument("--warm", default=str(WARM_PER_SHAPE), help="containers made ahead, e.g. 0,1")
    parser.add_argument("--rounds", type=int, default=1, help="alternations of the --warm values")
    args = parser.parse_args()

    image = ensure_base_image()
    box = DockerSandbox(max_concurrency=args.concurrency)
    spec = RunSpec(image=image, argv=TRIVIAL, limits=LIMITS)
    box.run(spec)  # warm the engine's caches and the client connection

    def one() -> None:
        result = box.run(spec)
        assert result.ok, result

    # The host's interpreter itself, not a launcher shim in front of it.
    host_argv = (sys.executable, *TRIVIAL[1:])
    host = [timed(lambda: run_process(host_argv, check=True)) for _ in range(args.repeat)]
    host_med = statistics.median(host)
    print(f"python3 -c pass on the host, median of {args.repeat}: {host_med * 1000:8.1f} ms")
    for round_number in range(args.rounds):
        for warm in (int(w) for w in args.warm.split(",")):
            print(f"round {round_number + 1}, warm={warm} (containers made ahead per shape):")
            with DockerSandbox(max_concurrency=args.concurrency, warm=warm) as turn:
                lifecycle(turn, image, spec, host_med, args.repeat)

    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        started = time.perf_counter()
        list(pool.map(lambda _: one(), range(args.parallel)))
        elapsed = time.perf_counter() - started
    print(f"{args.parallel} runs submitted at once, concurrency {args.concurrency}:")
    print(f"  {elapsed:.2f} s in all, {args.parallel / elapsed:.2f} runs/s")

    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch)
        # A unique comment makes a new tag, so the first build is really cold.
        (tree / "requirements.txt").write_text(f"{args.requirement}  # bench {uuid.uuid4().hex}\n")
        tag = ""

        def build() -> None:
            nonlocal tag
            tag = ensure_env_image(tree, index_url=args.index_url)

        cold = timed(build)
        cached = timed(build)
    client = docker_client()
    client.images.remove(tag, force=True)
    client.close()
    print(f"environment image ({args.requirement}):")
    print(f"  cold build {cold:8.2f} s")
    print(f"  cached     {cached:8.2f} s")
    wait_removals(60)
    box.client().close()


if __name__ == "__main__":
    main()
