//! Requesting taskservs through the API: the catalog is listed with its params and
//! dependencies; a request's taskservs are resolved (requirements added, in order) into the
//! plan its `Requested` event records; what cannot be installed is `422` naming the
//! taskserv and records nothing; an admin disables a taskserv per provider (an event);
//! a Cedar policy keeps one to a group (`403` naming the policy).

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, try_spawn_app, vm_request, TestApp};
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
    let outputs: Vec<&String> = grafana["outputs"].as_object().unwrap().keys().collect();
    assert_eq!(outputs, ["admin_password_file", "admin_user", "url"]);
    // The cluster templates, checked against these taskservs at start.
    let clusters: Vec<Value> = app.get_json("/api/v1/extensions/clusters").await;
    let names: Vec<&str> = clusters
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    for shipped in [
        "k3s-single",
        "k3s-ha",
        "etcd-cluster",
        "postgresql-primary-replica",
    ] {
        assert!(names.contains(&shipped), "{shipped} in {names:?}");
    }
    let ha = clusters.iter().find(|c| c["name"] == "k3s-ha").unwrap();
    assert!(ha["roles"].as_array().unwrap().len() >= 2, "{ha}");
    assert!(!ha["health_gates"].as_array().unwrap().is_empty(), "{ha}");
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

/// A copy of the shipped catalog, with `redis`'s definition replaced by `redis_ncl`.
fn catalog_with_redis(redis_ncl: &str) -> tempfile::TempDir {
    let shipped = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../hcl/taskservs"));
    let dir = tempfile::tempdir().unwrap();
    for entry in walk(shipped) {
        let to = dir.path().join(entry.strip_prefix(shipped).unwrap());
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
    std::fs::write(dir.path().join("redis/taskserv.ncl"), redis_ncl).unwrap();
    dir
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = vec![];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => files.extend(walk(&path)),
            false => files.push(path),
        }
    }
    files
}

/// The error the daemon stops with on the catalog `dir`.
async fn start_error(dir: &tempfile::TempDir) -> String {
    let path = dir.path().to_owned();
    try_spawn_app(Roles::ALL, move |c| c.taskservs_dir = Some(path))
        .await
        .err()
        .expect("the start is refused")
        .to_string()
}

#[tokio::test]
async fn a_bad_taskserv_definition_or_a_dependency_cycle_stops_the_daemon_naming_it() {
    // A wrong type: Nickel's own message, with the file and the line.
    let typo = r#"{
  name = "redis",
  version = "1.0.0",
  description = "Redis",
  category = "database",
  os = ["debian"],
  max_retries = "three",
}"#;
    let dir = catalog_with_redis(typo);
    let message = start_error(&dir).await;
    assert!(message.starts_with("taskservs: "), "{message}");
    assert!(message.contains("redis/taskserv.ncl"), "{message}");
    assert!(message.contains(":7:"), "names the line: {message}");

    // redis requires grafana, which requires docker and the node exporter: no cycle yet;
    // the node exporter requiring redis closes one.
    let cyclic = r#"{
  name = "redis",
  version = "1.0.0",
  description = "Redis",
  category = "database",
  os = ["debian"],
  depends_on = [{ name = "grafana", kind = 'requires }],
}"#;
    let dir = catalog_with_redis(cyclic);
    let exporter = dir.path().join("prometheus-node-exporter/taskserv.ncl");
    let text = std::fs::read_to_string(&exporter).unwrap();
    let text = text.replacen(
        "os = [",
        "depends_on = [{ name = \"redis\", kind = 'requires }],\n  os = [",
        1,
    );
    std::fs::write(&exporter, text).unwrap();
    let message = start_error(&dir).await;
    assert!(message.contains("cycle"), "{message}");
    for name in ["redis", "grafana", "prometheus-node-exporter"] {
        assert!(message.contains(name), "names {name}: {message}");
    }

    // A dependency on a taskserv the catalog lacks.
    let missing = cyclic.replace("grafana", "memcached");
    let message = start_error(&catalog_with_redis(&missing)).await;
    assert!(message.contains("memcached"), "{message}");
}
