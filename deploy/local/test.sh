#!/usr/bin/env bash
# Runs the whole test suite: makes sure Postgres and NATS are up (tests create their own
# databases and NATS subject prefixes) and points TERRAFORM_BIN at a real Terraform, which
# the end-to-end tests run. Extra arguments go to `cargo test`, e.g.
#   deploy/local/test.sh -p relay
#   deploy/local/test.sh -- --nocapture
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

log() { echo "test: $*" >&2; }

if ! command -v cargo >/dev/null; then
  if [[ -x "$HOME/.cargo/bin/cargo" ]]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    log "cargo not found. Install Rust with rustup:"
    log "  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y"
    exit 1
  fi
fi

bash deploy/local/ensure-services.sh
TERRAFORM_BIN="$(bash deploy/local/install-terraform.sh)"
export TERRAFORM_BIN
log "Terraform: $TERRAFORM_BIN"

log "cargo test --workspace --locked $*"
exec cargo test --workspace --locked "$@"
