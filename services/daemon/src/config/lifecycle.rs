//! The settings of the VM's life around its jobs: callbacks, boot timeout, expiry sweep.

use std::time::Duration;

use secrecy::SecretString;

use super::{positive_secs, ConfigError};

#[derive(Debug, Clone)]
pub struct LifecycleConfig {
    /// `PROVISIONING_PUBLIC_URL`: where users and VMs reach the API; callback URLs start
    /// with it. Unset: `http://` and the address the API listens on.
    pub public_url: Option<String>,
    /// `PROVISIONING_CALLBACK_TTL`: how long a callback URL works, from its job's start.
    pub callback_ttl: Duration,
    /// `PROVISIONING_CALLBACK_SECRET`: the key callback tokens are signed with (at least 32
    /// bytes); unset, the daemons share one they keep in Postgres.
    pub callback_secret: Option<SecretString>,
    /// `PROVISIONING_BOOT_TIMEOUT`: how long a VM may take to phone home.
    pub boot_timeout: Duration,
    /// `PROVISIONING_EXPIRY_SWEEP_SECS`: how often the lifecycle sweep runs.
    pub sweep_every: Duration,
    /// `PROVISIONING_EXPIRY_WARNINGS`: when before expiry owners are warned, e.g. `24h,1h`.
    pub expiry_warnings: Vec<Duration>,
}

impl Default for LifecycleConfig {
    /// What an environment without these settings gives.
    fn default() -> Self {
        lifecycle(&|_| None).expect("the defaults are valid")
    }
}

pub fn lifecycle(var: &dyn Fn(&str) -> Option<String>) -> Result<LifecycleConfig, ConfigError> {
    let public_url = match var("PROVISIONING_PUBLIC_URL") {
        None => None,
        Some(url) => {
            let parsed = url::Url::parse(&url).ok();
            if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host()) {
                return Err(ConfigError {
                    name: "PROVISIONING_PUBLIC_URL",
                    reason: "must be an http or https URL such as https://vms.example.org".into(),
                });
            }
            Some(url.trim_end_matches('/').to_owned())
        }
    };
    let callback_secret = var("PROVISIONING_CALLBACK_SECRET");
    if callback_secret.as_ref().is_some_and(|s| s.len() < 32) {
        return Err(ConfigError {
            name: "PROVISIONING_CALLBACK_SECRET",
            reason: "must be at least 32 characters long".into(),
        });
    }
    let warnings = match var("PROVISIONING_EXPIRY_WARNINGS") {
        None => vec![Duration::from_secs(24 * 3600), Duration::from_secs(3600)],
        Some(list) => durations(&list).ok_or(ConfigError {
            name: "PROVISIONING_EXPIRY_WARNINGS",
            reason: "must be durations separated by commas, such as 24h,1h or 30m".into(),
        })?,
    };
    Ok(LifecycleConfig {
        public_url,
        callback_ttl: positive_secs(var, "PROVISIONING_CALLBACK_TTL", Duration::from_secs(3600))?,
        callback_secret: callback_secret.map(SecretString::from),
        boot_timeout: positive_secs(var, "PROVISIONING_BOOT_TIMEOUT", Duration::from_secs(1800))?,
        sweep_every: positive_secs(
            var,
            "PROVISIONING_EXPIRY_SWEEP_SECS",
            Duration::from_secs(30),
        )?,
        expiry_warnings: warnings,
    })
}

/// `24h,1h`, `90m`, `45s`, or nothing (`""`: no warnings).
fn durations(list: &str) -> Option<Vec<Duration>> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|item| {
            let (number, unit) = item.split_at(item.find(|c: char| !c.is_ascii_digit())?);
            let n: u64 = number.parse().ok().filter(|n| *n > 0)?;
            let secs = match unit {
                "h" => n * 3600,
                "m" => n * 60,
                "s" => n,
                _ => return None,
            };
            Some(Duration::from_secs(secs))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_run_on_one_machine() {
        let config = lifecycle(&|_| None).unwrap();
        assert_eq!(config.public_url, None);
        assert_eq!(config.sweep_every, Duration::from_secs(30));
        assert_eq!(
            config.expiry_warnings,
            [Duration::from_secs(86400), Duration::from_secs(3600)]
        );
    }

    #[test]
    fn warnings_are_durations_with_units() {
        assert_eq!(
            durations("24h, 90m,45s"),
            Some(vec![
                Duration::from_secs(86400),
                Duration::from_secs(5400),
                Duration::from_secs(45)
            ])
        );
        assert_eq!(durations(""), Some(vec![]));
        for wrong in ["24", "h", "1d", "-1h", "0h"] {
            assert_eq!(durations(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn bad_settings_are_named() {
        let set = |name: &'static str, value: &'static str| {
            move |n: &str| (n == name).then(|| value.to_owned())
        };
        let err = |name, value| lifecycle(&set(name, value)).unwrap_err().name;
        assert_eq!(
            err("PROVISIONING_PUBLIC_URL", "vms.example"),
            "PROVISIONING_PUBLIC_URL"
        );
        assert_eq!(
            err("PROVISIONING_CALLBACK_SECRET", "short"),
            "PROVISIONING_CALLBACK_SECRET"
        );
        assert_eq!(
            err("PROVISIONING_EXPIRY_WARNINGS", "soon"),
            "PROVISIONING_EXPIRY_WARNINGS"
        );
        assert_eq!(
            err("PROVISIONING_BOOT_TIMEOUT", "0"),
            "PROVISIONING_BOOT_TIMEOUT"
        );
    }
}
