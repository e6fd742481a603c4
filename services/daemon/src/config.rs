//! Configuration, read from the environment in this one place, with defaults that run
//! the platform on one machine.

use std::net::SocketAddr;
use std::path::PathBuf;

use secrecy::SecretString;

mod backend;
mod drift;
mod frontend;
mod install;
mod kubernetes;
mod lifecycle;
mod local_boot;
mod oidc;
mod runner_bus;
mod values;
pub use backend::backend_connection;
use drift::drift_check;
use frontend::frontend_dir;
pub use install::InstallConfig;
use kubernetes::kubernetes;
pub use lifecycle::LifecycleConfig;
pub use oidc::OidcConfig;
pub use runner_bus::RunnerBusConfig;
use values::{
    count, db_limits, job_limits, max_runners, nats_replicas, positive_secs, ssh_widest_prefix,
    trusted_client_ip_header,
};
pub use values::{
    DEFAULT_KUBERNETES_MAX_RUNNERS, DEFAULT_STREAMS_PER_CALLER, DEFAULT_STREAM_CAPACITY,
};

#[derive(Debug, Clone)]
pub struct Config {
    pub http_addr: SocketAddr,
    /// May hold a password: never logged.
    pub database_url: SecretString,
    /// One NATS URL, or the servers of a cluster separated by commas; runners get the same.
    pub nats_url: String,
    pub nats_prefix: String,
    /// How many servers of a JetStream cluster keep each stream
    /// (`PROVISIONING_NATS_REPLICAS`, 1 to 5; 1 by default, for a single server).
    pub nats_replicas: usize,
    /// The admin token (`PROVISIONING_ADMIN_TOKEN`): its holder is the built-in admin.
    /// `generate` makes one at start and prints it; unset, one is generated only when no
    /// sign-in is configured.
    pub admin_token: Option<SecretString>,
    pub hcl_dir: PathBuf,
    /// The taskservs' catalog (`PROVISIONING_TASKSERVS_DIR`; none: `<hcl dir>/taskservs`):
    /// its `registry.toml` and one folder per taskserv. See [`Config::taskservs_dir`].
    pub taskservs_dir: Option<PathBuf>,
    /// The cluster templates (`PROVISIONING_CLUSTERS_DIR`; none: `<hcl dir>/clusters`):
    /// its `registry.toml` and one Nickel file per template. See [`Config::clusters_dir`].
    pub clusters_dir: Option<PathBuf>,
    pub work_dir: PathBuf,
    pub terraform_bin: PathBuf,
    pub runner_bin: PathBuf,
    /// Where Terraform keeps state (its `pg` backend); may hold a password.
    pub tf_backend_url: SecretString,
    pub json_logs: bool,
    /// How long a job may stay silent (no line, no result) before the watchdog fails it.
    pub job_silence: std::time::Duration,
    /// Each action's deadline and the cancel cool-off (`PROVISIONING_DEADLINE_CREATE`,
    /// `_DESTROY`, `_REFRESH`, `PROVISIONING_CANCEL_COOLOFF`, in seconds).
    pub job_limits: domain::provisioning::JobLimits,
    /// An age-encrypted file of `NAME=value` credential lines, and the identity to open it.
    pub credentials_file: Option<(PathBuf, PathBuf)>,
    /// How many runners one dispatcher keeps running at once (`PROVISIONING_MAX_RUNNERS`);
    /// further jobs wait in JetStream, in order.
    pub max_runners: usize,
    /// How long runners send a report again before they give up
    /// (`PROVISIONING_RUNNER_PUBLISH_RETRY_SECS`, passed to them as
    /// `RUNNER_PUBLISH_RETRY_SECS`): a NATS outage shorter than this loses nothing.
    pub runner_publish_retry: std::time::Duration,
    /// The runners' signing secret and local runners' NATS user.
    pub runner_bus: RunnerBusConfig,
    /// `PROVISIONING_EXECUTOR=kubernetes`: runners run as Kubernetes Jobs; `None` (the
    /// default) runs them as child processes of the dispatcher.
    pub kubernetes: Option<dispatcher::KubernetesConfig>,
    /// The statement and idle-in-transaction timeouts of the daemon's Postgres sessions.
    pub db_limits: store::SessionLimits,
    /// Callbacks, boot timeout and expiry.
    pub lifecycle: LifecycleConfig,
    /// The widest network a VM's `allow_ssh_from` may name, as its prefix length
    /// (`PROVISIONING_SSH_WIDEST_PREFIX`, 1 to 32; 16 by default: a /8 is refused).
    pub ssh_widest_prefix: u8,
    /// Behind a proxy, the header in which it names the caller, for `me` in
    /// `allow_ssh_from` (`PROVISIONING_TRUSTED_CLIENT_IP_HEADER`, e.g. `X-Forwarded-For`).
    /// Unset (the default), the header is ignored and `me` is the connection's peer.
    pub trusted_client_ip_header: Option<String>,
    /// The drift check (`PROVISIONING_DRIFT_INTERVAL`, `PROVISIONING_DRIFT_BATCH`): `None`,
    /// the default, when off.
    pub drift_check: Option<ingester::DriftCheckConfig>,
    /// `PROVISIONING_FRONTEND_DIR`: a built frontend served at `/`; `None`: no frontend.
    pub frontend_dir: Option<PathBuf>,
    /// Whether `local` VMs boot in simulation (`PROVISIONING_LOCAL_BOOT`,
    /// `PROVISIONING_LOCAL_BOOT_DELAY_SECS`); only the local executor does it.
    pub local_boot: dispatcher::LocalBoot,
    /// Sign-in with OpenID Connect (`PROVISIONING_OIDC_*`): `None`, the default, when off.
    pub oidc: Option<OidcConfig>,
    /// The Cedar policies' directory (`PROVISIONING_POLICY_DIR`): its `schema.cedarschema`
    /// and `*.cedar` files. Unset, the built-in defaults (`deploy/policies`) apply.
    pub policy_dir: Option<PathBuf>,
    /// Emails made admins (`PROVISIONING_BOOTSTRAP_ADMINS`, separated by commas): at start
    /// and at their sign-in. A role is never lowered by it.
    pub bootstrap_admins: Vec<String>,
    /// How many messages each live stream's NATS subscription holds before NATS drops the
    /// rest for it (`PROVISIONING_STREAM_CAPACITY`, 256 by default); the stream then reads
    /// what it missed from Postgres.
    pub stream_capacity: usize,
    /// How many streams and exports one caller may hold open at once
    /// (`PROVISIONING_STREAMS_PER_CALLER`, 16 by default); the next is a 429.
    pub streams_per_caller: usize,
    /// Install jobs: the taskserv catalog (`PROVISIONING_TASKSERVS_DIR`) and the VMs' SSH
    /// port (`PROVISIONING_SSH_PORT`).
    pub install: InstallConfig,
}

