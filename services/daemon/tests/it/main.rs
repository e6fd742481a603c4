//! End-to-end tests: the real daemon against real Postgres, NATS JetStream and Terraform.

mod api;
mod helpers;
mod lifecycle;
mod relay;
mod stream;
