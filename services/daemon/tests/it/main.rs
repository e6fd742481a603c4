//! End-to-end tests: the real daemon against real Postgres, NATS JetStream and Terraform.

mod answers;
mod api;
mod app_thread;
mod catalog;
mod database;
mod helpers;
mod ingester;
mod lifecycle;
mod load;
mod outage;
mod poison;
mod providers;
mod proxy;
mod relay;
mod scale;
mod snapshots;
mod stream;
mod wire;
