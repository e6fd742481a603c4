//! The streams of many VMs (`/vms/stream`, `/admin/stream`) and what every stream does
//! for a client that reconnects or stops reading.

use std::time::Duration;

use daemon::Roles;
use domain::identity::Role;
use domain::provisioning::*;
use serde_json::json;
use store::{Actor, Metadata};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::{spawn_app, spawn_app_with, vm_request, vm_spec, TestApp};
use crate::sse::{self, SseEvent};

/// The positions of every event, in commit order: what a stream of everything must send.
async fn positions(app: &TestApp) -> Vec<i64> {
    store::sqlx::query_scalar("SELECT position FROM events ORDER BY txid, position")
        .fetch_all(&app.pool)
        .await
        .unwrap()
}

fn applied_of(vm: &str) -> impl FnMut(&SseEvent) -> bool + '_ {
    move |e| e.event == "Applied" && e.data["aggregate_id"] == vm
}

#[tokio::test]
async fn the_platform_stream_resumed_while_events_commit_misses_nothing_and_repeats_nothing() {
    let app = spawn_app().await;
    let stream = |since: String| {
        app.get("/api/v1/admin/stream")
            .header("Last-Event-ID", since)
            .send()
    };
    let first = app.create_ok(json!({})).await;
    // A client reads up to the first VM's `Applied` and goes away...
    let before = sse::read_until(stream("0".into()).await.unwrap(), applied_of(&first)).await;
    // ...while a second VM's events commit, it comes back with its last id.
    let second = app.create_ok(json!({})).await;
    let after = sse::read_until(
        stream(before.last().unwrap().id.clone()).await.unwrap(),
        applied_of(&second),
    )
    .await;
    app.wait_for_status(&second, "provisioned").await;

    let resumed: Vec<i64> = before.iter().chain(&after).map(|e| e.number()).collect();
    let stored = positions(&app).await;
    assert_eq!(
        resumed,
        stored[..resumed.len()],
        "every event once, in commit order, across the reconnect"
    );
    let types: Vec<&str> = after.iter().map(|e| e.event.as_str()).collect();
    assert!(types.contains(&"Requested") && types.contains(&"LogLine"));
}

