//! SIGHUP on the `provisioningd` process reloads its policies: the answer to the same
//! request changes while the daemon runs on; a bad policy file keeps the policies in force.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::daemon::{Daemon, Setup, SSH_KEY};

const SCHEMA: &str = include_str!("../../../../deploy/policies/schema.cedarschema");
const DEFAULTS: &str = include_str!("../../../../deploy/policies/default.cedar");
const CLOSED: &str = r#"
@id("closed") @reason("requests are closed for maintenance")
forbid (principal, action == Action::"create_vm", resource);
"#;

async fn create_status(daemon: &Daemon, name: &str) -> (u16, Value) {
    let body = json!({
        "name": name, "provider": "local", "template": "small",
        "ssh_public_key": SSH_KEY, "allow_ssh_from": ["192.0.2.0/24"], "duration_hours": 1,
    });
    let response = daemon
        .request(reqwest::Method::POST, "/api/v1/vms")
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Sends SIGHUP until a create answers `status` (the signal is handled asynchronously).
async fn hang_up_until(daemon: &Daemon, status: u16) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut n = 0;
    loop {
        daemon.hangup();
        tokio::time::sleep(Duration::from_millis(200)).await;
        n += 1;
        let (got, body) = create_status(daemon, &format!("probe-{n}")).await;
        if got == status {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "still {got} after SIGHUP: {body}"
        );
    }
}

#[tokio::test]
async fn sighup_reloads_the_policies_and_a_bad_file_keeps_the_old_ones() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("schema.cedarschema"), SCHEMA).unwrap();
    std::fs::write(dir.path().join("default.cedar"), DEFAULTS).unwrap();
    let daemon =
        Daemon::start(Setup::default().env("PROVISIONING_POLICY_DIR", dir.path().display())).await;
    assert_eq!(create_status(&daemon, "before").await.0, 202);

    std::fs::write(dir.path().join("closed.cedar"), CLOSED).unwrap();
    let refused = hang_up_until(&daemon, 403).await;
    assert_eq!(
        refused["detail"],
        "denied by policy \"closed\": requests are closed for maintenance"
    );

    // A broken file: the reload fails, the daemon runs on with the policies it had.
    std::fs::write(dir.path().join("broken.cedar"), "permit (").unwrap();
    daemon.hangup();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(create_status(&daemon, "still-closed").await.0, 403);
    assert!(daemon
        .log_tail()
        .contains("policies not reloaded on SIGHUP"));

    std::fs::remove_file(dir.path().join("broken.cedar")).unwrap();
    std::fs::remove_file(dir.path().join("closed.cedar")).unwrap();
    hang_up_until(&daemon, 202).await;
}
