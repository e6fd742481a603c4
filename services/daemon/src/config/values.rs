//! The numbers and names read from the environment: network widths, timeouts, limits,
//! replicas and the database session's limits, each checked with the variable it came from.

use super::ConfigError;

/// `PROVISIONING_SSH_WIDEST_PREFIX`: a prefix length from 1 to 32 (0 would allow the whole
/// Internet, which is always refused).
pub(super) fn ssh_widest_prefix(var: &dyn Fn(&str) -> Option<String>) -> Result<u8, ConfigError> {
    match var("PROVISIONING_SSH_WIDEST_PREFIX") {
        None => Ok(api::DEFAULT_WIDEST_PREFIX),
        Some(v) => v
            .trim_start_matches('/')
            .parse::<u8>()
            .ok()
            .filter(|n| (1..=32).contains(n))
            .ok_or(ConfigError {
                name: "PROVISIONING_SSH_WIDEST_PREFIX",
                reason: "must be a prefix length from 1 to 32, such as 16".into(),
            }),
    }
}

/// `PROVISIONING_TRUSTED_CLIENT_IP_HEADER`: an HTTP header name, if set.
pub(super) fn trusted_client_ip_header(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<String>, ConfigError> {
    let Some(name) = var("PROVISIONING_TRUSTED_CLIENT_IP_HEADER") else {
        return Ok(None);
    };
    match axum::http::HeaderName::from_bytes(name.trim().as_bytes()) {
        Ok(header) => Ok(Some(header.as_str().to_owned())),
        Err(_) => Err(ConfigError {
            name: "PROVISIONING_TRUSTED_CLIENT_IP_HEADER",
            reason: "must be an HTTP header name, such as X-Forwarded-For".into(),
        }),
    }
}

/// The variable `name` in seconds above 0, or `default` when it is unset.
pub(super) fn positive_secs(
    var: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
    default: std::time::Duration,
) -> Result<std::time::Duration, ConfigError> {
    match var(name) {
        None => Ok(default),
        Some(v) => match v.parse::<u64>() {
            Ok(secs) if secs > 0 => Ok(std::time::Duration::from_secs(secs)),
            _ => Err(ConfigError {
                name,
                reason: "must be a number of seconds above 0".into(),
            }),
        },
    }
}

/// The job deadlines and the cancel cool-off, each in seconds above 0.
pub(super) fn job_limits(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<domain::provisioning::JobLimits, ConfigError> {
    let defaults = domain::provisioning::JobLimits::default();
    let secs = |name, default| positive_secs(var, name, default);
    Ok(domain::provisioning::JobLimits {
        create: secs("PROVISIONING_DEADLINE_CREATE", defaults.create)?,
        destroy: secs("PROVISIONING_DEADLINE_DESTROY", defaults.destroy)?,
        refresh: secs("PROVISIONING_DEADLINE_REFRESH", defaults.refresh)?,
        cancel_cooloff: secs("PROVISIONING_CANCEL_COOLOFF", defaults.cancel_cooloff)?,
    })
}

/// Runners at once when `PROVISIONING_MAX_RUNNERS` is unset, with the Kubernetes executor:
/// runner pods use the cluster, not this host.
pub const DEFAULT_KUBERNETES_MAX_RUNNERS: usize = 32;

/// `PROVISIONING_MAX_RUNNERS`, else a default: for local runners the number of cores (at
/// least 2: a runner mostly waits for a cloud API, but Terraform and its provider plugins
/// take a core while they plan), for Kubernetes [`DEFAULT_KUBERNETES_MAX_RUNNERS`].
pub(super) fn max_runners(
    var: &dyn Fn(&str) -> Option<String>,
    kubernetes: bool,
) -> Result<usize, ConfigError> {
    match var("PROVISIONING_MAX_RUNNERS") {
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or(ConfigError {
                name: "PROVISIONING_MAX_RUNNERS",
                reason: "must be a number above 0".into(),
            }),
        None if kubernetes => Ok(DEFAULT_KUBERNETES_MAX_RUNNERS),
        None => Ok(std::thread::available_parallelism().map_or(2, |n| n.get().max(2))),
    }
}

/// Messages a live stream's subscription holds unless `PROVISIONING_STREAM_CAPACITY` says.
pub const DEFAULT_STREAM_CAPACITY: usize = 256;

/// Streams and exports one caller may hold open at once unless
/// `PROVISIONING_STREAMS_PER_CALLER` says.
pub const DEFAULT_STREAMS_PER_CALLER: usize = api::STREAMS_PER_CALLER;

/// The count in `name`, above 0, else `default`.
pub(super) fn count(
    var: &dyn Fn(&str) -> Option<String>,
    name: &'static str,
    default: usize,
) -> Result<usize, ConfigError> {
    match var(name) {
        None => Ok(default),
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or(ConfigError {
                name,
                reason: "must be a number above 0".into(),
            }),
    }
}

/// `PROVISIONING_NATS_REPLICAS`: 1 (a single server) unless set.
pub(super) fn nats_replicas(var: &dyn Fn(&str) -> Option<String>) -> Result<usize, ConfigError> {
    match var("PROVISIONING_NATS_REPLICAS") {
        None => Ok(1),
        Some(n) => n
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=bus::MAX_REPLICAS).contains(n))
            .ok_or(ConfigError {
                name: "PROVISIONING_NATS_REPLICAS",
                reason: format!("must be a number from 1 to {}", bus::MAX_REPLICAS),
            }),
    }
}

/// `PROVISIONING_DB_STATEMENT_TIMEOUT_SECS` and
/// `PROVISIONING_DB_IDLE_TRANSACTION_TIMEOUT_SECS`, over the defaults.
pub(super) fn db_limits(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<store::SessionLimits, ConfigError> {
    let secs = |name, default| positive_secs(var, name, default);
    let defaults = store::SessionLimits::default();
    Ok(store::SessionLimits {
        statement_timeout: secs(
            "PROVISIONING_DB_STATEMENT_TIMEOUT_SECS",
            defaults.statement_timeout,
        )?,
        idle_in_transaction_timeout: secs(
            "PROVISIONING_DB_IDLE_TRANSACTION_TIMEOUT_SECS",
            defaults.idle_in_transaction_timeout,
        )?,
    })
}
