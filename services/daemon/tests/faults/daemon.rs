//! `Daemon`: the real `provisioningd` binary as a child process, as `make run` starts it,
//! with its own database (cloned from the migrated template), NATS prefix, HTTP port and
//! job directory. A test kills it (SIGKILL), stops it (SIGTERM) and starts it again; the
//! database, streams and port stay, so the daemon comes back to the same state.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use store::PgPool;

use crate::database::{nats_url, server_url, template};
use crate::wire::Vm;

pub const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ test@example";

/// How a daemon is started; `Daemon::start` takes it.
pub struct Setup {
    pub nats_url: String,
    pub terraform_bin: PathBuf,
    /// `DATABASE_URL` made from the test database's URL (a proxy's, maybe).
    pub database_url: Box<dyn Fn(&str) -> String + Send + Sync>,
    /// Further environment variables (`PROVISIONING_JOB_SILENCE_SECS`, ...).
    pub env: Vec<(String, String)>,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            nats_url: nats_url(),
            terraform_bin: std::env::var("TERRAFORM_BIN")
                .unwrap_or_else(|_| "terraform".into())
                .into(),
            database_url: Box::new(|url| url.to_owned()),
            env: vec![],
        }
    }
}

impl Setup {
    pub fn env(mut self, name: &str, value: impl ToString) -> Self {
        self.env.push((name.to_owned(), value.to_string()));
        self
    }
}

pub struct Daemon {
    pub db_name: String,
    pub prefix: String,
    pub token: String,
    pub nats_url: String,
    port: u16,
    env: Vec<(String, String)>,
    child: Option<Child>,
    /// The job directory and the daemon's log (`daemon.log`, every start appended).
    pub work: tempfile::TempDir,
    /// A pool to the test database, straight (not through any proxy).
    pub pool: PgPool,
    client: reqwest::Client,
    /// Whether dropping it removes the database and streams (a replica shares them).
    owner: bool,
}

impl Daemon {
    /// A new database and prefix; the daemon started with every role.
    pub async fn start(setup: Setup) -> Daemon {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let db_name = format!("provfault_{id}");
        let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
        store::sqlx::query(&format!(
            "CREATE DATABASE {db_name} TEMPLATE {}",
            template().await
        ))
        .execute(&admin)
        .await
        .unwrap();
        admin.close().await;
        let mut daemon = Daemon::new(&setup, db_name, format!("f{}", &id[..12]), true).await;
        daemon.start_as("run").await;
        daemon
    }

    /// A second daemon on the same database and prefix (every role twice), with its own
    /// port and job directory, started with every role.
    pub async fn start_replica(&self, setup: Setup) -> Daemon {
        let mut daemon =
            Daemon::new(&setup, self.db_name.clone(), self.prefix.clone(), false).await;
        daemon.start_as("run").await;
        daemon
    }

    async fn new(setup: &Setup, db_name: String, prefix: String, owner: bool) -> Daemon {
        let port = free_port();
        let work = tempfile::tempdir().unwrap();
        let token = format!("token-{db_name}");
        let db_url = server_url(&db_name);
        let mut env: Vec<(String, String)> = vec![
            ("DATABASE_URL".into(), (setup.database_url)(&db_url)),
            // Terraform's state: straight to Postgres, so a cut of the daemon's database
            // leaves the runners' Terraform alone.
            ("PROVISIONING_TF_BACKEND_URL".into(), db_url.clone()),
            ("NATS_URL".into(), setup.nats_url.clone()),
            ("PROVISIONING_NATS_PREFIX".into(), prefix.clone()),
            ("PROVISIONING_HTTP_ADDR".into(), format!("127.0.0.1:{port}")),
            ("PROVISIONING_ADMIN_TOKEN".into(), token.clone()),
            (
                "PROVISIONING_HCL_DIR".into(),
                concat!(env!("CARGO_MANIFEST_DIR"), "/../../hcl").into(),
            ),
            (
                "PROVISIONING_WORK_DIR".into(),
                work.path().join("jobs").display().to_string(),
            ),
            (
                "TERRAFORM_BIN".into(),
                setup.terraform_bin.display().to_string(),
            ),
            (
                "PROVISIONING_RUNNER_BIN".into(),
                runner_bin().display().to_string(),
            ),
            ("PROVISIONING_MAX_RUNNERS".into(), "4".into()),
            // The faults are judged by the events of jobs; no simulated callbacks among them.
            ("PROVISIONING_LOCAL_BOOT".into(), "off".into()),
            ("RUST_LOG".into(), "info,api::layers=warn".into()),
        ];
        for (name, value) in &setup.env {
            env.retain(|(n, _)| n != name);
            env.push((name.clone(), value.clone()));
        }
        Daemon {
            pool: store::connect(&db_url, 5).await.unwrap(),
            db_name,
            prefix,
            token,
            nats_url: setup.nats_url.clone(),
            port,
            env,
            child: None,
            work,
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .unwrap(),
            owner,
        }
    }

