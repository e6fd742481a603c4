#!/usr/bin/env bash
# One command to run the whole platform locally: makes sure Postgres and NATS are up,
# finds (or installs) Terraform, builds the binaries and runs every role in one process.
# Configuration comes from the environment; see docs/operations.md.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "run: $*" >&2; }

if ! command -v cargo >/dev/null; then
  if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    log "cargo not found. Install Rust with rustup:"
    log "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y"
    log "  . \"\$HOME/.cargo/env\""
    exit 1
  fi
fi

bash deploy/local/ensure-services.sh
TERRAFORM_BIN="$(bash deploy/local/install-terraform.sh)"
export TERRAFORM_BIN
log "Terraform: $TERRAFORM_BIN"

log "cargo build --bins -p daemon -p runner"
cargo build --bins -p daemon -p runner

# Where cargo put the binaries (CARGO_TARGET_DIR or .cargo/config.toml may move it).
target_dir="$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null ||
  true)"
target_dir="${target_dir:-${CARGO_TARGET_DIR:-target}}"

export PROVISIONING_RUNNER_BIN="${PROVISIONING_RUNNER_BIN:-$target_dir/debug/provisioning-runner}"
log "exec $target_dir/debug/provisioningd run"
exec "$target_dir/debug/provisioningd" run
