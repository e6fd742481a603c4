//! One telemetry setup for every binary, so `provisioningd` and `provisioning-runner` log alike,
//! and the metrics every role counts in.

pub mod metrics;

pub use metrics::metrics;

use tracing_subscriber::EnvFilter;

/// One telemetry setup for every binary: text or JSON lines on stderr, filtered by
/// `RUST_LOG` (default `info`).
pub fn init(json: bool) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = if json {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
}
