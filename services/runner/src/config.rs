use std::path::PathBuf;
use std::time::Duration;

use domain::provisioning::{JobAction, JobId, VmId};
use secrecy::SecretString;

use crate::env;

/// What a runner is told, through its environment (as a Kubernetes Job would be).
#[derive(Debug)]
pub struct RunnerConfig {
    pub nats_url: String,
    pub prefix: String,
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
            .ok_or_else(|| invalid(env::ACTION, "must be create, destroy or refresh"))?;
        Ok(Self {
            nats_url: var(env::NATS_URL)?,
            prefix: var(env::NATS_PREFIX).unwrap_or_else(|_| "provisioning".into()),
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
            runner_name: std::env::var(env::NAME)
                .unwrap_or_else(|_| format!("local:{}", std::process::id())),
        })
    }

    /// The Terraform workspace of the VM: its state lives in Postgres under this name.
    pub fn workspace(&self) -> String {
        format!("vm-{}", self.vm_id)
    }
}
