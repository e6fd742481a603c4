//! Poison and size: an event that cannot be published or decoded is parked and the
//! followers go on; a runner message Postgres refuses never stalls the ingester; a
//! transaction open in another database never holds the feed back.

use std::time::Duration;

use bus::{Publisher, RunnerMessage, RunnerReport};
use daemon::Roles;
use domain::provisioning::*;
use serde_json::{json, Value};
use store::{Actor, Metadata};

use crate::database::server_url;
use crate::helpers::{spawn_app_with, vm_spec, TestApp};

fn followers_and_api() -> Roles {
    Roles {
        api: true,
        relay: true,
        projector: true,
        ..Roles::NONE
    }
}

fn meta() -> Metadata {
    Metadata::new(Actor::Admin, "poison-test")
}

async fn request(app: &TestApp, name: &str) -> VmId {
    let vm = VmId::new();
    let command = ProvisioningCommand::Request {
        at: time::OffsetDateTime::now_utc(),
        spec: vm_spec(name),
    };
    store::execute::<Provisioning>(&app.pool, vm, command, &meta())
        .await
        .unwrap();
    vm
}

/// Waits until both followers passed every event of `vm`.
async fn followers_passed(app: &TestApp, vm: VmId) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let behind: i64 = store::sqlx::query_scalar(
            "SELECT count(*) FROM events e, event_checkpoints c
             WHERE e.aggregate_id = $1 AND c.name IN ('relay', 'projector')
               AND (e.txid, e.position) > (c.txid, c.position)",
        )
        .bind(vm.to_string())
        .fetch_one(&app.pool)
        .await
        .unwrap();
        let followers: i64 = store::sqlx::query_scalar(
            "SELECT count(*) FROM event_checkpoints WHERE name IN ('relay', 'projector')",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if behind == 0 && followers == 2 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the followers did not pass {vm}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Inserts an event row by hand, as a faulty writer or an older version might have.
async fn insert_raw(app: &TestApp, vm: VmId, sequence: i64, event_type: &str, payload: &Value) {
    store::sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version,
                             payload, metadata)
         VALUES ('Provisioning', $1, $2, $3, '1.0', $4::text::json, '{}')",
    )
    .bind(vm.to_string())
    .bind(sequence)
    .bind(event_type)
    .bind(payload.to_string())
    .execute(&app.pool)
    .await
    .unwrap();
}

async fn dead_letters(app: &TestApp) -> Vec<Value> {
    app.get_json("/api/v1/admin/dead-letters?all=true").await
}

#[tokio::test]
async fn an_undecodable_event_is_parked_the_followers_go_on_and_a_replay_after_the_fix_folds_it() {
    let app = spawn_app_with(followers_and_api()).await;
    let bad = VmId::new();
    insert_raw(
        &app,
        bad,
        1,
        "Requested",
        &json!({"type": "NoSuchEvent", "data": {}}),
    )
    .await;
    let good = request(&app, "after-poison").await;
    followers_passed(&app, good).await;

    let letters = dead_letters(&app).await;
    let mut followers: Vec<&str> = letters
        .iter()
        .map(|l| l["follower"].as_str().unwrap())
        .collect();
    followers.sort();
    assert_eq!(followers, ["projector", "relay"], "{letters:?}");
    assert!(letters.iter().all(|l| l["aggregate_id"] == bad.to_string()));
    assert_eq!(app.vm(&good.to_string()).await.name, "after-poison");

    // The cause is fixed (here, by hand); a replay folds and publishes the event.
    let fixed = serde_json::to_value(ProvisioningEvent::Requested {
        spec: vm_spec("fixed"),
        expires_at: None,
    })
    .unwrap();
    store::sqlx::query("UPDATE events SET payload = $1::text::json WHERE aggregate_id = $2")
        .bind(fixed.to_string())
        .bind(bad.to_string())
        .execute(&app.pool)
        .await
        .unwrap();
    for letter in &letters {
        let id = letter["id"].as_i64().unwrap();
        let replayed: Value = app
            .post_json(
                &format!("/api/v1/admin/dead-letters/{id}/replay"),
                &json!({}),
                202,
            )
            .await;
        assert_eq!(replayed["id"], id);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while dead_letters(&app)
        .await
        .iter()
        .any(|l| l["resolved_at"].is_null())
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "replays not resolved"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.vm(&bad.to_string()).await.name, "fixed");
    let published = app.stream_messages().await;
    assert!(published.iter().any(|m| m.aggregate_id == bad.to_string()));
    // A resolved one is not replayed again.
    let id = letters[0]["id"].as_i64().unwrap();
    let gone = app
        .post(&format!("/api/v1/admin/dead-letters/{id}/replay"))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
}

#[tokio::test]
async fn an_event_larger_than_a_nats_message_is_parked_and_later_events_are_published() {
    let app = spawn_app_with(followers_and_api()).await;
    let huge = VmId::new();
    let event = ProvisioningEvent::Failed {
        job_id: JobId::FIRST,
        action: JobAction::Create,
        reason: "x".repeat(1_200_000),
        diagnostics: vec![],
        exit_code: Some(1),
        forced: false,
    };
    // The VM's `Requested` first: the relay publishes a VM's events under its provider.
    let requested = ProvisioningEvent::Requested {
        spec: vm_spec("huge"),
        expires_at: None,
    };
    let requested = serde_json::to_value(requested).unwrap();
    insert_raw(&app, huge, 1, "Requested", &requested).await;
    insert_raw(
        &app,
        huge,
        2,
        "Failed",
        &serde_json::to_value(event).unwrap(),
    )
    .await;
    let good = request(&app, "after-huge").await;
    followers_passed(&app, good).await;

    let published = app.stream_messages().await;
    assert!(published.iter().any(|m| m.aggregate_id == good.to_string()));
    let of_huge: Vec<&str> = published
        .iter()
        .filter(|m| m.aggregate_id == huge.to_string())
        .map(|m| m.event_type.as_str())
        .collect();
    assert_eq!(of_huge, ["Requested"], "the huge event is not published");
    let letters = dead_letters(&app).await;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0]["follower"], "relay");
    assert!(letters[0]["error"]
        .as_str()
        .unwrap()
        .contains("NATS message"));
}

