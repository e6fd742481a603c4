//! The dispatcher: a limit on runners, jobs in order, one runner per job however often its
//! message comes, and runners that outlive a daemon restart.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use daemon::Roles;
use domain::provisioning::*;
use serde_json::json;
use store::{Actor, Metadata};

use crate::helpers::{runner_bin, terraform_wrapper, try_spawn_app, vm_request, vm_spec, TestApp};
use crate::wire::{Job, Vm};

/// The events of `event_type`, in commit order: (VM id, actor).
pub async fn events_of(app: &TestApp, event_type: &str) -> Vec<(String, Option<String>)> {
    store::sqlx::query_as(
        "SELECT aggregate_id, metadata::jsonb->>'actor' FROM events
         WHERE event_type = $1 ORDER BY position",
    )
    .bind(event_type)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

fn lines(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
async fn runners_past_the_limit_wait_in_the_queue_and_start_in_order() {
    let tf = tempfile::tempdir().unwrap();
    // Counts the Terraform processes running at once; each apply takes a second at least.
    let wrapper = terraform_wrapper(
        tf.path(),
        r#"touch "$DIR/active.$$"
ls "$DIR" | grep -c '^active\.' >> "$DIR/concurrency"
[ "$1" = apply ] && sleep 1
"$REAL" "$@"; rc=$?
rm -f "$DIR/active.$$"
exit $rc"#,
    );
    let app = try_spawn_app(Roles::ALL, |c| {
        c.max_runners = 2;
        c.terraform_bin = wrapper;
    })
    .await
    .unwrap();
    let mut ids = vec![];
    for n in 0..4 {
        ids.push(
            app.create_ok(json!({ "name": format!("queued-{n}") }))
                .await,
        );
    }
    // The last one waits for a slot: it shows queued, with no runner.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let last = app.vm(&ids[3]).await;
    assert_eq!(last.status, "requested", "{last:?}");
    let dispatched: Option<bool> = store::sqlx::query_scalar(
        "SELECT (state->'lifecycle'->'active_job'->>'dispatched')::bool FROM vm_views WHERE id = $1::uuid",
    )
    .bind(&ids[3])
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(dispatched, Some(false), "the job waits in the queue");

    for id in &ids {
        app.wait_for_status(id, "provisioned").await;
    }
    let most = lines(&tf.path().join("concurrency"))
        .iter()
        .map(|n| n.trim().parse::<usize>().unwrap())
        .max()
        .unwrap();
    assert!(most <= 2, "{most} Terraform runs at once, the limit is 2");
    let order: Vec<String> = events_of(&app, "JobDispatched")
        .await
        .into_iter()
        .map(|(vm, actor)| {
            assert_eq!(actor.as_deref(), Some("dispatcher"));
            vm
        })
        .collect();
    assert_eq!(order, ids, "jobs start in the order they were requested");
    app.assert_consumers_drained().await;
}

/// Polls VM `id` until the read model shows it and `done` says yes (10 s at most); the VM
/// then.
async fn vm_when(app: &TestApp, id: &str, done: impl Fn(&Vm) -> bool) -> Vm {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let response = app.get(&format!("/api/v1/vms/{id}")).send().await.unwrap();
        let vm: Option<Vm> = match response.status().as_u16() {
            404 => None, // not projected yet
            _ => Some(response.json().await.unwrap()),
        };
        if let Some(vm) = vm.filter(&done) {
            return vm;
        }
        assert!(tokio::time::Instant::now() < deadline, "VM {id} never did");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_vm_shows_its_job_queued_until_a_runner_is_free_then_running() {
    let tf = tempfile::tempdir().unwrap();
    let wrapper = terraform_wrapper(tf.path(), r#"[ "$1" = apply ] && sleep 2"#);
    let app = try_spawn_app(Roles::ALL, |c| {
        c.max_runners = 1;
        c.terraform_bin = wrapper;
    })
    .await
    .unwrap();
    let first: Vm = app
        .post_json("/api/v1/vms", &vm_request(json!({"name": "first"})), 202)
        .await;
    let queued = Job {
        id: 1,
        action: "create".into(),
        state: "queued".into(),
        cancel_requested: false,
    };
    assert_eq!(first.job.as_ref(), Some(&queued), "the create's answer");
    let second = app.create_ok(json!({"name": "second"})).await;

    let running = |vm: &Vm| vm.job.as_ref().is_some_and(|j| j.state == "running");
    vm_when(&app, &first.id, running).await;
    // The first apply takes 2 s; meanwhile the one runner is taken.
    let waiting = vm_when(&app, &second, |vm| vm.job.is_some()).await;
    assert_eq!(waiting.job, Some(queued), "{waiting:?}");
    assert_eq!(waiting.status, "requested");

    let first = vm_when(&app, &first.id, |vm| vm.status == "provisioned").await;
    assert_eq!(first.job, None, "a finished job is no longer shown");
    let second = vm_when(&app, &second, running).await;
    assert_eq!(second.job.as_ref().map(|j| j.id), Some(1));
    app.wait_for_status(&second.id, "provisioned").await;
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_job_delivered_twice_starts_one_runner_and_keeps_its_working_directory() {
    let tf = tempfile::tempdir().unwrap();
    let wrapper = terraform_wrapper(
        tf.path(),
        r#"[ "$1" = init ] && { echo "$PWD" >> "$DIR/inits"; sleep 3; }"#,
    );
    let app = try_spawn_app(
        Roles {
            dispatcher: true,
            ..Roles::NONE
        },
        |c| c.terraform_bin = wrapper,
    )
    .await
    .unwrap();
    let vm = VmId::new();
    let meta = Metadata::new(Actor::Admin, "twice");
    let spec = vm_spec("twice");
    store::execute::<Provisioning>(
        &app.pool,
        vm,
        ProvisioningCommand::Request {
            spec: spec.clone(),
            at: time::OffsetDateTime::now_utc(),
        },
        &meta,
    )
    .await
    .unwrap();
    let job = bus::JobMessage {
        vm_id: vm,
        job_id: JobId::FIRST,
        action: JobAction::Create,
        spec,
    };
    let mut publisher = bus::Publisher::new(app.bus.jetstream.clone(), 2);
    for copy in ["first", "second"] {
        let subject = app.bus.subjects.job(&job.spec.provider);
        let id = format!("{}:{copy}", job.message_id(2));
        publisher.publish_json(subject, &id, &job).await.unwrap();
        publisher.flush().await.unwrap();
    }
    let inits = tf.path().join("inits");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while lines(&inits).is_empty() {
        assert!(tokio::time::Instant::now() < deadline, "no runner started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Both messages handled, while the first runner is still in its `init`.
    let mut consumer = bus::consumer(&app.bus, "JOBS", "dispatcher").await.unwrap();
    loop {
        let info = consumer.info().await.unwrap();
        if info.num_pending == 0 && info.num_ack_pending == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the second message was not handled"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let started = lines(&inits);
    assert_eq!(started.len(), 1, "one runner: {started:?}");
    let workdir = std::path::Path::new(&started[0]);
    assert!(
        workdir.join("main.tf").is_file(),
        "the running job's directory is intact"
    );
    assert_eq!(events_of(&app, "JobDispatched").await.len(), 1);
}

#[tokio::test]
async fn a_daemon_restarted_while_its_runner_works_ends_the_job_applied() {
    let tf = tempfile::tempdir().unwrap();
    let wrapper = terraform_wrapper(tf.path(), r#"[ "$1" = apply ] && sleep 4"#);
    // The runner notes its pid and process group, then is the real runner.
    let runner = tf.path().join("runner.sh");
    std::fs::write(
        &runner,
        format!(
            "#!/bin/sh\necho $$ $(cut -d' ' -f5 /proc/$$/stat) > '{}'\nexec '{}'\n",
            tf.path().join("group").display(),
            runner_bin().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut app = try_spawn_app(Roles::ALL, |c| {
        c.terraform_bin = wrapper;
        c.runner_bin = runner;
    })
    .await
    .unwrap();
    let id = app.create_ok(json!({})).await;
    app.wait_for_status(&id, "provisioning").await;
    app.stop().await;

    let group = std::fs::read_to_string(tf.path().join("group")).unwrap();
    let (pid, pgid) = group.trim().split_once(' ').unwrap();
    assert_eq!(pid, pgid, "the runner leads a process group of its own");

    let replica = app.spawn_replica().await;
    // A runner report in flight to the stopped daemon's ingester (pulled, not yet received)
    // comes back only after the consumer's ack wait (60 s, nats/jetstream.toml).
    let limit = Duration::from_secs(150);
    let vm = replica
        .wait_for_status_within(&id, "provisioned", limit)
        .await;
    assert_eq!(vm.last_error, None);
    let failed = events_of(&replica, "Failed").await;
    assert!(failed.is_empty(), "{failed:?}");
}
