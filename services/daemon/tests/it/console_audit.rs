//! The console's audit history over plain HTTP: its filters select what the API's audit
//! selects, a page at a time with a link to the next; the export is the API's NDJSON of the
//! same selection; the console's admin stream sends events as they commit; a user gets the
//! 403 page.

use std::time::Duration;

use domain::identity::Role;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::console::{app, assert_is_a_page, browser, page, sign_in, vm_of};
use crate::helpers::TestApp;

/// The positions of the events a page of the audit history shows, in order.
fn positions(body: &str) -> Vec<i64> {
    body.split("<tr data-position=\"")
        .skip(1)
        .map(|rest| rest.split('"').next().unwrap().parse().unwrap())
        .collect()
}

/// The positions the API's audit history answers for `query`.
async fn api_positions(app: &TestApp, query: &str) -> Vec<i64> {
    let page: Value = app.get_json(&format!("/api/v1/audit?{query}")).await;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["position"].as_i64().unwrap())
        .collect()
}

/// The `href` of the link with `id`, as a browser would follow it.
fn link(body: &str, id: &str) -> Option<String> {
    let at = body.find(&format!("id=\"{id}\""))?;
    let start = body[..at].rfind("href=\"")? + "href=\"".len();
    let end = start + body[start..].find('"')?;
    Some(unescaped(&body[start..end]))
}

/// An attribute's value as the browser reads it.
fn unescaped(value: &str) -> String {
    value
        .replace("&#38;", "&")
        .replace("&amp;", "&")
        .replace("&#43;", "+")
}

#[tokio::test]
async fn an_admin_filters_and_pages_the_audit_history_as_the_api_does() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let mine = vm_of(&alice, "alice-vm").await;
    let theirs = vm_of(&bob, "bob-vm").await;
    let admin = sign_in(&app, &app.token).await;

    // A VM's events, as the form sends them: its empty fields left out.
    let (status, body) = page(
        &app,
        &admin,
        &format!("/console/admin/audit?actor=&vm={mine}&provider=&type=&from=&to="),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_is_a_page(&body);
    let expected = api_positions(&app, &format!("vm={mine}&exclude_logs=true")).await;
    assert!(!expected.is_empty());
    assert_eq!(positions(&body), expected);
    assert!(
        body.contains(&format!("href=\"/console/vms/{mine}\"")),
        "{body}"
    );
    assert!(!body.contains(&theirs), "{body}");
    assert!(body.contains("value=\"{mine}\"".replace("{mine}", &mine).as_str()));

    // Types, several in one field, and times.
    let (_, body) = page(
        &app,
        &admin,
        "/console/admin/audit?type=Requested%2C+JobRequested",
    )
    .await;
    let expected = api_positions(&app, "type=Requested&type=JobRequested&exclude_logs=true").await;
    assert_eq!(positions(&body), expected);
    assert!(expected.len() >= 2, "both VMs were requested: {expected:?}");
    let (_, body) = page(&app, &admin, "/console/admin/audit?to=2000-01-01T00%3A00").await;
    assert!(
        positions(&body).is_empty() && body.contains("No events match"),
        "{body}"
    );
    let (_, body) = page(&app, &admin, "/console/admin/audit?actor=nobody-at-all").await;
    assert!(positions(&body).is_empty(), "{body}");

    // A page at a time: the next link carries the filters and the last position.
    let all = api_positions(&app, "exclude_logs=true").await;
    let (_, body) = page(&app, &admin, "/console/admin/audit?limit=2").await;
    assert_eq!(positions(&body), all[..2]);
    let next = link(&body, "next").expect("a next link");
    assert!(next.contains(&format!("after={}", all[1])), "{next}");
    let (_, body) = page(&app, &admin, &next).await;
    assert_eq!(positions(&body), all[2..4]);
    let (_, body) = page(
        &app,
        &admin,
        &format!("/console/admin/audit?limit=2&after={}", all[all.len() - 2]),
    )
    .await;
    assert_eq!(positions(&body), all[all.len() - 1..]);
    assert!(
        link(&body, "next").is_none(),
        "the last page has no next: {body}"
    );

    // A wrong filter is named on the page, not answered as JSON.
    let (status, body) = page(&app, &admin, "/console/admin/audit?vm=nope").await;
    assert_eq!(status, 422);
    assert!(body.contains("vm: must be a VM id"), "{body}");
    let (status, body) = page(&app, &admin, "/console/admin/audit?from=yesterday").await;
    assert_eq!(status, 422);
    assert!(body.contains("role=\"alert\""), "{body}");
}

