//! End-to-end tests: the real daemon against real Postgres, NATS JetStream and Terraform.

mod api;
mod app_thread;
mod catalog;
mod database;
mod dispatch;
mod helpers;
mod ingester;
mod lifecycle;
mod providers;
mod relay;
mod scale;
mod snapshots;
mod stream;
mod watchdog;
mod wire;
