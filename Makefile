# Thin wrappers: the scripts in deploy/local/ do the work.
.DEFAULT_GOAL := help
.PHONY: help run test test-faults lint bench screenshots

help:
	@echo "make run   start Postgres/NATS if needed, build and run provisioningd (all roles)"
	@echo "make test  start Postgres/NATS if needed, fetch Terraform, cargo test --workspace"
	@echo "make test-faults  only the fault suite (daemon killed, NATS/Postgres cut; minutes)"
	@echo "make lint  cargo fmt --check and cargo clippy -D warnings"
	@echo "make bench print the pipeline's throughput and latency figures on this machine"
	@echo "make screenshots  PNGs of the console's main pages into docs/console/ (headless Chromium)"

run:
	bash deploy/local/run.sh

test:
	bash deploy/local/test.sh

test-faults:
	bash deploy/local/test-faults.sh

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

bench:
	bash deploy/local/bench.sh

screenshots:
	bash deploy/local/screenshots.sh
