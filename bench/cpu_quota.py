"""How much CPU a run gets under a quota and without one: prints numbers (not a test).

Two processes spin for 2 s of wall time in one sandbox run, once with
``cpus=0.25`` and once with ``cpus=2.0``; the CPU seconds each run used and
their ratio are printed. The test suite asserts only the capped bound,
which load on the machine cannot break; this ratio depends on that load.

Usage: .venv/bin/python bench/cpu_quota.py [--image patchgate-base:latest]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sandbox.docker import DockerSandbox  # noqa: E402 - after the path set-up above
from sandbox.spec import Limits, RunSpec  # noqa: E402

PROGRAM = """
import json, os, resource, time
end = time.time() + 2.0
pids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        while time.time() < end:
            pass
        os._exit(0)
    pids.append(pid)
for pid in pids:
    os.waitpid(pid, 0)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime}))
"""


def cpu_seconds(sandbox: DockerSandbox, image: str, cpus: float) -> float:
    spec = RunSpec(image=image, argv=("python3", "-c", textwrap.dedent(PROGRAM)), limits=Limits(cpus=cpus))
    return float(json.loads(sandbox.run(spec).stdout)["cpu"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="patchgate-base:latest")
    args = parser.parse_args()
    sandbox = DockerSandbox(max_concurrency=1)
    capped = cpu_seconds(sandbox, args.image, 0.25)
    free = cpu_seconds(sandbox, args.image, 2.0)
    print(f"cpus=0.25: {capped:.2f} CPU s (quota allows 0.50)")
    print(f"cpus=2.0:  {free:.2f} CPU s (two spinners could use 4.00)")
    print(f"ratio capped/free: {capped / free:.2f} (0.25/2 cores on an idle machine: ~0.13)")


if __name__ == "__main__":
    main()
