use std::time::Duration;

use serde_json::json;

use crate::helpers::{spawn_app, TestApp};
use crate::sse::{self, SseEvent};

/// Reads a VM's stream (resumed after `last_event_id`) until an event named `until`.
async fn read_until(
    app: &TestApp,
    id: &str,
    last_event_id: Option<u64>,
    until: &str,
) -> Vec<SseEvent> {
    let mut request = app.get(&format!("/api/v1/vms/{id}/stream"));
    if let Some(last) = last_event_id {
        request = request.header("Last-Event-ID", last.to_string());
    }
    let response = request.send().await.unwrap();
    read_events(response, until).await
}

async fn read_events(response: reqwest::Response, until: &str) -> Vec<SseEvent> {
    sse::read_until(response, |e| e.event == until).await
}

#[tokio::test]
async fn an_sse_client_connected_before_the_create_sees_status_changes_and_log_lines_live() {
    let app = spawn_app().await;
    let id = uuid::Uuid::new_v4().to_string();
    let response = app
        .get(&format!("/api/v1/vms/{id}/stream"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let watcher = tokio::spawn(read_events(response, "Applied"));
    tokio::time::sleep(Duration::from_millis(200)).await;

    app.create_ok(json!({"id": id})).await;
    let events = watcher.await.unwrap();

    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        names[..4],
        ["Requested", "JobQueued", "JobDispatched", "JobStarted"]
    );
    assert!(names.contains(&"LogLine"));
    assert_eq!(names.last(), Some(&"Applied"));
    let ids: Vec<i64> = events.iter().map(|e| e.number()).collect();
    assert_eq!(
        ids,
        (1..=events.len() as i64).collect::<Vec<_>>(),
        "in order, none missing, none twice"
    );
    assert!(events.iter().any(|e| e.event == "LogLine"
        && e.data["data"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("Apply complete!")));
    let vm = app.wait_for_status(&id, "provisioned").await;
    assert_eq!(events.last().unwrap().data["data"]["vm_ip"], json!(vm.ip));
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_stream_resumed_with_last_event_id_continues_where_it_stopped() {
    let app = spawn_app().await;
    let id = app.create_ok(json!({})).await;
    app.wait_for_status(&id, "provisioned").await;
    let all = app.events(&id).await;

    let resumed = read_until(&app, &id, Some(3), "Applied").await;

    assert_eq!(resumed.first().map(|e| e.number()), Some(4));
    assert_eq!(resumed.len(), all.len() - 3);
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn a_malformed_last_event_id_is_422_naming_it_even_with_since_on_every_stream() {
    let app = spawn_app().await;
    let id = uuid::Uuid::new_v4();
    for path in [
        format!("/api/v1/vms/{id}/stream?since="),
        format!("/api/v1/vms/{id}/stream?since=3"),
        "/api/v1/vms/stream?since=".to_owned(),
        "/api/v1/admin/stream?since=0".to_owned(),
    ] {
        for bad in ["-1", "9223372036854775808"] {
            let response = app
                .get(&path)
                .header("Last-Event-ID", bad)
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 422, "{path} with {bad}");
            let body: serde_json::Value = response.json().await.unwrap();
            assert_eq!(body["code"], "invalid_field", "{path}: {body}");
            let detail = body["detail"].as_str().unwrap();
            assert!(detail.starts_with("Last-Event-ID: "), "{path}: {body}");
        }
    }
}