#[tokio::test]
async fn the_export_is_the_apis_ndjson_of_the_same_selection() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let mine = vm_of(&alice, "alice-vm").await;
    vm_of(&alice, "other-vm").await;
    let admin = sign_in(&app, &app.token).await;

    let (_, body) = page(
        &app,
        &admin,
        &format!("/console/admin/audit?vm={mine}&actor="),
    )
    .await;
    let export = link(&body, "export").expect("an export link");
    assert!(export.contains(&format!("vm={mine}")), "{export}");
    let response = browser()
        .get(format!("{}{export}", app.address))
        .header("cookie", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let exported = response.text().await.unwrap();
    let api = app
        .get(&format!("/api/v1/audit/export?vm={mine}&exclude_logs=true"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(exported, api);
    let lines: Vec<Value> = exported
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|e| e["aggregate_id"] == mine.as_str()),
        "{exported}"
    );
}

#[tokio::test]
async fn the_console_admin_stream_sends_new_events_with_the_pages_filters() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let mine = vm_of(&alice, "alice-vm").await;
    let other = vm_of(&alice, "other-vm").await;
    let admin = sign_in(&app, &app.token).await;
    let (_, body) = page(&app, &admin, &format!("/console/admin/audit?vm={mine}")).await;
    let stream = body
        .split("data-stream=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .map(unescaped)
        .unwrap();
    assert!(
        stream.contains(&format!("vm={mine}")) && stream.contains("since="),
        "{stream}"
    );
    assert!(stream.starts_with("/console/streams/admin?"), "{stream}");
    let response = browser()
        .get(format!("{}{stream}", app.address))
        .header("cookie", &admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);

    for vm in [&other, &mine] {
        let _: Value = alice
            .json(
                "POST",
                &format!("/api/v1/vms/{vm}/extend"),
                Some(&json!({"hours": 1})),
                202,
            )
            .await;
    }
    let mut body = response.bytes_stream();
    let mut text = String::new();
    while !text.contains("\n\n") || !text.contains(&mine) {
        let chunk = tokio::time::timeout(Duration::from_secs(30), body.next())
            .await
            .expect("an event within 30 s")
            .unwrap()
            .unwrap();
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .expect("an event's data");
    let event: Value = serde_json::from_str(data.trim()).unwrap();
    assert_eq!(
        event["aggregate_id"],
        mine.as_str(),
        "only the page's VM: {text}"
    );
    assert!(event["position"].as_i64().is_some(), "{event}");
    // Sent without its name, so that the page's script hears every type.
    assert!(!text.lines().any(|l| l.starts_with("event:")), "{text}");
    assert!(!text.contains(&other), "{text}");
}

#[tokio::test]
async fn a_user_gets_the_403_page_for_the_audit_history_its_export_and_stream() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let cookie = sign_in(&app, &alice.token).await;
    let (status, body) = page(&app, &cookie, "/console/admin/audit").await;
    assert_eq!(status, 403);
    assert!(body.contains("Only admins"), "{body}");
    for path in ["/console/admin/audit/export", "/console/streams/admin"] {
        let response = browser()
            .get(format!("{}{path}", app.address))
            .header("cookie", &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 403, "{path}");
        let body = response.text().await.unwrap();
        assert!(!body.contains("\"position\""), "{path}: {body}");
    }
}
