//! Hostile input, tried as any signed-in user could: times Postgres cannot store, NUL
//! characters and bytes that are not UTF-8, malformed parameters, oversized bodies and
//! lists. Each is a 4xx with the API's `{code, detail}` naming what is wrong, nothing is
//! recorded, and the daemon keeps serving.

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp};
use crate::users::Caller;

/// In year 9999 where it is written, in year 10000 in UTC.
const TOO_LATE: &str = "9999-12-31T23:59:59-00:01";

/// Everything but the dispatcher: VMs are requested, never run.
pub fn without_runners() -> Roles {
    Roles {
        api: true,
        relay: true,
        projector: true,
        ..Roles::NONE
    }
}

/// A user with a VM of their own; its id.
async fn user_with_vm(app: &TestApp) -> (Caller, String) {
    let user = app.user("mallory@example.org", Role::User).await;
    let vm: Value = user
        .json("POST", "/api/v1/vms", Some(&vm_request(json!({}))), 202)
        .await;
    (user, vm["id"].as_str().unwrap().to_owned())
}

/// Fails unless `response` is `status` with the error body whose detail starts with
/// `field: ` (and `code` when given).
async fn refused(response: reqwest::Response, status: u16, code: &str, field: &str) {
    let url = response.url().to_string();
    let got = response.status().as_u16();
    let text = response.text().await.unwrap();
    assert_eq!(got, status, "{url}: {text}");
    let body: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: {e}: {text}"));
    assert_eq!(body["code"], code, "{url}: {text}");
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with(&format!("{field}: ")), "{url}: {text}");
}

#[tokio::test]
async fn times_postgres_cannot_store_are_422_naming_the_field_wherever_a_time_is_taken() {
    let app = spawn_app_with(without_runners()).await;
    let (user, vm) = user_with_vm(&app).await;
    let admin = app.with_token(&app.token);
    let before = app.count_events().await;

    let queries = [
        (&user, format!("/api/v1/vms/{vm}?at={TOO_LATE}"), "at"),
        (
            &user,
            format!("/api/v1/vms/{vm}/events?from={TOO_LATE}"),
            "from",
        ),
        (
            &user,
            format!("/api/v1/vms/{vm}/events?to={TOO_LATE}"),
            "to",
        ),
        (&admin, format!("/api/v1/audit?from={TOO_LATE}"), "from"),
        (&admin, format!("/api/v1/audit?to={TOO_LATE}"), "to"),
        (
            &admin,
            format!("/api/v1/audit/export?from={TOO_LATE}"),
            "from",
        ),
        (&admin, format!("/api/v1/admin/stream?to={TOO_LATE}"), "to"),
    ];
    for (caller, path, field) in queries {
        let response = caller.send("GET", &path, None).await;
        refused(response, 422, "invalid_field", field).await;
    }
    let token = json!({"name": "late", "expires_at": TOO_LATE});
    let response = user.send("POST", "/api/v1/tokens", Some(&token)).await;
    refused(response, 422, "invalid_field", "expires_at").await;
    let expiry = json!({"expires_at": TOO_LATE});
    let path = format!("/api/v1/vms/{vm}");
    let response = admin.send("PATCH", &path, Some(&expiry)).await;
    refused(response, 422, "invalid_field", "expires_at").await;

    assert_eq!(app.count_events().await, before);
    // Still serving: no handler died.
    let health = app.client.get(format!("{}/healthz", app.address));
    assert_eq!(health.send().await.unwrap().status(), 200);
    let vm_again = user.send("GET", &format!("/api/v1/vms/{vm}"), None).await;
    assert_eq!(vm_again.status(), 200);
}