#[tokio::test]
async fn the_platform_stream_filters_by_type_and_vm_and_refuses_unknown_filters() {
    let app = spawn_app().await;
    let one = app.create_ok(json!({})).await;
    let other = app.create_ok(json!({})).await;
    app.wait_for_status(&one, "provisioned").await;
    app.wait_for_status(&other, "provisioned").await;

    let response = app
        .get(&format!(
            "/api/v1/admin/stream?since=0&vm={one}&type=Requested&type=Applied"
        ))
        .send()
        .await
        .unwrap();
    let events = sse::read_until(response, applied_of(&one)).await;
    let types: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(types, ["Requested", "Applied"]);
    assert!(events
        .iter()
        .all(|e| e.data["aggregate_id"] == one.as_str()));

    let no_logs = app
        .get("/api/v1/admin/stream?since=0&exclude_logs=true&provider=local")
        .send()
        .await
        .unwrap();
    let mut applied = 0;
    let events = sse::read_until(no_logs, |e| {
        applied += (e.event == "Applied") as u32;
        applied == 2
    })
    .await;
    assert!(events.iter().all(|e| e.event != "LogLine"));

    for (query, field) in [
        ("colour=red", "colour"),
        ("from=yesterday", "from"),
        ("vm=nope", "vm"),
        ("since=abc", "since"),
        ("since=999999999", "since"),
    ] {
        let response = app
            .get(&format!("/api/v1/admin/stream?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "{query}");
        let body: serde_json::Value = response.json().await.unwrap();
        assert!(
            body["detail"].as_str().unwrap().contains(field),
            "{query}: {body}"
        );
    }
}

#[tokio::test]
async fn the_list_stream_sends_a_vms_row_after_its_changes_and_resumes_after_its_last_id() {
    let app = spawn_app().await;
    let response = app.get("/api/v1/vms/stream").send().await.unwrap();
    let id = uuid::Uuid::new_v4().to_string();
    let watcher = tokio::spawn(sse::read_until(response, {
        let id = id.clone();
        move |e| e.data["id"] == id.as_str() && e.data["status"] == "provisioned"
    }));
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.create_ok(json!({"id": id})).await;
    let rows = watcher.await.unwrap();

    assert!(rows
        .iter()
        .all(|e| e.event == "vm" && e.data["id"] == id.as_str()));
    let statuses: Vec<&str> = rows
        .iter()
        .map(|e| e.data["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses.first(), Some(&"requested"));
    let ids: Vec<i64> = rows.iter().map(|e| e.number()).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids rise: {ids:?}");
    let changes: i64 = store::sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE aggregate_id = $1 AND event_type <> 'LogLine'",
    )
    .bind(&id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(rows.len() as i64 <= changes, "no row for a log line");
    let vm = app.vm(&id).await;
    assert_eq!(rows.last().unwrap().data["ip"], json!(vm.ip));

    // Resumed from its first row, the stream sends the later changes only.
    let resumed = app
        .get(&format!("/api/v1/vms/stream?since={}", ids[0]))
        .send()
        .await
        .unwrap();
    let again = sse::read_until(resumed, |e| e.data["status"] == "provisioned").await;
    assert!(again.iter().all(|e| e.number() > ids[0]));
}

/// `n` Terraform lines of about 800 bytes each.
fn lines(from: u32, n: u32) -> Vec<LogLineIn> {
    (from..from + n)
        .map(|line| LogLineIn {
            line,
            level: "info".into(),
            kind: "log".into(),
            message: format!("line {line} {}", "x".repeat(780)),
        })
        .collect()
}

#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off_with_a_reconnect_event_and_resumes_without_a_gap() {
    let app = spawn_app_with(Roles {
        api: true,
        relay: true,
        ..Roles::NONE
    })
    .await;
    let vm = VmId::new();
    let meta = Metadata::new(Actor::Admin, "slow-client");
    let run = |command| store::execute::<Provisioning>(&app.pool, vm, command, &meta);
    run(ProvisioningCommand::Request {
        at: time::OffsetDateTime::now_utc(),
        spec: vm_spec("slow"),
    })
    .await
    .unwrap();

    // A client with a small receive buffer asks for the stream and reads nothing.
    let address = app.address.trim_start_matches("http://");
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut client = socket.connect(address.parse().unwrap()).await.unwrap();
    let request = format!(
        "GET /api/v1/vms/{vm}/stream HTTP/1.0\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\r\n",
        app.token
    );
    client.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    run(ProvisioningCommand::StartJob {
        job_id: JobId::FIRST,
        runner: "test".into(),
    })
    .await
    .unwrap();
    // About 10 MB of events: far more than the socket buffers hold.
    for batch in 0..30 {
        run(ProvisioningCommand::RecordLogs {
            job_id: JobId::FIRST,
            lines: lines(1 + batch * 400, 400),
        })
        .await
        .unwrap();
    }
    let total: i64 =
        store::sqlx::query_scalar("SELECT max(sequence) FROM events WHERE aggregate_id = $1")
            .bind(vm.to_string())
            .fetch_one(&app.pool)
            .await
            .unwrap();

    // Cut off after its queue stayed full for 5 s: what it reads ends, with a `reconnect`.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), client.read_to_end(&mut raw))
        .await
        .expect("the server ended the stream")
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    let mut body = text.split_once("\r\n\r\n").unwrap().1.to_owned();
    let got = sse::parse(&mut body);
    let (farewell, events) = got.split_last().unwrap();
    assert_eq!(farewell.event, "reconnect");
    let sequences: Vec<i64> = events.iter().map(|e| e.number()).collect();
    assert_eq!(sequences, (1..=events.len() as i64).collect::<Vec<_>>());
    assert!((events.len() as i64) < total, "cut off before the end");
    assert_eq!(farewell.id, events.last().unwrap().id);
    assert_eq!(farewell.data["last_event_id"], json!(farewell.id));

    // Back with the id it was given, it gets the rest: nothing lost, nothing twice.
    let resumed = app
        .get(&format!("/api/v1/vms/{vm}/stream"))
        .header("Last-Event-ID", farewell.id.clone())
        .send()
        .await
        .unwrap();
    let rest = sse::read_until(resumed, |e| e.number() == total).await;
    let sequences: Vec<i64> = rest.iter().map(|e| e.number()).collect();
    assert_eq!(
        sequences,
        (events.len() as i64 + 1..=total).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn a_quiet_stream_gets_a_keep_alive_comment_within_15_seconds() {
    let app = spawn_app_with(Roles {
        api: true,
        ..Roles::NONE
    })
    .await;
    let started = tokio::time::Instant::now();
    let response = app.get("/api/v1/vms/stream").send().await.unwrap();
    let mut body = futures::StreamExt::boxed(response.bytes_stream());
    let chunk = tokio::time::timeout(Duration::from_secs(20), futures::StreamExt::next(&mut body))
        .await
        .expect("a keep-alive within 20 s")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&chunk).starts_with(':'));
    assert!(started.elapsed() >= Duration::from_secs(14));
}

#[tokio::test]
async fn a_users_list_stream_shows_their_own_vms_and_not_anothers() {
    let app = spawn_app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let bob = app.user("bob@example.org", Role::User).await;
    let stream = ada.send("GET", "/api/v1/vms/stream", None).await;
    // Bob's VM commits first: a stream that let it through would show it before Ada's.
    let bobs: serde_json::Value = bob
        .json(
            "POST",
            "/api/v1/vms",
            Some(&vm_request(json!({"name": "bobs"}))),
            202,
        )
        .await;
    let adas: serde_json::Value = ada
        .json(
            "POST",
            "/api/v1/vms",
            Some(&vm_request(json!({"name": "adas"}))),
            202,
        )
        .await;
    let rows = sse::read_until(stream, |e| {
        e.data["id"] == adas["id"] && e.data["status"] == "provisioned"
    })
    .await;
    assert!(rows.iter().all(|e| e.data["id"] == adas["id"]), "{rows:?}");
    assert_ne!(bobs["id"], adas["id"]);
    let refused = ada.send("GET", "/api/v1/admin/stream", None).await;
    assert_eq!(refused.status(), 403);
}
