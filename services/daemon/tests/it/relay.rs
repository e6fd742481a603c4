use std::collections::BTreeSet;
use std::time::Duration;

use daemon::Roles;
use domain::provisioning::*;
use store::{Actor, Metadata};
use tokio_util::sync::CancellationToken;

use crate::helpers::{spawn_app_with, vm_spec, TestApp};

fn metadata() -> Metadata {
    Metadata::new(Actor::Admin, "relay-test")
}

/// Requests `count` VMs from `writers` concurrent tasks; returns the events written.
async fn write_concurrently(app: &TestApp, writers: usize, count: usize) -> usize {
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..writers {
        let pool = app.pool.clone();
        tasks.spawn(async move {
            for i in 0..count / writers {
                let command = ProvisioningCommand::Request {
                    at: time::OffsetDateTime::now_utc(),
                    spec: vm_spec(&format!("vm-{}", w * 1000 + i)),
                };
                store::execute::<Provisioning>(&pool, VmId::new(), command, &metadata())
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    count * 2 // Requested and JobQueued
}

async fn stored_events(app: &TestApp) -> BTreeSet<(String, u64)> {
    let rows: Vec<(String, i64)> =
        store::sqlx::query_as("SELECT aggregate_id, sequence FROM events")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    rows.into_iter().map(|(id, seq)| (id, seq as u64)).collect()
}

async fn published_events(app: &TestApp, expected: usize) -> Vec<(String, u64)> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let messages = app.stream_messages().await;
        if messages.len() >= expected || tokio::time::Instant::now() > deadline {
            return messages
                .into_iter()
                .map(|m| (m.aggregate_id, m.sequence))
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn relay_only() -> Roles {
    Roles {
        relay: true,
        ..Roles::NONE
    }
}

#[tokio::test]
async fn the_relay_publishes_every_event_of_many_concurrent_writers_once() {
    let app = spawn_app_with(relay_only()).await;

    let written = write_concurrently(&app, 16, 400).await;

    let published = published_events(&app, written).await;
    let unique: BTreeSet<_> = published.iter().cloned().collect();
    assert_eq!(published.len(), written, "no event skipped, none twice");
    assert_eq!(unique, stored_events(&app).await);
}

#[tokio::test]
async fn events_committed_while_the_relay_was_down_or_died_before_its_checkpoint_are_not_lost() {
    let app = spawn_app_with(Roles::NONE).await;
    let first = write_concurrently(&app, 4, 40).await;
    // The relay dies after publishing a batch but before saving its checkpoint ...
    // (Rows become readable once no older transaction runs anywhere on the server.)
    let mut events = vec![];
    for _ in 0..100 {
        events = store::feed::read_after(&app.pool, Default::default(), 1000)
            .await
            .unwrap();
        if events.len() == first {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(events.len(), first);
    relay::publish(&app.pool, &app.bus, &events[..first / 2])
        .await
        .unwrap();
    // ... more events are committed while it is down ...
    let second = write_concurrently(&app, 4, 40).await;

    // ... and a new relay starts from the saved checkpoint.
    let cancel = CancellationToken::new();
    let relay = tokio::spawn(relay::run(
        app.pool.clone(),
        app.bus.clone(),
        cancel.clone(),
    ));
    let published = published_events(&app, first + second).await;
    cancel.cancel();
    relay.await.unwrap();

    let unique: BTreeSet<_> = published.iter().cloned().collect();
    assert_eq!(
        published.len(),
        first + second,
        "republished events were deduplicated"
    );
    assert_eq!(unique, stored_events(&app).await);
    let jobs = app
        .bus
        .jetstream
        .get_stream(app.bus.subjects.stream("JOBS"))
        .await
        .unwrap()
        .get_info()
        .await
        .unwrap()
        .state
        .messages;
    assert_eq!(
        jobs as usize,
        (first + second) / 2,
        "one job message per queued job"
    );
}

async fn advisory_locks(app: &TestApp) -> i64 {
    store::sqlx::query_scalar(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
         WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_relay_that_loses_its_lease_session_takes_the_lease_again_and_goes_on() {
    let app = spawn_app_with(relay_only()).await;
    let first = write_concurrently(&app, 1, 5).await;
    published_events(&app, first).await;
    assert_eq!(advisory_locks(&app).await, 1, "the relay holds its lease");

    // The lease's session dies, as in a Postgres restart.
    store::sqlx::query(
        "SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_database d ON d.oid = l.database
         WHERE l.locktype = 'advisory' AND d.datname = current_database()",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    let second = write_concurrently(&app, 1, 5).await;

    let published = published_events(&app, first + second).await;
    assert_eq!(published.len(), first + second);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while advisory_locks(&app).await != 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the lease was not taken again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The scans and index fetches of `events` that `session`'s finished statements made.
async fn events_reads(session: &store::PgPool) -> (i64, i64) {
    // Statistics reach the shared counters once the session is idle; asked to, at the next
    // idle moment.
    store::sqlx::query("SELECT pg_stat_force_next_flush()")
        .execute(session)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    store::sqlx::query("SELECT pg_stat_clear_snapshot()")
        .execute(session)
        .await
        .unwrap();
    store::sqlx::query_as(
        "SELECT seq_scan, coalesce(idx_tup_fetch, 0) FROM pg_stat_user_tables
         WHERE relname = 'events'",
    )
    .fetch_one(session)
    .await
    .unwrap()
}

/// A page of the feed (what the relay, the projector, the stream hubs and the replay read)
/// costs its own rows, not the table's: an `ORDER BY` that once bound to a text-cast output
/// column sorted every row of the table on every read.
#[tokio::test]
async fn a_page_of_the_feed_reads_its_own_rows_not_the_whole_table() {
    let app = spawn_app_with(Roles::NONE).await;
    store::sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version,
                             payload, metadata)
         SELECT 'Provisioning', v.id::text, s, 'LogLine', '1.1',
                json_build_object('type', 'LogLine', 'data', json_build_object(
                    'job_id', 1, 'line', s, 'level', 'info', 'kind', 'plain',
                    'message', 'line ' || s)),
                '{}'::json
         FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, 20)) v,
              generate_series(1, 1000) s",
    )
    .execute(&app.pool)
    .await
    .unwrap();
    store::sqlx::query("ANALYZE events")
        .execute(&app.pool)
        .await
        .unwrap();
    // Time for the other sessions to report their statistics; then one connection, so
    // that what changes is this session's own reads.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let session = store::connect(&crate::database::server_url(&app.db_name), 1)
        .await
        .unwrap();
    let before = events_reads(&session).await;
    let page = store::feed::read_after(&session, store::feed::Cursor::default(), 100)
        .await
        .unwrap();
    assert_eq!(page.len(), 100);
    assert!(page.windows(2).all(|w| w[0].cursor < w[1].cursor));
    let after = events_reads(&session).await;
    assert_eq!(
        after.0 - before.0,
        0,
        "a page scanned the whole events table"
    );
    let fetched = after.1 - before.1;
    assert!(
        (100..1000).contains(&fetched),
        "a page of 100 fetched {fetched} rows of a table of 20,000"
    );
}

/// The relay looks up the provider of each VM in a page, on every pass: that costs the
/// page's VMs, not every VM there is. With statistics taken while the platform had few
/// VMs (as after a burst of creates, before autovacuum's next analyze), a lookup written
/// as `aggregate_id = ANY(..)` was planned over the partial index of every request and read
/// each one.
#[tokio::test]
async fn the_providers_of_a_page_cost_its_own_vms_not_every_vm() {
    let app = spawn_app_with(Roles::NONE).await;
    let seed = |vms: std::ops::RangeInclusive<i32>, lines: i32| {
        store::sqlx::query(
            "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type,
                                 event_version, payload, metadata)
             SELECT 'Provisioning', 'vm-' || v, s,
                    CASE WHEN s = 1 THEN 'Requested' ELSE 'LogLine' END, '1.1',
                    CASE WHEN s = 1 THEN json_build_object('type', 'Requested', 'data',
                        json_build_object('spec', json_build_object('provider',
                            CASE WHEN v = 5000 THEN 'aws' ELSE 'local' END)))
                    ELSE '{}'::json END,
                    '{}'::json
             FROM generate_series($1, $2) v, generate_series(1, $3) s",
        )
        .bind(*vms.start())
        .bind(*vms.end())
        .bind(lines)
    };
    store::sqlx::query("ALTER TABLE events SET (autovacuum_enabled = false)")
        .execute(&app.pool)
        .await
        .unwrap();
    seed(1..=20, 5000).execute(&app.pool).await.unwrap();
    store::sqlx::query("ANALYZE events")
        .execute(&app.pool)
        .await
        .unwrap();
    seed(21..=5020, 1).execute(&app.pool).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let session = store::connect(&crate::database::server_url(&app.db_name), 1)
        .await
        .unwrap();
    let before = events_reads(&session).await;
    let providers = store::feed::providers_of(&session, &["vm-4", "vm-5000", "vm-6000"])
        .await
        .unwrap();
    let after = events_reads(&session).await;
    assert_eq!(
        providers,
        [("vm-4", "local"), ("vm-5000", "aws")]
            .map(|(vm, p)| (vm.to_string(), p.to_string()))
            .into()
    );
    assert_eq!(after.0 - before.0, 0, "the lookup scanned the events table");
    let fetched = after.1 - before.1;
    assert!(
        fetched < 20,
        "the providers of 3 VMs fetched {fetched} rows of 5,020 requests"
    );
}