#[tokio::test]
async fn nul_and_bytes_that_are_not_utf8_are_4xx_naming_where_they_are() {
    let app = spawn_app_with(without_runners()).await;
    let (user, vm) = user_with_vm(&app).await;
    let admin = app.with_token(&app.token);
    let before = app.count_events().await;

    let response = user.send("GET", "/api/v1/vms?provider=a%00b", None).await;
    refused(response, 422, "invalid_field", "provider").await;
    let path = format!("/api/v1/vms/{vm}/events?actor=%00");
    refused(
        user.send("GET", &path, None).await,
        422,
        "invalid_field",
        "actor",
    )
    .await;
    let path = "/api/v1/vms?status=failed&provider=%FF";
    refused(
        user.send("GET", path, None).await,
        422,
        "invalid_field",
        "provider",
    )
    .await;
    let path = format!("/api/v1/vms/{vm}%FF/events");
    refused(
        user.send("GET", &path, None).await,
        400,
        "bad_request",
        "path",
    )
    .await;
    // A cursor before Postgres' first day.
    let path = "/api/v1/vms?after=-300000000000000000_00000000000000000000000000000000";
    refused(
        user.send("GET", path, None).await,
        422,
        "invalid_field",
        "after",
    )
    .await;

    // In a body: any string, wherever it is.
    let key = json!({"name": "a\u{0}b", "public_key": crate::helpers::SSH_KEY});
    let response = user.send("POST", "/api/v1/ssh-keys", Some(&key)).await;
    refused(response, 422, "invalid_field", "name").await;
    let template = json!({
        "provider": "local", "id": "nul", "name": "NUL", "description": "a\u{0}b",
        "flavor_name": "f", "image_name": "i", "cpu": 1, "ram_gb": 1, "storage_gb": 1,
    });
    let response = admin
        .send("POST", "/api/v1/admin/templates", Some(&template))
        .await;
    refused(response, 422, "invalid_field", "description").await;
    let networks = vm_request(json!({"allow_ssh_from": ["192.0.2.0/24", "10.0.0.0/24\u{0}"]}));
    let response = user.send("POST", "/api/v1/vms", Some(&networks)).await;
    refused(response, 422, "invalid_field", "allow_ssh_from[1]").await;

    assert_eq!(app.count_events().await, before);
}

#[tokio::test]
async fn the_framework_s_own_refusals_answer_the_documented_error_body() {
    let app = spawn_app_with(without_runners()).await;
    let (user, vm) = user_with_vm(&app).await;
    let admin = app.with_token(&app.token);

    // A parameter of the wrong type is axum's own refusal (400); a number out of the
    // documented range is the route's (422): both with the error body, naming it.
    for (caller, path, status, code, name) in [
        (
            &user,
            format!("/api/v1/vms/{vm}/logs?after_job=x"),
            400,
            "bad_request",
            "after_job",
        ),
        (
            &admin,
            "/api/v1/admin/catalog/events?after=-1".to_owned(),
            422,
            "invalid_field",
            "after",
        ),
    ] {
        let response = caller.send("GET", &path, None).await;
        assert_eq!(response.status(), status, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], code, "{path}: {body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(name), "{path}: {body}");
    }
    let response = user.send("PUT", "/api/v1/vms", None).await;
    assert_eq!(response.status(), 405);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "method_not_allowed", "{body}");
}

