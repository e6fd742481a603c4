//! `spawn_app()`: the real daemon in process, on port 0, with a fresh database cloned from a
//! migrated template and its own NATS subject prefix.
//!
//! The application runs on a thread and runtime of its own (`app_thread`), with its own
//! connections; the test's `pool` and `bus` are separate ones. `stop()` and `Drop` wait for
//! it to end, and a panic or error of the application fails the test.

use std::time::Duration;

use daemon::{Config, Roles};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use store::PgPool;

use crate::app_thread::{run_on_own_thread, Running};
use crate::database::{nats_url, server_url, template};
use crate::wire::{Event, Vm};

pub const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ test@example";

pub struct TestApp {
    pub address: String,
    pub token: String,
    pub pool: PgPool,
    pub bus: bus::Bus,
    pub client: reqwest::Client,
    pub db_name: String,
    /// The NATS server the application uses (with its credentials, if any).
    nats_url: String,
    running: Option<Running>,
    pub work: tempfile::TempDir,
    /// Whether dropping it removes the database and streams (a replica shares them).
    owner: bool,
    /// The highest `Provisioning-Position` a command answered through the typed helpers:
    /// later `GET`s send it, so they read their writes as a careful client would.
    position: std::sync::atomic::AtomicU64,
}

/// The header of a command's answer: the position of its last event.
pub const POSITION: &str = "provisioning-position";

pub async fn spawn_app() -> TestApp {
    spawn_app_with(Roles::ALL).await
}

pub async fn spawn_app_with(roles: Roles) -> TestApp {
    try_spawn_app(roles, |_| {})
        .await
        .expect("the application starts")
}

/// Starts the application with a configuration changed by `configure`; the error if it
/// refuses to start.
pub async fn try_spawn_app(
    roles: Roles,
    configure: impl FnOnce(&mut Config),
) -> Result<TestApp, daemon::StartupError> {
    if std::env::var("TEST_LOG").is_ok() {
        daemon::telemetry::init(false);
    }
    let template = template().await;
    let id = uuid::Uuid::new_v4().simple().to_string();
    let db_name = format!("provtest_{id}");
    let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
    store::sqlx::query(&format!("CREATE DATABASE {db_name} TEMPLATE {template}"))
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;

    let work = tempfile::tempdir().unwrap();
    let mut config = base_config(&db_name, &format!("t{}", &id[..12]), work.path());
    configure(&mut config);
    let started = start(config, roles, &db_name, work, true).await;
    if started.is_err() {
        let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
        store::sqlx::query(&format!("DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"))
            .execute(&admin)
            .await
            .unwrap();
    }
    started
}

/// The `provisioning-runner` of this build. It is the runner crate's binary, and cargo builds
/// only this crate's binaries for its tests: it is built here, once per test run, into the
/// target directory and profile of the tests (a no-op when it is up to date).
pub fn runner_bin() -> std::path::PathBuf {
    static BIN: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        // The tests run from `<target>/<profile>/deps/`.
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let target_dir = profile_dir.parent().unwrap();
        let status = std::process::Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "-p",
                "runner",
                "--bin",
                "provisioning-runner",
            ])
            .arg("--profile")
            .arg(profile)
            .arg("--target-dir")
            .arg(target_dir)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "could not build provisioning-runner");
        profile_dir.join("provisioning-runner")
    })
    .clone()
}

pub(crate) fn base_config(db_name: &str, prefix: &str, work: &std::path::Path) -> Config {
    let db_url = server_url(db_name);
    Config {
        http_addr: "127.0.0.1:0".parse().unwrap(),
        database_url: db_url.clone().into(),
        nats_url: nats_url(),
        nats_prefix: prefix.to_owned(),
        nats_replicas: 1,
        admin_token: None,
        hcl_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../../hcl").into(),
        taskservs_dir: None,
        clusters_dir: None,
        work_dir: work.to_owned(),
        terraform_bin: std::env::var("TERRAFORM_BIN")
            .unwrap_or_else(|_| "terraform".into())
            .into(),
        runner_bin: runner_bin(),
        tf_backend_url: db_url.into(),
        json_logs: false,
        job_silence: std::time::Duration::from_secs(1800),
        job_limits: Default::default(),
        credentials_file: None,
        max_runners: 4,
        runner_publish_retry: runner::DEFAULT_PUBLISH_RETRY,
        kubernetes: None,
        db_limits: Default::default(),
        lifecycle: Default::default(),
        runner_bus: Default::default(),
        ssh_widest_prefix: api::DEFAULT_WIDEST_PREFIX,
        trusted_client_ip_header: None,
        drift_check: None,
        frontend_dir: None,
        // The tests that check the callbacks call them by hand, and count their events.
        local_boot: dispatcher::LocalBoot::Off,
        oidc: None,
        policy_dir: None,
        bootstrap_admins: vec![],
        stream_capacity: daemon::config::DEFAULT_STREAM_CAPACITY,
        streams_per_caller: daemon::config::DEFAULT_STREAMS_PER_CALLER,
        install: Default::default(),
    }
}

