//! A VM's stream against its events table while events commit: resumed with
//! `Last-Event-ID` mid-burst, and with a NATS subscription too small to hold a burst (NATS
//! drops what it cannot hold; the stream reads it from Postgres). Every event once, in order.

use std::time::Duration;

use daemon::Roles;
use domain::provisioning::*;
use store::{Actor, Metadata, PgPool};

use crate::helpers::{try_spawn_app, vm_spec, TestApp};
use crate::sse::{self, SseEvent};

const API_AND_RELAY: Roles = Roles {
    api: true,
    relay: true,
    ..Roles::NONE
};

/// A VM requested, its job started: ready for log lines.
async fn started_vm(pool: &PgPool) -> VmId {
    let vm = VmId::new();
    for command in [
        ProvisioningCommand::Request {
            at: time::OffsetDateTime::now_utc(),
            spec: vm_spec("streamed"),
        },
        ProvisioningCommand::StartJob {
            job_id: JobId::FIRST,
            runner: "test".into(),
        },
    ] {
        run(pool, vm, command).await;
    }
    vm
}

async fn run(pool: &PgPool, vm: VmId, command: ProvisioningCommand) {
    let meta = Metadata::new(Actor::Runner, "stream-gaps");
    store::execute::<Provisioning>(pool, vm, command, &meta)
        .await
        .unwrap();
}

/// Commits `batches` batches of `per_batch` log lines, `pause` apart; the last line says
/// `the end`.
async fn log_lines(pool: PgPool, vm: VmId, batches: u32, per_batch: u32, pause: Duration) {
    for batch in 0..batches {
        let lines = (1..=per_batch)
            .map(|n| {
                let line = batch * per_batch + n;
                let last = batch + 1 == batches && n == per_batch;
                LogLineIn {
                    line,
                    level: "info".into(),
                    kind: "log".into(),
                    message: if last {
                        "the end".into()
                    } else {
                        format!("line {line}")
                    },
                }
            })
            .collect();
        run(
            &pool,
            vm,
            ProvisioningCommand::RecordLogs {
                job_id: JobId::FIRST,
                lines,
            },
        )
        .await;
        tokio::time::sleep(pause).await;
    }
}

fn the_end(e: &SseEvent) -> bool {
    e.data["data"]["message"] == "the end"
}

/// The sequences of the VM's events in the events table.
async fn stored(app: &TestApp, vm: VmId) -> Vec<i64> {
    store::sqlx::query_scalar(
        "SELECT sequence FROM events WHERE aggregate_id = $1 ORDER BY sequence",
    )
    .bind(vm.to_string())
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// Messages NATS dropped for full stream subscriptions, in this process (every test's
/// daemon counts in it: it only grows).
async fn dropped(app: &TestApp) -> f64 {
    let text = crate::metrics::scrape(app).await;
    crate::metrics::sample(&text, "provisioning_stream_messages_dropped_total").unwrap_or(0.0)
}

fn sequences(events: &[SseEvent]) -> Vec<i64> {
    events.iter().map(SseEvent::number).collect()
}

#[tokio::test]
async fn a_vms_stream_resumed_with_last_event_id_while_events_commit_sends_each_event_once() {
    let app = try_spawn_app(API_AND_RELAY, |_| {}).await.unwrap();
    let vm = started_vm(&app.pool).await;
    let stream = format!("/api/v1/vms/{vm}/stream");
    let writer = tokio::spawn(log_lines(
        app.pool.clone(),
        vm,
        60,
        5,
        Duration::from_millis(50),
    ));

    // A client reads part of the burst and goes away...
    let response = app.get(&stream).send().await.unwrap();
    let before = sse::read_until(response, |e| e.number() >= 40).await;
    // ...and comes back with its last id while lines still commit.
    let resumed = app
        .get(&stream)
        .header("Last-Event-ID", before.last().unwrap().id.clone())
        .send()
        .await
        .unwrap();
    assert!(!writer.is_finished(), "resumed while events commit");
    let after = sse::read_until(resumed, the_end).await;
    writer.await.unwrap();

    let seen: Vec<i64> = sequences(&before)
        .into_iter()
        .chain(sequences(&after))
        .collect();
    assert_eq!(seen, stored(&app, vm).await, "no gap, nothing twice");
}

#[tokio::test]
async fn a_stream_whose_subscription_drops_messages_fills_the_gap_from_postgres() {
    // A subscription that holds one message: a burst overflows it, and NATS drops the rest.
    let app = try_spawn_app(API_AND_RELAY, |c| c.stream_capacity = 1)
        .await
        .unwrap();
    let vm = started_vm(&app.pool).await;
    let response = app
        .get(&format!("/api/v1/vms/{vm}/stream"))
        .send()
        .await
        .unwrap();
    let dropped_before = dropped(&app).await;
    let reader = tokio::spawn(sse::read_until(response, the_end));
    // The subscription is live and the backlog sent before the burst.
    tokio::time::sleep(Duration::from_millis(500)).await;
    log_lines(app.pool.clone(), vm, 20, 200, Duration::ZERO).await;
    let events = tokio::time::timeout(Duration::from_secs(30), reader)
        .await
        .expect("the stream sends the last line")
        .unwrap();

    // NATS notices its drops on a task of its own: given a moment to count.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while dropped(&app).await <= dropped_before && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        dropped(&app).await > dropped_before,
        "NATS dropped messages"
    );
    assert_eq!(
        sequences(&events),
        stored(&app, vm).await,
        "every event once, in order"
    );
}
