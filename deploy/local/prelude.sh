# Sourced by run.sh, test.sh and bench.sh (after they define `log`): finds cargo, makes sure
# Postgres and NATS are up, finds or installs Terraform (exported as TERRAFORM_BIN), and
# says how long each step took.

# Runs "$@" and logs how long it took, under the name $1 of the step.
timed() {
  local what="$1" start=$SECONDS
  shift
  "$@"
  log "$what took $((SECONDS - start)) s"
}

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

timed "starting Postgres and NATS" bash deploy/local/ensure-services.sh
start=$SECONDS
TERRAFORM_BIN="$(bash deploy/local/install-terraform.sh)"
log "finding Terraform took $((SECONDS - start)) s"
export TERRAFORM_BIN
log "Terraform: $TERRAFORM_BIN"
