//! `provisioning`: the platform's command line. It speaks to the REST API only (no
//! database, no NATS), with a personal API token or a browser sign-in's tokens kept per
//! profile.

pub mod args;
pub mod client;
mod commands;
pub mod config;
pub mod error;
mod follow;
mod names;
pub mod output;
mod progress;
mod signin;
mod sse;
mod waiting;
mod wire;

pub use commands::run;
