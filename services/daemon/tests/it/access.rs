//! Who may use which route: every route of the API (checked against the OpenAPI document,
//! so a new route without a rule here fails) for the owner of a resource, another user, an
//! admin and a caller with no credential. Another user's VM is answered 404 on every route
//! and stream, and such refusals record nothing.

use std::collections::BTreeSet;

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp, SSH_KEY};
use crate::users::Caller;
use crate::wire::{Event, VmPage};

async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

/// Who may use a route.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rule {
    /// Any signed-in user (each on their own data).
    AnyUser,
    /// The VM's owner and admins; others 404.
    Vm,
    /// Admins only; the VM's owner 403, other users 404.
    VmAdmin,
    /// The owner of the key or token only, admins included: others 404.
    Own,
    /// Admins only; users 403.
    Admin,
}

/// Routes that take no bearer token: health checks and metrics, the VMs' callbacks (signed
/// URLs), the browser sign-in (tested in `oidc_login`) and how the command line signs in
/// (tested in the CLI's end-to-end tests).
const PUBLIC: &[&str] = &[
    "GET /healthz",
    "GET /readyz",
    "GET /metrics",
    "POST /api/v1/callbacks/{token}",
    "GET /api/v1/auth/login",
    "GET /api/v1/auth/callback",
    "GET /api/v1/auth/status",
    "POST /api/v1/auth/logout",
    "GET /api/v1/cli/config",
];

struct Route {
    method: &'static str,
    /// As the OpenAPI document names it.
    path: &'static str,
    rule: Rule,
    body: Option<Value>,
}