async fn start(
    config: Config,
    roles: Roles,
    db_name: &str,
    work: tempfile::TempDir,
    owner: bool,
) -> Result<TestApp, daemon::StartupError> {
    let token = format!("token-{db_name}");
    let prefix = config.nats_prefix.clone();
    // The test talks to the NATS server the application uses (a test's own, maybe).
    let nats = config.nats_url.clone();
    let (port, running) = run_on_own_thread(config, roles, token.clone()).await?;
    let pool = store::connect(&server_url(db_name), 5).await.unwrap();
    let bus = bus::Bus::connect(&nats, &prefix).await.unwrap();
    Ok(TestApp {
        address: format!("http://127.0.0.1:{port}"),
        token,
        pool,
        bus,
        client: reqwest::Client::new(),
        db_name: db_name.to_owned(),
        nats_url: nats,
        running: Some(running),
        work,
        owner,
        position: Default::default(),
    })
}

impl TestApp {
    /// The key the dispatcher gives the runner of `job` of `vm`, derived from the master
    /// secret the daemon keeps in the test's database: what a test playing that runner
    /// signs with.
    pub async fn job_key(
        &self,
        vm: domain::provisioning::VmId,
        job: domain::provisioning::JobId,
    ) -> bus::JobKey {
        let master = store::runner_keys::runner_signing_key(&self.pool)
            .await
            .unwrap();
        bus::RunnerKeys::new(master).unwrap().for_job(vm, job)
    }

    /// A second replica of the whole application: same database, same NATS prefix, its
    /// own port and job directory.
    pub async fn spawn_replica(&self) -> TestApp {
        self.spawn_replica_with(|_| {}).await
    }

    /// A second replica, its configuration changed by `configure`.
    pub async fn spawn_replica_with(&self, configure: impl FnOnce(&mut Config)) -> TestApp {
        self.spawn_replica_as(Roles::ALL, configure).await
    }

    /// A second application with `roles`, on the same database and NATS prefix.
    pub async fn spawn_replica_as(
        &self,
        roles: Roles,
        configure: impl FnOnce(&mut Config),
    ) -> TestApp {
        let work = tempfile::tempdir().unwrap();
        let mut config = base_config(&self.db_name, self.bus.subjects.prefix(), work.path());
        configure(&mut config);
        start(config, roles, &self.db_name, work, false)
            .await
            .expect("the replica starts")
    }

