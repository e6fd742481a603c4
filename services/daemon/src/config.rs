//! Configuration, read from the environment in this one place, with defaults that run
//! the platform on one machine.

use std::net::SocketAddr;
use std::path::PathBuf;

use secrecy::SecretString;

mod drift;
mod frontend;
mod install;
mod kubernetes;
mod lifecycle;
mod local_boot;
mod oidc;
mod runner_bus;
use drift::drift_check;
use frontend::frontend_dir;
pub use install::InstallConfig;
use kubernetes::kubernetes;
pub use lifecycle::LifecycleConfig;
pub use oidc::OidcConfig;
pub use runner_bus::RunnerBusConfig;

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

/// `PROVISIONING_SSH_WIDEST_PREFIX`: a prefix length from 1 to 32 (0 would allow the whole
/// Internet, which is always refused).
fn ssh_widest_prefix(var: &dyn Fn(&str) -> Option<String>) -> Result<u8, ConfigError> {
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
fn trusted_client_ip_header(
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
fn positive_secs(
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
fn job_limits(
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
fn max_runners(
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
fn count(
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
fn nats_replicas(var: &dyn Fn(&str) -> Option<String>) -> Result<usize, ConfigError> {
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
fn db_limits(var: &dyn Fn(&str) -> Option<String>) -> Result<store::SessionLimits, ConfigError> {
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

/// Splits a Postgres URL into Terraform's `conn_str` without the password (the `pg`
/// backend needs `sslmode`; local servers have no TLS) and the password, which the runner
/// passes as `PGPASSWORD` so that no argument list shows it. The URL's password is
/// percent-encoded (`p%40ss` for `p@ss`); `PGPASSWORD` takes it decoded, and it is redacted
/// from the runner's reports in that form.
pub fn backend_connection(url: &str) -> Result<(String, Option<SecretString>), ConfigError> {
    let invalid = || ConfigError {
        name: "PROVISIONING_TF_BACKEND_URL",
        reason: "must be a postgres:// URL".into(),
    };
    let mut parsed = url::Url::parse(url).map_err(|_| invalid())?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(invalid());
    }
    let password = match parsed.password() {
        Some(encoded) => Some(SecretString::from(
            percent_encoding::percent_decode_str(encoded)
                .decode_utf8()
                .map_err(|_| ConfigError {
                    name: "PROVISIONING_TF_BACKEND_URL",
                    reason: "the password must be percent-encoded UTF-8".into(),
                })?
                .into_owned(),
        )),
        None => None,
    };
    parsed.set_password(None).map_err(|_| invalid())?;
    if !parsed.query_pairs().any(|(k, _)| k == "sslmode") {
        parsed.query_pairs_mut().append_pair("sslmode", "disable");
    }
    Ok((parsed.to_string(), password))
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn the_backend_connection_keeps_the_password_out_of_the_conn_str() {
        let (conn, password) =
            backend_connection("postgres://tf:s3cret@db.example:5432/state").unwrap();
        assert_eq!(conn, "postgres://tf@db.example:5432/state?sslmode=disable");
        assert_eq!(password.unwrap().expose_secret(), "s3cret");
        let (conn, password) =
            backend_connection("postgres://tf@db/state?sslmode=require").unwrap();
        assert_eq!(conn, "postgres://tf@db/state?sslmode=require");
        assert!(password.is_none());
        assert!(backend_connection("mysql://x/y").is_err());
    }

    #[test]
    fn the_backend_password_is_percent_decoded() {
        let (conn, password) = backend_connection("postgres://tf:p%40ss@db/s").unwrap();
        assert_eq!(password.unwrap().expose_secret(), "p@ss");
        assert_eq!(conn, "postgres://tf@db/s?sslmode=disable");
        let (_, password) = backend_connection("postgres://tf:a%2Fb%3Ac%25d@db/s").unwrap();
        assert_eq!(password.unwrap().expose_secret(), "a/b:c%d");
        assert!(backend_connection("postgres://tf:%FF@db/s").is_err());
    }

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
