//! A VM's whole life through the NAIC face, with real Terraform on `local`: the statuses
//! as NAIC names them, the address and remaining time once running, then delete and
//! archive. The boot callbacks are called by hand, as cloud-init would.

use std::time::Duration;

use domain::identity::Role;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::helpers::{try_spawn_app, TestApp};
use crate::naic_contract::assert_vm;
use crate::users::Caller;

/// The boot callbacks (`boot_started`, `phone_home`) in the cloud-init of the VM's job 1.
fn boot_urls(app: &TestApp, vm: &str) -> (String, String) {
    let vars = app.work.path().join(vm).join("job-1/terraform.tfvars.json");
    let vars: Value = serde_json::from_slice(&std::fs::read(vars).unwrap()).unwrap();
    let cloud_init = vars["user_data"].as_str().unwrap();
    let after = |marker: &str| {
        let start = cloud_init.find(marker).unwrap() + marker.len();
        let rest = &cloud_init[start..];
        rest[..rest.find('"').unwrap()].to_owned()
    };
    (
        after("status=boot_started\" \""),
        after("phone_home:\n  url: \""),
    )
}

async fn call(url: &str) {
    let status = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("instance_id=i-1&hostname=naic-life&fqdn=naic-life.example.org")
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 204);
}

/// The VM as NAIC's detail page reads it, once it shows `status` (60 s at most).
async fn wait_for(caller: &Caller, id: &str, status: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let vm: Value = caller
            .json("GET", &format!("/api/vm/{id}"), None, 200)
            .await;
        if vm["status"] == status {
            assert_vm(&vm);
            return vm;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never {status}: {vm}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_vm_lives_its_whole_life_through_the_naic_face() {
    let app = try_spawn_app(daemon::Roles::ALL, |_| {})
        .await
        .expect("the app starts");
    let ada = app.user("ada@example.org", Role::User).await;
    let key: Value = ada
        .json(
            "POST",
            "/api/vm/ssh/create",
            Some(&json!({"keyName": "life"})),
            200,
        )
        .await;
    let request = json!({
        "vmName": "naic-life",
        "sshKeyId": key["keyId"],
        "vmTemplateId": "local:small",
        "duration": 3,
        "ipRanges": ["129.240.0.0/16"],
    });
    let id: Value = ada
        .json("POST", "/api/vm/create", Some(&request), 200)
        .await;
    let id = id.as_str().unwrap();

    let provisioned = wait_for(&ada, id, "PROVISIONING_COMPLETED").await;
    assert!(provisioned["ipv4Address"].is_string(), "{provisioned}");
    let (boot_started, phone_home) = boot_urls(&app, id);
    call(&boot_started).await;
    wait_for(&ada, id, "INITIALIZING").await;
    call(&phone_home).await;
    let running = wait_for(&ada, id, "RUNNING").await;
    let ours: Value = ada
        .json("GET", &format!("/api/v1/vms/{id}"), None, 200)
        .await;
    let parse = |t: &Value| OffsetDateTime::parse(t.as_str().unwrap(), &Rfc3339).unwrap();
    assert_eq!(
        parse(&running["startedAt"]) + time::Duration::hours(3),
        parse(&ours["expires_at"])
    );

    let done: Value = ada
        .json("DELETE", &format!("/api/vm/destroy/{id}"), None, 200)
        .await;
    assert_eq!(done, json!({"status": "success"}));
    wait_for(&ada, id, "DESTROYED").await;
    let done: Value = ada
        .json("PUT", &format!("/api/vm/archive/{id}"), None, 200)
        .await;
    assert_eq!(done, json!({"status": "success"}));
    let list: Value = ada.json("GET", "/api/vm", None, 200).await;
    assert_eq!(list[0]["vmId"], id);
    assert_eq!(list[0]["metadata"]["archived"], true);
    assert_eq!(list[0]["status"], "DESTROYED");
}
