//! A VM's owner cancels the jobs they asked for, but not a destroy another asked for (an
//! admin, the expiry sweep, the watchdog): that stands unless an admin cancels it.

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp};
use crate::users::Caller;

async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

/// Waits until the VM's jobs show job 2 (the read model follows the commit).
async fn wait_for_destroy_job(caller: &Caller, vm: &str) -> Value {
    for _ in 0..100 {
        let jobs: Vec<Value> = caller
            .json("GET", &format!("/api/v1/vms/{vm}/jobs"), None, 200)
            .await;
        if let Some(job) = jobs.into_iter().find(|j| j["id"] == 2) {
            return job;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("no destroy job");
}

async fn event_count(app: &TestApp, vm: &str) -> i64 {
    store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_id = $1")
        .bind(vm)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn an_owner_cannot_cancel_a_destroy_an_admin_asked_for_but_their_own() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let admin = app.user("admin@example.org", Role::Admin).await;
    let mut vms = vec![];
    for name in ["theirs", "hers"] {
        let body = vm_request(json!({"name": name}));
        let vm: Value = ada.json("POST", "/api/v1/vms", Some(&body), 202).await;
        vms.push(vm["id"].as_str().unwrap().to_owned());
    }
    let (theirs, hers) = (&vms[0], &vms[1]);
    assert_eq!(
        admin
            .status("DELETE", &format!("/api/v1/vms/{theirs}"), None)
            .await,
        202
    );
    assert_eq!(
        ada.status("DELETE", &format!("/api/v1/vms/{hers}"), None)
            .await,
        202
    );
    let job = wait_for_destroy_job(&ada, theirs).await;
    assert_eq!(job["action"], "destroy", "{job}");
    wait_for_destroy_job(&ada, hers).await;

    let before = event_count(&app, theirs).await;
    for action in ["cancel", "force-cancel"] {
        let path = format!("/api/v1/vms/{theirs}/jobs/2/{action}");
        let refused: Value = ada.json("POST", &path, None, 403).await;
        assert_eq!(refused["code"], "forbidden", "{refused}");
        let detail = refused["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("user:{}", admin.id)), "{detail}");
    }
    assert_eq!(event_count(&app, theirs).await, before, "nothing recorded");

    // Her own destroy she may cancel; an admin may cancel any.
    let own = ada
        .status("POST", &format!("/api/v1/vms/{hers}/jobs/2/cancel"), None)
        .await;
    assert_eq!(own, 202);
    let by_admin = admin
        .status("POST", &format!("/api/v1/vms/{theirs}/jobs/2/cancel"), None)
        .await;
    assert_eq!(by_admin, 202);
}
