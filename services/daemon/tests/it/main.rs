//! End-to-end tests: the real daemon against real Postgres, NATS JetStream and Terraform.

mod answers;
mod api;
mod app_thread;
mod backend_role;
mod bench;
mod catalog;
mod database;
mod dispatch;
mod drift;
mod helpers;
mod ingester;
mod jobs;
mod lifecycle;
mod load;
mod outage;
mod poison;
mod private_nats;
mod providers;
mod proxy;
mod relay;
mod runner_faults;
mod scale;
mod snapshots;
mod stream;
mod watchdog;
mod wire;
