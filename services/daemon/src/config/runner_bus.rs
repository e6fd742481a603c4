//! The runners' side of the bus: the secret their reports' keys are derived from, and the
//! NATS user local runners connect as.

use secrecy::SecretString;

use super::ConfigError;

/// The fewest characters `PROVISIONING_RUNNER_SIGNING_SECRET` may have.
const MIN_SECRET_LEN: usize = 32;

#[derive(Debug, Clone, Default)]
pub struct RunnerBusConfig {
    /// `PROVISIONING_RUNNER_SIGNING_SECRET`: the master secret each job's signing key is
    /// derived from; unset, the daemons share one they keep in Postgres.
    pub signing_secret: Option<SecretString>,
    /// `PROVISIONING_RUNNER_NATS_USER` and `PROVISIONING_RUNNER_NATS_PASSWORD`: the NATS
    /// user local runners connect as (given the daemon's `NATS_URL` without its
    /// credentials). Unset, they use the daemon's `NATS_URL` as it is.
    pub nats_user: Option<(String, SecretString)>,
}

pub(super) fn runner_bus(
    var: &dyn Fn(&str) -> Option<String>,
    kubernetes: bool,
) -> Result<RunnerBusConfig, ConfigError> {
    let signing_secret = var("PROVISIONING_RUNNER_SIGNING_SECRET");
    if signing_secret
        .as_ref()
        .is_some_and(|s| s.len() < MIN_SECRET_LEN)
    {
        return Err(ConfigError {
            name: "PROVISIONING_RUNNER_SIGNING_SECRET",
            reason: format!("must be at least {MIN_SECRET_LEN} characters long"),
        });
    }
    let nats_user = match (
        var("PROVISIONING_RUNNER_NATS_USER"),
        var("PROVISIONING_RUNNER_NATS_PASSWORD"),
    ) {
        (None, None) => None,
        (Some(_), Some(_)) if kubernetes => {
            return Err(ConfigError {
                name: "PROVISIONING_RUNNER_NATS_USER",
                reason: "is for local runners: runner Jobs use PROVISIONING_K8S_RUNNER_NATS_USER \
                         and PROVISIONING_K8S_RUNNER_NATS_SECRET"
                    .into(),
            })
        }
        (Some(user), Some(password)) => Some((user, password.into())),
        (Some(_), None) => {
            return Err(ConfigError {
                name: "PROVISIONING_RUNNER_NATS_PASSWORD",
                reason: "must be set with PROVISIONING_RUNNER_NATS_USER".into(),
            })
        }
        (None, Some(_)) => {
            return Err(ConfigError {
                name: "PROVISIONING_RUNNER_NATS_USER",
                reason: "must be set with PROVISIONING_RUNNER_NATS_PASSWORD".into(),
            })
        }
    };
    Ok(RunnerBusConfig {
        signing_secret: signing_secret.map(SecretString::from),
        nats_user,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(vars: &[(&str, &str)], kubernetes: bool) -> Result<RunnerBusConfig, &'static str> {
        let var = |name: &str| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        };
        runner_bus(&var, kubernetes).map_err(|e| e.name)
    }

    #[test]
    fn the_runners_secret_and_nats_user_are_checked() {
        let defaults = parse(&[], false).unwrap();
        assert!(defaults.signing_secret.is_none() && defaults.nats_user.is_none());
        let secret = ("PROVISIONING_RUNNER_SIGNING_SECRET", "short");
        assert_eq!(parse(&[secret], false).unwrap_err(), secret.0);
        let long = ("PROVISIONING_RUNNER_SIGNING_SECRET", &*"s".repeat(32));
        assert!(parse(&[long], false).unwrap().signing_secret.is_some());
        let user = ("PROVISIONING_RUNNER_NATS_USER", "runner");
        let password = ("PROVISIONING_RUNNER_NATS_PASSWORD", "pw");
        let (name, _) = parse(&[user, password], false).unwrap().nats_user.unwrap();
        assert_eq!(name, "runner");
        assert_eq!(parse(&[user], false).unwrap_err(), password.0);
        assert_eq!(parse(&[password], false).unwrap_err(), user.0);
        assert_eq!(parse(&[user, password], true).unwrap_err(), user.0);
    }
}