#[tokio::test]
async fn a_huge_diagnostic_is_cut_and_another_vms_job_is_still_queued_for_dispatch() {
    let app = spawn_app_with(followers_and_api()).await;
    let first = request(&app, "huge-result").await;
    let start = ProvisioningCommand::StartJob {
        job_id: JobId::FIRST,
        runner: "test".into(),
    };
    store::execute::<Provisioning>(&app.pool, first, start, &meta())
        .await
        .unwrap();
    let finish = ProvisioningCommand::FinishJob {
        job_id: JobId::FIRST,
        outcome: JobOutcome {
            exit_code: 1,
            outputs: Default::default(),
            diagnostics: vec![Diagnostic {
                severity: Severity::Error,
                summary: "boom".into(),
                detail: "d".repeat(700_000),
            }],
            lines: 0,
            drift: vec![],
        },
    };
    store::execute::<Provisioning>(&app.pool, first, finish, &meta())
        .await
        .unwrap();
    let second = request(&app, "next-one").await;
    followers_passed(&app, second).await;

    // The second VM's job is in the JOBS stream for a dispatcher, and nothing was parked.
    let jobs = app
        .bus
        .jetstream
        .get_stream(app.bus.subjects.stream("JOBS"))
        .await
        .unwrap()
        .info()
        .await
        .unwrap()
        .state
        .messages;
    assert_eq!(jobs, 2);
    assert!(dead_letters(&app).await.is_empty());
    let failed = app.vm(&first.to_string()).await;
    assert!(failed.last_error.unwrap().len() < 10_000);
}

async fn send(app: &TestApp, vm: VmId, report: RunnerReport, publisher: &mut Publisher) {
    let message = RunnerMessage {
        vm_id: vm,
        job_id: JobId::FIRST,
        report,
    };
    let key = app.job_key(vm, JobId::FIRST).await;
    publisher
        .publish_runner(&app.bus.subjects, &key, &message)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_nul_in_a_line_is_stored_escaped_and_never_holds_up_another_vm() {
    let app = spawn_app_with(Roles {
        ingester: true,
        ..Roles::NONE
    })
    .await;
    let first = request(&app, "nul-line").await;
    let second = request(&app, "other-vm").await;
    let mut publisher = Publisher::new(app.bus.jetstream.clone(), 256);
    let started = || RunnerReport::Started {
        runner: "test".into(),
    };
    send(&app, first, started(), &mut publisher).await;
    for line in 1..=2100u32 {
        let message = match line {
            1 => "a\u{0}b".to_owned(),
            n => format!("line {n}"),
        };
        let log = RunnerReport::Log {
            line,
            level: "info".into(),
            kind: "log".into(),
            message,
        };
        send(&app, first, log, &mut publisher).await;
    }
    let result = RunnerReport::Result {
        exit_code: 1,
        outputs: Default::default(),
        diagnostics: vec![],
        lines: 2100,
        drift: vec![],
    };
    send(&app, first, result, &mut publisher).await;
    send(&app, second, started(), &mut publisher).await;
    publisher.flush().await.unwrap();

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (state, _) = store::load::<Provisioning>(&app.pool, &first.to_string())
            .await
            .unwrap();
        let (other, _) = store::load::<Provisioning>(&app.pool, &second.to_string())
            .await
            .unwrap();
        let second_started = other.lifecycle().active_job.is_some_and(|j| j.started);
        if state.lifecycle().active_job.is_none() && second_started {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "ingestion stalled");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let message: String = store::sqlx::query_scalar(
        "SELECT payload->'data'->>'message' FROM events
         WHERE aggregate_id = $1 AND event_type = 'LogLine' ORDER BY sequence LIMIT 1",
    )
    .bind(first.to_string())
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(message, "a\\0b");
}

#[tokio::test]
async fn a_transaction_open_in_another_database_does_not_hold_back_the_feed() {
    let app = spawn_app_with(followers_and_api()).await;
    let other = format!("provtest_other_{}", uuid::Uuid::new_v4().simple());
    let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
    store::sqlx::query(&format!("CREATE DATABASE {other}"))
        .execute(&admin)
        .await
        .unwrap();
    let held = store::connect(&server_url(&other), 1).await.unwrap();
    let mut tx = held.begin().await.unwrap();
    store::sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *tx)
        .await
        .unwrap();

    let response = app
        .post("/api/v1/vms")
        .json(&crate::helpers::vm_request(json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 202);
    let vm: Value = response.json().await.unwrap();
    let vm: VmId = vm["id"].as_str().unwrap().parse().unwrap();
    followers_passed(&app, vm).await;

    tx.rollback().await.unwrap();
    held.close().await;
    store::sqlx::query(&format!("DROP DATABASE {other} WITH (FORCE)"))
        .execute(&admin)
        .await
        .unwrap();
}
