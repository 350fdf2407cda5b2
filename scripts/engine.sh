#!/usr/bin/env bash
# Make sure a Docker engine answers (and debootstrap, which builds the sandbox base image
# without a registry, is installed). Idempotent: returns at once when both are there.
# Debian/Ubuntu, as root: installs docker.io and debootstrap with apt when missing, then
# starts dockerd in the background (log: $PATCHGATE_DOCKERD_LOG, default
# /var/log/patchgate-dockerd.log) and waits up to 60 s for /var/run/docker.sock.
set -euo pipefail

log() { printf '[engine] %s\n' "$*" >&2; }

engine_up() { docker info >/dev/null 2>&1; }

if engine_up && command -v debootstrap >/dev/null; then
  exit 0
fi

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "missing ${need[*]}: install them (Debian: apt-get install -y ${need[*]}) and run this again"
    exit 1
  fi
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if engine_up; then
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  log "no Docker engine answers and starting dockerd needs root: run this as root, or start it yourself"
  exit 1
fi

logfile=${PATCHGATE_DOCKERD_LOG:-/var/log/patchgate-dockerd.log}
if pgrep -x dockerd >/dev/null; then
  log "dockerd is running but does not answer yet; waiting"
else
  log "starting dockerd (log: $logfile)"
  # A socket left by an engine that died would make the wait below pass too early.
  [ -S /var/run/docker.sock ] && rm -f /var/run/docker.sock
  setsid dockerd >>"$logfile" 2>&1 < /dev/null &
fi

for _ in $(seq 1 120); do
  if [ -S /var/run/docker.sock ] && engine_up; then
    log "the engine is up"
    exit 0
  fi
  sleep 0.5
done
log "dockerd did not answer within 60 s; its log ends with:"
tail -n 20 "$logfile" >&2 || true
exit 1
