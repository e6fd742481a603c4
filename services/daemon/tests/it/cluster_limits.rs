//! A cluster is admitted whole: the policies on every node's template and the caller's
//! limits against all its nodes together, before any node exists. Bad requests are `422`
//! naming the field, and record nothing; another user's cluster is not found.

use domain::identity::Role;
use serde_json::{json, Value};

use crate::cluster_support::cluster_request;
use crate::helpers::spawn_app;

#[tokio::test]
async fn a_cluster_beyond_the_callers_limits_is_refused_whole_before_any_node_exists() {
    let app = spawn_app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    // The default limits allow 5 VMs: the seed, two servers and three agents are 6.
    let asked = cluster_request(json!({"roles": {"agent": {"count": 3}}}));
    let refused = ada.send("POST", "/api/v1/clusters", Some(&asked)).await;
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains("default-limits"), "{detail}");
    assert!(detail.contains("6 VMs"), "{detail}");
    let clusters: Vec<Value> = ada.json("GET", "/api/v1/clusters", None, 200).await;
    assert!(clusters.is_empty());
    let vms: Value = ada.json("GET", "/api/v1/vms", None, 200).await;
    assert_eq!(vms["items"], json!([]));
    let recorded: i64 =
        store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_type <> 'Catalog'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded, 0);

    // Two agents fit (5 VMs, 10 vCPUs): admitted.
    let asked = cluster_request(json!({"roles": {"agent": {"count": 2}}}));
    let cluster: Value = ada
        .json("POST", "/api/v1/clusters", Some(&asked), 202)
        .await;
    assert_eq!(cluster["owner"].as_str().unwrap(), ada.id);

    // Another user neither sees it nor may destroy it.
    let bob = app.user("bob@example.org", Role::User).await;
    let path = format!("/api/v1/clusters/{}", cluster["id"].as_str().unwrap());
    assert_eq!(bob.status("GET", &path, None).await, 404);
    assert_eq!(bob.status("DELETE", &path, None).await, 404);
    let theirs: Vec<Value> = bob.json("GET", "/api/v1/clusters", None, 200).await;
    assert!(theirs.is_empty());
    let all: Vec<Value> = app.get_json("/api/v1/clusters?all=true").await;
    assert_eq!(all.len(), 1);
}

#[tokio::test]
async fn a_bad_cluster_request_is_refused_naming_its_field_and_records_nothing() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({"template": "nope"}),
            "template",
            "not a cluster template",
        ),
        (
            json!({"roles": {"agent": {"count": 11}}}),
            "roles",
            "outside its range 0 to 10",
        ),
        (
            json!({"roles": {"server": {"count": 3}}}),
            "roles",
            "fixed at 2",
        ),
        (
            json!({"roles": {"bastion": {}}}),
            "roles",
            "no role \"bastion\"",
        ),
        (
            json!({"roles": {"seed": {"template": "small"}}}),
            "roles.seed.template",
            "not one of the role's templates",
        ),
        (json!({"provider": "nowhere"}), "provider", "does not exist"),
        (
            json!({"allow_ssh_from": ["0.0.0.0/0"]}),
            "allow_ssh_from",
            "",
        ),
        (json!({"name": "n".repeat(56)}), "name", "too long"),
    ];
    for (fields, field, reason) in cases {
        let response = app
            .post("/api/v1/clusters")
            .json(&cluster_request(fields.clone()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "{fields}");
        let body: Value = response.json().await.unwrap();
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!("{field}:")),
            "{fields}: {detail}"
        );
        assert!(detail.contains(reason), "{fields}: {detail}");
    }
    let recorded: i64 =
        store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_type = 'Cluster'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(recorded, 0);
}
