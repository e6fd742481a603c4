//! The real daemon for the CLI to talk to: `provisioningd`'s `Application` on port 0, on a
//! thread and runtime of its own, with a fresh database cloned from a migrated template and
//! its own NATS subject prefix, as the daemon's own `it` tests start it.

use std::path::PathBuf;
use std::time::Duration;

use daemon::{Application, Config, Roles};
use secrecy::SecretString;
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

pub struct Daemon {
    pub url: String,
    pub admin_token: String,
    db_name: String,
    cancel: CancellationToken,
    thread: Option<std::thread::JoinHandle<()>>,
    _work: tempfile::TempDir,
}

impl Daemon {
    pub async fn start() -> Daemon {
        Daemon::start_with(|_| {}).await
    }

    /// A daemon whose configuration `configure` changes last (sign-in, say).
    pub async fn start_with(configure: impl FnOnce(&mut Config)) -> Daemon {
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
        // The environment's settings (NATS, local boot simulated by default), then this
        // test's own database, prefix, port and directories.
        let mut config = Config::from_env().expect("the test environment is a valid config");
        config.http_addr = "127.0.0.1:0".parse().unwrap();
        config.database_url = SecretString::from(server_url(&db_name));
        config.tf_backend_url = SecretString::from(server_url(&db_name));
        config.nats_url = std::env::var("NATS_URL")
            .unwrap_or_else(|_| daemon::config::DEFAULT_NATS_URL.to_owned());
        config.nats_prefix = format!("cli{}", &id[..12]);
        config.hcl_dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../hcl").into();
        config.work_dir = work.path().to_owned();
        config.terraform_bin = std::env::var("TERRAFORM_BIN")
            .unwrap_or_else(|_| "terraform".into())
            .into();
        config.runner_bin = runner_bin();
        config.local_boot = dispatcher::LocalBoot::Simulate {
            delay: Duration::from_secs(1),
        };
        config.oidc = None;
        configure(&mut config);
        let admin_token = format!("token-{db_name}");

        let (started_tx, started) = tokio::sync::oneshot::channel();
        let token = admin_token.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let app = Application::build(config, Roles::ALL, Some(SecretString::from(token)))
                    .await
                    .expect("the daemon starts");
                let _ = started_tx.send((app.port(), app.shutdown_token()));
                app.run_until_stopped().await.expect("the daemon runs");
            })
        });
        let (port, cancel) = started.await.expect("the daemon's thread answers");
        Daemon {
            url: format!("http://127.0.0.1:{port}"),
            admin_token,
            db_name,
            cancel,
            thread: Some(thread),
            _work: work,
        }
    }

    /// A personal API token of the built-in admin, made through the API as a user would.
    pub async fn personal_token(&self) -> String {
        let answer: serde_json::Value = reqwest::Client::new()
            .post(format!("{}/api/v1/tokens", self.url))
            .bearer_auth(&self.admin_token)
            .json(&serde_json::json!({"name": "cli"}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["token"].as_str().unwrap().to_owned()
    }

    /// A personal API token of a new user of role `user` (made as a sign-in makes them).
    pub async fn user_token(&self, email: &str) -> String {
        use sha2::Digest;
        let pool = store::connect(&server_url(&self.db_name), 1).await.unwrap();
        let sign_in = store::users::SignIn {
            issuer: "https://issuer.test".into(),
            subject: format!("sub-{email}"),
            email: email.into(),
            email_verified: true,
            name: None,
            groups: vec![],
        };
        let user = store::users::upsert_signed_in(&pool, &sign_in, &[])
            .await
            .unwrap();
        let random = || uuid::Uuid::new_v4().simple().to_string();
        let token = format!("pat_{}{}", random(), random());
        let hash: [u8; 32] = sha2::Sha256::digest(token.as_bytes()).into();
        store::api_tokens::insert(&pool, user.id, "cli", &token[..12], &hash, None)
            .await
            .unwrap();
        pool.close().await;
        token
    }

    /// `GET path` as the admin: the API's own answer, to compare the CLI's with.
    pub async fn get(&self, path: &str) -> serde_json::Value {
        reqwest::Client::new()
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.admin_token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.cancel.cancel();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let db_name = self.db_name.clone();
        // Its own runtime: the test's may be gone or busy.
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async {
                    let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
                    let _ = store::sqlx::query(&format!(
                        "DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"
                    ))
                    .execute(&admin)
                    .await;
                })
        })
        .join();
    }
}

fn server_url(db: &str) -> String {
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| daemon::config::DEFAULT_DATABASE_URL.to_owned());
    let mut url = url::Url::parse(&base).expect("DATABASE_URL is a URL");
    url.set_path(db);
    url.to_string()
}

/// The migrated template database the daemon's tests use (named after the migrations), or
/// a new one made the same way, under the same lock.
async fn template() -> &'static str {
    static TEMPLATE: OnceCell<String> = OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("provtest_template_{}", migrations_hash());
            let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
            let mut conn = admin.acquire().await.unwrap();
            store::sqlx::query("SELECT pg_advisory_lock(hashtext('provtest_template'))")
                .execute(&mut *conn)
                .await
                .unwrap();
            let exists: bool = store::sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
            )
            .bind(&name)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
            if !exists {
                let building = format!("{name}_building");
                store::sqlx::query(&format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"))
                    .execute(&mut *conn)
                    .await
                    .unwrap();
                let pool = store::connect(&server_url(&building), 2).await.unwrap();
                store::migrate(&pool).await.unwrap();
                pool.close().await;
                store::sqlx::query(&format!("ALTER DATABASE {building} RENAME TO {name}"))
                    .execute(&mut *conn)
                    .await
                    .unwrap();
            }
            store::sqlx::query("SELECT pg_advisory_unlock(hashtext('provtest_template'))")
                .execute(&mut *conn)
                .await
                .unwrap();
            name
        })
        .await
}

/// The same hash as the daemon's tests give the migrations, so both share one template.
fn migrations_hash() -> String {
    use std::hash::{Hash, Hasher};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for file in files {
        file.file_name().hash(&mut hasher);
        std::fs::read(&file).unwrap().hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}

/// The `provisioning-runner` of this build, built once per test run into the tests' target
/// directory and profile (cargo builds only this crate's binaries for its tests).
fn runner_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
        let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") | None => "dev",
            Some(other) => other,
        };
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
            .arg(profile_dir.parent().unwrap())
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "could not build provisioning-runner");
        profile_dir.join("provisioning-runner")
    })
    .clone()
}
