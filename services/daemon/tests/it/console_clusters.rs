//! The console shows the caller's clusters and a cluster's nodes (each a link to its VM),
//! and another user's cluster is the 404 page; a cluster is requested, scaled and
//! destroyed from its forms, a refusal shown beside its field.

use std::time::Duration;

use domain::identity::Role;
use serde_json::{json, Value};

use crate::cluster_support::{cluster_request, test_templates};
use crate::console::{app, assert_is_a_page, page, sign_in};
use crate::console_forms::{location, post};
use crate::helpers::{try_spawn_app, TestApp, SSH_KEY};

const WITHIN: Duration = Duration::from_secs(240);

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

async fn app_with(templates: &std::path::Path) -> TestApp {
    try_spawn_app(daemon::Roles::ALL, |config| {
        config.local_boot = dispatcher::LocalBoot::Simulate {
            delay: Duration::from_millis(200),
        };
        config.clusters_dir = Some(templates.to_owned());
    })
    .await
    .expect("the application starts")
}

/// The text of the error paragraph `id` of a page, empty when there is none.
fn error_text(body: &str, id: &str) -> String {
    let opening = format!("<p class=\"error\" id=\"{id}\">");
    body.split_once(&opening)
        .and_then(|(_, rest)| rest.split_once("</p>"))
        .map(|(text, _)| text.to_owned())
        .unwrap_or_default()
}

fn workers(cluster: &Value) -> Vec<&Value> {
    cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["role"] == "worker")
        .collect()
}

#[tokio::test]
async fn a_cluster_is_requested_scaled_and_destroyed_from_its_forms() {
    let templates = test_templates(600, 1);
    let app = app_with(templates.path()).await;
    let ada = app.user("ada@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let cookie = sign_in(&app, &ada.token).await;

    let (status, form) = page(&app, &cookie, "/console/clusters/new").await;
    assert_eq!(status, 200, "{form}");
    assert_is_a_page(&form);
    for shown in [
        "value=\"pair\"",
        "name=\"count.pair.worker\"",
        "value=\"local\"",
        "My address",
        "Your limits",
    ] {
        assert!(form.contains(shown), "{shown}: {form}");
    }
    let typed = |name: &'static str, worker: &'static str| {
        vec![
            ("name", name),
            ("template", "pair"),
            ("provider", "local"),
            ("count.pair.worker", worker),
            ("ssh_public_key", SSH_KEY),
            ("networks", "192.0.2.0/24"),
            ("duration_hours", "8"),
        ]
    };
    // Refused: beside the field, what was typed kept, nothing recorded.
    let refused = post(&app, &cookie, "/console/clusters", &typed("duo", "7")).await;
    assert_eq!(refused.status(), 422);
    let body = refused.text().await.unwrap();
    let beside = error_text(&body, "template-error");
    assert!(beside.contains("worker"), "{beside}: {body}");
    assert!(body.contains("value=\"duo\""), "{body}");
    let refused = post(&app, &cookie, "/console/clusters", &typed("", "1")).await;
    assert_eq!(refused.status(), 422);
    let body = refused.text().await.unwrap();
    assert!(
        error_text(&body, "name-error").starts_with("name: "),
        "{body}"
    );
    let listed: Value = ada.json("GET", "/api/v1/clusters", None, 200).await;
    assert_eq!(listed.as_array().unwrap().len(), 0, "{listed:#}");

    let made = post(&app, &cookie, "/console/clusters", &typed("duo", "1")).await;
    assert_eq!(made.status(), 303);
    let to = location(&made);
    let id = to
        .strip_prefix("/console/clusters/")
        .and_then(|rest| rest.strip_suffix("?done=created"))
        .unwrap_or_else(|| panic!("{to}"))
        .to_owned();
    let (status, shown) = page(&app, &cookie, &to).await;
    assert_eq!(status, 200);
    assert!(shown.contains("The cluster was requested"), "{shown}");
    let scale = format!("/console/clusters/{id}/scale");
    let scale_form = format!("action=\"{scale}\"");
    assert!(!shown.contains(&scale_form), "scaled once ready: {shown}");
    app.wait_for_cluster(&id, "ready", WITHIN).await;
    let (_, shown) = page(&app, &cookie, &format!("/console/clusters/{id}")).await;
    assert!(shown.contains(&scale_form), "{shown}");

    let outside = post(&app, &cookie, &scale, &[("role", "worker"), ("count", "4")]).await;
    assert_eq!(outside.status(), 422);
    let body = outside.text().await.unwrap();
    assert!(body.contains("id=\"refusal\""), "{body}");
    assert!(body.contains("range 1 to 3"), "{body}");
    let scaled = post(&app, &cookie, &scale, &[("role", "worker"), ("count", "2")]).await;
    assert_eq!(scaled.status(), 303);
    assert_eq!(
        location(&scaled),
        format!("/console/clusters/{id}?done=scaled")
    );
    app.wait_for_cluster_that(&id, "had two running workers", WITHIN, |c| {
        let workers = workers(c);
        c["status"] == "ready"
            && workers.len() == 2
            && workers.iter().all(|n| n["status"] == "running")
    })
    .await;

    let destroy = format!("/console/clusters/{id}/destroy");
    let theirs = sign_in(&app, &bob.token).await;
    let refused = post(&app, &theirs, &destroy, &[]).await;
    assert_eq!(refused.status(), 404);
    let gone = post(&app, &cookie, &destroy, &[]).await;
    assert_eq!(gone.status(), 303);
    assert_eq!(
        location(&gone),
        format!("/console/clusters/{id}?done=destroy")
    );
    app.wait_for_cluster(&id, "destroyed", WITHIN).await;
    let (_, shown) = page(&app, &cookie, &format!("/console/clusters/{id}")).await;
    assert!(
        !shown.contains(&destroy),
        "no forms once destroyed: {shown}"
    );
}
