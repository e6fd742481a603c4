#!/usr/bin/env bash
# Runs only the fault suite (services/daemon/tests/faults): the real daemon binary, runners
# and Terraform, killed, cut off and restarted on purpose. Like test.sh, it makes sure
# Postgres and NATS are up and points TERRAFORM_BIN at a real Terraform. Extra arguments go
# to `cargo test`, e.g. deploy/local/test-faults.sh -- kill
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "test-faults: $*" >&2; }

source deploy/local/prelude.sh

timed "running the fault suite" cargo test -p daemon --test faults --locked "$@"
