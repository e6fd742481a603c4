//! `provisioning`: the platform's command line. It speaks to the REST API only (no
//! database, no NATS), with a personal API token kept per profile.

pub mod args;
pub mod client;
mod commands;
pub mod config;
pub mod error;
mod follow;
mod names;
pub mod output;
mod sse;
mod wire;

pub use commands::run;
