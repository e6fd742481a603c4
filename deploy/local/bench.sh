#!/usr/bin/env bash
# Prints the pipeline's figures on this machine: ingest rate of Terraform lines, the cost of
# loading a VM with many lines, and the relay's rate. Needs Postgres and NATS, as the tests do.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bash deploy/local/ensure-services.sh
exec cargo run --release --locked -q -p daemon --example bench
