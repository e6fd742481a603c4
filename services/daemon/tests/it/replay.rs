//! Replay: the read models rebuilt from the events table into fresh tables and swapped in
//! while the daemon serves and projects; and the projector catching up at start. Real
//! Terraform on `local`.

use std::time::Duration;

use daemon::Roles;
use serde_json::{json, Value};
use store::PgPool;

use crate::helpers::{spawn_app, spawn_app_with, TestApp};

const READ_MODELS: [&str; 6] = [
    "vm_views",
    "vm_logs",
    "vm_holdings",
    "providers",
    "templates",
    "catalog_projection",
];

/// Every row of every read model, and the tables' indexes.
async fn read_models(pool: &PgPool) -> Value {
    let mut all = serde_json::Map::new();
    for table in READ_MODELS {
        let rows: String = store::sqlx::query_scalar(&format!(
            "SELECT coalesce(json_agg(t ORDER BY t::text), '[]')::text FROM {table} t"
        ))
        .fetch_one(pool)
        .await
        .unwrap();
        all.insert(table.into(), serde_json::from_str(&rows).unwrap());
    }
    let indexes: Vec<(String, String)> = store::sqlx::query_as(
        "SELECT indexname::text, indexdef FROM pg_indexes
         WHERE schemaname = 'public' AND tablename = ANY($1) ORDER BY indexname",
    )
    .bind(READ_MODELS)
    .fetch_all(pool)
    .await
    .unwrap();
    all.insert("indexes".into(), json!(indexes));
    Value::Object(all)
}

/// The counts the projector keeps for quotas, by owner, provider and template.
async fn holdings(pool: &PgPool) -> Vec<(String, String, String, i64)> {
    store::sqlx::query_as(
        "SELECT owner::text, provider, template, vms FROM vm_holdings ORDER BY 1, 2, 3",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// The same counted from the VMs' rows: those not destroyed.
async fn counted_holdings(pool: &PgPool) -> Vec<(String, String, String, i64)> {
    store::sqlx::query_as(
        "SELECT owner::text, provider, template, count(*) FROM vm_views
         WHERE status <> 'destroyed' GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// Waits until the projector folded every event committed so far.
async fn wait_projected(pool: &PgPool) {
    for _ in 0..600 {
        let behind: bool = store::sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM events e
                            LEFT JOIN event_checkpoints c ON c.name = 'projector'
                            WHERE c.name IS NULL OR (e.txid, e.position) > (c.txid, c.position))",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if !behind {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the projector never caught up");
}

/// Creates, failures, destroys and catalog changes.
async fn mixed_workload(app: &TestApp, round: &str) -> Vec<String> {
    let a = app.create_ok(json!({"name": format!("{round}-a")})).await;
    let b = app.create_ok(json!({"name": format!("{round}-b")})).await;
    let bad = app
        .create_ok(json!({"name": format!("{round}-bad"), "template": "broken"}))
        .await;
    let path = "/api/v1/admin/templates/local/medium";
    let body = json!({"description": format!("Changed in round {round}."), "cpu": 3});
    let _: Value = app.send_json("PATCH", path, &body, 200).await;
    let path = "/api/v1/admin/providers/aws";
    let _: Value = app
        .send_json("PATCH", path, &json!({"name": format!("AWS {round}")}), 200)
        .await;
    app.wait_for_status(&a, "provisioned").await;
    app.wait_for_status(&bad, "failed").await;
    app.wait_for_status(&b, "provisioned").await;
    let _: Value = app.delete_json(&format!("/api/v1/vms/{b}"), 202).await;
    vec![a, b, bad]
}

#[tokio::test]
async fn a_replay_while_the_daemon_runs_rebuilds_every_read_model_row_for_row() {
    let app = spawn_app().await;
    let vms = mixed_workload(&app, "one").await;
    app.wait_for_status(&vms[1], "destroyed").await;
    // A log line stored twice (no command records one, but the table does not forbid it):
    // the live `vm_logs` keeps the first, and so must the replay's bulk load.
    store::sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type,
                             event_version, payload, metadata)
         SELECT aggregate_type, aggregate_id,
                (SELECT max(sequence) + 1 FROM events WHERE aggregate_id = e.aggregate_id),
                event_type, event_version, payload, metadata
         FROM events e WHERE event_type = 'LogLine' AND aggregate_id = $1
         ORDER BY sequence LIMIT 1",
    )
    .bind(&vms[0])
    .execute(&app.pool)
    .await
    .unwrap();
    wait_projected(&app.pool).await;

    // Quiet: the fresh tables are the live ones, row for row, indexes and all.
    let before = read_models(&app.pool).await;
    assert!(before["vm_logs"].as_array().unwrap().len() > 10);
    let done = projector::replay(&app.pool, projector::Scope::ALL)
        .await
        .unwrap();
    assert_eq!(done.tables, READ_MODELS);
    assert!(done.events >= app.count_events().await as usize);
    let after = read_models(&app.pool).await;
    assert_eq!(after, before);
    let schema: Option<String> = store::sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace WHERE nspname = 'replay'",
    )
    .fetch_optional(&app.pool)
    .await
    .unwrap();
    assert_eq!(schema, None, "the replay's schema is gone");

    // Busy: a second workload runs while the VMs' read models are replayed; the live
    // projector goes on into the swapped tables, and what they end with is what a fold of
    // every event from scratch gives.
    let (work, replayed) = tokio::join!(mixed_workload(&app, "two"), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let vms = projector::Scope::named(Some("vms")).unwrap();
        projector::replay(&app.pool, vms).await.unwrap()
    });
    assert_eq!(replayed.tables, ["vm_views", "vm_logs", "vm_holdings"]);
    app.wait_for_status(&work[1], "destroyed").await;
    wait_projected(&app.pool).await;
    let live = read_models(&app.pool).await;
    assert_eq!(holdings(&app.pool).await, counted_holdings(&app.pool).await);
    projector::replay(&app.pool, projector::Scope::ALL)
        .await
        .unwrap();
    assert_eq!(read_models(&app.pool).await, live);
    let listed: Value = app.get_json("/api/v1/vms?archived=all").await;
    assert_eq!(listed["items"].as_array().unwrap().len(), 6);
    let templates: Vec<Value> = app.get_json("/api/v1/admin/templates?provider=local").await;
    let medium = templates.iter().find(|t| t["id"] == "medium").unwrap();
    assert_eq!(medium["description"], "Changed in round two.");
}

