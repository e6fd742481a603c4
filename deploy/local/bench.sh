#!/usr/bin/env bash
# Prints the pipeline's figures on this machine, each beside a ceiling measured in the same
# run, with ratio and PASS/MISS, and writes them as JSON to BENCH_OUT (default
# target/bench.json); BENCH_QUICK=1 for a short run. See docs/performance.md. Needs Postgres
# and NATS, as the tests do.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bash deploy/local/ensure-services.sh
exec cargo run --release --locked -q -p daemon --example bench
