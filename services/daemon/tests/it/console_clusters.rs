//! The console shows the caller's clusters and a cluster's nodes (each a link to its VM),
//! and another user's cluster is the 404 page.

use std::time::Duration;

use domain::identity::Role;
use serde_json::{json, Value};

use crate::cluster_support::cluster_request;
use crate::console::{app, page, sign_in};

#[tokio::test]
async fn a_users_clusters_and_their_nodes_are_shown_and_anothers_cluster_is_not_found() {
    let app = app().await;
    let ada = app.user("ada@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let asked = cluster_request(json!({"name": "one", "template": "k3s-single"}));
    let cluster: Value = ada
        .json("POST", "/api/v1/clusters", Some(&asked), 202)
        .await;
    let id = cluster["id"].as_str().unwrap().to_owned();
    // The coordinator asks for the node's VM.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let node = loop {
        let now: Value = ada
            .json("GET", &format!("/api/v1/clusters/{id}"), None, 200)
            .await;
        if let Some(node) = now["nodes"].as_array().and_then(|n| n.first()) {
            break node.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no node: {now:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    let cookie = sign_in(&app, &ada.token).await;
    let (status, list) = page(&app, &cookie, "/console/clusters").await;
    assert_eq!(status, 200);
    assert!(
        list.contains(&format!("href=\"/console/clusters/{id}\">one</a>")),
        "{list}"
    );
    assert!(list.contains("k3s-single"), "{list}");
    let (status, shown) = page(&app, &cookie, &format!("/console/clusters/{id}")).await;
    assert_eq!(status, 200);
    let vm = node["vm_id"].as_str().unwrap();
    assert!(
        shown.contains(&format!("href=\"/console/vms/{vm}\">one-server-0</a>")),
        "{shown}"
    );
    assert!(
        shown.contains("Health gates") && shown.contains("k3s on server"),
        "{shown}"
    );

    let theirs = sign_in(&app, &bob.token).await;
    let (status, list) = page(&app, &theirs, "/console/clusters").await;
    assert_eq!(status, 200);
    assert!(!list.contains(&id), "{list}");
    let (status, _) = page(&app, &theirs, &format!("/console/clusters/{id}")).await;
    assert_eq!(status, 404);
}
