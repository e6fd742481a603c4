//! The audit history: every event of the platform in commit order, its filters and pages,
//! and a VM as it was at a past position or time. Real Terraform on `local`.

use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// Every page of `query` (`limit` at a time), concatenated.
async fn all_pages(app: &TestApp, query: &str, limit: usize) -> Vec<Value> {
    let mut items = vec![];
    let mut after = 0;
    loop {
        let page: Value = app
            .get_json(&format!(
                "/api/v1/audit?limit={limit}&after={after}&{query}"
            ))
            .await;
        let got = page["items"].as_array().unwrap().clone();
        if let Some(next) = page["next"].as_i64() {
            assert_eq!(got.last().unwrap()["position"].as_i64(), Some(next));
            after = next;
        }
        let last = got.len() < limit;
        items.extend(got);
        if last {
            return items;
        }
    }
}

fn types(items: &[Value]) -> Vec<&str> {
    items.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn the_audit_history_pages_every_event_in_commit_order_and_filters_it() {
    let app = spawn_app().await;
    let good = app.create_ok(json!({"name": "audit-ok"})).await;
    app.wait_for_status(&good, "provisioned").await;
    let bad = app
        .create_ok(json!({"name": "audit-bad", "template": "broken"}))
        .await;
    app.wait_for_status(&bad, "failed").await;

    // Paged three at a time, the history is the whole events table, each event once, in
    // the order the feed reads it.
    let all = all_pages(&app, "", 3).await;
    let stored: Vec<(i64,)> =
        store::sqlx::query_as("SELECT position FROM events ORDER BY txid, position")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let positions: Vec<i64> = all
        .iter()
        .map(|e| e["position"].as_i64().unwrap())
        .collect();
    assert_eq!(
        positions,
        stored.into_iter().map(|p| p.0).collect::<Vec<_>>()
    );
    assert_eq!(all_pages(&app, "", 10_000).await, all);
    assert!(types(&all).contains(&"LogLine"));
    // Each event says the schema version it was stored in.
    assert!(all.iter().all(|e| e["version"] == "1.1"), "{all:?}");

    // Filters: each selects exactly the events it names.
    let of = |vm: &str| -> Vec<Value> {
        all.iter()
            .filter(|e| e["aggregate_id"] == vm)
            .cloned()
            .collect()
    };
    assert_eq!(all_pages(&app, &format!("vm={bad}"), 5).await, of(&bad));
    let failed = all_pages(&app, "type=Failed", 5).await;
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["aggregate_id"], bad.as_str());
    let two = all_pages(&app, "type=Failed&type=Applied", 5).await;
    assert_eq!(types(&two).len(), 2, "{two:?}");
    let no_logs = all_pages(&app, "exclude_logs=true", 50).await;
    assert!(!no_logs.is_empty() && !types(&no_logs).contains(&"LogLine"));
    let expected: Vec<&Value> = all.iter().filter(|e| e["type"] != "LogLine").collect();
    assert_eq!(no_logs.iter().collect::<Vec<_>>(), expected);
    let runner = all_pages(&app, "actor=runner", 50).await;
    assert!(!runner.is_empty() && runner.iter().all(|e| e["actor"] == "runner"));
    let on_local = all_pages(&app, "provider=local", 50).await;
    let vms: Vec<Value> = all
        .iter()
        .filter(|e| e["aggregate_type"] == "Provisioning")
        .cloned()
        .collect();
    assert_eq!(on_local, vms);
    assert!(all_pages(&app, "provider=aws", 50).await.is_empty());
    // A window of time: from the failed VM's request on.
    let requested = of(&bad)[0].clone();
    let from = requested["recorded_at"].as_str().unwrap();
    let window = all_pages(&app, &format!("from={from}&vm={bad}"), 50).await;
    assert_eq!(window, of(&bad));
    let before = all_pages(&app, &format!("to={from}&vm={bad}"), 50).await;
    assert!(before.is_empty(), "{before:?}");

    // A VM's history takes the same filters, paged by its sequence as before.
    let path = format!("/api/v1/vms/{bad}/events?exclude_logs=true&type=Failed&type=Requested");
    let events: Vec<Value> = app.get_json(&path).await;
    assert_eq!(types(&events), ["Requested", "Failed"]);
    let events: Vec<Value> = app
        .get_json(&format!("/api/v1/vms/{bad}/events?after=1&limit=1"))
        .await;
    assert_eq!(events[0]["sequence"], 2);

    // Wrong filters are refused, naming the parameter.
    for (query, field) in [
        ("type=not%20a%20type", "type"),
        ("from=yesterday", "from"),
        ("vm=42", "vm"),
        ("exclude_logs=maybe", "exclude_logs"),
        ("after=999999999", "after"),
        ("limit=0", "limit"),
        ("colour=red", "colour"),
    ] {
        for route in ["/api/v1/audit", "/api/v1/audit/export"] {
            let response = app.get(&format!("{route}?{query}")).send().await.unwrap();
            assert_eq!(response.status(), 422, "{route}?{query}");
            let body: Value = response.json().await.unwrap();
            let detail = body["detail"].as_str().unwrap();
            assert!(detail.starts_with(&format!("{field}: ")), "{detail}");
        }
    }
    let response = app
        .get(&format!("/api/v1/vms/{bad}/events?vm={good}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 422);

    // The export is the same selection, one event per line.
    let response = app
        .get("/api/v1/audit/export?exclude_logs=true")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let text = response.text().await.unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, no_logs);
    assert!(text.ends_with('\n'));
}

#[tokio::test]
async fn a_vm_is_shown_as_it_was_at_a_past_position_or_time() {
    let app = spawn_app().await;
    let id = app
        .create_ok(json!({"name": "then", "template": "broken"}))
        .await;
    app.wait_for_status(&id, "failed").await;
    let all: Value = app
        .get_json(&format!("/api/v1/audit?vm={id}&exclude_logs=true"))
        .await;
    let events = all["items"].as_array().unwrap();
    let position_of = |kind: &str| {
        events.iter().find(|e| e["type"] == kind).unwrap()["position"]
            .as_i64()
            .unwrap()
    };

    // At its request: requested, as the create answered.
    let requested = position_of("Requested");
    let then: Value = app
        .get_json(&format!("/api/v1/vms/{id}?at={requested}"))
        .await;
    assert_eq!(then["status"], "requested");
    assert_eq!(then["at_position"], requested);
    assert_eq!(then["name"], "then");
    // At its job's start: provisioning; at its failure, and at a later time: failed.
    let started = position_of("JobStarted");
    let then: Value = app
        .get_json(&format!("/api/v1/vms/{id}?at={started}"))
        .await;
    assert_eq!(then["status"], "provisioning");
    let failed = position_of("Failed");
    let then: Value = app.get_json(&format!("/api/v1/vms/{id}?at={failed}")).await;
    assert_eq!(then["status"], "failed");
    assert!(then["last_error"].as_str().is_some());
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let response = app
        .get(&format!("/api/v1/vms/{id}?at={now}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let header = response.headers()["provisioning-position"]
        .to_str()
        .unwrap()
        .to_owned();
    let then: Value = response.json().await.unwrap();
    assert_eq!(then["status"], "failed");
    assert_eq!(header, then["at_position"].to_string());
    // The current view has no `at_position`.
    let current: Value = app.get_json(&format!("/api/v1/vms/{id}")).await;
    assert!(current.get("at_position").is_none());

    // Before it existed: no such VM then. A wrong `at`: 400.
    let response = app
        .get(&format!("/api/v1/vms/{id}?at=2001-01-01T00:00:00Z"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let response = app
        .get(&format!("/api/v1/vms/{id}?at={}", requested - 1))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    for wrong in ["yesterday", "-3", "2026-01-01"] {
        let response = app
            .get(&format!("/api/v1/vms/{id}?at={wrong}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{wrong}");
        let body: Value = response.json().await.unwrap();
        assert!(body["detail"].as_str().unwrap().starts_with("at: "));
    }
}
