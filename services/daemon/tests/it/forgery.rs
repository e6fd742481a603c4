//! A runner cannot report for another job: the ingester refuses runner messages not signed
//! with their own job's key, and records nothing of them.

use std::time::Duration;

use bus::async_nats::jetstream::message::PublishMessage;
use bus::{JobKey, RunnerMessage, RunnerReport};
use daemon::Roles;
use domain::provisioning::*;
use store::{Actor, Metadata};

use crate::helpers::{spawn_app_with, vm_spec, TestApp};

fn started(vm: VmId, runner: &str) -> RunnerMessage {
    RunnerMessage {
        vm_id: vm,
        job_id: JobId::FIRST,
        report: RunnerReport::Started {
            runner: runner.into(),
        },
    }
}

fn line(vm: VmId, text: &str) -> RunnerMessage {
    RunnerMessage {
        vm_id: vm,
        job_id: JobId::FIRST,
        report: RunnerReport::Log {
            line: 1,
            level: "info".into(),
            kind: "log".into(),
            message: text.into(),
        },
    }
}

/// Publishes `message` on `subject` as `build` makes it from the subject, message id and
/// body, and waits for JetStream's ack.
async fn send(
    app: &TestApp,
    subject: String,
    message: &RunnerMessage,
    build: impl FnOnce(&str, &str, bus::Bytes) -> PublishMessage,
) {
    let payload = bus::Bytes::from(serde_json::to_vec(message).unwrap());
    let publication = build(&subject, &message.message_id(), payload);
    let ack = app.bus.jetstream.send_publish(subject, publication).await;
    ack.unwrap().await.unwrap();
}

fn subject_of(app: &TestApp, message: &RunnerMessage) -> String {
    let kind = message.report.subject_kind();
    app.bus.subjects.runner(message.vm_id, message.job_id, kind)
}

fn signed_by(key: &JobKey) -> impl FnOnce(&str, &str, bus::Bytes) -> PublishMessage + '_ {
    move |subject, id, payload| bus::signed(key, subject, id, payload)
}

async fn requested(app: &TestApp, name: &str) -> VmId {
    let vm = VmId::new();
    let request = ProvisioningCommand::Request {
        at: time::OffsetDateTime::now_utc(),
        spec: vm_spec(name),
    };
    store::execute::<Provisioning>(&app.pool, vm, request, &Metadata::new(Actor::Admin, name))
        .await
        .unwrap();
    vm
}

/// The VM's events as (type, data) once it has a `LogLine`, within 20 s.
async fn events_until_a_line(app: &TestApp, vm: VmId) -> Vec<(String, serde_json::Value)> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let rows: Vec<(String, serde_json::Value)> = store::sqlx::query_as(
            "SELECT event_type, payload::jsonb FROM events WHERE aggregate_id = $1 ORDER BY sequence",
        )
        .bind(vm.to_string())
        .fetch_all(&app.pool)
        .await
        .unwrap();
        if rows.iter().any(|(kind, _)| kind == "LogLine") {
            return rows;
        }
        assert!(tokio::time::Instant::now() < deadline, "no line: {rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_message_for_another_job_unsigned_or_wrongly_signed_is_refused_and_records_nothing() {
    let app = spawn_app_with(Roles {
        ingester: true,
        ..Roles::NONE
    })
    .await;
    let (a, b) = (
        requested(&app, "job-a").await,
        requested(&app, "job-b").await,
    );
    let (key_a, key_b) = (
        app.job_key(a, JobId::FIRST).await,
        app.job_key(b, JobId::FIRST).await,
    );
    let refused_before = ingester::refused_messages();

    // A's runner reports for its own job.
    for message in [started(a, "runner-a"), line(a, "genuine line of A")] {
        send(
            &app,
            subject_of(&app, &message),
            &message,
            signed_by(&key_a),
        )
        .await;
    }
    // ... and tries to report for B's, with its own key.
    for message in [started(b, "forger"), line(b, "forged with the key of A")] {
        send(
            &app,
            subject_of(&app, &message),
            &message,
            signed_by(&key_a),
        )
        .await;
    }
    // On its own job's subject, with B's body: the key fits the subject, not the body.
    let on_a = line(b, "forged on the subject of A");
    let subject = app.bus.subjects.runner(a, JobId::FIRST, "log");
    send(&app, subject, &on_a, signed_by(&key_a)).await;
    // Unsigned, and with a signature made up.
    let unsigned = line(b, "forged without a signature");
    send(
        &app,
        subject_of(&app, &unsigned),
        &unsigned,
        |_, id, payload| PublishMessage::build().payload(payload).message_id(id),
    )
    .await;
    let made_up = line(b, "forged with a made-up signature");
    send(
        &app,
        subject_of(&app, &made_up),
        &made_up,
        // An id of its own: JetStream would drop it as the unsigned one's duplicate.
        |_, id, payload| {
            PublishMessage::build()
                .payload(payload)
                .message_id(format!("{id}:made-up"))
                .header(bus::SIGNATURE_HEADER, "00".repeat(32).as_str())
        },
    )
    .await;
    // B's own runner, afterwards: its line 1 is not taken by any forged one.
    for message in [started(b, "runner-b"), line(b, "genuine line of B")] {
        send(
            &app,
            subject_of(&app, &message),
            &message,
            signed_by(&key_b),
        )
        .await;
    }

    let events_a = events_until_a_line(&app, a).await;
    let events_b = events_until_a_line(&app, b).await;
    let lines = |events: &[(String, serde_json::Value)]| -> Vec<String> {
        events
            .iter()
            .filter(|(kind, _)| kind == "LogLine")
            .map(|(_, payload)| payload.to_string())
            .collect()
    };
    let (lines_a, lines_b) = (lines(&events_a), lines(&events_b));
    assert_eq!(lines_a.len(), 1, "{lines_a:?}");
    assert!(lines_a[0].contains("genuine line of A"), "{lines_a:?}");
    assert_eq!(lines_b.len(), 1, "{lines_b:?}");
    assert!(lines_b[0].contains("genuine line of B"), "{lines_b:?}");
    let started_b: Vec<&serde_json::Value> = events_b
        .iter()
        .filter(|(kind, _)| kind == "JobStarted")
        .map(|(_, payload)| payload)
        .collect();
    assert_eq!(started_b.len(), 1);
    assert!(
        started_b[0].to_string().contains("runner-b"),
        "{started_b:?}"
    );

    // Nothing of the forged messages is stored anywhere.
    let forged: i64 =
        store::sqlx::query_scalar("SELECT count(*) FROM events WHERE payload::text LIKE '%forge%'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(forged, 0);
    // Refused once each, and never delivered again.
    let refused = ingester::refused_messages() - refused_before;
    assert!(refused >= 5, "{refused} refused");
    app.assert_consumers_drained().await;
}
