//! The runner's environment variables: what the dispatcher's executors set and
//! [`RunnerConfig::from_env`](crate::RunnerConfig::from_env) reads.

/// The NATS server the runner reports to.
pub const NATS_URL: &str = "NATS_URL";
/// The subject prefix of the deployment (`provisioning` when unset).
pub const NATS_PREFIX: &str = "PROVISIONING_NATS_PREFIX";
pub const VM_ID: &str = "RUNNER_VM_ID";
pub const JOB_ID: &str = "RUNNER_JOB_ID";
/// `create`, `destroy`, `refresh` or `install`.
pub const ACTION: &str = "RUNNER_ACTION";
/// The Terraform working directory.
pub const WORKDIR: &str = "RUNNER_WORKDIR";
/// A read-only copy of the working directory's files, copied into it first (Kubernetes).
pub const SOURCE_DIR: &str = "RUNNER_SOURCE_DIR";
/// The Terraform binary (`terraform` on `PATH` when unset).
pub const TERRAFORM_BIN: &str = "TERRAFORM_BIN";
/// `conn_str` of Terraform's `pg` backend, without a password.
pub const BACKEND_CONN_STR: &str = "RUNNER_BACKEND_CONN_STR";
/// The `pg` backend's password; given to Terraform as `PGPASSWORD`.
pub const BACKEND_PASSWORD: &str = "RUNNER_BACKEND_PASSWORD";
/// How the runner names itself in its `Started` report.
pub const NAME: &str = "RUNNER_NAME";
/// Comma-separated names of the variables holding credentials, whose values are redacted
/// from everything the runner publishes.
pub const SECRET_ENV: &str = "RUNNER_SECRET_ENV";
/// How long, in seconds, a report that could not be published is sent again before the
/// runner gives up (300 when unset): a NATS restart or outage shorter than this loses
/// nothing.
pub const PUBLISH_RETRY_SECS: &str = "RUNNER_PUBLISH_RETRY_SECS";
/// `json` for JSON log lines on stderr.
pub const LOG_FORMAT: &str = "PROVISIONING_LOG_FORMAT";
/// Seconds between the runner's heartbeats (10 when unset): the watchdog's silence limit
/// (`PROVISIONING_JOB_SILENCE_SECS`) must be well above it.
pub const HEARTBEAT_SECS: &str = "RUNNER_HEARTBEAT_SECS";
/// The runner's own NATS user (with [`NATS_PASSWORD`]), when the URL holds no credentials.
pub const NATS_USER: &str = "NATS_USER";
/// The password of [`NATS_USER`]; kept from Terraform.
pub const NATS_PASSWORD: &str = "NATS_PASSWORD";
/// A NATS credentials file (user JWT and nkey seed), instead of a user and password.
pub const NATS_CREDS_FILE: &str = "NATS_CREDS_FILE";
/// The key of the runner's job (hex), which signs every report it publishes: given to
/// this job alone, kept from Terraform.
pub const SIGNING_KEY: &str = "RUNNER_SIGNING_KEY";
/// An install job's deploy key (OpenSSH private key text): how its runner logs in to the
/// VM. Given to that job alone, kept from Terraform, redacted from what the runner publishes.
pub const DEPLOY_KEY: &str = "RUNNER_DEPLOY_KEY";
