#!/usr/bin/env bash
# Runs the whole test suite: makes sure Postgres and NATS are up (tests create their own
# databases and NATS subject prefixes) and points TERRAFORM_BIN at a real Terraform, which
# the end-to-end tests run. Extra arguments go to `cargo test`, e.g.
#   deploy/local/test.sh -- lifecycle      (only the tests whose names contain it)
#   deploy/local/test.sh -- --nocapture
# With no arguments it then fuzzes the API from its OpenAPI document (deploy/local/fuzz.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "test: $*" >&2; }

source deploy/local/prelude.sh

# The real OpenID provider of the sign-in tests: its pinned packages, from the lockfile.
oidc=services/daemon/tests/oidc
if [[ ! -d $oidc/node_modules/oidc-provider ]]; then
  command -v npm >/dev/null || { log "npm not found: the sign-in tests need Node.js 20+"; exit 1; }
  timed "installing the test OpenID provider" npm ci --prefix "$oidc" --no-audit --no-fund
fi
# The real Socket.IO client of the live-update tests, likewise.
socketio=services/daemon/tests/socketio
if [[ ! -d $socketio/node_modules/socket.io-client ]]; then
  timed "installing the test Socket.IO client" npm ci --prefix "$socketio" --no-audit --no-fund
fi

# axe-core, which the console's browser tests inject into each page they check, likewise.
axe=services/daemon/tests/axe
if [[ ! -d $axe/node_modules/axe-core ]]; then
  timed "installing axe-core for the console's browser tests" npm ci --prefix "$axe" --no-audit --no-fund
fi

# The taskservs tests run shellcheck on every shipped script, and install jobs push
# scripts over SSH to a real OpenSSH server the test starts (they fail without either).
missing=()
command -v shellcheck >/dev/null || missing+=(shellcheck)
[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
command -v ssh >/dev/null || missing+=(openssh-client)
# The console's browser tests drive a headless Chromium through chromedriver.
command -v chromium >/dev/null || missing+=(chromium)
command -v chromedriver >/dev/null || missing+=(chromium-driver)
if ((${#missing[@]})); then
  command -v apt-get >/dev/null || { log "not found: ${missing[*]} (the taskservs and console tests need them)"; exit 1; }
  timed "installing ${missing[*]}" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ${missing[*]}"
fi

log "cargo test --workspace --locked $*"
timed "building the tests" cargo test --workspace --locked --no-run "$@"
timed "running the tests" cargo test --workspace --locked --no-fail-fast "$@"

# The fuzzer driven by the OpenAPI document, against the real daemon (deploy/local/fuzz.sh);
# skipped when only some tests were asked for. A fixed seed, so that a run's verdict does not
# depend on luck; FUZZ_SEED=random (or any other seed) explores further.
if [[ $# -eq 0 ]]; then
  seed="${FUZZ_SEED:-1}"
  [[ $seed == random ]] && seed=""
  FUZZ_SEED="$seed" timed "fuzzing the API from its OpenAPI document" bash deploy/local/fuzz.sh
fi