#[tokio::test]
async fn a_body_over_256_kib_is_413_too_large_and_records_nothing() {
    let app = spawn_app_with(without_runners()).await;
    let user = app.user("mallory@example.org", Role::User).await;
    let before = app.count_events().await;
    let padding = "x".repeat(257 * 1024);

    let big = vm_request(json!({"name": padding}));
    let response = user.send("POST", "/api/v1/vms", Some(&big)).await;
    refused(response, 413, "too_large", "body").await;
    // A callback reads its body itself: the same limit, the same answer.
    let response = app
        .client
        .post(format!("{}/api/v1/callbacks/not-a-token", app.address))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("reason={padding}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["code"], "too_large", "{body}");

    // Just under the limit: read, and refused for what it says.
    let under = vm_request(json!({"name": "x".repeat(200 * 1024)}));
    let response = user.send("POST", "/api/v1/vms", Some(&under)).await;
    refused(response, 422, "invalid_field", "name").await;
    assert_eq!(app.count_events().await, before);
}

#[tokio::test]
async fn allow_ssh_from_takes_at_most_32_networks_and_repeats_count_once() {
    let app = spawn_app_with(without_runners()).await;
    let user = app.user("mallory@example.org", Role::User).await;
    let before = app.count_events().await;

    let many: Vec<String> = (0..33).map(|i| format!("10.1.{i}.0/24")).collect();
    let request = vm_request(json!({"allow_ssh_from": many}));
    let response = user.send("POST", "/api/v1/vms", Some(&request)).await;
    refused(response, 422, "invalid_field", "allow_ssh_from").await;
    assert_eq!(app.count_events().await, before);

    let mut repeated: Vec<String> = many[..31].to_vec();
    repeated.push("10.1.0.0/24".into());
    let request = vm_request(json!({"allow_ssh_from": repeated}));
    let vm: Value = user.json("POST", "/api/v1/vms", Some(&request), 202).await;
    let path = format!("/api/v1/vms/{}/events", vm["id"].as_str().unwrap());
    let events: Vec<Value> = user.json("GET", &path, None, 200).await;
    let spec = &events[0]["data"]["spec"];
    assert_eq!(
        spec["allow_ssh_from"].as_array().unwrap().len(),
        31,
        "{spec}"
    );
}

#[tokio::test]
async fn template_tags_and_catalog_orders_have_an_upper_bound() {
    let app = spawn_app_with(without_runners()).await;
    let admin = app.with_token(&app.token);
    let before = app.count_events().await;
    let tags: Vec<String> = (0..33).map(|i| format!("t{i}")).collect();
    let template = json!({
        "provider": "local", "id": "tagged", "name": "Tagged", "flavor_name": "f",
        "image_name": "i", "cpu": 1, "ram_gb": 1, "storage_gb": 1, "tags": tags,
    });
    let response = admin
        .send("POST", "/api/v1/admin/templates", Some(&template))
        .await;
    refused(response, 422, "invalid_field", "tags").await;
    let ids: Vec<String> = (0..1001).map(|i| format!("p{i}")).collect();
    let order = json!({"ids": ids});
    let response = admin
        .send("PUT", "/api/v1/admin/providers/order", Some(&order))
        .await;
    refused(response, 422, "invalid_field", "ids").await;
    assert_eq!(app.count_events().await, before);
}

#[tokio::test]
async fn a_body_that_is_not_a_json_object_is_422_naming_body_and_records_nothing() {
    let app = spawn_app_with(without_runners()).await;
    let user = app.user("mallory@example.org", Role::User).await;
    let admin = app.with_token(&app.token);
    let before = app.count_events().await;

    let path = format!("/api/v1/admin/users/{}", user.id);
    for body in [
        json!([null, null]),
        json!(["user", "active"]),
        json!("user"),
        json!(3),
    ] {
        let response = admin.send("PATCH", &path, Some(&body)).await;
        refused(response, 422, "invalid_field", "body").await;
    }
    let response = user
        .send("POST", "/api/v1/tokens", Some(&json!(["cli"])))
        .await;
    refused(response, 422, "invalid_field", "body").await;
    assert_eq!(app.count_events().await, before);
}

#[tokio::test]
async fn a_whole_number_written_as_a_float_is_taken_as_that_integer() {
    let app = spawn_app_with(without_runners()).await;
    let admin = app.with_token(&app.token);

    let provider = json!({"id": "hetzner", "name": "Hetzner", "sort_order": 175.0});
    let made: Value = admin
        .json("POST", "/api/v1/admin/providers", Some(&provider), 201)
        .await;
    assert_eq!(made["sort_order"], 175, "{made}");
    let path = "/api/v1/admin/providers/hetzner";
    let changed: Value = admin
        .json("PATCH", path, Some(&json!({"sort_order": -3.0})), 200)
        .await;
    assert_eq!(changed["sort_order"], -3, "{changed}");
    // A fraction is still no integer.
    let response = admin
        .send("PATCH", path, Some(&json!({"sort_order": 1.5})))
        .await;
    refused(response, 422, "invalid_field", "sort_order").await;
}

#[tokio::test]
async fn an_idempotency_key_with_a_tab_is_422_naming_it() {
    let app = spawn_app_with(without_runners()).await;
    let (user, vm) = user_with_vm(&app).await;
    let before = app.count_events().await;

    for path in [
        format!("/api/v1/vms/{vm}/refresh"),
        format!("/api/v1/vms/{vm}/extend"),
    ] {
        let response = user
            .request("POST", &path)
            .header("idempotency-key", "a\tb")
            .json(&json!({"hours": 1}))
            .send()
            .await
            .unwrap();
        refused(response, 422, "invalid_field", "Idempotency-Key").await;
    }
    assert_eq!(app.count_events().await, before);
}
