//! Cedar policies through the API: a limit passed by one more VM and a GPU template outside
//! its group are refused with a 403 naming the policy, counted, and record nothing; `/me`
//! shows the limits and usage; a reload through the API changes the answer, a bad one is
//! refused and changes nothing; a bad policy at start stops the daemon with the error.

use std::path::Path;

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, try_spawn_app, vm_request, TestApp};
use crate::users::Caller;

const SCHEMA: &str = include_str!("../../../../deploy/policies/schema.cedarschema");
const DEFAULTS: &str = include_str!("../../../../deploy/policies/default.cedar");

/// A policy directory with the schema and `policies` as `main.cedar`.
pub(crate) fn policy_dir(policies: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("schema.cedarschema"), SCHEMA).unwrap();
    write_policies(dir.path(), policies);
    dir
}

fn write_policies(dir: &Path, policies: &str) {
    std::fs::write(dir.join("main.cedar"), policies).unwrap();
}

const TWO_VMS: &str = r#"
@id("anyone-requests") permit (principal, action == Action::"create_vm", resource);
@id("two-vms") @vms("2") @vcpus("100") @ram_mib("1000000") @gpus("0") @max_hours("48")
permit (principal, action == Action::"limits", resource);
"#;

pub(crate) async fn app_with(dir: &Path) -> TestApp {
    let dir = dir.to_owned();
    try_spawn_app(
        Roles {
            dispatcher: false,
            ..Roles::ALL
        },
        move |c| c.policy_dir = Some(dir),
    )
    .await
    .expect("the application starts")
}

