//! `POST /vms/{id}/extend` obeys the policies as a create does: their longest duration
//! counts from the VM's request, and an extension past it is a 403 naming the policy that
//! records nothing. An admin setting the expiry is not bound, and the change is theirs.

use domain::identity::Role;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::helpers::{vm_request, TestApp};
use crate::policies::{app_with, policy_dir};

const SHORT: &str = r#"
@id("anyone-requests") permit (principal, action == Action::"create_vm", resource);
@id("short") @vms("5") @vcpus("16") @ram_mib("65536") @gpus("0") @max_hours("8")
permit (principal, action == Action::"limits", resource);
"#;

fn time(value: &Value) -> OffsetDateTime {
    OffsetDateTime::parse(value.as_str().unwrap(), &Rfc3339).unwrap()
}

async fn event_count(app: &TestApp, vm: &str) -> i64 {
    store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_id = $1")
        .bind(vm)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_extension_past_the_policys_longest_duration_from_the_request_is_refused() {
    let dir = policy_dir(SHORT);
    let app = app_with(dir.path()).await;
    let ada = app.user("ada@example.org", Role::User).await;
    let body = vm_request(json!({"name": "short", "duration_hours": 4}));
    let vm: Value = ada.json("POST", "/api/v1/vms", Some(&body), 202).await;
    let id = vm["id"].as_str().unwrap().to_owned();
    let asked_at = time(&vm["expires_at"]) - time::Duration::hours(4);
    let extend = format!("/api/v1/vms/{id}/extend");

    // Up to 8 hours from the request: allowed.
    let extended: Value = ada
        .json("POST", &extend, Some(&json!({"hours": 4})), 202)
        .await;
    assert_eq!(
        time(&extended["expires_at"]),
        asked_at + time::Duration::hours(8)
    );

    // An hour more, or a week: refused, naming the policy, recording nothing.
    let before = event_count(&app, &id).await;
    for hours in [1, 160] {
        let refused: Value = ada
            .json("POST", &extend, Some(&json!({"hours": hours})), 403)
            .await;
        assert_eq!(refused["code"], "forbidden", "{refused}");
        let detail = refused["detail"].as_str().unwrap();
        assert!(detail.contains("\"short\""), "{detail}");
        assert!(detail.contains("8 hours"), "{detail}");
    }
    assert_eq!(event_count(&app, &id).await, before);
    let now: Value = ada
        .json("GET", &format!("/api/v1/vms/{id}"), None, 200)
        .await;
    assert_eq!(
        time(&now["expires_at"]),
        asked_at + time::Duration::hours(8)
    );

    let denials: Value = app.get_json("/api/v1/admin/policies/denials").await;
    assert_eq!(denials["by_policy"]["short"], 2, "{denials}");
}

#[tokio::test]
async fn an_admin_sets_an_expiry_past_the_policy_and_the_change_is_recorded_as_theirs() {
    let dir = policy_dir(SHORT);
    let app = app_with(dir.path()).await;
    let ada = app.user("ada@example.org", Role::User).await;
    let admin = app.user("admin@example.org", Role::Admin).await;
    let body = vm_request(json!({"name": "short", "duration_hours": 8}));
    let vm: Value = ada.json("POST", "/api/v1/vms", Some(&body), 202).await;
    let id = vm["id"].as_str().unwrap().to_owned();

    let later = OffsetDateTime::now_utc() + time::Duration::hours(100);
    let later = later.replace_nanosecond(0).unwrap();
    let body = json!({"expires_at": later.format(&Rfc3339).unwrap()});
    let set: Value = admin
        .json("PATCH", &format!("/api/v1/vms/{id}"), Some(&body), 202)
        .await;
    assert_eq!(time(&set["expires_at"]), later);

    let events: Vec<Value> = admin
        .json("GET", &format!("/api/v1/vms/{id}/events"), None, 200)
        .await;
    let set = events
        .iter()
        .find(|e| e["type"] == "ExpirySet")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(set["actor"], format!("user:{}", admin.id), "{set}");
}
