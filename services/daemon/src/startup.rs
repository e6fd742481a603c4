//! Builds the roles a process runs and runs them until one cancellation token stops them.

use std::sync::Arc;

use dispatcher::cloud_init::CallbackUrls;
use dispatcher::{BootSimulator, DispatcherConfig, Executor, KubernetesExecutor, LocalExecutor};
use domain::callbacks::CallbackSigner;
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::{backend_connection, Config, ConfigError};

mod run;

/// Which roles this process runs.
#[derive(Debug, Clone, Copy)]
pub struct Roles {
    pub api: bool,
    pub relay: bool,
    pub projector: bool,
    pub dispatcher: bool,
    pub ingester: bool,
}

impl Roles {
    /// Whether the process runs any role.
    pub fn runs_any(&self) -> bool {
        self.api || self.relay || self.projector || self.dispatcher || self.ingester
    }

    pub const ALL: Roles = Roles {
        api: true,
        relay: true,
        projector: true,
        dispatcher: true,
        ingester: true,
    };
    pub const NONE: Roles = Roles {
        api: false,
        relay: false,
        projector: false,
        dispatcher: false,
        ingester: false,
    };
}

#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    #[error("Postgres: {0}")]
    Store(#[from] store::StoreError),
    #[error("could not prepare Terraform's state backend (PROVISIONING_TF_BACKEND_URL)")]
    TerraformState(#[source] store::StoreError),
    #[error("could not connect to NATS: {0}")]
    Nats(#[from] bus::async_nats::ConnectError),
    #[error("JetStream: {0}")]
    JetStream(#[from] bus::SetupError),
    #[error("{0}")]
    Registry(#[from] registry::RegistryError),
    #[error("taskservs: {0}")]
    Taskservs(#[from] taskservs::LoadError),
    #[error("cluster templates: {0}")]
    Clusters(#[from] clusters::LoadError),
    #[error("the catalog does not match the provider registry:\n  {}", .0.join("\n  "))]
    Catalog(Vec<String>),
    #[error("credentials: {0}")]
    Credentials(#[from] registry::CredentialError),
    #[error("Kubernetes executor: {0}")]
    Kubernetes(#[from] dispatcher::ExecutorError),
    #[error("sign-in: {0}")]
    Oidc(#[from] api::oidc::OidcError),
    #[error("policies: {0}")]
    Policy(#[from] api::policy::PolicyError),
    #[error("PROVISIONING_CALLBACK_SECRET: must be at least 32 bytes")]
    CallbackKey,
    #[error("PROVISIONING_RUNNER_SIGNING_SECRET: must be at least 32 bytes")]
    RunnerSigningKey,
    #[error("could not listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        source: std::io::Error,
    },
}

/// How long a stopping server waits for the answers in progress (streams and exports end at
/// once, unless their client stopped reading) before it cuts them.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// How often the cluster coordinator looks at every cluster not ended: a gate's deadline
/// is noticed that late at most.
const CLUSTER_SWEEP: std::time::Duration = std::time::Duration::from_secs(2);

pub struct Application {
    roles: Roles,
    listener: Option<TcpListener>,
    port: u16,
    state: api::AppState,
    dispatcher: DispatcherConfig,
    executor: Arc<dyn Executor>,
    /// The executor again when it is Kubernetes: the dispatcher role watches its Jobs.
    kubernetes: Option<Arc<KubernetesExecutor>>,
    job_silence: std::time::Duration,
    /// The lifecycle sweep's period, expiry warnings and boot timeout.
    sweep: (
        std::time::Duration,
        Vec<std::time::Duration>,
        std::time::Duration,
    ),
    max_runners: usize,
    /// Signs and checks runner messages, by job.
    runner_keys: bus::RunnerKeys,
    drift_check: Option<ingester::DriftCheckConfig>,
    cancel: CancellationToken,
}

/// Makes the `pg` backend's schema and table before this process starts any runner: the
/// first inits of a new state database, run together, would race to make them.
async fn prepare_terraform_state(url: &str) -> Result<(), StartupError> {
    let pool = store::connect(url, 1)
        .await
        .map_err(StartupError::TerraformState)?;
    let prepared = store::terraform_state::prepare(&pool).await;
    pool.close().await;
    prepared.map_err(StartupError::TerraformState)
}

/// The runners' master secret: configured, or the one the daemons keep in Postgres.
async fn runner_keys(
    pool: &store::PgPool,
    config: &crate::config::RunnerBusConfig,
) -> Result<bus::RunnerKeys, StartupError> {
    let master = match &config.signing_secret {
        Some(secret) => secret.expose_secret().as_bytes().to_vec(),
        None => store::runner_keys::runner_signing_key(pool)
            .await
            .map_err(store::StoreError::from)?,
    };
    bus::RunnerKeys::new(master).ok_or(StartupError::RunnerSigningKey)
}

impl Application {
    /// Connects to Postgres (applying migrations) and NATS (creating streams), and binds
    /// the HTTP listener (the API, or only `/metrics` and `/healthz` when the API runs
    /// elsewhere). Port 0 picks a free port.
    pub async fn build(
        config: Config,
        roles: Roles,
        admin_token: Option<SecretString>,
    ) -> Result<Self, StartupError> {
        // First: a bad policy stops the start before anything connects.
        let policies = Arc::new(api::policy::Policies::load(config.policy_dir.clone())?);
        let registry = Arc::new(registry::Registry::load(&config.hcl_dir)?);
        // A bad definition stops the daemon here, with Nickel's message naming the file.
        let taskservs = Arc::new(taskservs::Catalog::load(&config.taskservs_dir())?);
        let clusters = Arc::new(clusters::ClusterCatalog::load(
            &config.clusters_dir(),
            &taskservs,
        )?);
        let credentials = Arc::new(crate::config::credentials(&registry, &config)?);
        let pool =
            store::connect_with(config.database_url.expose_secret(), 20, config.db_limits).await?;
        store::migrate(&pool).await?;
        check_catalog(&pool, &registry).await?;
        if admin_token.is_some() {
            store::users::ensure_builtin_admin(&pool).await?;
        }
        for email in &config.bootstrap_admins {
            store::users::grant_admin(&pool, email).await?;
        }
        let bus = bus::Bus::connect(&config.nats_url, &config.nats_prefix).await?;
        bus::setup(&bus, config.nats_replicas).await?;
        let runner_keys = runner_keys(&pool, &config.runner_bus).await?;
        let (backend_conn_str, backend_password) =
            backend_connection(config.tf_backend_url.expose_secret())?;
        if roles.dispatcher {
            prepare_terraform_state(config.tf_backend_url.expose_secret()).await?;
        }
        let backend_secret = config
            .kubernetes
            .as_ref()
            .and_then(|k8s| k8s.backend_secret.clone());
        let (executor, kubernetes): (Arc<dyn Executor>, _) = match config.kubernetes {
            // The watchdog (with the ingester) stops the runners of the jobs it fails.
            Some(k8s) if roles.dispatcher || roles.ingester => {
                let executor = Arc::new(KubernetesExecutor::connect(k8s).await?);
                (executor.clone(), Some(executor))
            }
            _ => {
                let local = LocalExecutor {
                    runner_bin: config.runner_bin,
                    bus: bus.clone(),
                    keys: runner_keys.clone(),
                    boot: BootSimulator::new(config.local_boot, pool.clone()).map(Arc::new),
                };
                (Arc::new(local), None)
            }
        };
        // A process without the API serves `/metrics` and `/healthz` only, so that the
        // relay's, dispatcher's and ingester's counters are scraped where they run.
        let (listener, port) = if roles.api || roles.runs_any() {
            let listener = TcpListener::bind(config.http_addr)
                .await
                .map_err(|source| StartupError::Listen {
                    addr: config.http_addr,
                    source,
                })?;
            let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
            (Some(listener), port)
        } else {
            (None, 0)
        };
        let life = &config.lifecycle;
        let key = match &life.callback_secret {
            Some(secret) => secret.expose_secret().as_bytes().to_vec(),
            None => store::life::callback_key(&pool)
                .await
                .map_err(store::StoreError::from)?,
        };
        let signer = Arc::new(CallbackSigner::new(key).ok_or(StartupError::CallbackKey)?);
        // Unset: where this API listens (the port it got, when it asked for any).
        let listening = match port {
            0 => config.http_addr,
            port => std::net::SocketAddr::new(config.http_addr.ip(), port),
        };
        let public_url = life
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{listening}"));
        // Found at start: a provider that cannot be reached stops the start with its error.
        let oidc = match config.oidc {
            Some(oidc) if roles.api => Some(Arc::new(
                api::oidc::Oidc::discover(api::oidc::OidcSettings {
                    issuer: oidc.issuer,
                    client_id: oidc.client_id,
                    client_secret: oidc.client_secret,
                    scopes: oidc.scopes,
                    audience: oidc.audience,
                    groups_claim: oidc.groups_claim,
                    cli_client_id: oidc.cli_client_id,
                    public_url: public_url.clone(),
                })
                .await?,
            )),
            _ => None,
        };
        let console_url: Arc<str> = public_url.as_str().into();
        let callbacks = CallbackUrls {
            public_url,
            signer: signer.clone(),
            ttl: life.callback_ttl,
        };
        let sweep = (
            life.sweep_every,
            life.expiry_warnings.clone(),
            life.boot_timeout,
        );
        let stream_nats = bus::Bus::connect_for_streams(
            &config.nats_url,
            &bus::NatsAuth::Url,
            config.stream_capacity,
            || {
                telemetry::metrics().stream_messages_dropped.inc();
            },
        )
        .await?;
        let cancel = CancellationToken::new();
        let state = api::AppState {
            hub: api::StreamHub::new(pool.clone()),
            stopping: cancel.clone(),
            slots: Arc::new(api::StreamSlots::new(config.streams_per_caller)),
            stream_nats,
            app: app::App {
                pool,
                bus,
                registry: registry.clone(),
                credentials: credentials.clone(),
                job_limits: config.job_limits,
                callbacks: signer,
                widest_prefix: config.ssh_widest_prefix,
                policies,
                taskservs: taskservs.clone(),
                clusters,
            },
            admin_token: admin_token.map(Arc::new),
            network: api::NetworkRules {
                trusted_client_ip_header: config
                    .trusted_client_ip_header
                    .as_deref()
                    .map(|h| axum::http::HeaderName::from_bytes(h.as_bytes()))
                    .transpose()
                    .map_err(|_| ConfigError {
                        name: "PROVISIONING_TRUSTED_CLIENT_IP_HEADER",
                        reason: "must be an HTTP header name, such as X-Forwarded-For".into(),
                    })?,
            },
            oidc,
            bootstrap_admins: config.bootstrap_admins.into(),
            frontend: config.frontend_dir.map(Arc::new),
            public_url: console_url,
        };
        Ok(Self {
            roles,
            listener,
            port,
            state,
            dispatcher: DispatcherConfig {
                hcl_dir: config.hcl_dir,
                work_dir: config.work_dir,
                nats_url: config.nats_url,
                runner_nats_user: config.runner_bus.nats_user,
                backend_conn_str,
                backend_password,
                backend_secret,
                terraform_bin: config.terraform_bin,
                publish_retry: config.runner_publish_retry,
                job_limits: config.job_limits,
                registry,
                credentials,
                callbacks: Some(callbacks),
                install_scripts: Some(crate::install_scripts::scripts(taskservs.clone())),
                ssh_port: config.install.ssh_port,
                taskservs: Some(taskservs),
            },
            sweep,
            executor,
            kubernetes,
            job_silence: config.job_silence,
            max_runners: config.max_runners,
            runner_keys,
            drift_check: config.drift_check,
            cancel,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn pool(&self) -> &store::PgPool {
        &self.state.app.pool
    }

    pub fn bus(&self) -> &bus::Bus {
        &self.state.app.bus
    }

    pub fn registry(&self) -> &registry::Registry {
        &self.state.app.registry
    }

    pub fn credentials(&self) -> &registry::Credentials {
        &self.state.app.credentials
    }

    /// Cancelling this token stops every role of the application.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.cancel.clone()
    }
}

/// Who claims jobs here, as `JobDispatched` records it: host and process.
fn dispatcher_name() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|| "localhost".into());
    format!("{host}:{}", std::process::id())
}

/// Stops the start when an enabled template names a provider the registry lacks or disables.
pub async fn check_catalog(
    pool: &store::PgPool,
    registry: &registry::Registry,
) -> Result<(), StartupError> {
    match app::catalog::catalog_problems(pool, registry).await? {
        problems if problems.is_empty() => Ok(()),
        problems => Err(StartupError::Catalog(problems)),
    }
}
