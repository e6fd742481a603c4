#!/usr/bin/env bash
# Fuzzes a running daemon from its own OpenAPI document with schemathesis: every check it
# has, every phase (the stateful one follows the document's links from `POST /vms`,
# `POST /ssh-keys` and `POST /tokens` to the routes of what they made), once as the admin
# and once as an ordinary user. Any failure or 5xx fails the run.
#
# The daemon is the real binary on its defaults, with a fresh database and a NATS prefix of
# its own, on a free port. Called by test.sh after `cargo test`; alone:
#   deploy/local/fuzz.sh                      (a random seed, printed)
#   FUZZ_SEED=1234 deploy/local/fuzz.sh       (the same cases again)
#   FUZZ_EXAMPLES=50 deploy/local/fuzz.sh     (more cases per operation; 15 by default)
# Postgres and NATS must be up (test.sh and run.sh make sure of it). Needs python3, curl, psql.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "fuzz: $*" >&2; }

SCHEMATHESIS_VERSION=4.32.5
venv=tools/venv
seed="${FUZZ_SEED:-$((RANDOM * 32768 + RANDOM))}"
examples="${FUZZ_EXAMPLES:-15}"
pg_admin_url="${FUZZ_POSTGRES_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
started=$SECONDS

# schemathesis, pinned, in a virtual environment under the git-ignored tools/: made anew
# when missing, of another version, or left broken by an interrupted install.
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -qx "schemathesis, version $SCHEMATHESIS_VERSION"; then
  command -v python3 >/dev/null || { log "python3 not found: the fuzzer needs Python 3.9+"; exit 1; }
  log "installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv" || {
    log "python3 could not make a virtual environment (on Debian/Ubuntu: apt-get install python3-venv)"
    rm -rf "$venv"
    exit 1
  }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "schemathesis==$SCHEMATHESIS_VERSION" || {
    log "could not install schemathesis $SCHEMATHESIS_VERSION (is the package index reachable?)"
    rm -rf "$venv"
    exit 1
  }
fi

cargo build --quiet --locked --bins -p daemon -p runner
target_dir="$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"

# A database and a NATS prefix of this run's own, removed at the end.
run_id="fuzz_$(date +%s)_$$"
work="$(mktemp -d)"
daemon_pid=""
cleanup() {
  # The daemon stops its runners as it shuts down; one that does not stop within 15 s is
  # killed, so that no daemon outlives the run.
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill "$daemon_pid" 2>/dev/null || true
    for _ in $(seq 150); do
      kill -0 "$daemon_pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$daemon_pid" 2>/dev/null || true
    wait "$daemon_pid" 2>/dev/null || true
  fi
  psql -q "$pg_admin_url" -c "DROP DATABASE IF EXISTS $run_id WITH (FORCE)" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
psql -q "$pg_admin_url" -c "CREATE DATABASE $run_id" >/dev/null

export DATABASE_URL="${pg_admin_url%/*}/$run_id"
export PROVISIONING_NATS_PREFIX="${run_id//_/-}"
export PROVISIONING_HTTP_ADDR=127.0.0.1:0
export PROVISIONING_WORK_DIR="$work/jobs"
export PROVISIONING_RUNNER_BIN="$target_dir/debug/provisioning-runner"
export PROVISIONING_MAX_RUNNERS=1
admin_token="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
export PROVISIONING_ADMIN_TOKEN="$admin_token"
daemon="$target_dir/debug/provisioningd"

"$daemon" run >"$work/daemon.out" 2>"$work/daemon.log" &
daemon_pid=$!
base=""
for _ in $(seq 600); do
  base="$(sed -n 's/^provisioningd listening on \(http:[^ ]*\)$/\1/p' "$work/daemon.out")"
  [[ -n $base ]] && break
  kill -0 "$daemon_pid" 2>/dev/null || { tail -20 "$work/daemon.log" >&2; exit 1; }
  sleep 0.1
done
[[ -n $base ]] || { log "the daemon did not start"; tail -20 "$work/daemon.log" >&2; exit 1; }
log "daemon at $base (database $run_id), seed $seed"

api() { # METHOD PATH TOKEN [BODY]
  curl -sS --fail-with-body -X "$1" -H "Authorization: Bearer $3" \
    -H 'Content-Type: application/json' ${4:+--data "$4"} "$base$2"
}
json() { python3 -c "import json, sys; print(json.load(sys.stdin)$1)"; }

# An ordinary user: a row made by the CLI, demoted to `user` by the admin API. Without an
# OpenID provider here, their sign-in credential is a token written straight into the
# database; with it they make their personal token through the API, as a user would.
user_id="$("$daemon" users grant-admin fuzz-user@example.test | sed -n 's/.*(user \(.*\))$/\1/p')"
api PATCH "/api/v1/admin/users/$user_id" "$admin_token" '{"role":"user"}' >/dev/null
sign_in="pat_$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
sign_in_hash="$(printf %s "$sign_in" | sha256sum | cut -d' ' -f1)"
psql -q "$DATABASE_URL" -c "INSERT INTO api_tokens (id, user_id, name, prefix, hash)
  VALUES (gen_random_uuid(), '$user_id', 'sign-in', '${sign_in:0:12}', decode('$sign_in_hash', 'hex'))" >/dev/null
user_token="$(api POST /api/v1/tokens "$sign_in" '{"name":"fuzz"}' | json '["token"]')"

api GET /api/v1/openapi.json "$admin_token" >"$work/openapi.json"

failed=0
fuzz_as() { # WHO TOKEN [schemathesis options]
  local who="$1" token="$2" start=$SECONDS
  shift 2
  log "as $who: schemathesis run --seed $seed --max-examples $examples"
  # One worker: with two, Python 3.11's `ast` (which hypothesis calls to describe lambdas)
  # now and then fails a case with "AST constructor recursion depth mismatch".
  if ! "$venv/bin/schemathesis" --config-file deploy/local/schemathesis.toml run \
    "$work/openapi.json" --url "$base" -H "Authorization: Bearer $token" \
    --checks all --phases examples,coverage,fuzzing,stateful \
    --seed "$seed" --max-examples "$examples" --workers 1 \
    --report junit --report-junit-path "$work/$who.xml" --no-color "$@" | tee "$work/$who.out"; then
    failed=1
  fi
  # An operation that answered nothing but 401 means the run's credential stopped working
  # part way (the rest of the run then tests nothing but the refusal): a failure too.
  if grep -q '^401 Unauthorized (' "$work/$who.out"; then
    log "as $who: some operations answered only 401: the credential stopped working"
    failed=1
  fi
  log "as $who took $((SECONDS - start)) s"
}
# The user first: the admin's run may disable users and providers it finds.
# The user's run leaves out revoking a personal token (its links would reach the token it
# runs with, and every later request would be a 401); the admin's run, whose admin token no
# route can revoke, covers it.
fuzz_as user "$user_token" --exclude-operation-id delete_token
fuzz_as admin "$admin_token"

# A 500 fails the run even where schemathesis would let it pass (a stream it cut short).
if grep -q 'request failed' "$work/daemon.log"; then
  log "the daemon answered 500s; their causes:"
  grep 'request failed' "$work/daemon.log" | head -20 >&2
  failed=1
fi
if [[ $failed -ne 0 ]]; then
  log "FAILED (seed $seed)"
fi
log "seed $seed; took $((SECONDS - started)) s"
log "again with the same cases: FUZZ_SEED=$seed FUZZ_EXAMPLES=$examples deploy/local/fuzz.sh"
exit "$failed"
