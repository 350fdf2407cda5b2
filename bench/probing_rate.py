"""How often grader-probing flags ordinary code: prints numbers (not a test).

Downloads the source distributions of popular packages from PyPI (pip
download --no-deps --no-binary :all:), treats every line of their non-test
Python code as added by a PR (the worst case: a real PR exposes only its own
lines), and runs the rule over it. Well-maintained libraries do not game
test suites, so every finding is a false positive in the rule's sense: code
a maintainer reads and waves through. Prints findings per 10,000 lines per
package and by kind; ``--show`` lists each finding to classify by hand.

Usage: .venv/bin/python bench/probing_rate.py [--dest DIR] [--show] [name==version ...]
"""

from __future__ import annotations

import argparse
import sys
import tarfile
import tempfile
import zipfile
from collections import Counter
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checks.shape.hygiene.probing import probes  # noqa: E402 - after the path set-up above
from checks.shape.hygiene.pysource import parse_module  # noqa: E402
from checks.testinfra.files import is_test_module  # noqa: E402
from sandbox.host import run_process  # noqa: E402

# Popular, well-maintained, and varied: web frameworks, clients, CLIs, ORMs, a test runner.
PACKAGES = (
    "requests==2.32.3",
    "flask==3.1.0",
    "werkzeug==3.1.3",
    "jinja2==3.1.6",
    "click==8.1.8",
    "httpx==0.28.1",
    "rich==13.9.4",
    "attrs==25.1.0",
    "pydantic==2.10.6",
    "fastapi==0.115.8",
    "sqlalchemy==2.0.38",
    "django==5.1.6",
    "urllib3==2.3.0",
    "packaging==24.2",
    "pytest==8.3.4",
)


def download(spec: str, dest: Path) -> Path:
    """Download one sdist into ``dest`` (once) and return its path."""
    name, _, version = spec.partition("==")
    prefix = _normal(f"{name}-{version}")

    def present() -> list[Path]:
        return [p for p in dest.iterdir() if _normal(p.name).startswith(prefix)]

    if not present():
        pip = (sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:")
        run_process((*pip, "--dest", str(dest), spec), timeout=600, check=True, what=f"download {spec}")
    return present()[0]


def _normal(name: str) -> str:
    # sdist names vary in case and separators (Flask-3.1.0, flask-3.1.0, sqlalchemy-2.0.38).
    return name.lower().replace("-", "_").replace(".", "_")


def sources(sdist: Path) -> dict[str, bytes]:
    """Every non-test .py file of an sdist, by its path inside the project (the top folder dropped)."""
    out: dict[str, bytes] = {}
    if sdist.suffix == ".zip":
        with zipfile.ZipFile(sdist) as z:
            for info in z.infolist():
                rel = _wanted(info.filename)
                if rel is not None and not info.is_dir():
                    out[rel] = z.read(info)
        return out
    with tarfile.open(sdist) as t:
        for member in t.getmembers():
            rel = _wanted(member.name)
            handle = t.extractfile(member) if rel is not None and member.isfile() else None
            if rel is not None and handle is not None:
                out[rel] = handle.read()
    return out


def _wanted(name: str) -> str | None:
    rel = "/".join(PurePosixPath(name).parts[1:])
    return rel if rel.endswith(".py") and not is_test_module(rel) else None


def measure(files: dict[str, bytes]) -> tuple[int, list[tuple[str, int, str]]]:
    """Return the lines examined and each finding (path, line, what)."""
    lines = 0
    found: list[tuple[str, int, str]] = []
    for rel, data in sorted(files.items()):
        tree = parse_module(data)
        if tree is None:
            continue
        lines += data.count(b"\n")
        found += [(rel, h.line, h.what.replace("\x00", "{}")) for h in probes(tree)]
    return lines, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=list(PACKAGES))
    parser.add_argument("--dest", type=Path, help="where sdists are kept (default: a temporary folder)")
    parser.add_argument("--show", action="store_true", help="list every finding")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dest = args.dest or Path(tmp)
        dest.mkdir(parents=True, exist_ok=True)
        total_lines = total_found = 0
        print("| package | lines | findings | per 10k lines | kinds |")
        print("| --- | --- | --- | --- | --- |")
        for spec in args.packages:
            lines, found = measure(sources(download(spec, dest)))
            kinds = Counter(k for _, _, what in found for k in _kinds(what))
            shown = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "-"
            rate = len(found) * 1e4 / max(lines, 1)
            print(f"| {spec.replace('==', ' ')} | {lines} | {len(found)} | {rate:.1f} | {shown} |")
            total_lines, total_found = total_lines + lines, total_found + len(found)
            if args.show:
                for path, line, what in found:
                    print(f"    {path}:{line}: {what}", file=sys.stderr)
        rate = total_found * 1e4 / max(total_lines, 1)
        print(f"| **all** | {total_lines} | {total_found} | {rate:.1f} | |")


def _kinds(what: str) -> list[str]:
    return [part.rsplit("(", 1)[-1].rstrip(")") for part in what.split("; ")]


if __name__ == "__main__":
    main()
