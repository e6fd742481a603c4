//! Requesting taskservs through the API: the catalog is listed with its params and
//! dependencies; a request's taskservs are resolved (requirements added, in order) into the
//! plan its `Requested` event records; what cannot be installed is `422` naming the
//! taskserv and records nothing; an admin disables a taskserv per provider (an event);
//! a Cedar policy keeps one to a group (`403` naming the policy).

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp};
use crate::policies::{app_with, policy_dir};

async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

fn names(plan: &Value) -> Vec<String> {
    plan.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The `detail` of a refused request, which must answer `status` and record no VM.
async fn refused(app: &TestApp, taskservs: Value, template: &str, status: u16) -> String {
    let before = app.count_events().await;
    let body = vm_request(json!({"template": template, "taskservs": taskservs}));
    let answer: Value = app.post_json("/api/v1/vms", &body, status).await;
    assert_eq!(app.count_events().await, before, "nothing recorded");
    answer["detail"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_catalog_lists_each_taskserv_with_its_params_and_dependencies() {
    let app = app().await;
    let list: Vec<Value> = app.get_json("/api/v1/extensions/taskservs").await;
    let all: Vec<&str> = list.iter().map(|t| t["name"].as_str().unwrap()).collect();
    for shipped in [
        "docker",
        "k3s",
        "postgresql",
        "redis",
        "prometheus-node-exporter",
        "grafana",
        "jupyter",
        "eessi",
        "nginx",
    ] {
        assert!(all.contains(&shipped), "{shipped} in {all:?}");
    }
    let grafana = list.iter().find(|t| t["name"] == "grafana").unwrap();
    assert_eq!(grafana["params"]["port"]["default"], 3000);
    assert_eq!(grafana["params"]["port"]["type"], "number");
    assert!(grafana["depends_on"]
        .as_array()
        .unwrap()
        .contains(&json!({"name": "docker", "kind": "requires"})));
    assert_eq!(grafana["disabled_on"], json!([]));
    // The seed's providers route answers as /providers does.
    let providers: Vec<Value> = app.get_json("/api/v1/extensions/providers").await;
    assert!(providers.iter().any(|p| p["id"] == "local"));
}

#[tokio::test]
async fn a_request_with_grafana_records_its_requirements_before_it_in_the_requested_event() {
    let app = app().await;
    let body = vm_request(json!({
        "template": "medium",
        "taskservs": [{"name": "grafana", "params": {"port": 3001}}],
    }));
    let vm: Value = app.post_json("/api/v1/vms", &body, 202).await;
    let id = vm["id"].as_str().unwrap();
    let plan = &vm["taskservs"];
    let order = names(plan);
    let at = |n: &str| order.iter().position(|x| x == n).unwrap();
    assert_eq!(order.len(), 3, "{order:?}");
    assert!(at("docker") < at("grafana") && at("prometheus-node-exporter") < at("grafana"));
    let grafana = &plan[at("grafana")];
    assert_eq!(grafana["requested"], true);
    assert_eq!(grafana["state"], "pending");
    assert_eq!(grafana["params"]["port"], 3001);
    assert_eq!(plan[at("docker")]["requested"], false);
    // The event itself holds the plan, with each version.
    let events = app.events(id).await;
    let requested = events.iter().find(|e| e.kind == "Requested").unwrap();
    let recorded = &requested.data["spec"]["taskservs"];
    assert_eq!(names(recorded), order);
    assert_eq!(recorded[at("grafana")]["version"], "1.0.0");
    assert_eq!(
        recorded[at("grafana")]["params"]["grafana_version"],
        "11.4.0"
    );
}

#[tokio::test]
async fn what_cannot_be_installed_is_refused_naming_the_taskserv_and_records_nothing() {
    let app = app().await;
    let cases = [
        (json!([{"name": "nosuch"}]), "medium", "nosuch"),
        (
            json!([{"name": "k3s"}, {"name": "nginx"}]),
            "large",
            "conflict",
        ),
        (
            json!([{"name": "redis", "params": {"port": "x"}}]),
            "medium",
            "port",
        ),
        (
            json!([{"name": "redis", "params": {"colour": 1}}]),
            "medium",
            "colour",
        ),
        // k3s needs 2 cores; `small` has one.
        (json!([{"name": "k3s"}]), "small", "k3s"),
    ];
    for (taskservs, template, said) in cases {
        let detail = refused(&app, taskservs.clone(), template, 422).await;
        assert!(detail.starts_with("taskservs: "), "{taskservs}: {detail}");
        assert!(detail.contains(said), "{taskservs}: {detail}");
    }
    let detail = refused(&app, json!([{"name": "Bad/Name"}]), "medium", 422).await;
    assert!(detail.contains("not a taskserv name"), "{detail}");
}

#[tokio::test]
async fn an_admin_disables_a_taskserv_on_a_provider_and_requests_needing_it_are_refused() {
    let app = app().await;
    let off: Value = app
        .send_json(
            "PUT",
            "/api/v1/admin/providers/local/taskservs/docker",
            &json!({"enabled": false}),
            200,
        )
        .await;
    assert_eq!(
        off,
        json!({"provider": "local", "taskserv": "docker", "enabled": false})
    );
    let list: Vec<Value> = app.get_json("/api/v1/extensions/taskservs").await;
    let docker = list.iter().find(|t| t["name"] == "docker").unwrap();
    assert_eq!(docker["disabled_on"], json!(["local"]));
    // Grafana requires docker: refused, naming docker.
    let detail = refused(&app, json!([{"name": "grafana"}]), "medium", 422).await;
    assert!(detail.contains("docker"), "{detail}");
    let catalog: Value = app.get_json("/api/v1/admin/catalog/events").await;
    assert!(
        catalog.to_string().contains("TaskservEnabledChanged"),
        "the change is an event: {catalog}"
    );
    // Unknown taskserv: 404. A user may not: 403.
    let _: Value = app
        .send_json(
            "PUT",
            "/api/v1/admin/providers/local/taskservs/nosuch",
            &json!({"enabled": false}),
            404,
        )
        .await;
    let ada = app.user("ada@example.org", Role::User).await;
    let body = json!({"enabled": true});
    let _: Value = ada
        .json(
            "PUT",
            "/api/v1/admin/providers/local/taskservs/docker",
            Some(&body),
            403,
        )
        .await;
    let _: Value = app
        .send_json(
            "PUT",
            "/api/v1/admin/providers/local/taskservs/docker",
            &json!({"enabled": true}),
            200,
        )
        .await;
    // Read back (a read waits for the caller's change), then requested again.
    let list: Vec<Value> = app.get_json("/api/v1/extensions/taskservs").await;
    let docker = list.iter().find(|t| t["name"] == "docker").unwrap();
    assert_eq!(docker["disabled_on"], json!([]));
    let body = vm_request(json!({"template": "medium", "taskservs": [{"name": "grafana"}]}));
    let _: Value = app.post_json("/api/v1/vms", &body, 202).await;
}

const K3S_FOR_A_GROUP: &str = r#"
@id("k3s-for-k8s-users")
@reason("k3s is for members of the k8s-users group")
forbid (principal, action == Action::"install_taskserv", resource == Taskserv::"k3s")
unless { principal in Group::"k8s-users" };
"#;

#[tokio::test]
async fn a_policy_keeps_a_taskserv_to_a_group_naming_itself_when_it_refuses() {
    let defaults = include_str!("../../../../deploy/policies/default.cedar");
    let dir = policy_dir(&format!("{defaults}\n{K3S_FOR_A_GROUP}"));
    let app = app_with(dir.path()).await;
    let body = vm_request(json!({"template": "large", "taskservs": [{"name": "k3s"}]}));
    let ada = app.user("ada@example.org", Role::User).await;
    let answer: Value = ada.json("POST", "/api/v1/vms", Some(&body), 403).await;
    let detail = answer["detail"].as_str().unwrap();
    assert!(detail.contains("k3s-for-k8s-users"), "{detail}");
    assert!(detail.contains("k3s is for members"), "{detail}");
    let bob = app
        .user_in("bob@example.org", Role::User, &["k8s-users"])
        .await;
    let _: Value = bob.json("POST", "/api/v1/vms", Some(&body), 202).await;
}