async fn vm_count(app: &TestApp) -> i64 {
    store::sqlx::query_scalar(
        "SELECT count(DISTINCT aggregate_id) FROM events WHERE aggregate_type = 'Provisioning'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// Waits until the read model shows `n` VMs of the caller (usage is read from it).
async fn wait_for_vms(caller: &Caller, n: usize) {
    for _ in 0..100 {
        let page: Value = caller.json("GET", "/api/v1/vms", None, 200).await;
        if page["items"].as_array().unwrap().len() == n {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("the list never showed {n} VMs");
}

#[tokio::test]
async fn one_vm_more_than_the_limit_is_refused_naming_the_policy_and_recording_nothing() {
    let dir = policy_dir(TWO_VMS);
    let app = app_with(dir.path()).await;
    let ada = app.user("ada@example.org", Role::User).await;
    // Longer than the policy's 48 hours.
    let long = vm_request(json!({"name": "long", "duration_hours": 72}));
    let refused: Value = ada.json("POST", "/api/v1/vms", Some(&long), 403).await;
    assert_eq!(
        refused["detail"],
        "denied by policy \"two-vms\": 72 hours is longer than the 48 allowed"
    );
    for name in ["one", "two"] {
        let body = vm_request(json!({"name": name}));
        let _: Value = ada.json("POST", "/api/v1/vms", Some(&body), 202).await;
    }
    wait_for_vms(&ada, 2).await;
    let me: Value = ada.json("GET", "/api/v1/me", None, 200).await;
    assert_eq!(me["email"], "ada@example.org");
    assert_eq!(me["role"], "user");
    assert_eq!(
        me["limits"]["vms"],
        json!({"value": 2, "policy": "two-vms"})
    );
    assert_eq!(me["limits"]["max_hours"]["value"], 48);
    // `small` is one core and 2 GiB.
    assert_eq!(
        me["usage"],
        json!({"vms": 2, "vcpus": 2, "ram_mib": 4096, "gpus": 0})
    );

    let before = vm_count(&app).await;
    let body = vm_request(json!({"name": "three"}));
    let refused: Value = ada.json("POST", "/api/v1/vms", Some(&body), 403).await;
    assert_eq!(refused["code"], "forbidden");
    assert_eq!(
        refused["detail"],
        "denied by policy \"two-vms\": 3 VMs would be more than the 2 allowed"
    );
    assert_eq!(
        vm_count(&app).await,
        before,
        "a refused request records nothing"
    );

    // Another user has their own count.
    let bob = app.user("bob@example.org", Role::User).await;
    let _: Value = bob.json("POST", "/api/v1/vms", Some(&body), 202).await;

    let denials: Value = app.get_json("/api/v1/admin/policies/denials").await;
    assert_eq!(denials["by_policy"]["two-vms"], 2, "{denials}");
    assert_eq!(denials["total"], 2);
}

#[tokio::test]
async fn a_gpu_template_is_refused_to_a_user_outside_the_group() {
    let dir = policy_dir(DEFAULTS);
    let app = app_with(dir.path()).await;
    // The local `medium` template becomes a GPU one.
    let _: Value = app
        .send_json(
            "PATCH",
            "/api/v1/admin/templates/local/medium",
            &json!({"gpu": "1 x L40S"}),
            200,
        )
        .await;
    // Read back (with the change's position): the catalog shows it before anyone asks.
    let templates: Vec<Value> = app.get_json("/api/v1/admin/templates").await;
    assert!(templates
        .iter()
        .any(|t| t["id"] == "medium" && t["gpu"] == "1 x L40S"));
    let ada = app.user("ada@example.org", Role::User).await;
    let grace = app
        .user_in("grace@example.org", Role::User, &["gpu-users"])
        .await;
    let body = vm_request(json!({"template": "medium"}));
    let refused: Value = ada.json("POST", "/api/v1/vms", Some(&body), 403).await;
    assert_eq!(
        refused["detail"],
        "denied by policy \"gpu-templates-need-group\": GPU templates are for members of the gpu-users group"
    );
    // The group's limits allow GPUs, the default ones do not.
    let _: Value = grace.json("POST", "/api/v1/vms", Some(&body), 202).await;
    let me: Value = grace.json("GET", "/api/v1/me", None, 200).await;
    assert_eq!(me["groups"], json!(["gpu-users"]));
    assert_eq!(
        me["limits"]["gpus"],
        json!({"value": 4, "policy": "gpu-user-limits"})
    );
    let small = vm_request(json!({"name": "plain"}));
    let _: Value = ada.json("POST", "/api/v1/vms", Some(&small), 202).await;
}

#[tokio::test]
async fn a_reload_through_the_api_changes_the_answer_and_a_bad_one_keeps_the_old_policies() {
    let dir = policy_dir(TWO_VMS);
    let app = app_with(dir.path()).await;
    let ada = app.user("ada@example.org", Role::User).await;
    let body = vm_request(json!({}));
    let _: Value = ada.json("POST", "/api/v1/vms", Some(&body), 202).await;

    write_policies(
        dir.path(),
        &format!(
            "{TWO_VMS}\n@id(\"closed\") @reason(\"requests are closed\")\n\
             forbid (principal, action == Action::\"create_vm\", resource);"
        ),
    );
    // Not before the reload.
    let _: Value = ada.json("POST", "/api/v1/vms", Some(&body), 202).await;
    // Users may not reload.
    assert_eq!(
        ada.status("POST", "/api/v1/admin/policies/reload", None)
            .await,
        403
    );
    let reloaded: Value = app
        .post_json("/api/v1/admin/policies/reload", &json!(null), 200)
        .await;
    assert_eq!(reloaded["policies"], 3);
    let refused: Value = ada.json("POST", "/api/v1/vms", Some(&body), 403).await;
    assert_eq!(
        refused["detail"],
        "denied by policy \"closed\": requests are closed"
    );

    write_policies(
        dir.path(),
        "permit (principal, action, resource) when { nonsense };",
    );
    let bad: Value = app
        .post_json("/api/v1/admin/policies/reload", &json!(null), 422)
        .await;
    assert!(
        bad["detail"].as_str().unwrap().starts_with("policies: "),
        "{bad}"
    );
    // The old policies stay.
    let still: Value = ada.json("POST", "/api/v1/vms", Some(&body), 403).await;
    assert_eq!(still["detail"], refused["detail"]);
}

#[tokio::test]
async fn a_bad_policy_at_start_stops_the_daemon_with_the_error() {
    let dir = policy_dir(
        r#"@id("typo") permit (principal, action == Action::"create_vm", resource) when { resource.cores > 1 };"#,
    );
    let path = dir.path().to_owned();
    let error = try_spawn_app(Roles::ALL, move |c| c.policy_dir = Some(path))
        .await
        .err()
        .expect("the start is refused");
    let message = error.to_string();
    assert!(message.starts_with("policies: "), "{message}");
    assert!(message.contains("typo"), "{message}");

    // The binary says it and exits.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_provisioningd"))
        .arg("api")
        .env("PROVISIONING_POLICY_DIR", dir.path())
        .env("PROVISIONING_HTTP_ADDR", "127.0.0.1:0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("policies: ") && stderr.contains("typo"),
        "{stderr}"
    );

    let empty = tempfile::tempdir().unwrap();
    let path = empty.path().to_owned();
    let error = try_spawn_app(Roles::ALL, move |c| c.policy_dir = Some(path))
        .await
        .err()
        .expect("the start is refused");
    assert!(error.to_string().contains("schema.cedarschema"), "{error}");
}

#[tokio::test]
async fn grant_admin_and_the_admin_routes_for_users() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let ada = app.user("ada@example.org", Role::User).await;
    assert_eq!(ada.status("GET", "/api/v1/admin/users", None).await, 403);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_provisioningd"))
        .args(["users", "grant-admin", "Ada@Example.org"])
        .env("DATABASE_URL", crate::database::server_url(&app.db_name))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("ada@example.org is admin"));
    // The role is the database's, from the next request on.
    let users: Vec<Value> = ada.json("GET", "/api/v1/admin/users", None, 200).await;
    let emails: Vec<&str> = users.iter().map(|u| u["email"].as_str().unwrap()).collect();
    assert!(emails.contains(&"ada@example.org") && emails.contains(&"admin@localhost"));

    let bob = app.user("bob@example.org", Role::User).await;
    let path = format!("/api/v1/admin/users/{}", bob.id);
    // An admin may not make super admins, nor change themselves.
    let refused: Value = ada
        .json("PATCH", &path, Some(&json!({"role": "super_admin"})), 403)
        .await;
    assert!(refused["detail"].as_str().unwrap().contains("super admin"));
    let own = format!("/api/v1/admin/users/{}", ada.id);
    let _: Value = ada
        .json("PATCH", &own, Some(&json!({"status": "disabled"})), 422)
        .await;
    let _: Value = ada
        .json("PATCH", &path, Some(&json!({"role": "root"})), 422)
        .await;

    let disabled: Value = ada
        .json("PATCH", &path, Some(&json!({"status": "disabled"})), 200)
        .await;
    assert_eq!(disabled["status"], "disabled");
    assert_eq!(bob.status("GET", "/api/v1/me", None).await, 401);
    let _: Value = ada
        .json("PATCH", &path, Some(&json!({"status": "active"})), 200)
        .await;
    assert_eq!(bob.status("GET", "/api/v1/me", None).await, 200);
    // The admin token's holder is a super admin: it may.
    let promoted: Value = app
        .send_json("PATCH", &path, &json!({"role": "super_admin"}), 200)
        .await;
    assert_eq!(promoted["role"], "super_admin");
}
