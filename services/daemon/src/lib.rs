//! `provisioningd`: configuration, telemetry and the start of every role.

pub mod config;
mod startup;
pub mod telemetry;

pub use config::{Config, ConfigError};
pub use startup::{check_catalog, Application, Roles, StartupError};