#[derive(Debug, thiserror::Error)]
#[error("{name}: {reason}")]
pub struct ConfigError {
    pub name: &'static str,
    pub reason: String,
}

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/provisioning";
pub const DEFAULT_NATS_URL: &str = "nats://127.0.0.1:4222";

impl Config {
    /// Where the taskservs' catalog is: as set, else beside the Terraform folders (so a
    /// program that moves `hcl_dir` moves it too).
    pub fn taskservs_dir(&self) -> PathBuf {
        self.taskservs_dir
            .clone()
            .unwrap_or_else(|| self.hcl_dir.join("taskservs"))
    }

    /// Where the cluster templates are: as set, else beside the Terraform folders.
    pub fn clusters_dir(&self) -> PathBuf {
        self.clusters_dir
            .clone()
            .unwrap_or_else(|| self.hcl_dir.join("clusters"))
    }

    pub fn from_env() -> Result<Self, ConfigError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let http_addr = var("PROVISIONING_HTTP_ADDR")
            .unwrap_or_else(|| "127.0.0.1:8080".into())
            .parse()
            .map_err(|_| ConfigError {
                name: "PROVISIONING_HTTP_ADDR",
                reason: "must be an address such as 127.0.0.1:8080".into(),
            })?;
        let database_url = var("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.into());
        let tf_backend_url =
            var("PROVISIONING_TF_BACKEND_URL").unwrap_or_else(|| database_url.clone());
        let prefix = var("PROVISIONING_NATS_PREFIX").unwrap_or_else(|| "provisioning".into());
        if !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(ConfigError {
                name: "PROVISIONING_NATS_PREFIX",
                reason: "may contain only letters, digits, '_' and '-'".into(),
            });
        }
        let runner_bin = match var("PROVISIONING_RUNNER_BIN") {
            Some(path) => path.into(),
            None => std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(|dir| dir.join("provisioning-runner")))
                .unwrap_or_else(|| "provisioning-runner".into()),
        };
        let nats_url = var("NATS_URL").unwrap_or_else(|| DEFAULT_NATS_URL.into());
        bus::check_server_urls(&nats_url).map_err(|reason| ConfigError {
            name: "NATS_URL",
            reason,
        })?;
        let kubernetes = kubernetes(&var)?;
        let max_runners = max_runners(&var, kubernetes.is_some())?;
        if kubernetes
            .as_ref()
            .is_some_and(|k| k.backend_secret.is_none())
            && url::Url::parse(&tf_backend_url).is_ok_and(|u| u.password().is_some())
        {
            return Err(ConfigError {
                name: "PROVISIONING_K8S_BACKEND_SECRET",
                reason:
                    "must name the Secret (name/key) holding the Terraform backend's password: \
                         runner Jobs get credentials from Secrets only"
                        .into(),
            });
        }
        Ok(Self {
            http_addr,
            database_url: database_url.into(),
            nats_url,
            nats_prefix: prefix,
            nats_replicas: nats_replicas(&var)?,
            admin_token: var("PROVISIONING_ADMIN_TOKEN").map(SecretString::from),
            taskservs_dir: var("PROVISIONING_TASKSERVS_DIR").map(PathBuf::from),
            clusters_dir: var("PROVISIONING_CLUSTERS_DIR").map(PathBuf::from),
            hcl_dir: var("PROVISIONING_HCL_DIR")
                .unwrap_or_else(|| "hcl".into())
                .into(),
            work_dir: var("PROVISIONING_WORK_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("provisioning-jobs")),
            terraform_bin: var("TERRAFORM_BIN")
                .unwrap_or_else(|| "terraform".into())
                .into(),
            runner_bin,
            tf_backend_url: tf_backend_url.into(),
            json_logs: var("PROVISIONING_LOG_FORMAT").as_deref() == Some("json"),
            job_silence: positive_secs(
                &var,
                "PROVISIONING_JOB_SILENCE_SECS",
                std::time::Duration::from_secs(1800),
            )?,
            job_limits: job_limits(&var)?,
            credentials_file: match (
                var("PROVISIONING_CREDENTIALS_FILE"),
                var("PROVISIONING_AGE_IDENTITY_FILE"),
            ) {
                (Some(file), Some(identity)) => Some((file.into(), identity.into())),
                (None, None) => None,
                _ => {
                    return Err(ConfigError {
                        name: "PROVISIONING_CREDENTIALS_FILE",
                        reason: "needs PROVISIONING_AGE_IDENTITY_FILE, and the other way round"
                            .into(),
                    })
                }
            },
            max_runners,
            runner_publish_retry: match var("PROVISIONING_RUNNER_PUBLISH_RETRY_SECS") {
                None => dispatcher::DEFAULT_RUNNER_PUBLISH_RETRY,
                Some(secs) => match secs.parse::<u64>() {
                    Ok(secs) => std::time::Duration::from_secs(secs),
                    Err(_) => {
                        return Err(ConfigError {
                            name: "PROVISIONING_RUNNER_PUBLISH_RETRY_SECS",
                            reason: "must be a number of seconds".into(),
                        })
                    }
                },
            },
            runner_bus: runner_bus::runner_bus(&var, kubernetes.is_some())?,
            kubernetes,
            db_limits: db_limits(&var)?,
            lifecycle: lifecycle::lifecycle(&var)?,
            ssh_widest_prefix: ssh_widest_prefix(&var)?,
            trusted_client_ip_header: trusted_client_ip_header(&var)?,
            drift_check: drift_check(&var)?,
            frontend_dir: frontend_dir(&var)?,
            local_boot: local_boot::local_boot(&var)?,
            oidc: oidc::oidc(&var)?,
            policy_dir: var("PROVISIONING_POLICY_DIR").map(PathBuf::from),
            bootstrap_admins: var("PROVISIONING_BOOTSTRAP_ADMINS")
                .map(|v| {
                    v.split(',')
                        .map(|e| e.trim().to_lowercase())
                        .filter(|e| !e.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            stream_capacity: count(
                &var,
                "PROVISIONING_STREAM_CAPACITY",
                DEFAULT_STREAM_CAPACITY,
            )?,
            streams_per_caller: count(
                &var,
                "PROVISIONING_STREAMS_PER_CALLER",
                DEFAULT_STREAMS_PER_CALLER,
            )?,
            install: install::install(&var)?,
        })
    }
}

impl Config {
    /// Whether users can sign in (an OpenID Connect issuer is configured): then the admin
    /// token is off unless asked for.
    pub fn sign_in_configured(&self) -> bool {
        self.oidc.is_some()
    }
}

/// The credential values of the registry's providers: from the encrypted credentials file
/// if configured, else from this process's environment. With the Kubernetes executor
/// runners get Secret references instead, and the daemon holds no value.
pub fn credentials(
    registry: &registry::Registry,
    config: &Config,
) -> Result<registry::Credentials, registry::CredentialError> {
    if config.kubernetes.is_some() {
        return Ok(registry::Credentials::by_reference());
    }
    let file = match &config.credentials_file {
        Some((file, identity)) => registry::Credentials::read_age_file(file, identity)?,
        None => Default::default(),
    };
    Ok(registry::Credentials::resolve(
        registry,
        |name| std::env::var(name).ok(),
        file,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_runner_limit_defaults_by_executor_and_can_be_set() {
        let none = |_: &str| None;
        assert!(max_runners(&none, false).unwrap() >= 2);
        assert_eq!(
            max_runners(&none, true).unwrap(),
            DEFAULT_KUBERNETES_MAX_RUNNERS
        );
        let set = |n: &'static str| {
            move |name: &str| (name == "PROVISIONING_MAX_RUNNERS").then(|| n.to_owned())
        };
        assert_eq!(max_runners(&set("5"), false).unwrap(), 5);
        assert_eq!(
            max_runners(&set("0"), true).unwrap_err().name,
            "PROVISIONING_MAX_RUNNERS"
        );
        assert!(max_runners(&set("many"), false).is_err());
    }

    #[test]
    fn the_ssh_network_settings_have_defaults_and_are_checked() {
        let none = |_: &str| None;
        assert_eq!(ssh_widest_prefix(&none).unwrap(), 16);
        assert_eq!(trusted_client_ip_header(&none).unwrap(), None);
        let set =
            |name: &'static str, v: &'static str| move |n: &str| (n == name).then(|| v.to_owned());
        let prefix = "PROVISIONING_SSH_WIDEST_PREFIX";
        assert_eq!(ssh_widest_prefix(&set(prefix, "24")).unwrap(), 24);
        for wrong in ["0", "33", "wide"] {
            assert_eq!(
                ssh_widest_prefix(&set(prefix, wrong)).unwrap_err().name,
                prefix
            );
        }
        let header = "PROVISIONING_TRUSTED_CLIENT_IP_HEADER";
        assert_eq!(
            trusted_client_ip_header(&set(header, "X-Forwarded-For")).unwrap(),
            Some("x-forwarded-for".to_owned())
        );
        assert!(trusted_client_ip_header(&set(header, "bad header")).is_err());
    }

    #[test]
    fn the_streams_have_one_replica_unless_configured() {
        let set = |n: &'static str| {
            move |name: &str| (name == "PROVISIONING_NATS_REPLICAS").then(|| n.to_owned())
        };
        assert_eq!(nats_replicas(&|_| None).unwrap(), 1);
        assert_eq!(nats_replicas(&set("3")).unwrap(), 3);
        for wrong in ["0", "6", "three"] {
            assert_eq!(
                nats_replicas(&set(wrong)).unwrap_err().name,
                "PROVISIONING_NATS_REPLICAS"
            );
        }
    }
}