    /// Starts the daemon with `command` (`run`, or one role: `api`, `relay`, `projector`,
    /// `dispatcher`, `ingester`). With the API, waits until `/readyz` answers 200; without,
    /// until it ran for a second without exiting.
    pub async fn start_as(&mut self, command: &str) {
        assert!(self.child.is_none(), "the daemon is running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        writeln!(&log, "===== provisioningd {command}").unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_provisioningd"))
            .arg(command)
            .env_clear()
            .envs(
                std::env::vars()
                    .filter(|(n, _)| ["PATH", "HOME", "TMPDIR", "LANG"].contains(&n.as_str())),
            )
            .envs(self.env.iter().cloned())
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("provisioningd runs");
        self.child = Some(child);
        let api = command == "run" || command == "api";
        let deadline = Instant::now() + Duration::from_secs(30);
        let settle = Instant::now() + Duration::from_secs(1);
        loop {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "provisioningd {command} exited ({status}):\n{}",
                    self.log_tail()
                );
            }
            if api {
                let ready = self.client.get(self.url("/readyz")).send().await;
                if ready.is_ok_and(|r| r.status() == 200) {
                    return;
                }
            } else if Instant::now() > settle {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "provisioningd never became ready:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills the daemon with SIGKILL, as a crash or the OOM killer would, and reaps it.
    /// Its runners (own process groups) go on.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the daemon with SIGTERM and waits up to 30 s for it to exit.
    pub fn stop(&mut self) -> std::process::ExitStatus {
        let mut child = self.child.take().expect("the daemon runs");
        signal("TERM", child.id() as i32);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("provisioningd ignored SIGTERM for 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, then started again with every role.
    pub async fn restart(&mut self) {
        self.kill();
        self.start_as("run").await;
    }

    /// Sends SIGHUP to the daemon: it reloads its policies.
    pub fn hangup(&self) {
        let child = self.child.as_ref().expect("the daemon runs");
        signal("HUP", child.id() as i32);
    }

    /// The daemon's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| c.try_wait().unwrap().is_none())
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn log_path(&self) -> PathBuf {
        self.work.path().join("daemon.log")
    }

    /// The last 60 lines the daemon printed, for failure messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.log_path()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    /// The pids of the runners this daemon's prefix started that still run (read from
    /// `/proc`: the runner's environment names the prefix).
    pub fn runner_pids(&self) -> Vec<i32> {
        let runner = runner_bin();
        let wanted = format!("PROVISIONING_NATS_PREFIX={}", self.prefix);
        let mut pids = vec![];
        for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let exe = std::fs::read_link(entry.path().join("exe")).ok();
            if exe.as_deref() != Some(runner.as_path()) {
                continue;
            }
            let environ = std::fs::read(entry.path().join("environ")).unwrap_or_default();
            if environ
                .split(|&b| b == 0)
                .any(|var| var == wanted.as_bytes())
            {
                pids.push(pid);
            }
        }
        pids
    }

    /// A request with the admin token.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(&self.token)
    }

    /// Creates a VM named `name` on the `local` provider; its id. Panics unless `202`.
    pub async fn create_vm(&self, name: &str) -> String {
        let response = self
            .request(reqwest::Method::POST, "/api/v1/vms")
            .json(&vm_request(name))
            .send()
            .await
            .expect("the API answers");
        let vm: Vm = expect_json(response, 202).await;
        vm.id
    }

    /// Runs the VM's failed create or destroy again. Panics unless `202`.
    pub async fn retry_vm(&self, id: &str) {
        let response = self
            .request(reqwest::Method::POST, &format!("/api/v1/vms/{id}/retry"))
            .send()
            .await
            .expect("the API answers");
        let _: Vm = expect_json(response, 202).await;
    }

    /// Asks for the VM's destruction. Panics unless `202`.
    pub async fn destroy_vm(&self, id: &str) {
        let response = self
            .request(reqwest::Method::DELETE, &format!("/api/v1/vms/{id}"))
            .send()
            .await
            .expect("the API answers");
        let _: Vm = expect_json(response, 202).await;
    }

    /// The VM as the API shows it; `None` while the API does not answer.
    pub async fn try_vm(&self, id: &str) -> Option<Vm> {
        let response = self
            .request(reqwest::Method::GET, &format!("/api/v1/vms/{id}"))
            .send()
            .await
            .ok()?;
        (response.status() == 200).then_some(response.json().await.ok()?)
    }

    pub async fn vm(&self, id: &str) -> Vm {
        self.try_vm(id).await.expect("the API answers")
    }

    /// Waits until the VM has `status`, through restarts, failing with its last state
    /// after `within`.
    pub async fn wait_for_status(&self, id: &str, status: &str, within: Duration) -> Vm {
        let deadline = Instant::now() + within;
        let mut last = None;
        loop {
            if let Some(vm) = self.try_vm(id).await {
                if vm.status == status {
                    return vm;
                }
                last = Some(vm);
            }
            assert!(
                Instant::now() < deadline,
                "VM {id} never reached {status} within {within:?}: {last:?}\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until a dispatcher has claimed the VM's queued job (its job is no longer
    /// `queued`), failing with the VM's last state after `within`.
    pub async fn wait_for_job_start(&self, id: &str, within: Duration) -> Vm {
        let deadline = Instant::now() + within;
        loop {
            let vm = self.try_vm(id).await;
            if let Some(vm) = &vm {
                if vm.job.as_ref().is_none_or(|job| job.state != "queued") {
                    return vm.clone();
                }
            }
            assert!(
                Instant::now() < deadline,
                "the job of VM {id} did not start within {within:?}: {vm:?}\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The VM's status in the read model, read from Postgres (works while the API is down).
    pub async fn status_in_db(&self, id: &str) -> Option<String> {
        store::sqlx::query_scalar("SELECT status FROM vm_views WHERE id::text = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
        for pid in self.runner_pids() {
            // The runner leads its process group; Terraform leads its own (killed through
            // the wrapper's record, see `Wrapper`).
            signal("KILL", -pid);
        }
        if std::thread::panicking() {
            eprintln!(
                "provisioningd's log ({}):\n{}",
                self.log_path().display(),
                self.log_tail()
            );
        }
        if !self.owner {
            return;
        }
        let (db, prefix, nats) = (
            self.db_name.clone(),
            self.prefix.clone(),
            self.nats_url.clone(),
        );
        // On a thread and runtime of its own: the test's runtime may be ending.
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let connect = bus::Bus::connect(&nats, &prefix);
                if let Ok(Ok(bus)) = tokio::time::timeout(Duration::from_secs(5), connect).await {
                    for name in ["EVENTS", "JOBS", "RUNNER"] {
                        let _ = bus.jetstream.delete_stream(bus.subjects.stream(name)).await;
                    }
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

/// Sends `kill -<name> <pid>` (a negative pid: the process group).
pub fn signal(name: &str, pid: i32) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg("--")
        .arg(pid.to_string())
        .stderr(Stdio::null())
        .status();
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A valid create request for a VM named `name`.
pub fn vm_request(name: &str) -> serde_json::Value {
    json!({
        "name": name,
        "provider": "local",
        "template": "small",
        "ssh_public_key": SSH_KEY,
        "allow_ssh_from": ["192.0.2.0/24"],
        "duration_hours": 8,
    })
}

/// The JSON body of `response`, which must have `status`.
pub async fn expect_json<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
    status: u16,
) -> T {
    let code = response.status();
    let url = response.url().path().to_owned();
    let text = response.text().await.unwrap();
    assert_eq!(code, status, "{url}: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"))
}

/// The `provisioning-runner` of this build, built once per test run into the tests' target
/// directory and profile (cargo builds only this crate's binaries for its tests).
pub fn runner_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
        let status = Command::new(env!("CARGO"))
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
            .arg(profile_dir.parent().unwrap())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "could not build provisioning-runner");
        profile_dir.join("provisioning-runner")
    })
    .clone()
}

/// Waits until `path` exists and is not empty; its text.
pub async fn wait_for_file(path: &Path, within: Duration) -> String {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.is_empty() {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
