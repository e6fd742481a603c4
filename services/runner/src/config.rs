use std::path::PathBuf;
use std::time::Duration;

use domain::provisioning::{JobAction, JobId, VmId};
use secrecy::SecretString;

use crate::env;

/// What a runner is told, through its environment (as a Kubernetes Job would be).
#[derive(Debug)]
pub struct RunnerConfig {
    pub nats_url: String,
    /// Its own NATS user (`NATS_USER` and `NATS_PASSWORD`, or `NATS_CREDS_FILE`), or none
    /// when the URL says it all (a local runner).
    pub nats_auth: bus::NatsAuth,
    pub prefix: String,
    /// Its job's key (`RUNNER_SIGNING_KEY`): every report is signed with it.
    pub signing_key: bus::JobKey,
    pub vm_id: VmId,
    pub job_id: JobId,
    pub action: JobAction,
    /// The prepared Terraform working directory.
    pub workdir: PathBuf,
    /// A read-only copy of the working directory's files (a Kubernetes ConfigMap mount),
    /// copied into `workdir` before `terraform init`, which writes into its directory.
    pub source_dir: Option<PathBuf>,
    pub terraform_bin: PathBuf,
    /// `conn_str` of Terraform's `pg` backend, without a password.
    pub backend_conn_str: String,
    /// Given to Terraform as `PGPASSWORD`, so it appears in no argument list.
    pub backend_password: Option<SecretString>,
    pub runner_name: String,
    /// Values of the variables named in `RUNNER_SECRET_ENV` (credentials): redacted from
    /// every line and result the runner publishes.
    pub secret_values: Vec<String>,
    /// How long a failed publish is retried before the runner gives up.
    pub publish_retry: Duration,
    /// An install job's deploy key (`RUNNER_DEPLOY_KEY`): the OpenSSH private key it logs
    /// in to the VM with.
    pub deploy_key: Option<SecretString>,
}

/// The default of `RUNNER_PUBLISH_RETRY_SECS`: longer than a NATS restart or leader election.
pub const DEFAULT_PUBLISH_RETRY: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
#[error("{name}: {reason}")]
pub struct ConfigError {
    name: &'static str,
    reason: &'static str,
}

impl RunnerConfig {
    pub fn from_env() -> Result<Self, ConfigError> {
        let var = |name: &'static str| {
            std::env::var(name).map_err(|_| ConfigError {
                name,
                reason: "must be set",
            })
        };
        let invalid = |name, reason| ConfigError { name, reason };
        let action = JobAction::parse(&var(env::ACTION)?)
            .ok_or_else(|| invalid(env::ACTION, "must be create, destroy, refresh or install"))?;
        Ok(Self {
            nats_url: var(env::NATS_URL)?,
            nats_auth: nats_auth(&|name| std::env::var(name).ok().filter(|v| !v.is_empty()))?,
            prefix: var(env::NATS_PREFIX).unwrap_or_else(|_| "provisioning".into()),
            signing_key: bus::JobKey::parse(&var(env::SIGNING_KEY)?)
                .ok_or_else(|| invalid(env::SIGNING_KEY, "must be 64 hexadecimal digits"))?,
            vm_id: var(env::VM_ID)?
                .parse()
                .map_err(|_| invalid(env::VM_ID, "must be a UUID"))?,
            job_id: JobId::new(
                var(env::JOB_ID)?
                    .parse()
                    .map_err(|_| invalid(env::JOB_ID, "must be a number"))?,
            ),
            action,
            workdir: var(env::WORKDIR)?.into(),
            source_dir: std::env::var_os(env::SOURCE_DIR)
                .filter(|dir| !dir.is_empty())
                .map(PathBuf::from),
            terraform_bin: var(env::TERRAFORM_BIN)
                .unwrap_or_else(|_| "terraform".into())
                .into(),
            backend_conn_str: var(env::BACKEND_CONN_STR)?,
            backend_password: std::env::var(env::BACKEND_PASSWORD)
                .ok()
                .map(SecretString::from),
            secret_values: std::env::var(env::SECRET_ENV)
                .unwrap_or_default()
                .split(',')
                .filter_map(|name| std::env::var(name.trim()).ok())
                .filter(|value| !value.is_empty())
                .collect(),
            publish_retry: match std::env::var(env::PUBLISH_RETRY_SECS) {
                Ok(secs) => Duration::from_secs(
                    secs.parse()
                        .map_err(|_| invalid(env::PUBLISH_RETRY_SECS, "must be a number"))?,
                ),
                Err(_) => DEFAULT_PUBLISH_RETRY,
            },
            deploy_key: std::env::var(env::DEPLOY_KEY)
                .ok()
                .filter(|key| !key.is_empty())
                .map(SecretString::from),
            runner_name: std::env::var(env::NAME)
                .unwrap_or_else(|_| format!("local:{}", std::process::id())),
        })
    }

    /// The Terraform workspace of the VM: its state lives in Postgres under this name.
    pub fn workspace(&self) -> String {
        format!("vm-{}", self.vm_id)
    }
}

/// `NATS_USER` with `NATS_PASSWORD`, or `NATS_CREDS_FILE`, or neither.
fn nats_auth(var: &dyn Fn(&str) -> Option<String>) -> Result<bus::NatsAuth, ConfigError> {
    let invalid = |name, reason| ConfigError { name, reason };
    match (
        var(env::NATS_USER),
        var(env::NATS_PASSWORD),
        var(env::NATS_CREDS_FILE),
    ) {
        (None, None, None) => Ok(bus::NatsAuth::Url),
        (Some(user), Some(password), None) => Ok(bus::NatsAuth::UserPassword {
            user,
            password: password.into(),
        }),
        (None, None, Some(file)) => Ok(bus::NatsAuth::CredentialsFile(file.into())),
        (_, _, Some(_)) => Err(invalid(
            env::NATS_CREDS_FILE,
            "must not be set with NATS_USER or NATS_PASSWORD",
        )),
        (None, Some(_), None) => Err(invalid(env::NATS_USER, "must be set with NATS_PASSWORD")),
        (Some(_), None, None) => Err(invalid(env::NATS_PASSWORD, "must be set with NATS_USER")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(vars: &[(&str, &str)]) -> Result<bus::NatsAuth, ConfigError> {
        let vars: std::collections::HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        nats_auth(&|name| vars.get(name).cloned())
    }

    #[test]
    fn the_runner_connects_as_its_own_nats_user_when_told_one() {
        assert!(matches!(auth(&[]), Ok(bus::NatsAuth::Url)));
        let with_password = auth(&[("NATS_USER", "runner"), ("NATS_PASSWORD", "pw")]);
        assert!(
            matches!(with_password, Ok(bus::NatsAuth::UserPassword { user, .. }) if user == "runner")
        );
        let with_file = auth(&[("NATS_CREDS_FILE", "/etc/nats/runner.creds")]);
        assert!(matches!(with_file, Ok(bus::NatsAuth::CredentialsFile(_))));
        assert!(auth(&[("NATS_USER", "runner")]).is_err());
        assert!(auth(&[("NATS_PASSWORD", "pw")]).is_err());
        assert!(auth(&[
            ("NATS_USER", "runner"),
            ("NATS_PASSWORD", "pw"),
            ("NATS_CREDS_FILE", "/f")
        ])
        .is_err());
    }
}
