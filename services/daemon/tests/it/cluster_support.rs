//! What the cluster tests share: a cluster request, waiting for a cluster's status, the
//! cluster's events as the event store holds them, and a clusters directory of small test
//! templates.

use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::{TestApp, SSH_KEY};

pub use crate::cluster_templates::test_templates;

/// A cluster request, with `fields` replaced.
pub fn cluster_request(fields: Value) -> Value {
    let mut body = json!({
        "name": "lab",
        "template": "k3s-ha",
        "provider": "local",
        "ssh_public_key": SSH_KEY,
        "allow_ssh_from": ["192.0.2.0/24"],
        "duration_hours": 8,
    });
    for (k, v) in fields.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

impl TestApp {
    pub async fn cluster(&self, id: &str) -> Value {
        self.get_json(&format!("/api/v1/clusters/{id}")).await
    }

    /// Waits until the cluster is `status`, failing with its last state after `limit`.
    pub async fn wait_for_cluster(&self, id: &str, status: &str, limit: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let cluster = self.cluster(id).await;
            if cluster["status"] == status {
                return cluster;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the cluster never became {status}: {cluster:#}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until `check` holds for the cluster, failing with its last state after `limit`.
    pub async fn wait_for_cluster_that(
        &self,
        id: &str,
        what: &str,
        limit: Duration,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let cluster = self.cluster(id).await;
            if check(&cluster) {
                return cluster;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the cluster never {what}: {cluster:#}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Waits until the cluster has recorded an event of `kind` whose data `check` accepts;
    /// its events in order up to that one.
    pub async fn wait_for_cluster_event(
        &self,
        id: &str,
        kind: &str,
        limit: Duration,
        check: impl Fn(&Value) -> bool,
    ) -> Vec<(String, Value, i64)> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let mut events = self.cluster_events(id).await;
            if let Some(at) = events.iter().position(|(k, d, _)| k == kind && check(d)) {
                events.truncate(at + 1);
                return events;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the cluster never recorded {kind}: {events:#?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// The cluster's events in order: (type, data, position).
    pub async fn cluster_events(&self, id: &str) -> Vec<(String, Value, i64)> {
        cluster_events(&self.pool, id).await
    }
}

/// The cluster's events in order: (type, data, position).
pub async fn cluster_events(pool: &store::PgPool, id: &str) -> Vec<(String, Value, i64)> {
    let rows: Vec<(String, String, i64)> = store::sqlx::query_as(
        "SELECT event_type, coalesce(payload::jsonb->'data', 'null')::text, position FROM events
         WHERE aggregate_type = 'Cluster' AND aggregate_id = $1 ORDER BY sequence",
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(t, d, p)| (t, serde_json::from_str(&d).unwrap_or(Value::Null), p))
        .collect()
}
