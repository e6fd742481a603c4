//! The fault suite: the real `provisioningd` binary, runners and Terraform against real
//! Postgres and NATS, broken on purpose (killed, cut off, restarted), then counted.
//! Run alone with `cargo test -p daemon --test faults` (or `make test-faults`).
//!
//! Shared modules: `daemon` (the binary as a child process), `wrapper` (a Terraform wrapper
//! with markers and pauses), `checks` (the end-of-test checks), and the private NATS server
//! and TCP proxy of the `it` tests.

// The shared modules serve every fault test; not each uses all of them.
#[allow(dead_code)]
mod checks;
#[allow(dead_code)]
mod daemon;
#[allow(dead_code)]
#[path = "../it/database.rs"]
mod database;
#[allow(dead_code)]
#[path = "../it/private_nats.rs"]
mod nats;
#[allow(dead_code)]
#[path = "../it/proxy.rs"]
mod proxy;
#[allow(dead_code)]
#[path = "../it/wire.rs"]
mod wire;
#[allow(dead_code)]
mod wrapper;

mod cluster_kill;
mod export;
mod kill;
mod nats_cluster;
mod nats_restart;
mod policy_reload;
mod postgres_cut;
mod runner_kill;
mod two_daemons;
