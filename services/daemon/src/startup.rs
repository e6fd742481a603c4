//! Builds the roles a process runs and runs them until one cancellation token stops them.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::serve::ListenerExt;
use dispatcher::cloud_init::CallbackUrls;
use dispatcher::{
    BootSimulator, Dispatcher, DispatcherConfig, Executor, KubernetesExecutor, LocalExecutor,
};
use domain::callbacks::CallbackSigner;
use ingester::Ingester;
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpListener;
use tokio::task::{JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

use crate::config::{backend_connection, Config, ConfigError};

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

    /// Runs every configured role until the shutdown token is cancelled. A role that ends
    /// before (a bug, a panic) stops the others, and the error names it.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let mut roles = RoleSet::default();
        let cancel = self.cancel;
        let state = self.state;
        if self.roles.relay {
            let (pool, bus) = (state.app.pool.clone(), state.app.bus.clone());
            roles.spawn("relay", relay::run(pool, bus, cancel.clone()));
        }
        if self.roles.projector {
            roles.spawn(
                "projector",
                projector::run(state.app.pool.clone(), cancel.clone()),
            );
        }
        if self.roles.dispatcher {
            let dispatcher = Dispatcher {
                config: self.dispatcher,
                pool: state.app.pool.clone(),
                bus: state.app.bus.clone(),
                executor: self.executor.clone(),
                max_runners: self.max_runners,
                name: dispatcher_name(),
                keys: self.runner_keys.clone(),
            };
            roles.spawn("dispatcher", dispatcher.run(cancel.clone()));
            if let Some(kubernetes) = &self.kubernetes {
                // Reports the jobs whose runner's Job or pod ended in a way it could not
                // report; its reconciler, those whose Job vanished.
                let watcher = kubernetes.watcher(
                    Arc::new(dispatcher::BusFailures(
                        state.app.bus.clone(),
                        self.runner_keys.clone(),
                    )),
                    Arc::new(dispatcher::StoreRunningJobs(state.app.pool.clone())),
                );
                roles.spawn("kubernetes-watcher", watcher.run(cancel.clone()));
            }
            let (pool, bus) = (state.app.pool.clone(), state.app.bus.clone());
            roles.spawn(
                "job-status",
                dispatcher::answer_job_status(pool, bus, cancel.clone()),
            );
        }
        if self.roles.ingester {
            let ingester = Ingester::new(
                state.app.bus.clone(),
                state.app.pool.clone(),
                self.runner_keys.clone(),
            );
            roles.spawn("ingester", ingester.run(cancel.clone()));
            let watchdog = ingester::Watchdog {
                pool: state.app.pool.clone(),
                silence: self.job_silence,
                executor: self.executor.clone(),
                limits: state.app.job_limits,
            };
            roles.spawn("watchdog", watchdog.run(cancel.clone()));
            let (every, warnings, boot_timeout) = self.sweep;
            let sweep = ingester::Sweep {
                pool: state.app.pool.clone(),
                every,
                warnings,
                boot_timeout,
            };
            roles.spawn("lifecycle-sweep", sweep.run(cancel.clone()));
            let gauges = ingester::Gauges {
                pool: state.app.pool.clone(),
                bus: state.app.bus.clone(),
            };
            roles.spawn("gauges", gauges.run(cancel.clone()));
            if let Some(config) = self.drift_check {
                let check = ingester::DriftCheck {
                    pool: state.app.pool.clone(),
                    config,
                };
                roles.spawn("drift-check", check.run(cancel.clone()));
            }
        }
        if self.roles.api {
            // Makes clusters' nodes through the same use cases as the API; once in the
            // deployment (a lease), so any daemon serving the API may run it.
            roles.spawn(
                "cluster-coordinator",
                app::clusters::coordinator::run(state.app.clone(), CLUSTER_SWEEP, cancel.clone()),
            );
            let policies = state.app.policies.clone();
            roles.spawn("policy-reload", reload_on_sighup(policies, cancel.clone()));
        }
        if let Some(listener) = self.listener {
            // `GET /metrics` serves the platform gauges whichever replica computed them.
            let following = ingester::gauges::follow(state.app.bus.clone(), cancel.clone());
            roles.spawn("gauges-follower", following);
            let stop = cancel.clone();
            roles.spawn("api", async move {
                // With each connection's peer address: `me` in `allow_ssh_from` needs it.
                let app = if self.roles.api {
                    api::app(state)
                } else {
                    api::metrics_app()
                };
                let app = app.into_make_service_with_connect_info::<SocketAddr>();
                // Without Nagle's delay: an SSE event or an answer written in two parts
                // would otherwise wait for the client's delayed ACK (40 ms on Linux).
                let listener = listener.tap_io(|tcp| {
                    if let Err(error) = tcp.set_nodelay(true) {
                        tracing::debug!(%error, "could not set TCP_NODELAY on a connection");
                    }
                });
                let deadline = stop.clone();
                let served = axum::serve(listener, app)
                    .with_graceful_shutdown(async move { stop.cancelled().await });
                // Streams and exports end at shutdown, but only when the server asks them
                // for more: one whose client stopped reading waits on the socket. After
                // the grace, the server stops waiting and such connections are dropped
                // with the runtime.
                tokio::select! {
                    served = served => if let Err(e) = served {
                        tracing::error!(error = %e, "the API server failed");
                    },
                    _ = async {
                        deadline.cancelled().await;
                        tokio::time::sleep(SHUTDOWN_GRACE).await;
                    } => tracing::warn!(
                        grace = ?SHUTDOWN_GRACE,
                        "answers still in progress after the shutdown grace are cut"
                    ),
                }
            });
        }
        // A role that ends before shutdown stops the process, so that a supervisor restarts
        // it rather than it running on without that role.
        let result = tokio::select! {
            // Roles end when cancelled too: a shutdown seen at the same time is no failure.
            biased;
            _ = cancel.cancelled() => Ok(()),
            Some((role, ended)) = roles.join_next() => {
                cancel.cancel();
                let error = match ended {
                    Err(e) if e.is_panic() => format!("the {role} role panicked"),
                    _ => format!("the {role} role ended before shutdown"),
                };
                tracing::error!(role, "{error}; stopping the other roles");
                Err(std::io::Error::other(error))
            }
        };
        while roles.join_next().await.is_some() {}
        result
    }
}