fn routes() -> Vec<Route> {
    use Rule::*;
    let r = |method, path, rule, body: Option<Value>| Route {
        method,
        path,
        rule,
        body,
    };
    let expires = (time::OffsetDateTime::now_utc() + time::Duration::hours(3))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    vec![
        r("GET", "/api/v1/openapi.json", AnyUser, None),
        r("GET", "/api/v1/me", AnyUser, None),
        r("GET", "/api/v1/providers", AnyUser, None),
        r(
            "GET",
            "/api/v1/providers/{provider}/templates",
            AnyUser,
            None,
        ),
        r("GET", "/api/v1/ssh-keys", AnyUser, None),
        r(
            "POST",
            "/api/v1/ssh-keys",
            AnyUser,
            Some(json!({"name": "k", "public_key": SSH_KEY})),
        ),
        r(
            "POST",
            "/api/v1/ssh-keys/generate",
            AnyUser,
            Some(json!({"name": "gen"})),
        ),
        r("GET", "/api/v1/ssh-keys/{id}", Own, None),
        r("DELETE", "/api/v1/ssh-keys/{id}", Own, None),
        r("GET", "/api/v1/tokens", AnyUser, None),
        r(
            "POST",
            "/api/v1/tokens",
            AnyUser,
            Some(json!({"name": "t"})),
        ),
        r("DELETE", "/api/v1/tokens/{id}", Own, None),
        r("GET", "/api/v1/vms", AnyUser, None),
        r(
            "POST",
            "/api/v1/vms",
            AnyUser,
            Some(vm_request(json!({"name": "new-1"}))),
        ),
        r("GET", "/api/v1/vms/stream", AnyUser, None),
        r("GET", "/api/v1/vms/{id}", Vm, None),
        r("GET", "/api/v1/vms/{id}/events", Vm, None),
        r("GET", "/api/v1/vms/{id}/logs", Vm, None),
        r("GET", "/api/v1/vms/{id}/stream", Vm, None),
        r("GET", "/api/v1/vms/{id}/jobs", Vm, None),
        r("GET", "/api/v1/vms/{id}/jobs/{job}", Vm, None),
        r("GET", "/api/v1/vms/{id}/jobs/{job}/logs", Vm, None),
        r(
            "POST",
            "/api/v1/vms/{id}/extend",
            Vm,
            Some(json!({"hours": 1})),
        ),
        r("POST", "/api/v1/vms/{id}/retry", Vm, None),
        r("POST", "/api/v1/vms/{id}/refresh", Vm, None),
        r("POST", "/api/v1/vms/{id}/jobs/{job}/cancel", Vm, None),
        r("POST", "/api/v1/vms/{id}/jobs/{job}/force-cancel", Vm, None),
        r(
            "PATCH",
            "/api/v1/vms/{id}",
            VmAdmin,
            Some(json!({"expires_at": expires})),
        ),
        r("DELETE", "/api/v1/vms/{id}", Vm, None),
        r("POST", "/api/v1/vms/{id}/archive", Vm, None),
        r(
            "POST",
            "/api/v1/vms/{id}/taskservs",
            Vm,
            Some(json!({"taskservs": [{"name": "redis"}]})),
        ),
        // The VM is in the body: `{id}` there is the VM's id too.
        r(
            "POST",
            "/api/v1/extensions/taskservs/install",
            Vm,
            Some(json!({"vm": "{id}", "taskservs": [{"name": "redis"}]})),
        ),
        r("GET", "/api/v1/extensions/taskservs", AnyUser, None),
        r("GET", "/api/v1/extensions/clusters", AnyUser, None),
        r("POST", "/api/v1/clusters", AnyUser, Some(cluster_body())),
        r("GET", "/api/v1/clusters", AnyUser, None),
        r("GET", "/api/v1/clusters/{id}", Vm, None),
        r("GET", "/api/v1/clusters/{id}/stream", Vm, None),
        r("GET", "/api/v1/clusters/{id}/events", Vm, None),
        r(
            "POST",
            "/api/v1/clusters/{id}/scale",
            Vm,
            Some(json!({"role": "server", "count": 1})),
        ),
        r("DELETE", "/api/v1/clusters/{id}", Vm, None),
        r(
            "PUT",
            "/api/v1/admin/providers/{provider}/taskservs/{name}",
            Admin,
            Some(json!({"enabled": true})),
        ),
        r("GET", "/api/v1/admin/catalog/events", Admin, None),
        r("GET", "/api/v1/admin/providers/validate", Admin, None),
        r("GET", "/api/v1/admin/dead-letters", Admin, None),
        r(
            "POST",
            "/api/v1/admin/dead-letters/{id}/replay",
            Admin,
            None,
        ),
        r("GET", "/api/v1/admin/providers", Admin, None),
        r("POST", "/api/v1/admin/providers", Admin, Some(json!({}))),
        r(
            "PUT",
            "/api/v1/admin/providers/order",
            Admin,
            Some(json!({"ids": []})),
        ),
        r(
            "PATCH",
            "/api/v1/admin/providers/{provider}",
            Admin,
            Some(json!({})),
        ),
        r(
            "PUT",
            "/api/v1/admin/providers/{provider}/templates/order",
            Admin,
            Some(json!({"ids": []})),
        ),
        r("GET", "/api/v1/admin/templates", Admin, None),
        r("POST", "/api/v1/admin/templates", Admin, Some(json!({}))),
        r(
            "PATCH",
            "/api/v1/admin/templates/{provider}/{template}",
            Admin,
            Some(json!({})),
        ),
        r("GET", "/api/v1/admin/stream", Admin, None),
        r("GET", "/api/v1/audit", Admin, None),
        r("GET", "/api/v1/audit/export", Admin, None),
        r("GET", "/api/v1/admin/users", Admin, None),
        r("PATCH", "/api/v1/admin/users/{id}", Admin, Some(json!({}))),
        r("GET", "/api/v1/admin/users/{id}/tokens", Admin, None),
        r(
            "DELETE",
            "/api/v1/admin/users/{id}/tokens/{token_id}",
            Admin,
            None,
        ),
        r("POST", "/api/v1/admin/policies/reload", Admin, None),
        r("GET", "/api/v1/admin/policies/denials", Admin, None),
    ]
}

/// A request for a cluster of one node.
fn cluster_body() -> Value {
    json!({
        "name": "one",
        "template": "k3s-single",
        "provider": "local",
        "ssh_public_key": SSH_KEY,
        "allow_ssh_from": ["192.0.2.0/24"],
        "duration_hours": 4,
    })
}

/// A route's body, with `{id}` standing for the VM's id (routes that name it in the body).
fn body_of(route: &Route, owned: &Owned) -> Option<Value> {
    let text = route.body.as_ref()?.to_string().replace("{id}", &owned.vm);
    Some(serde_json::from_str(&text).expect("still JSON"))
}

/// What each caller owns, to fill in a route's path.
struct Owned {
    vm: String,
    cluster: String,
    ssh_key: String,
    token: String,
}

fn path_of(route: &Route, owned: &Owned) -> String {
    let id = match route.path {
        p if p.starts_with("/api/v1/ssh-keys/") => owned.ssh_key.as_str(),
        p if p.starts_with("/api/v1/tokens/") => owned.token.as_str(),
        p if p.starts_with("/api/v1/clusters/") => owned.cluster.as_str(),
        p if p.starts_with("/api/v1/admin/") => "00000000-0000-0000-0000-0000000000aa",
        _ => owned.vm.as_str(),
    };
    route
        .path
        .replace("{id}", id)
        .replace("{token_id}", "00000000-0000-0000-0000-0000000000bb")
        .replace("{job}", "1")
        .replace("{provider}", "local")
        .replace("{template}", "small")
        .replace("{name}", "redis")
}

