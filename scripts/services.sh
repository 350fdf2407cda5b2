#!/usr/bin/env bash
# Throwaway PostgreSQL and Redis on loopback for the store and broker tests.
# Idempotent: starts what is not running, then prints (on stdout, nothing else)
#   export PATCHGATE_TEST_POSTGRES_URL=...
#   export PATCHGATE_TEST_REDIS_URL=...
# Use it as: eval "$(bash scripts/services.sh)". Logs go to stderr.
set -euo pipefail

log() { printf '[services] %s\n' "$*" >&2; }

base=${PATCHGATE_SERVICES_DIR:-/var/tmp/patchgate-services}
pg_port=${PATCHGATE_TEST_PG_PORT:-55432}
redis_port=${PATCHGATE_TEST_REDIS_PORT:-56379}

find_pg_bin() {
  if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
    dirname "$(readlink -f "$(command -v initdb)")"
    return
  fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

need=()
[ -n "$(find_pg_bin)" ] || need+=(postgresql)
command -v redis-server >/dev/null || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
pg_bin=$(find_pg_bin)

# PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
mkdir -p "$base/pg"
as_pg=()
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$base/pg"
  as_pg=(runuser -u postgres --)
fi
data="$base/pg/data"
if [ ! -f "$data/PG_VERSION" ]; then
  log "creating a PostgreSQL cluster in $data"
  "${as_pg[@]}" "$pg_bin/initdb" -D "$data" -A trust -U postgres --no-sync >/dev/null
fi
if ! "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  log "starting PostgreSQL on 127.0.0.1:$pg_port"
  "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$data" -l "$base/pg/server.log" -w -o \
    "-p $pg_port -k $base/pg -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
    start >/dev/null
fi
if ! "$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = 'patchgate_test'" | grep -q 1; then
  "$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U postgres patchgate_test
fi

if ! redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1; then
  log "starting Redis on 127.0.0.1:$redis_port"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
    --dir "$base" --logfile "$base/redis.log" --pidfile "$base/redis.pid" >/dev/null
  for _ in $(seq 1 50); do
    redis-cli -h 127.0.0.1 -p "$redis_port" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
fi

echo "export PATCHGATE_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:$pg_port/patchgate_test"
echo "export PATCHGATE_TEST_REDIS_URL=redis://127.0.0.1:$redis_port/0"
