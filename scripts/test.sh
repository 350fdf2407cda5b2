#!/usr/bin/env bash
# The whole test suite, as CI runs it: set-up, lint, type-check, tests.
# Real-component tests (Docker, PostgreSQL, Redis, the server process) must
# run: PATCHGATE_REQUIRE_REAL=1 turns any skipped test into a failure.
#
# --fast: the inner loop (under a minute warm): ruff, mypy and lint-imports beside every test not marked
# docker, postgres, redis, server or slow. No set-up, no services, no Docker:
# an unmarked test that reaches for Docker fails (tests/conftest.py).
# Extra arguments go to pytest in both modes.
set -euo pipefail
cd "$(dirname "$0")/.."

FAST=0
if [ "${1:-}" = --fast ]; then
  FAST=1
  shift
fi

lint() {
  echo "[test] ruff" >&2
  .venv/bin/ruff check .
  .venv/bin/ruff format --check .
  echo "[test] mypy --strict, then the tests' relaxed mypy" >&2
  .venv/bin/mypy
  .venv/bin/mypy tests
  echo "[test] import-linter: the layer contracts (.importlinter)" >&2
  .venv/bin/lint-imports --no-cache
}

if [ "$FAST" = 1 ]; then
  # Warm caches: compiled modules (a shell with PYTHONDONTWRITEBYTECODE recompiles every test module
  # and import on each run: ~10 s of assertion rewriting alone), mypy's and ruff's caches, and the
  # tests' temporary files on tmpfs where there is one (thousands of small SQLite commits).
  unset PYTHONDONTWRITEBYTECODE
  fast_tmp=$(mktemp -d "$( [ -w /dev/shm ] && echo /dev/shm || echo "${TMPDIR:-/tmp}")/patchgate-fast.XXXXXX")
  trap 'rm -rf "$fast_tmp"' EXIT
  # Lint and type-check beside the tests, the tests over the cores (pytest-xdist).
  lint >"$fast_tmp/lint.log" 2>&1 &
  lint_pid=$!
  workers=$(nproc 2>/dev/null || echo 2)
  [ "$workers" -gt 4 ] && workers=4
  echo "[test] ruff, mypy and import-linter beside pytest's fast tier ($workers workers)" >&2
  set +e
  PATCHGATE_FAST=1 .venv/bin/pytest -q -p xdist -n "$workers" --basetemp="$fast_tmp/pytest" \
    -m "not docker and not postgres and not redis and not server and not slow" "$@"
  tests_rc=$?
  wait "$lint_pid"
  lint_rc=$?
  set -e
  if [ "$lint_rc" != 0 ]; then
    cat "$fast_tmp/lint.log" >&2
    echo "[test] lint or type check failed" >&2
  fi
  [ "$tests_rc" = 0 ] && [ "$lint_rc" = 0 ]
  exit
fi

bash scripts/setup.sh
# cmark-gfm renders check-run summaries as GitHub does (tests/checks/render/test_gfm.py); chromium
# renders the run and repository pages (tests/bot/web/test_pages_in_a_browser.py).
page_tools=()
command -v cmark-gfm >/dev/null || page_tools+=(cmark-gfm)
command -v chromium >/dev/null || page_tools+=(chromium)
# The check run's emoji, in the screenshots (docs/images/) as on GitHub.
[ -f /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] || page_tools+=(fonts-noto-color-emoji)
if [ ${#page_tools[@]} -gt 0 ]; then
  echo "[test] installing ${page_tools[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "${page_tools[@]}" >/dev/null \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${page_tools[@]}" >/dev/null; }
fi
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

lint
echo "[test] pytest" >&2
PATCHGATE_REQUIRE_REAL=1 exec .venv/bin/pytest "$@"
