#!/usr/bin/env bash
# Runs the whole test suite: makes sure Postgres and NATS are up (tests create their own
# databases and NATS subject prefixes) and points TERRAFORM_BIN at a real Terraform, which
# the end-to-end tests run. Extra arguments go to `cargo test`, e.g.
#   deploy/local/test.sh -- lifecycle      (only the tests whose names contain it)
#   deploy/local/test.sh -- --nocapture
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "test: $*" >&2; }

source deploy/local/prelude.sh

log "cargo test --workspace --locked $*"
timed "building the tests" cargo test --workspace --locked --no-run "$@"
timed "running the tests" cargo test --workspace --locked --no-fail-fast "$@"
