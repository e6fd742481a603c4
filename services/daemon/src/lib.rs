//! `provisioningd`: configuration, telemetry and the start of every role.

pub mod config;
mod install_scripts;
mod startup;

pub use config::{Config, ConfigError, OidcConfig};
pub use startup::{check_catalog, Application, Roles, StartupError};
pub use telemetry;