/// Reloads the policies at each SIGHUP until cancelled; a bad reload keeps the old ones.
async fn reload_on_sighup(policies: Arc<api::policy::Policies>, cancel: CancellationToken) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangups = match signal(SignalKind::hangup()) {
        Ok(hangups) => hangups,
        Err(e) => {
            tracing::error!(error = %e, "no SIGHUP handler: policies reload only through the API");
            return cancel.cancelled().await;
        }
    };
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = hangups.recv() => match policies.reload() {
                Ok(count) => tracing::info!(policies = count, "policies reloaded on SIGHUP"),
                Err(e) => tracing::error!(error = %e, "policies not reloaded on SIGHUP; the old ones stay"),
            },
        }
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

/// The running roles, by name.
#[derive(Default)]
struct RoleSet {
    tasks: JoinSet<()>,
    names: HashMap<tokio::task::Id, &'static str>,
}

impl RoleSet {
    fn spawn(&mut self, name: &'static str, role: impl Future<Output = ()> + Send + 'static) {
        let id = self.tasks.spawn(role).id();
        self.names.insert(id, name);
    }

    /// The next role to end, with how it ended; `None` when none runs.
    async fn join_next(&mut self) -> Option<(&'static str, Result<(), JoinError>)> {
        let (id, ended) = match self.tasks.join_next_with_id().await? {
            Ok((id, ())) => (id, Ok(())),
            Err(e) => (e.id(), Err(e)),
        };
        Some((self.names.remove(&id).unwrap_or("unnamed"), ended))
    }
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

#[cfg(test)]
mod tests {
    use super::RoleSet;

    #[tokio::test]
    async fn a_role_that_ends_is_known_by_its_name() {
        let mut roles = RoleSet::default();
        roles.spawn("waiting", std::future::pending());
        roles.spawn("broken", async { panic!("a bug") });
        let (name, ended) = roles.join_next().await.unwrap();
        assert_eq!(name, "broken");
        assert!(ended.unwrap_err().is_panic());

        roles.spawn("done", async {});
        let (name, ended) = roles.join_next().await.unwrap();
        assert_eq!(name, "done");
        assert!(ended.is_ok());
    }
}