    /// Stops every role of the application and waits for it (its database stays); fails
    /// the test if the application panicked or failed.
    pub async fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            let stopped = tokio::task::spawn_blocking(move || running.stop())
                .await
                .unwrap();
            if let Err(e) = stopped {
                panic!("{e}");
            }
        }
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        let request = self
            .client
            .get(format!("{}{path}", self.address))
            .bearer_auth(&self.token);
        match self.position.load(std::sync::atomic::Ordering::SeqCst) {
            0 => request,
            position => request.header(POSITION, position.to_string()),
        }
    }

    /// Remembers the position a command answered with, for later `GET`s.
    fn saw(&self, response: &reqwest::Response) {
        let position = response
            .headers()
            .get(POSITION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(position) = position {
            self.position
                .fetch_max(position, std::sync::atomic::Ordering::SeqCst);
        }
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.address))
            .bearer_auth(&self.token)
    }

    pub fn delete(&self, path: &str) -> reqwest::RequestBuilder {
        self.client
            .delete(format!("{}{path}", self.address))
            .bearer_auth(&self.token)
    }

    /// The body of a `GET`, which must answer 200.
    pub async fn get_json<T: DeserializeOwned>(&self, path: &str) -> T {
        expect_json(self.get(path).send().await.unwrap(), 200).await
    }

    /// The body of a `POST` of `body`, which must answer `status`.
    pub async fn post_json<T: DeserializeOwned>(&self, path: &str, body: &Value, status: u16) -> T {
        self.send_json("POST", path, body, status).await
    }

    /// The body of a `DELETE`, which must answer `status`.
    pub async fn delete_json<T: DeserializeOwned>(&self, path: &str, status: u16) -> T {
        let response = self.delete(path).send().await.unwrap();
        self.saw(&response);
        expect_json(response, status).await
    }

    /// The body of a `method` (`PATCH`, `PUT`, ...) request with the JSON `body`, which must
    /// answer `status`.
    pub async fn send_json<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: &Value,
        status: u16,
    ) -> T {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let response = self
            .client
            .request(method, format!("{}{path}", self.address))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .await
            .unwrap();
        self.saw(&response);
        expect_json(response, status).await
    }

    /// Creates a VM from a valid request changed by `fields`, and returns its id.
    pub async fn create_ok(&self, fields: Value) -> String {
        let vm: Vm = self
            .post_json("/api/v1/vms", &vm_request(fields), 202)
            .await;
        assert_eq!(vm.status, "requested");
        vm.id
    }

    pub async fn vm(&self, id: &str) -> Vm {
        self.get_json(&format!("/api/v1/vms/{id}")).await
    }

    /// Waits until the VM has `status`, failing with its last state after 60 s.
    pub async fn wait_for_status(&self, id: &str, status: &str) -> Vm {
        self.wait_for_status_within(id, status, Duration::from_secs(60))
            .await
    }

    /// Waits until the VM has `status`, failing with its last state after `limit`.
    pub async fn wait_for_status_within(&self, id: &str, status: &str, limit: Duration) -> Vm {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let vm = self.vm(id).await;
            if vm.status == status {
                return vm;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "VM never reached {status}: {vm:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn events(&self, id: &str) -> Vec<Event> {
        self.get_json(&format!("/api/v1/vms/{id}/events")).await
    }

    /// Fails the test unless the dispatcher's and the ingester's consumers (of this test's
    /// prefix) have every message delivered and acknowledged, waiting up to 10 s for acks
    /// to land. For end-to-end tests, once their VMs reached a final status.
    pub async fn assert_consumers_drained(&self) {
        self.assert_consumers_drained_within(Duration::from_secs(10))
            .await
    }

    /// [`Self::assert_consumers_drained`], waiting up to `limit`.
    pub async fn assert_consumers_drained_within(&self, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        for (stream, name) in [("JOBS", "dispatcher"), ("RUNNER", "ingester")] {
            let mut consumer = bus::consumer(&self.bus, stream, name).await.unwrap();
            loop {
                let info = consumer.info().await.unwrap();
                if info.num_pending == 0 && info.num_ack_pending == 0 {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{stream}/{name} has {} messages undelivered and {} unacknowledged",
                    info.num_pending,
                    info.num_ack_pending
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }

    pub async fn count_events(&self) -> i64 {
        store::sqlx::query_scalar("SELECT count(*) FROM events")
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }

    /// The Terraform state of the VM's workspace, as the `pg` backend stores it.
    pub async fn terraform_state(&self, id: &str) -> Value {
        let data: String = store::sqlx::query_scalar(
            "SELECT data FROM terraform_remote_state.states WHERE name = $1",
        )
        .bind(format!("vm-{id}"))
        .fetch_one(&self.pool)
        .await
        .unwrap();
        serde_json::from_str(&data).unwrap()
    }

    /// Every message of the EVENTS stream, read with an ephemeral consumer.
    pub async fn stream_messages(&self) -> Vec<bus::EventEnvelope> {
        use bus::async_nats::jetstream::consumer::pull;
        let stream = self
            .bus
            .jetstream
            .get_stream(self.bus.subjects.stream("EVENTS"))
            .await
            .unwrap();
        let total = stream.get_info().await.unwrap().state.messages as usize;
        let consumer = stream
            .create_consumer(pull::Config::default())
            .await
            .unwrap();
        let mut messages = consumer.messages().await.unwrap().take(total);
        let mut out = vec![];
        while let Some(message) = messages.next().await {
            let message = message.unwrap();
            out.push(serde_json::from_slice(&message.payload).unwrap());
        }
        out
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        // Blocks the test's thread until the application stopped: it runs on its own.
        let stopped = self.running.take().map_or(Ok(()), Running::stop);
        // Runners outlive their daemon by design; a test's own must not outlive the test.
        kill_runners_in(self.work.path());
        self.clean_up();
        if let Err(e) = stopped {
            if !std::thread::panicking() {
                panic!("{e}");
            }
            eprintln!("{e}");
        }
    }
}

impl TestApp {
    /// Removes the database and streams of the test, when this app owns them.
    fn clean_up(&self) {
        if !self.owner {
            return;
        }
        let db = self.db_name.clone();
        let prefix = self.bus.subjects.prefix().to_owned();
        // The streams are where the application made them (through a proxy, maybe: the shared
        // server's too). A test's own server may use the default prefix, whose streams on
        // the shared server are never the test's.
        let mut servers = vec![self.nats_url.clone()];
        if prefix != "provisioning" && self.nats_url != nats_url() {
            servers.push(nats_url());
        }
        // Clean up on a thread of its own, with connections of its own: the test's runtime,
        // which drives the app's connections, is ending.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                for nats in servers {
                    // A test's own server may be gone already: the client would wait for it.
                    let streams = async {
                        if let Ok(bus) = bus::Bus::connect(&nats, &prefix).await {
                            for name in ["EVENTS", "JOBS", "RUNNER"] {
                                let stream = bus.subjects.stream(name);
                                let _ = bus.jetstream.delete_stream(stream).await;
                            }
                        }
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(5), streams).await;
                }
                if let Ok(admin) = store::connect(&server_url("postgres"), 1).await {
                    let _ =
                        store::sqlx::query(&format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
                            .execute(&admin)
                            .await;
                }
            });
        })
        .join();
    }
}

