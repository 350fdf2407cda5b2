#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, lint, type-check, tests.
# Real-component tests (Docker, PostgreSQL, Redis, the server process) must
# run: PATCHGATE_REQUIRE_REAL=1 turns any skipped test into a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
if [ "${CI:-}" = true ]; then
  # CI proves the sandbox base image still builds from packages alone (debootstrap, no registry).
  echo "[test] rebuilding the sandbox base image from scratch" >&2
  .venv/bin/patchgate sandbox build --force
fi
eval "$(bash scripts/services.sh)"
# The service image FROM the same rootfs (tests/deploy/test_image.py runs it); a no-op when the
# sources are unchanged, a couple of minutes (pip install) when they changed.
echo "[test] service image" >&2
.venv/bin/patchgate image build >/dev/null

echo "[test] ruff" >&2
.venv/bin/ruff check .
.venv/bin/ruff format --check .
echo "[test] mypy --strict" >&2
.venv/bin/mypy
echo "[test] pytest" >&2
PATCHGATE_REQUIRE_REAL=1 exec .venv/bin/pytest "$@"
