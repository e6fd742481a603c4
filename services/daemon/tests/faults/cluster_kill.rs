//! The daemon killed (SIGKILL) while its cluster coordinator works, and started again: once
//! just as a gate passed (the next role's nodes asked for, or about to be), once during a
//! rollback (its destroys asked for, or about to be). After the restart every node exists
//! exactly once, each of their Terraform runs happened once, and the rollback completes.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::checks::took;
use crate::daemon::{expect_json, Daemon, Setup, SSH_KEY};

#[path = "../it/cluster_templates.rs"]
mod cluster_templates;

const WAIT: Duration = Duration::from_secs(240);

fn setup(templates: &std::path::Path, boot: &str) -> Setup {
    Setup::default()
        .env("PROVISIONING_CLUSTERS_DIR", templates.display())
        .env("PROVISIONING_LOCAL_BOOT", boot)
        .env("PROVISIONING_LOCAL_BOOT_DELAY_SECS", 1)
}

async fn request_cluster(daemon: &Daemon, template: &str, roles: Value) -> String {
    let body = json!({
        "name": template,
        "template": template,
        "provider": "local",
        "roles": roles,
        "ssh_public_key": SSH_KEY,
        "allow_ssh_from": ["192.0.2.0/24"],
        "duration_hours": 4,
    });
    let response = daemon
        .request(reqwest::Method::POST, "/api/v1/clusters")
        .json(&body)
        .send()
        .await
        .unwrap();
    let cluster: Value = expect_json(response, 202).await;
    cluster["id"].as_str().unwrap().to_owned()
}

/// Waits, polling the database, until the cluster has an event of `kind`.
async fn wait_for_event(daemon: &Daemon, cluster: &str, kind: &str) {
    let deadline = Instant::now() + WAIT;
    loop {
        let found: i64 = store::sqlx::query_scalar(
            "SELECT count(*) FROM events WHERE aggregate_id = $1 AND event_type = $2",
        )
        .bind(cluster)
        .bind(kind)
        .fetch_one(&daemon.pool)
        .await
        .unwrap();
        if found > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "no {kind} for the cluster");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn wait_for_cluster(daemon: &Daemon, cluster: &str, status: &str) -> Value {
    let deadline = Instant::now() + WAIT;
    loop {
        let response = daemon
            .request(reqwest::Method::GET, &format!("/api/v1/clusters/{cluster}"))
            .send()
            .await;
        let mut last = Value::Null;
        if let Ok(response) = response {
            if response.status() == 200 {
                last = response.json().await.unwrap();
                if last["status"] == status {
                    return last;
                }
            }
        }
        assert!(Instant::now() < deadline, "never {status}: {last:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The VMs whose spec names the cluster, with how many events of `kind` each has.
async fn node_vms(daemon: &Daemon, cluster: &str, kind: &str) -> Vec<(String, i64)> {
    store::sqlx::query_as(
        "SELECT r.aggregate_id,
                (SELECT count(*) FROM events e
                 WHERE e.aggregate_id = r.aggregate_id AND e.event_type = $2)
         FROM events r
         WHERE r.aggregate_type = 'Provisioning' AND r.sequence = 1
           AND r.payload::jsonb->'data'->'spec'->'cluster'->>'id' = $1
         ORDER BY r.aggregate_id",
    )
    .bind(cluster)
    .bind(kind)
    .fetch_all(&daemon.pool)
    .await
    .unwrap()
}

/// The places of the cluster's `NodeRequested` events.
async fn places(daemon: &Daemon, cluster: &str) -> Vec<(String, i64)> {
    store::sqlx::query_as(
        "SELECT payload::jsonb->'data'->>'role', (payload::jsonb->'data'->>'index')::bigint
         FROM events WHERE aggregate_id = $1 AND event_type = 'NodeRequested'
         ORDER BY 1, 2",
    )
    .bind(cluster)
    .fetch_all(&daemon.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_daemon_killed_as_a_gate_passes_makes_every_node_of_the_next_role_once() {
    let started = Instant::now();
    let templates = cluster_templates::test_templates(600, 1);
    let mut daemon = Daemon::start(setup(templates.path(), "simulate")).await;
    let cluster = request_cluster(&daemon, "pair", json!({"worker": {"count": 3}})).await;
    wait_for_event(&daemon, &cluster, "GatePassed").await;
    daemon.kill();
    let made_before = node_vms(&daemon, &cluster, "Requested").await.len();
    eprintln!("killed as the gate passed, with {made_before} of 4 nodes' VMs made");
    daemon.start_as("run").await;

    let ready = wait_for_cluster(&daemon, &cluster, "ready").await;
    assert_eq!(ready["nodes"].as_array().unwrap().len(), 4);
    let expected: Vec<(String, i64)> = [("server", 0), ("worker", 0), ("worker", 1), ("worker", 2)]
        .map(|(r, i)| (r.to_owned(), i))
        .to_vec();
    assert_eq!(places(&daemon, &cluster).await, expected);
    // Four VMs, each requested once and applied once (the workers have no gate: the
    // cluster is ready once they are asked for, so their applies may still run).
    let deadline = Instant::now() + WAIT;
    let applied = loop {
        let applied = node_vms(&daemon, &cluster, "Applied").await;
        if applied.iter().all(|(_, n)| *n > 0) || Instant::now() > deadline {
            break applied;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(applied.len(), 4, "{applied:?}");
    assert!(applied.iter().all(|(_, n)| *n == 1), "{applied:?}");
    took("a_daemon_killed_as_a_gate_passes", started);
}

#[tokio::test]
async fn a_daemon_killed_during_a_rollback_completes_it_after_a_restart() {
    let started = Instant::now();
    // Three servers that never boot; their gate has 3 s.
    let templates = cluster_templates::test_templates(3, 3);
    let mut daemon = Daemon::start(setup(templates.path(), "off")).await;
    let cluster = request_cluster(&daemon, "stuck", json!({})).await;
    wait_for_event(&daemon, &cluster, "RollbackStarted").await;
    daemon.kill();
    let asked = node_vms(&daemon, &cluster, "DestroyRequested").await;
    let asked = asked.iter().filter(|(_, n)| *n > 0).count();
    eprintln!("killed in the rollback, with {asked} of 3 destroys asked for");
    daemon.start_as("run").await;

    let failed = wait_for_cluster(&daemon, &cluster, "failed").await;
    assert!(
        failed["failure"].as_str().unwrap().contains("within 3 s"),
        "{failed:#}"
    );
    // Every server made once, destroyed once.
    let destroyed = node_vms(&daemon, &cluster, "Destroyed").await;
    assert_eq!(destroyed.len(), 3, "{destroyed:?}");
    assert!(destroyed.iter().all(|(_, n)| *n == 1), "{destroyed:?}");
    let asked = node_vms(&daemon, &cluster, "DestroyRequested").await;
    assert!(asked.iter().all(|(_, n)| *n == 1), "{asked:?}");
    assert_eq!(places(&daemon, &cluster).await.len(), 3);
    took("a_daemon_killed_during_a_rollback", started);
}
