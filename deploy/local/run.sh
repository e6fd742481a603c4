#!/usr/bin/env bash
# One command to run the whole platform locally: makes sure Postgres and NATS are up,
# finds (or installs) Terraform, builds the binaries and runs every role in one process.
# Configuration comes from the environment; see docs/operations.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "run: $*" >&2; }

source deploy/local/prelude.sh

log "cargo build --bins -p daemon -p runner -p provisioning"
cargo build --bins -p daemon -p runner -p provisioning

# Where cargo put the binaries (CARGO_TARGET_DIR or .cargo/config.toml may move it).
target_dir="$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null ||
  true)"
target_dir="${target_dir:-${CARGO_TARGET_DIR:-target}}"

export PROVISIONING_RUNNER_BIN="${PROVISIONING_RUNNER_BIN:-$target_dir/debug/provisioning-runner}"
log "exec $target_dir/debug/provisioningd run"
exec "$target_dir/debug/provisioningd" run
