#!/usr/bin/env bash
# Idempotent set-up for a Debian machine: system packages, the virtualenv,
# a running Docker engine and the sandbox base image. Quick when all is there.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '[setup] %s\n' "$*" >&2; }

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ ! -f /var/lib/apt/periodic/patchgate-updated ] || [ -n "$(find /var/lib/apt/lists -maxdepth 0 -mmin +1440 2>/dev/null)" ]; then
    apt-get update -qq
    mkdir -p /var/lib/apt/periodic && touch /var/lib/apt/periodic/patchgate-updated
  fi
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 1. System packages the project needs on the host.
need=()
command -v git >/dev/null || need+=(git)
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt_install "${need[@]}"
fi

# 2. The virtualenv, reinstalled only when pyproject.toml (or what is asked of it) changes.
#    `setup.sh demo` (scripts/demo.sh) installs what the demo runs; the default, what the tests need too.
extras='[dev,calibrate]'
[ "${1:-}" = demo ] && extras=''
stamp=.venv/.patchgate-installed
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $extras"
# A test set-up already has everything the demo needs: the demo keeps it.
if [ -z "$extras" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$(sha256sum pyproject.toml | cut -d' ' -f1) [dev,calibrate]" ]; then
  want=$(cat "$stamp")
fi
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  python3 -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing patchgate and its dependencies into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".$extras"
  echo "$want" > "$stamp"
fi

# 3. A Docker engine (installed and started when none answers).
bash scripts/engine.sh

# 4. The sandbox base image (a no-op when it is up to date).
log "sandbox image $(.venv/bin/patchgate sandbox build)"
