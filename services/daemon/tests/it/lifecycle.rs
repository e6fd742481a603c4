use serde_json::{json, Value};

use crate::helpers::{spawn_app, vm_request};
use crate::wire::{kinds as types, LogLine, Problem, Vm, VmPage};

#[tokio::test]
async fn a_vm_on_local_is_provisioned_with_the_ip_terraform_computed() {
    let app = spawn_app().await;
    let requested: Vm = app
        .post_json("/api/v1/vms", &vm_request(json!({})), 202)
        .await;
    let id = requested.id.clone();

    let vm = app.wait_for_status(&id, "provisioned").await;
    assert_eq!(
        vm.created_at, requested.created_at,
        "created when requested"
    );

    let state = app.terraform_state(&id).await;
    let ip = state["outputs"]["vm_ip"]["value"].as_str().unwrap();
    assert_eq!(vm.ip.as_deref(), Some(ip));
    assert!(ip.starts_with("10.77."), "{ip}");
    assert_eq!(vm.last_error, None);

    let events = app.events(&id).await;
    let types = types(&events);
    assert_eq!(
        types[..4],
        ["Requested", "JobQueued", "JobDispatched", "JobStarted"]
    );
    assert_eq!(types.last(), Some(&"Applied"));
    assert!(types.contains(&"LogLine"));
    let sequences: Vec<u64> = events.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (1..=events.len() as u64).collect::<Vec<_>>());
    assert_eq!(events[0].actor.as_deref(), Some("admin"));
    assert_eq!(events.last().unwrap().data["vm_ip"], ip);

    let logs: Vec<LogLine> = app.get_json(&format!("/api/v1/vms/{id}/logs")).await;
    let messages: Vec<&str> = logs.iter().map(|l| l.message.as_str()).collect();
    assert!(
        messages.iter().any(|m| m.starts_with("Apply complete!")),
        "{messages:?}"
    );
    assert!(messages.contains(&"Terraform has been successfully initialized!"));
    assert!(logs.iter().any(|l| l.kind == "change_summary"));
    let lines: Vec<i64> = logs.iter().map(|l| l.line).collect();
    assert_eq!(lines, (1..=logs.len() as i64).collect::<Vec<_>>());
    let log_events = events.iter().filter(|e| e.kind == "LogLine").count();
    assert_eq!(log_events, logs.len(), "every log line is an event too");
    let page: Vec<LogLine> = app
        .get_json(&format!(
            "/api/v1/vms/{id}/logs?after_job=1&after_line=3&limit=2"
        ))
        .await;
    let lines: Vec<i64> = page.iter().map(|l| l.line).collect();
    assert_eq!(lines, [4, 5], "a page of lines after a given one");

    let list: Vec<Vm> = app.get_json::<VmPage>("/api/v1/vms").await.items;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, id);
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_destroyed_vm_leaves_its_terraform_workspace_empty() {
    let app = spawn_app().await;
    let id = app.create_ok(json!({})).await;
    app.wait_for_status(&id, "provisioned").await;
    assert_ne!(app.terraform_state(&id).await["outputs"], json!({}));

    let vm: Vm = app.delete_json(&format!("/api/v1/vms/{id}"), 202).await;
    assert_eq!(vm.status, "destroy_requested");

    let vm = app.wait_for_status(&id, "destroyed").await;
    assert_eq!(vm.ip, None);
    let state = app.terraform_state(&id).await;
    assert_eq!(state["outputs"], json!({}));
    assert_eq!(state["resources"], json!([]));
    let _: Problem = app.delete_json(&format!("/api/v1/vms/{id}"), 409).await;
    let events = app.events(&id).await;
    assert_eq!(types(&events).last(), Some(&"Destroyed"));
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_failing_terraform_run_ends_failed_with_terraforms_diagnostic() {
    let app = spawn_app().await;
    let id = app.create_ok(json!({"template": "broken"})).await;

    let vm = app.wait_for_status(&id, "failed").await;

    let error = vm.last_error.unwrap();
    assert!(error.starts_with("Invalid value for variable"), "{error}");
    assert!(error.contains("local.small"), "{error}");
    let events = app.events(&id).await;
    let failed = events.last().unwrap();
    assert_eq!(failed.kind, "Failed");
    assert_eq!(failed.data["diagnostics"][0]["severity"], "error");
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_destroy_asked_for_during_the_apply_runs_after_it_not_beside_it() {
    let app = spawn_app().await;
    let id = app.create_ok(json!({})).await;
    let _: Vm = app.delete_json(&format!("/api/v1/vms/{id}"), 202).await;

    app.wait_for_status(&id, "destroyed").await;

    let events = app.events(&id).await;
    let jobs: Vec<(String, Value)> = events
        .iter()
        .filter(|e| {
            ["JobQueued", "JobStarted", "Applied", "Failed", "Destroyed"].contains(&e.kind.as_str())
        })
        .map(|e| (e.kind.clone(), e.data["job_id"].clone()))
        .collect();
    let expected: Vec<(String, Value)> = [
        ("JobQueued", 1),
        ("JobStarted", 1),
        ("Applied", 1),
        ("JobQueued", 2),
        ("JobStarted", 2),
        ("Destroyed", 2),
    ]
    .into_iter()
    .map(|(t, j)| (t.to_owned(), json!(j)))
    .collect();
    assert_eq!(jobs, expected);
    assert!(types(&events).contains(&"DestroyRequested"));
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_runner_that_dies_without_reporting_fails_its_job() {
    let app = crate::helpers::try_spawn_app(daemon::Roles::ALL, |c| {
        c.runner_bin = "/bin/false".into();
    })
    .await
    .unwrap();
    let id = app.create_ok(json!({})).await;

    let vm = app.wait_for_status(&id, "failed").await;

    let error = vm.last_error.unwrap();
    assert!(error.contains("before reporting a result"), "{error}");
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_job_whose_runner_falls_silent_is_failed_and_its_vm_can_be_destroyed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let hanging = dir.path().join("hanging-runner");
    std::fs::write(&hanging, "#!/bin/sh\nexec sleep 20\n").unwrap();
    std::fs::set_permissions(&hanging, std::fs::Permissions::from_mode(0o755)).unwrap();
    let app = crate::helpers::try_spawn_app(daemon::Roles::ALL, |c| {
        c.runner_bin = hanging.clone();
        c.job_silence = std::time::Duration::from_secs(1);
    })
    .await
    .unwrap();
    let id = app.create_ok(json!({})).await;

    let vm = app.wait_for_status(&id, "failed").await;

    let error = vm.last_error.unwrap();
    assert!(error.contains("presumed lost"), "{error}");
    let events = app.events(&id).await;
    assert_eq!(events.last().unwrap().actor.as_deref(), Some("watchdog"));
    // 202: the VM is not stuck behind its lost job.
    let _: Vm = app.delete_json(&format!("/api/v1/vms/{id}"), 202).await;
}
