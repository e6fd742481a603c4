//! A VM's past in the console over plain HTTP: the VM as it was at a position or a time
//! (a banner, no forms that act; a point that is neither a 400 page), its history linking
//! to each point, and each job's page with all of its Terraform output. Real Terraform on
//! `local` for the output and the destroy.

use domain::identity::Role;
use serde_json::Value;

use crate::console::{app, assert_is_a_page, page, sign_in, vm_of};
use crate::helpers::{spawn_app, TestApp};

/// The positions of the VM's events, Terraform's lines left out, with their types.
async fn history(app: &TestApp, vm: &str) -> Vec<(i64, String)> {
    let page: Value = app
        .get_json(&format!("/api/v1/audit?vm={vm}&exclude_logs=true"))
        .await;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let position = e["position"].as_i64().unwrap();
            (position, e["type"].as_str().unwrap().to_owned())
        })
        .collect()
}

/// The text of the element with `id` (its first text, tags left out).
fn text_of(body: &str, id: &str) -> String {
    let at = body.find(&format!("id=\"{id}\"")).expect(id);
    let start = at + body[at..].find('>').unwrap() + 1;
    let inner = &body[start..start + body[start..].find("</").unwrap()];
    inner.rsplit('>').next().unwrap().trim().to_owned()
}

#[tokio::test]
async fn a_destroyed_vm_is_shown_as_it_was_before_its_destroy_and_each_job_with_all_its_output() {
    let app = spawn_app().await;
    let vm = app.create_ok(serde_json::json!({"name": "past-vm"})).await;
    app.wait_for_status(&vm, "provisioned").await;
    let _: Value = app.delete_json(&format!("/api/v1/vms/{vm}"), 202).await;
    app.wait_for_status(&vm, "destroyed").await;
    let admin = sign_in(&app, &app.token).await;

    let events = history(&app, &vm).await;
    let destroy = events
        .iter()
        .position(|(_, kind)| kind == "DestroyRequested")
        .expect("a destroy request");
    let before = events[destroy - 1].0;

    // The VM's page links each event of its history to the VM as it was there.
    let (status, now) = page(&app, &admin, &format!("/console/vms/{vm}")).await;
    assert_eq!(status, 200);
    assert_eq!(text_of(&now, "status"), "destroyed");
    for (position, _) in &events {
        assert!(
            now.contains(&format!("href=\"/console/vms/{vm}?at={position}\"")),
            "{position}: {now}"
        );
    }

    let (status, then) = page(&app, &admin, &format!("/console/vms/{vm}?at={before}")).await;
    assert_eq!(status, 200, "{then}");
    assert_is_a_page(&then);
    assert_eq!(text_of(&then, "status"), "provisioned");
    assert!(then.contains("id=\"past\"") && then.contains(&format!("position {before}")));
    assert!(
        then.contains(&format!("href=\"/console/vms/{vm}\" id=\"now\"")),
        "{then}"
    );
    // A past state: nothing to act on.
    for action in ["/extend", "/destroy", "/retry", "/cancel"] {
        assert!(!then.contains(action), "{action}: {then}");
    }
    // Its history stops there.
    assert!(!then.contains("DestroyRequested"), "{then}");

    // A time: the VM as it is now, and before it was requested.
    let (_, later) = page(
        &app,
        &admin,
        &format!("/console/vms/{vm}?at=2999-01-01T00:00:00Z"),
    )
    .await;
    assert_eq!(text_of(&later, "status"), "destroyed");
    let (status, body) = page(
        &app,
        &admin,
        &format!("/console/vms/{vm}?at=2000-01-01T00:00:00Z"),
    )
    .await;
    assert_eq!(status, 404);
    assert!(body.contains("had not been requested yet"), "{body}");

    // Each job has a page with all of its lines; the VM's page links to them.
    for job in [1, 2] {
        assert!(now.contains(&format!("href=\"/console/vms/{vm}/jobs/{job}\"")));
        let (status, body) = page(&app, &admin, &format!("/console/vms/{vm}/jobs/{job}")).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(text_of(&body, "job-state"), "succeeded");
        let logs: Vec<Value> = app
            .get_json(&format!("/api/v1/vms/{vm}/jobs/{job}/logs"))
            .await;
        assert!(!logs.is_empty());
        let lines = body
            .matches(&format!("data-job=\"{job}\" data-line="))
            .count();
        assert_eq!(lines, logs.len(), "job {job}");
        assert!(body.contains("class=\"log-info"), "{body}");
        assert!(
            !body.contains("data-open"),
            "a finished job is not followed: {body}"
        );
    }
}

