use cqrs_es::Aggregate;
use domain::provisioning::*;
use store::sqlx::{self, PgPool};
use store::{Actor, CommandError, Committed, Metadata};

const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/provisioning";

const SSH_KEY: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEpXvA+cP8hcraKOw+cO1rzIpAv7ms7vMYjhAKF7Qed/ test@example";

/// A fresh database with every migration, dropped when the test ends.
pub struct TestDb {
    pub pool: PgPool,
    name: String,
    base: url::Url,
}

impl TestDb {
    pub async fn new() -> TestDb {
        let base = std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_DATABASE_URL.into());
        let mut url = url::Url::parse(&base).expect("DATABASE_URL is a URL");
        let name = format!(
            "storetest_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..16]
        );
        url.set_path(&name);
        let pool = store::connect(url.as_str(), 8).await.unwrap();
        store::migrate(&pool).await.unwrap();
        // Dropped from the server's own database: the default one may not exist.
        url.set_path("postgres");
        TestDb {
            pool,
            name,
            base: url,
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let (name, base) = (self.name.clone(), self.base.clone());
        // Dropped outside any runtime (the test's runtime may be gone): a thread of its own.
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                if let Ok(pool) = PgPool::connect(base.as_str()).await {
                    let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                    let _ = sqlx::query(&drop).execute(&pool).await;
                }
            });
        })
        .join()
        .ok();
    }
}

pub fn vm_spec(name: &str) -> VmSpec {
    VmSpec {
        name: VmName::parse(name).unwrap(),
        provider: ProviderId::parse("local").unwrap(),
        template: TemplateId::parse("small").unwrap(),
        image_name: "debian-12".into(),
        flavor_name: "local.small".into(),
        ssh_public_key: SshPublicKey::parse(SSH_KEY).unwrap(),
        allow_ssh_from: vec![Cidr::parse("192.0.2.0/24").unwrap()],
        duration_hours: DurationHours::parse(1).unwrap(),
        username: "debian".into(),
        owner: domain::identity::UserId::BUILTIN_ADMIN,
        taskservs: vec![],
        cluster: None,
    }
}

pub fn lines(from: u32, to: u32) -> Vec<LogLineIn> {
    (from..=to)
        .map(|n| LogLineIn {
            line: n,
            level: "info".into(),
            kind: "log".into(),
            message: format!("line {n}"),
        })
        .collect()
}

pub fn success() -> JobOutcome {
    JobOutcome {
        exit_code: 0,
        outputs: [("vm_ip".to_owned(), serde_json::json!("10.77.0.5"))].into(),
        diagnostics: vec![],
        lines: 0,
        drift: vec![],
    }
}

pub async fn run(
    pool: &PgPool,
    vm: VmId,
    command: ProvisioningCommand,
) -> Result<Committed<Provisioning>, CommandError<ProvisioningError>> {
    let metadata = Metadata::new(Actor::Admin, "store-test");
    store::execute::<Provisioning>(pool, vm, command, &metadata).await
}

/// The VM's state from every event up to `up_to`, without snapshots.
pub async fn replay(pool: &PgPool, vm: VmId, up_to: i64) -> Provisioning {
    let payloads: Vec<serde_json::Value> = sqlx::query_scalar(
        "SELECT payload FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence <= $3
         ORDER BY sequence",
    )
    .bind(Provisioning::TYPE)
    .bind(vm.to_string())
    .bind(up_to)
    .fetch_all(pool)
    .await
    .unwrap();
    let mut state = Provisioning::default();
    for payload in payloads {
        state.apply(serde_json::from_value(payload).unwrap());
    }
    state
}

#[derive(Debug, sqlx::FromRow)]
pub struct Snapshot {
    pub last_sequence: i64,
    pub payload: serde_json::Value,
}

/// The VM's snapshot rows.
pub async fn snapshots(pool: &PgPool, vm: VmId) -> Vec<Snapshot> {
    sqlx::query_as("SELECT last_sequence, payload FROM snapshots WHERE aggregate_id = $1")
        .bind(vm.to_string())
        .fetch_all(pool)
        .await
        .unwrap()
}

/// Every snapshot of the VM is the state its events give up to the snapshot's sequence, and
/// loading through it gives the state all its events give. Returns the snapshot rows.
pub async fn assert_snapshots_equal_replay(pool: &PgPool, vm: VmId) -> Vec<Snapshot> {
    let rows = snapshots(pool, vm).await;
    assert!(rows.len() <= 1, "one snapshot row per VM: {rows:?}");
    for row in &rows {
        let state: Provisioning = serde_json::from_value(row.payload.clone()).unwrap();
        let replayed = replay(pool, vm, row.last_sequence).await;
        assert_eq!(state, replayed, "snapshot at {}", row.last_sequence);
    }
    let (loaded, sequence) = store::load::<Provisioning>(pool, &vm.to_string())
        .await
        .unwrap();
    assert_eq!(
        loaded,
        replay(pool, vm, i64::MAX).await,
        "loaded at {sequence}"
    );
    rows
}
