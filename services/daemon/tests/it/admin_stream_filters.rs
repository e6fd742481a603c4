//! `/admin/stream`'s `actor`, `provider`, `from` and `to` filters, against the events table:
//! three VMs recorded one after the other, on two providers, by two actors, so that each
//! filter lets through some events and keeps out others.

use std::time::Duration;

use daemon::Roles;
use domain::provisioning::*;
use store::{Actor, Metadata};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::helpers::{spawn_app_with, vm_spec, TestApp};
use crate::sse::{self, SseEvent};

/// Records a VM's request and its job's start as `actor`, on `provider`.
async fn record_vm(app: &TestApp, actor: Actor, provider: &str) -> VmId {
    let vm = VmId::new();
    let meta = Metadata::new(actor, "filter-test");
    let mut spec = vm_spec("filtered");
    spec.provider = ProviderId::parse(provider).unwrap();
    let commands = [
        ProvisioningCommand::Request {
            at: OffsetDateTime::now_utc(),
            spec,
        },
        ProvisioningCommand::StartJob {
            job_id: JobId::FIRST,
            runner: "test".into(),
        },
    ];
    for command in commands {
        store::execute::<Provisioning>(&app.pool, vm, command, &meta)
            .await
            .unwrap();
    }
    vm
}

/// The positions of the events of `vms`, in commit order.
async fn positions_of(app: &TestApp, vms: &[VmId]) -> Vec<i64> {
    let ids: Vec<String> = vms.iter().map(|vm| vm.to_string()).collect();
    store::sqlx::query_scalar(
        "SELECT position FROM events WHERE aggregate_id = ANY($1) ORDER BY txid, position",
    )
    .bind(&ids)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// The positions of the events recorded by `actor`, in commit order.
async fn positions_by(app: &TestApp, actor: &str) -> Vec<i64> {
    store::sqlx::query_scalar(
        "SELECT position FROM events WHERE metadata->>'actor' = $1 ORDER BY txid, position",
    )
    .bind(actor)
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// The newest `recorded_at` of a VM's events, one microsecond on: a bound that takes it in
/// (`to`) or leaves it out (`from`).
async fn just_after(app: &TestApp, vm: VmId) -> String {
    let last: OffsetDateTime =
        store::sqlx::query_scalar("SELECT max(recorded_at) FROM events WHERE aggregate_id = $1")
            .bind(vm.to_string())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    (last + Duration::from_micros(1)).format(&Rfc3339).unwrap()
}

/// Every event the stream sends from the start with `query`: it is read for two seconds,
/// all the events being committed before it opens.
async fn streamed(app: &TestApp, query: &str) -> Vec<SseEvent> {
    let response = app
        .get(&format!("/api/v1/admin/stream?since=0&{query}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{query}");
    let mut events = vec![];
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        sse::read_until(response, |e| {
            events.push(e.clone());
            false
        }),
    )
    .await;
    events
}

fn positions(events: &[SseEvent]) -> Vec<i64> {
    events.iter().map(SseEvent::number).collect()
}

#[tokio::test]
async fn the_platform_stream_lets_through_only_the_actor_provider_and_time_range_asked_for() {
    let app = spawn_app_with(Roles {
        api: true,
        relay: true,
        ..Roles::NONE
    })
    .await;
    // Apart by a few milliseconds, so that times between them separate them.
    let first = record_vm(&app, Actor::Admin, "local").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = record_vm(&app, Actor::System, "nrec").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let third = record_vm(&app, Actor::Admin, "local").await;
    let after_first = just_after(&app, first).await;
    let after_second = just_after(&app, second).await;

    let by_system = streamed(&app, "actor=system").await;
    assert_eq!(positions(&by_system), positions_by(&app, "system").await);
    assert!(by_system.iter().all(|e| e.data["actor"] == "system"));
    let by_admin = streamed(&app, "actor=admin").await;
    assert_eq!(positions(&by_admin), positions_by(&app, "admin").await);
    for vm in [first, second, third] {
        let of_vm = positions_of(&app, &[vm]).await;
        let streamed_as = if vm == second { &by_system } else { &by_admin };
        assert!(of_vm.iter().all(|p| positions(streamed_as).contains(p)));
    }

    // Events of two providers are in the log: each filter keeps the other's out.
    let on_nrec = streamed(&app, "provider=nrec").await;
    assert_eq!(positions(&on_nrec), positions_of(&app, &[second]).await);
    let on_local = streamed(&app, "provider=local").await;
    assert_eq!(
        positions(&on_local),
        positions_of(&app, &[first, third]).await
    );

    // `from` takes in what was recorded at or after it, `to` what was recorded before it.
    let between = streamed(&app, &format!("from={after_first}&to={after_second}")).await;
    assert_eq!(positions(&between), positions_of(&app, &[second]).await);
    let since_second = streamed(&app, &format!("from={after_first}")).await;
    assert_eq!(
        positions(&since_second),
        positions_of(&app, &[second, third]).await
    );
    let until_second = streamed(&app, &format!("to={after_second}&provider=local")).await;
    assert_eq!(positions(&until_second), positions_of(&app, &[first]).await);
}
