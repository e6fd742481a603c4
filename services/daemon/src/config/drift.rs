//! The drift check's settings: `PROVISIONING_DRIFT_INTERVAL` (seconds; unset or 0: off)
//! and `PROVISIONING_DRIFT_BATCH` (refreshes one pass queues at most).

use ingester::{DriftCheckConfig, DEFAULT_DRIFT_BATCH};

use super::ConfigError;

/// The most refreshes one pass may queue.
const MAX_BATCH: usize = 1000;

/// The drift check, or `None` when it is off (the default).
pub fn drift_check(
    var: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<DriftCheckConfig>, ConfigError> {
    let interval = match var("PROVISIONING_DRIFT_INTERVAL") {
        None => return Ok(None),
        Some(v) => v.parse::<u64>().map_err(|_| ConfigError {
            name: "PROVISIONING_DRIFT_INTERVAL",
            reason: "must be a number of seconds (0 turns the drift check off)".into(),
        })?,
    };
    if interval == 0 {
        return Ok(None);
    }
    let batch = match var("PROVISIONING_DRIFT_BATCH") {
        None => DEFAULT_DRIFT_BATCH,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_BATCH).contains(n))
            .ok_or(ConfigError {
                name: "PROVISIONING_DRIFT_BATCH",
                reason: format!("must be a number from 1 to {MAX_BATCH}"),
            })?,
    };
    Ok(Some(DriftCheckConfig {
        interval: std::time::Duration::from_secs(interval),
        batch,
    }))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn with(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_drift_check_is_off_unless_an_interval_is_set() {
        assert_eq!(drift_check(&with(&[])).unwrap(), None);
        assert_eq!(
            drift_check(&with(&[("PROVISIONING_DRIFT_INTERVAL", "0")])).unwrap(),
            None
        );
        assert_eq!(
            drift_check(&with(&[("PROVISIONING_DRIFT_INTERVAL", "600")])).unwrap(),
            Some(DriftCheckConfig {
                interval: Duration::from_secs(600),
                batch: DEFAULT_DRIFT_BATCH
            })
        );
        assert_eq!(
            drift_check(&with(&[
                ("PROVISIONING_DRIFT_INTERVAL", "60"),
                ("PROVISIONING_DRIFT_BATCH", "3")
            ]))
            .unwrap()
            .map(|c| c.batch),
            Some(3)
        );
    }

    #[test]
    fn a_wrong_drift_setting_is_refused_with_its_name() {
        for (vars, name) in [
            (
                &[("PROVISIONING_DRIFT_INTERVAL", "10m")][..],
                "PROVISIONING_DRIFT_INTERVAL",
            ),
            (
                &[("PROVISIONING_DRIFT_INTERVAL", "-5")][..],
                "PROVISIONING_DRIFT_INTERVAL",
            ),
            (
                &[
                    ("PROVISIONING_DRIFT_INTERVAL", "60"),
                    ("PROVISIONING_DRIFT_BATCH", "0"),
                ][..],
                "PROVISIONING_DRIFT_BATCH",
            ),
        ] {
            let vars: &'static [(&str, &str)] = vars;
            assert_eq!(drift_check(&with(vars)).unwrap_err().name, name);
        }
    }
}