#[tokio::test]
async fn events_committed_while_no_projector_ran_are_folded_when_one_starts() {
    let api_only = Roles {
        api: true,
        ..Roles::NONE
    };
    let app = spawn_app_with(api_only).await;
    let id = app.create_ok(json!({"name": "while-off"})).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let views: i64 = store::sqlx::query_scalar("SELECT count(*) FROM vm_views")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(views, 0, "no projector, no view");

    // A daemon with every role starts: its projector catches up from the events table.
    let replica = app.spawn_replica().await;
    wait_projected(&app.pool).await;
    let vm: Value = replica.get_json(&format!("/api/v1/vms/{id}")).await;
    assert_eq!(vm["name"], "while-off");
}

#[tokio::test]
async fn the_replay_command_rebuilds_the_vms_read_model_of_a_running_daemon() {
    let app = spawn_app().await;
    let id = app.create_ok(json!({"name": "replayed"})).await;
    app.wait_for_status(&id, "provisioned").await;
    wait_projected(&app.pool).await;
    let before = read_models(&app.pool).await;
    // Read model rows gone wrong: what only a fold of the events can put right.
    store::sqlx::query("UPDATE vm_views SET name = 'tampered'")
        .execute(&app.pool)
        .await
        .unwrap();
    store::sqlx::query("DELETE FROM vm_logs")
        .execute(&app.pool)
        .await
        .unwrap();

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_provisioningd"))
        .args(["replay", "--projection", "vms"])
        .env("DATABASE_URL", crate::database::server_url(&app.db_name))
        .env("NATS_URL", crate::database::nats_url())
        .env("PROVISIONING_NATS_PREFIX", app.bus.subjects.prefix())
        .env(
            "PROVISIONING_HCL_DIR",
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../hcl"),
        )
        .output()
        .unwrap();

    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("into vm_views, vm_logs, vm_holdings"),
        "{stdout}"
    );
    assert_eq!(read_models(&app.pool).await, before);
    let vm: Value = app.get_json(&format!("/api/v1/vms/{id}")).await;
    assert_eq!(vm["name"], "replayed");
}