async fn owned_by(caller: &Caller, name: &str) -> Owned {
    let vm: Value = caller
        .json(
            "POST",
            "/api/v1/vms",
            Some(&vm_request(json!({"name": name}))),
            202,
        )
        .await;
    let key: Value = caller
        .json(
            "POST",
            "/api/v1/ssh-keys/generate",
            Some(&json!({"name": name})),
            201,
        )
        .await;
    let token: Value = caller
        .json("POST", "/api/v1/tokens", Some(&json!({"name": name})), 201)
        .await;
    let cluster: Value = caller
        .json("POST", "/api/v1/clusters", Some(&cluster_body()), 202)
        .await;
    Owned {
        vm: vm["id"].as_str().unwrap().to_owned(),
        cluster: cluster["id"].as_str().unwrap().to_owned(),
        ssh_key: key["key"]["id"].as_str().unwrap().to_owned(),
        token: token["id"].as_str().unwrap().to_owned(),
    }
}

#[tokio::test]
async fn every_route_answers_its_owner_others_admins_and_strangers_as_its_rule_says() {
    let app = app().await;
    let owner = app.user("owner@example.org", Role::User).await;
    let other = app.user("other@example.org", Role::User).await;
    let admin = app.user("admin@example.org", Role::Admin).await;
    let nobody = app.with_token("");
    let routes = routes();

    // The table covers every route the API documents.
    let doc: Value = admin.json("GET", "/api/v1/openapi.json", None, 200).await;
    let documented: BTreeSet<String> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .filter(|r| !PUBLIC.contains(&r.as_str()))
        .collect();
    let tabled: BTreeSet<String> = routes
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        documented, tabled,
        "every documented route has an access rule"
    );

    let mine = owned_by(&owner, "mine").await;
    let mut wrong = vec![];
    // Refusals first: they must change nothing.
    for route in &routes {
        let path = path_of(route, &mine);
        let body = body_of(route, &mine);
        let body = body.as_ref();
        let none = nobody.status(route.method, &path, body).await;
        if none != 401 {
            wrong.push(format!(
                "no credential: {} {path} answered {none}",
                route.method
            ));
        }
        let theirs = other.status(route.method, &path, body).await;
        let expected = match route.rule {
            Rule::Vm | Rule::VmAdmin | Rule::Own => Some(404),
            Rule::Admin => Some(403),
            Rule::AnyUser => None,
        };
        if expected.is_some_and(|e| e != theirs) {
            wrong.push(format!(
                "another user: {} {path} answered {theirs}, not {expected:?}",
                route.method
            ));
        }
    }
    let vm_events: i64 =
        store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_id = $1")
            .bind(&mine.vm)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(vm_events, 2, "refused requests recorded nothing on the VM");

    for route in &routes {
        let path = path_of(route, &mine);
        let body = body_of(route, &mine);
        let status = owner.status(route.method, &path, body.as_ref()).await;
        let allowed = !matches!(status, 401 | 403 | 404) && status < 500;
        let ok = match route.rule {
            Rule::Admin => status == 403,
            Rule::VmAdmin => status == 403,
            _ => allowed,
        };
        if !ok {
            wrong.push(format!("owner: {} {path} answered {status}", route.method));
        }
    }
    let admins = owned_by(&admin, "admins").await;
    for route in &routes {
        // An admin acts on the owner's VM, but on their own keys and tokens.
        let owned = Owned {
            vm: mine.vm.clone(),
            cluster: mine.cluster.clone(),
            ssh_key: admins.ssh_key.clone(),
            token: admins.token.clone(),
        };
        let path = path_of(route, &owned);
        let body = body_of(route, &owned);
        let status = admin.status(route.method, &path, body.as_ref()).await;
        if matches!(status, 401 | 403) || status >= 500 {
            wrong.push(format!("admin: {} {path} answered {status}", route.method));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[tokio::test]
async fn another_users_vm_is_not_found_on_read_destroy_and_stream() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let bob = app.user("bob@example.org", Role::User).await;
    let vm: Value = ada
        .json("POST", "/api/v1/vms", Some(&vm_request(json!({}))), 202)
        .await;
    let id = vm["id"].as_str().unwrap();
    assert_eq!(vm["owner"], ada.id.as_str());

    for (method, path) in [
        ("GET", format!("/api/v1/vms/{id}")),
        ("DELETE", format!("/api/v1/vms/{id}")),
        ("GET", format!("/api/v1/vms/{id}/stream")),
    ] {
        let response = bob.send(method, &path, None).await;
        assert_eq!(response.status(), 404, "{method} {path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "not_found");
        // Said as for a VM that does not exist.
        assert_eq!(body["detail"], format!("no VM {id}"));
    }
    let missing = uuid::Uuid::new_v4();
    let absent: Value = bob
        .json("GET", &format!("/api/v1/vms/{missing}"), None, 404)
        .await;
    assert_eq!(absent["detail"], format!("no VM {missing}"));

    // Ada's stream is hers: it opens as an event stream.
    let stream = ada
        .send("GET", &format!("/api/v1/vms/{id}/stream"), None)
        .await;
    assert_eq!(stream.status(), 200);
    assert!(stream.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    drop(stream);
    // Bob's destroy did nothing.
    let got: Value = ada
        .json("GET", &format!("/api/v1/vms/{id}"), None, 200)
        .await;
    assert_eq!(got["status"], "requested");
}

#[tokio::test]
async fn users_list_their_own_vms_and_admins_everyones() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let bob = app.user("bob@example.org", Role::User).await;
    let root = app.user("root@example.org", Role::Admin).await;
    for (caller, name) in [(&ada, "ada-1"), (&ada, "ada-2"), (&bob, "bob-1")] {
        let _: Value = caller
            .json(
                "POST",
                "/api/v1/vms",
                Some(&vm_request(json!({"name": name}))),
                202,
            )
            .await;
    }
    let names = |page: VmPage| {
        let mut names: Vec<String> = page.items.into_iter().map(|v| v.name).collect();
        names.sort();
        names
    };
    let wait = "/api/v1/vms?limit=100";
    // The projector may lag: read until the admin sees all three.
    let mut all = vec![];
    for _ in 0..100 {
        all = names(root.json("GET", wait, None, 200).await);
        if all.len() == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(all, ["ada-1", "ada-2", "bob-1"]);
    assert_eq!(
        names(ada.json("GET", wait, None, 200).await),
        ["ada-1", "ada-2"]
    );
    assert_eq!(names(bob.json("GET", wait, None, 200).await), ["bob-1"]);
}

#[tokio::test]
async fn events_name_the_user_who_caused_them_and_the_request() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let vm: Value = ada
        .send("POST", "/api/v1/vms", Some(&vm_request(json!({}))))
        .await
        .json()
        .await
        .unwrap();
    let id = vm["id"].as_str().unwrap();
    let destroy = ada
        .request("DELETE", &format!("/api/v1/vms/{id}"))
        .header("x-request-id", "ada-destroys-it")
        .send()
        .await
        .unwrap();
    assert_eq!(destroy.status(), 202);
    let events: Vec<Event> = ada
        .json("GET", &format!("/api/v1/vms/{id}/events"), None, 200)
        .await;
    let actor = format!("user:{}", ada.id);
    assert!(events.len() >= 3, "{events:?}");
    assert!(
        events
            .iter()
            .all(|e| e.actor.as_deref() == Some(actor.as_str())),
        "{events:?}"
    );
    let correlation: Vec<String> = store::sqlx::query_scalar(
        "SELECT metadata->>'correlation_id' FROM events
         WHERE aggregate_id = $1 AND event_type = 'DestroyRequested'",
    )
    .bind(id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(correlation, ["ada-destroys-it"]);
    // The admin token's holder still acts as `admin`.
    let theirs = app.create_ok(json!({"name": "admins"})).await;
    assert_eq!(app.events(&theirs).await[0].actor.as_deref(), Some("admin"));
}

#[tokio::test]
async fn ssh_keys_belong_to_the_user_who_registered_them() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let bob = app.user("bob@example.org", Role::Admin).await;
    let key: Value = ada
        .json(
            "POST",
            "/api/v1/ssh-keys",
            Some(&json!({"name": "laptop", "public_key": SSH_KEY})),
            201,
        )
        .await;
    let bobs: Vec<Value> = bob.json("GET", "/api/v1/ssh-keys", None, 200).await;
    assert!(bobs.is_empty(), "{bobs:?}");
    // Bob may register the same key for himself, and may not use Ada's in a request.
    let _: Value = bob
        .json(
            "POST",
            "/api/v1/ssh-keys",
            Some(&json!({"name": "same", "public_key": SSH_KEY})),
            201,
        )
        .await;
    let body = vm_request(json!({"ssh_public_key": null, "ssh_key_id": key["id"]}));
    let problem: Value = bob.json("POST", "/api/v1/vms", Some(&body), 422).await;
    assert!(problem["detail"]
        .as_str()
        .unwrap()
        .starts_with("ssh_key_id"));
    let _: Value = ada.json("POST", "/api/v1/vms", Some(&body), 202).await;
}
