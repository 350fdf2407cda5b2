#!/usr/bin/env bash
# The main job: set up, then let patchgate gate the bundled example agent PRs
# (examples/duration) locally, with SQLite and no GitHub, and print the reports.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh demo
exec .venv/bin/patchgate demo "$@"
