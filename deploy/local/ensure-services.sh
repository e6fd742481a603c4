#!/usr/bin/env bash
# Makes sure PostgreSQL and a NATS server with JetStream are reachable at
# DATABASE_URL / NATS_URL, installing (Debian 12 packages) and starting them if
# nothing listens there yet. Idempotent: a service that already listens is left alone.
set -euo pipefail

DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/provisioning}"
NATS_URL="${NATS_URL:-nats://127.0.0.1:4222}"
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SUDO=""
[[ "$(id -u)" == 0 ]] || SUDO="sudo"

log() { echo "ensure-services: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# parse_url URL DEFAULT_PORT -> sets U_USER U_HOST U_PORT U_PATH
parse_url() {
  local re='^[a-z]+://(([^:@/]*)(:[^@/]*)?@)?(\[[^]]+\]|[^:/?]+)(:([0-9]+))?(/([^?]*))?'
  [[ "$1" =~ $re ]] || die "cannot parse URL: $1"
  U_USER="${BASH_REMATCH[2]}"
  U_HOST="${BASH_REMATCH[4]}"
  U_HOST="${U_HOST#[}" U_HOST="${U_HOST%]}"
  U_PORT="${BASH_REMATCH[6]:-$2}"
  U_PATH="${BASH_REMATCH[8]}"
}

listening() { timeout 1 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }

is_local() { [[ "$1" =~ ^(127\.[0-9.]+|localhost|::1|0\.0\.0\.0)$ ]]; }

wait_for() { # NAME HOST PORT
  local i
  for i in $(seq 1 30); do
    listening "$2" "$3" && { log "$1 is listening on $2:$3"; return 0; }
    sleep 1
  done
  die "$1 is not listening on $2:$3 after 30 s"
}

apt_install() {
  log "installing $*"
  # A fresh machine may have empty package lists.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2 ||
    { $SUDO apt-get update >&2 && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >&2; }
}

start_postgres() { # HOST PORT
  local port="$2" ver name conf
  command -v pg_ctlcluster >/dev/null || apt_install postgresql
  # Use the cluster configured for this port; otherwise create one
  # ("main" if free, else a port-specific name so an existing "main" is untouched).
  read -r ver name < <(pg_lsclusters --no-header | awk -v p="$port" '$3 == p {print $1, $2; exit}') || true
  if [[ -z "${ver:-}" ]]; then
    ver="$(ls /usr/lib/postgresql | sort -V | tail -n1)"
    name=main
    [[ -d "/etc/postgresql/$ver/main" ]] && name="port$port"
    log "creating PostgreSQL $ver cluster '$name' on port $port"
    $SUDO pg_createcluster -p "$port" "$ver" "$name" >&2
  fi
  # Debian defaults to scram-sha-256 on loopback, i.e. a password we don't have:
  # trust loopback instead (first matching pg_hba line wins, so prepend).
  conf="/etc/postgresql/$ver/$name/pg_hba.conf"
  if ! $SUDO grep -q '^# ensure-services: trust loopback' "$conf"; then
    log "setting trust auth for loopback in $conf"
    $SUDO sed -i '1i # ensure-services: trust loopback\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$conf"
  fi
  log "starting PostgreSQL $ver/$name"
  # --skip-systemctl-redirect: works without systemd (containers, CI).
  $SUDO pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start >&2 ||
    $SUDO pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" reload >&2 # already running: pick up pg_hba
}

start_nats() { # HOST PORT
  command -v nats-server >/dev/null || apt_install nats-server
  mkdir -p "$REPO/tools/nats-data"
  log "starting nats-server on $1:$2 (log: $REPO/tools/nats-server.log)"
  # setsid+nohup: the server outlives this script and its terminal.
  setsid nohup nats-server -a "$1" -p "$2" -js -sd "$REPO/tools/nats-data" \
    >>"$REPO/tools/nats-server.log" 2>&1 </dev/null &
  echo $! >"$REPO/tools/nats-server-$2.pid"
}

parse_url "$DATABASE_URL" 5432
PG_HOST="$U_HOST" PG_PORT="$U_PORT" PG_USER="${U_USER:-postgres}" PG_DB="${U_PATH:-provisioning}"
parse_url "$NATS_URL" 4222
NATS_HOST="$U_HOST" NATS_PORT="$U_PORT"

PG_STARTED=""
if listening "$PG_HOST" "$PG_PORT"; then
  log "PostgreSQL already listening on $PG_HOST:$PG_PORT"
else
  is_local "$PG_HOST" || die "nothing listens on $PG_HOST:$PG_PORT and it is not a local address"
  start_postgres "$PG_HOST" "$PG_PORT"
  PG_STARTED=1
fi

if listening "$NATS_HOST" "$NATS_PORT"; then
  log "NATS already listening on $NATS_HOST:$NATS_PORT"
else
  is_local "$NATS_HOST" || die "nothing listens on $NATS_HOST:$NATS_PORT and it is not a local address"
  start_nats "$NATS_HOST" "$NATS_PORT"
fi

wait_for PostgreSQL "$PG_HOST" "$PG_PORT"
wait_for NATS "$NATS_HOST" "$NATS_PORT"

# On a cluster we started (trust auth), also create the role and database of the URL.
if [[ -n "$PG_STARTED" ]]; then
  psql_admin() { psql -h "$PG_HOST" -p "$PG_PORT" -U postgres -d postgres -w -qtAX "$@"; }
  for i in $(seq 1 10); do psql_admin -c 'select 1' >/dev/null 2>&1 && break; sleep 1; done
  if [[ -z "$(psql_admin -c "select 1 from pg_roles where rolname = '$PG_USER'")" ]]; then
    log "creating role $PG_USER"
    psql_admin -c "create role \"$PG_USER\" login createdb" >&2
  fi
  if [[ -z "$(psql_admin -c "select 1 from pg_database where datname = '$PG_DB'")" ]]; then
    log "creating database $PG_DB"
    psql_admin -c "create database \"$PG_DB\" owner \"$PG_USER\"" >&2
  fi
fi