#[tokio::test]
async fn a_point_that_is_not_one_is_a_400_page_and_another_users_past_a_404() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let mine = vm_of(&alice, "alice-vm").await;
    let cookie = sign_in(&app, &alice.token).await;
    let first = history(&app, &mine).await[0].0;

    let (status, body) = page(&app, &cookie, &format!("/console/vms/{mine}?at={first}")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(text_of(&body, "status"), "requested");
    assert!(body.contains("id=\"at-form\""), "{body}");

    for wrong in [
        "yesterday",
        "-1",
        "",
        "2026-12-07",
        "9999-12-31T23:59:59-00:01",
    ] {
        let (status, body) = page(&app, &cookie, &format!("/console/vms/{mine}?at={wrong}")).await;
        assert_eq!(status, 400, "{wrong:?}: {body}");
        assert_is_a_page(&body);
        assert!(body.contains("Not a point in time"), "{wrong:?}: {body}");
    }

    // Bob sees neither alice's VM then nor its jobs.
    let theirs = sign_in(&app, &bob.token).await;
    for path in [
        format!("/console/vms/{mine}?at={first}"),
        format!("/console/vms/{mine}?at=yesterday"),
        format!("/console/vms/{mine}/jobs/1"),
    ] {
        let (status, body) = page(&app, &theirs, &path).await;
        assert_eq!(status, 404, "{path}");
        assert!(!body.contains("alice-vm"), "{path}: {body}");
    }

    // A queued job's page, followed by the script; a job it does not have is a 404.
    let (status, body) = page(&app, &cookie, &format!("/console/vms/{mine}/jobs/1")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(text_of(&body, "job-state"), "queued");
    assert!(body.contains("data-open=\"true\""), "{body}");
    for job in ["2", "x", "99999999999"] {
        let (status, _) = page(&app, &cookie, &format!("/console/vms/{mine}/jobs/{job}")).await;
        assert_eq!(status, 404, "{job}");
    }
}

#[tokio::test]
async fn a_long_history_links_to_a_page_with_every_event() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let vm = vm_of(&alice, "long-vm").await;
    for _ in 0..55 {
        let _: Value = alice
            .json(
                "POST",
                &format!("/api/v1/vms/{vm}/extend"),
                Some(&serde_json::json!({"hours": 1})),
                202,
            )
            .await;
    }
    let events = history(&app, &vm).await;
    assert!(events.len() > 55, "{events:?}");
    let cookie = sign_in(&app, &alice.token).await;

    let (_, body) = page(&app, &cookie, &format!("/console/vms/{vm}")).await;
    assert!(body.contains("id=\"whole-history\""), "{body}");
    assert_eq!(body.matches("<tr data-position=").count(), 50);

    let (status, body) = page(&app, &cookie, &format!("/console/vms/{vm}/history")).await;
    assert_eq!(status, 200);
    assert_is_a_page(&body);
    assert!(!body.contains("id=\"whole-history\""), "{body}");
    for (position, _) in &events {
        assert!(
            body.contains(&format!("<tr data-position=\"{position}\">")),
            "event at {position} missing"
        );
    }
    assert_eq!(body.matches("<tr data-position=").count(), events.len());

    let bobs = sign_in(&app, &bob.token).await;
    let (status, body) = page(&app, &bobs, &format!("/console/vms/{vm}/history")).await;
    assert_eq!(status, 404);
    assert!(!body.contains("long-vm"));
}
