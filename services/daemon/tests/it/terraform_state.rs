//! Terraform's `pg` state backend on a new state database: the daemon makes its schema and
//! table before any runner starts, as Terraform would, so that the first runs started
//! together do not race to make them.

use std::time::{Duration, Instant};

use daemon::Roles;
use serde_json::json;

use crate::database::server_url;
use crate::helpers::{terraform_wrapper, try_spawn_app, TestApp};
use crate::wire::{Vm, VmPage};

/// A role and state databases it owns, as docs/operations.md sets the runners' role up;
/// dropped by `remove`.
struct StateRole {
    role: String,
    databases: Vec<String>,
}

impl StateRole {
    async fn create(databases: &[&str]) -> Self {
        let suffix = &uuid::Uuid::new_v4().simple().to_string()[..12];
        let role = format!("provtest_tf_{suffix}");
        let databases: Vec<String> = databases
            .iter()
            .map(|d| format!("provtest_{d}_{suffix}"))
            .collect();
        let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
        let mut statements = vec![format!("CREATE ROLE {role} LOGIN")];
        statements.extend(
            databases
                .iter()
                .map(|db| format!("CREATE DATABASE {db} OWNER {role}")),
        );
        for statement in statements {
            store::sqlx::query(&statement)
                .execute(&admin)
                .await
                .unwrap();
        }
        admin.close().await;
        Self { role, databases }
    }

    /// The URL of state database `n` as the role.
    fn url(&self, n: usize) -> String {
        server_url(&self.databases[n]).replacen("://postgres@", &format!("://{}@", self.role), 1)
    }

    async fn remove(self) {
        let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
        let mut statements: Vec<String> = self
            .databases
            .iter()
            .map(|db| format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"))
            .collect();
        statements.push(format!("DROP ROLE IF EXISTS {}", self.role));
        for statement in statements {
            store::sqlx::query(&statement)
                .execute(&admin)
                .await
                .unwrap();
        }
        admin.close().await;
    }
}

/// The backend's objects in the database of `url`, one line each, with their owners, types,
/// defaults, constraints and indexes: what Terraform relies on.
async fn backend_objects(url: &str) -> Vec<String> {
    let pool = store::connect(url, 1).await.unwrap();
    let objects = store::sqlx::query_scalar(
        "SELECT line FROM (
            SELECT format('schema %s owner %s', nspname, pg_get_userbyid(nspowner))
            FROM pg_namespace WHERE nspname = 'terraform_remote_state'
          UNION ALL
            SELECT format('%s %s.%s owner %s', c.relkind, n.nspname, c.relname,
                          pg_get_userbyid(c.relowner))
            FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'terraform_remote_state'
               OR (n.nspname = 'public' AND c.relname = 'global_states_id_seq')
          UNION ALL
            SELECT format('sequence %s start %s increment %s', seqtypid::regtype, seqstart,
                          seqincrement)
            FROM pg_sequence WHERE seqrelid = to_regclass('public.global_states_id_seq')
          UNION ALL
            SELECT format('column %s %s not null %s default %s', a.attname,
                          format_type(a.atttypid, a.atttypmod), a.attnotnull,
                          pg_get_expr(d.adbin, d.adrelid))
            FROM pg_attribute a
            LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE a.attrelid = to_regclass('terraform_remote_state.states')
              AND a.attnum > 0 AND NOT a.attisdropped
          UNION ALL
            SELECT format('constraint %s %s', conname, pg_get_constraintdef(oid))
            FROM pg_constraint WHERE conrelid = to_regclass('terraform_remote_state.states')
          UNION ALL
            SELECT pg_get_indexdef(indexrelid)
            FROM pg_index WHERE indrelid = to_regclass('terraform_remote_state.states')
        ) objects (line) ORDER BY line",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    pool.close().await;
    objects
}

/// `terraform init` with the `pg` backend at `url`, in a directory of its own.
fn terraform_init(url: &str) -> std::process::Output {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        "terraform {\n  backend \"pg\" {}\n}\n",
    )
    .unwrap();
    let bin = std::env::var("TERRAFORM_BIN").unwrap_or_else(|_| "terraform".into());
    std::process::Command::new(bin)
        .current_dir(dir.path())
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .args(["init", "-input=false", "-no-color"])
        .arg(format!("-backend-config=conn_str={url}?sslmode=disable"))
        .output()
        .unwrap()
}