/// The JSON body of `response`, which must have `status` (the body is in the message if not).
pub async fn expect_json<T: DeserializeOwned>(response: reqwest::Response, status: u16) -> T {
    let code = response.status();
    let url = response.url().path().to_owned();
    let text = response.text().await.unwrap();
    assert_eq!(code, status, "{url}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"))
}

/// A valid create request, with `fields` replaced.
pub fn vm_request(fields: Value) -> Value {
    let mut body = json!({
        "name": "web-1",
        "provider": "local",
        "template": "small",
        "ssh_public_key": SSH_KEY,
        "allow_ssh_from": ["192.0.2.0/24"],
        "duration_hours": 8,
    });
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

/// A valid VM specification named `name` on the `local` provider.
pub fn vm_spec(name: &str) -> domain::provisioning::VmSpec {
    use domain::provisioning::*;
    VmSpec {
        name: VmName::parse(name).unwrap(),
        provider: ProviderId::parse("local").unwrap(),
        template: TemplateId::parse("small").unwrap(),
        image_name: "debian-12".into(),
        flavor_name: "local.small".into(),
        ssh_public_key: SshPublicKey::parse(SSH_KEY).unwrap(),
        allow_ssh_from: vec![Cidr::parse("192.0.2.0/24").unwrap()],
        duration_hours: DurationHours::parse(1).unwrap(),
        username: "ubuntu".into(),
        owner: domain::identity::UserId::BUILTIN_ADMIN,
        taskservs: vec![],
        cluster: None,
    }
}

/// A Terraform wrapper script in `dir`: runs `body` (a shell fragment that may use `$DIR`,
/// `$REAL` and `"$@"`), then the real Terraform of `TERRAFORM_BIN`.
pub fn terraform_wrapper(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let real = std::env::var("TERRAFORM_BIN").unwrap_or_else(|_| "terraform".into());
    let path = dir.join("terraform-wrapper.sh");
    let script = format!(
        "#!/bin/sh\nDIR='{}'\nREAL='{real}'\n{body}\nexec \"$REAL\" \"$@\"\n",
        dir.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Kills (SIGKILL) every process whose environment names a working directory under `work`:
/// the runners a test's daemon started, and their Terraform.
fn kill_runners_in(work: &std::path::Path) {
    let needle = format!("RUNNER_WORKDIR={}", work.display());
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let ours = environ
            .split(|b| *b == 0)
            .any(|var| var.starts_with(needle.as_bytes()));
        if ours {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{pid}"), &pid.to_string()])
                .status();
        }
    }
}

/// Held by the tests that start tens of runners at once (each runner's Terraform opens
/// Postgres connections of its own): two of them together can pass the server's
/// `max_connections` on a small machine, which is no fault of either.
pub static MANY_RUNNERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
