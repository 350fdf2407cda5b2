"""Which image each tree runs in: base's environment image, and head's own when the change asks for more.

Base's dependency files (trusted) make the environment image every run
uses. When the head's files ask for a requirement base's do not (a project
added, a version changed), head's runs need it installed: a head image is
built over base's environment (``sandbox/headimage.py``: network only to
the package index, a run's limits, no secrets) and every head run uses it;
base runs keep base's. Requirements the policy refuses
(``dependencies.allow_changes``, ``dependencies.allow``) and those naming a
URL, a VCS or a local path (always refused: the dependencies gate) are
never installed: head then runs in base's image, and the notice says so.

A head image pip cannot build while the index answers is the change's
failure: a ``dependency-install-failed`` finding with pip's error, and no
behaviour run (its numbers would be those of a tree without its
dependencies). An index that does not answer is infrastructure
(``ImageBuildError``, raised to the pipeline: neutral).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from checks.policy import DependencyPolicy
from checks.report import Finding, ShapeResult
from checks.workspace import Workspace
from sandbox.depfiles import Requirement, line_of, name_of, read_dependencies
from sandbox.headimage import InstallFailed, ensure_head_image, head_requirements

INSTALL_FAILED = "dependency-install-failed"
TOOL = "dependencies"
MESSAGE_CHARS = 3000
# The build: (base image, head tree) -> head image tag; raises InstallFailed or ImageBuildError.
Build = Callable[[str, Path], str]


@dataclass(frozen=True)
class HeadEnvironment:
    """Where head's runs go, and what the report says about it."""

    # The image head runs in; empty: the base's environment image (nothing to install).
    image: str = ""
    # Requirements head asks for that base's environment does not have, installed in ``image``.
    installed: tuple[str, ...] = ()
    # The change's dependencies could not be installed: the PR's failure (shape), no behaviour run.
    failed: Finding | None = None
    notices: tuple[str, ...] = ()


def new_requirements(ws: Workspace) -> tuple[Requirement, ...]:
    """Head's requirements that base's dependency files do not ask for, as written (on the index only)."""
    before = {r.text for r in read_dependencies(ws.base_dir).requirements}
    return tuple(r for r in head_requirements(ws.head_dir) if r.text not in before)


def head_environment(
    ws: Workspace, policy: DependencyPolicy, base_image: str, *, build: Build | None = None
) -> HeadEnvironment:
    """Build head's image when the change asks for requirements base's environment lacks.

    Raises ImageBuildError when the index or the engine fails (infrastructure).
    """
    wanted = new_requirements(ws)
    if not wanted:
        return HeadEnvironment()
    refused = [(r, why) for r in wanted if (why := policy.refusal(name_of(r.text)))]
    if refused:
        names = ", ".join(sorted({name_of(r.text) for r, _ in refused}))
        return HeadEnvironment(notices=(
            f"the change's dependencies are not installed for its runs ({names}: {refused[0][1]}): "
            "head runs in the environment built from base's dependency files",
        ))  # fmt: skip
    make = build or ensure_head_image
    try:
        tag = make(base_image, ws.head_dir)
    except InstallFailed as exc:
        return HeadEnvironment(failed=_failed(ws.head_dir, wanted, exc), notices=(
            "behaviour not run: the change's dependencies could not be installed",
        ))  # fmt: skip
    shown = ", ".join(r.text for r in wanted[:10]) + (" …" if len(wanted) > 10 else "")
    return HeadEnvironment(
        image=tag,
        installed=tuple(r.text for r in wanted),
        notices=(f"head runs with the change's dependencies installed ({shown}); base runs without them",),
    )


def _failed(head: Path, wanted: tuple[Requirement, ...], exc: InstallFailed) -> Finding:
    """The finding on the requirement pip names (else the first new one), with pip's error."""
    failing = exc.requirement
    named = next((r for r in wanted if failing is not None and r.text == failing.text), wanted[0])
    line = line_of(head, named)
    return Finding(tool=TOOL, rule=INSTALL_FAILED, path=named.origin, start_line=line, end_line=line,
                   severity="error", message=f"{INSTALL_FAILED}: {exc}"[:MESSAGE_CHARS])  # fmt: skip


def with_head_environment(shape: ShapeResult, head_env: HeadEnvironment) -> ShapeResult:
    """``shape`` with the change's failed dependency install: its finding, and the layer failed."""
    if head_env.failed is None:
        return shape
    return shape.model_copy(update={"status": "failed", "findings": [head_env.failed, *shape.findings]})