#[tokio::test]
async fn the_daemon_makes_the_state_backends_table_as_terraform_would_before_any_runner_starts() {
    let state = StateRole::create(&["tfstate", "tfbyterraform"]).await;
    let started = try_spawn_app(Roles::ALL, |c| c.tf_backend_url = state.url(0).into()).await;
    // No VM was asked for: no runner ran. What the daemon made, against what Terraform
    // itself makes on a new database with the same role.
    let made = backend_objects(&state.url(0)).await;
    let init = terraform_init(&state.url(1));
    let by_terraform = backend_objects(&state.url(1)).await;
    let start_error = started.as_ref().err().map(|e| e.to_string());
    drop(started);
    state.remove().await;

    assert_eq!(start_error, None);
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    assert!(
        by_terraform.iter().any(|o| o.contains("states_by_name")),
        "{by_terraform:#?}"
    );
    assert_eq!(made, by_terraform);
}

#[tokio::test]
async fn daemons_starting_together_on_a_new_state_database_all_start() {
    let state = StateRole::create(&["tfstate"]).await;
    let starts =
        (0..4).map(|_| try_spawn_app(Roles::ALL, |c| c.tf_backend_url = state.url(0).into()));
    let started: Vec<_> = futures::future::join_all(starts).await;
    let made = backend_objects(&state.url(0)).await;
    let errors: Vec<String> = started
        .iter()
        .filter_map(|s| {
            s.as_ref()
                .err()
                .map(|e| format!("{e}: {:?}", std::error::Error::source(e)))
        })
        .collect();
    drop(started);
    state.remove().await;

    assert!(errors.is_empty(), "{errors:#?}");
    assert!(
        made.iter().any(|o| o.contains("states_by_name")),
        "{made:#?}"
    );
}

const VMS: usize = 50;

/// Holds each `terraform init` until sixteen (every runner's) have started, for 15 s at most.
const FIRST_INITS_TOGETHER: &str = r#"if [ "$1" = init ]; then
  touch "$DIR/init.$$"
  n=0
  while [ "$(ls "$DIR" | grep -c '^init\.')" -lt 16 ] && [ "$n" -lt 750 ]; do
    sleep 0.02; n=$((n + 1))
  done
fi"#;

/// Every VM's status, and the log lines of runs that had to try `init` again.
async fn statuses_and_init_retries(app: &TestApp) -> (Vec<String>, Vec<String>) {
    let vms: Vec<Vm> = app.get_json::<VmPage>("/api/v1/vms?limit=100").await.items;
    let retries = store::sqlx::query_scalar(
        "SELECT message FROM vm_logs WHERE message LIKE '%trying init again%'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    (vms.into_iter().map(|vm| vm.status).collect(), retries)
}

#[tokio::test]
async fn fifty_creates_at_once_on_a_new_state_database_all_end_provisioned() {
    let _alone = crate::helpers::MANY_RUNNERS.lock().await;
    let state = StateRole::create(&["tfstate"]).await;
    let dir = tempfile::tempdir().unwrap();
    // The runners start a few milliseconds apart, and making the tables takes about as
    // long: the first inits wait for each other, as they would on a busier machine, so
    // that they do meet.
    let wrapper = terraform_wrapper(dir.path(), FIRST_INITS_TOGETHER);
    let app = try_spawn_app(Roles::ALL, |c| {
        c.tf_backend_url = state.url(0).into();
        c.terraform_bin = wrapper;
        c.max_runners = 16;
    })
    .await
    .unwrap();
    let creates = (0..VMS).map(|n| app.create_ok(json!({"name": format!("fresh-{n}")})));
    futures::future::join_all(creates).await;
    let deadline = Instant::now() + Duration::from_secs(300);
    let (statuses, retries) = loop {
        let (statuses, retries) = statuses_and_init_retries(&app).await;
        let settled = statuses.len() == VMS
            && statuses
                .iter()
                .all(|s| matches!(s.as_str(), "provisioned" | "failed"));
        if settled || Instant::now() > deadline {
            break (statuses, retries);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    drop(app);
    state.remove().await;

    let provisioned = statuses.iter().filter(|s| *s == "provisioned").count();
    assert_eq!(provisioned, VMS, "{statuses:?}");
    // The tables were there before the first init: no init met another making them.
    assert!(retries.is_empty(), "{retries:#?}");
}
