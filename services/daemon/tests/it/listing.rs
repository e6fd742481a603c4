//! The VM list: pages through every VM once, filters by status, provider and archived;
//! archiving a destroyed VM hides it from the default list and keeps its history.

use std::collections::HashSet;

use daemon::Roles;
use serde_json::json;

use crate::helpers::{spawn_app, spawn_app_with, TestApp};
use crate::wire::{kinds, Problem, Vm, VmPage};

async fn page(app: &TestApp, query: &str) -> VmPage {
    app.get_json(&format!("/api/v1/vms?{query}")).await
}

async fn ids(app: &TestApp, query: &str) -> Vec<String> {
    page(app, query)
        .await
        .items
        .into_iter()
        .map(|v| v.id)
        .collect()
}

#[tokio::test]
async fn paging_through_250_vms_shows_each_once_newest_first() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let mut created = vec![];
    for n in 0..250 {
        created.push(app.create_ok(json!({"name": format!("vm-{n}")})).await);
    }
    let mut seen = vec![];
    let mut sizes = vec![];
    let mut after: Option<String> = None;
    loop {
        let query = match &after {
            Some(cursor) => format!("limit=100&after={cursor}"),
            None => "limit=100".to_owned(),
        };
        let page = page(&app, &query).await;
        sizes.push(page.items.len());
        seen.extend(page.items.into_iter().map(|v| v.id));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(sizes, [100, 100, 50]);
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), 250, "no VM twice");
    created.reverse();
    assert_eq!(seen, created, "every VM, newest first");

    // 100 a page unless asked otherwise.
    let first = page(&app, "").await;
    assert_eq!(first.items.len(), 100);
    assert_eq!(first.items[0].id, created[0]);
    let all = page(&app, "limit=1000").await;
    assert_eq!(all.items.len(), 250);
    assert_eq!(all.next, None);
}

#[tokio::test]
async fn a_wrong_list_parameter_is_named() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    app.create_ok(json!({})).await;
    for (query, field) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("limit=ten", "limit"),
        ("after=yesterday", "after"),
        ("status=running,lost", "status"),
        ("archived=perhaps", "archived"),
        ("colour=red", "colour"),
    ] {
        let response = app
            .get(&format!("/api/v1/vms?{query}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 422, "{query}");
        let problem: Problem = response.json().await.unwrap();
        assert_eq!(problem.code, "invalid_field");
        assert!(
            problem.detail.starts_with(&format!("{field}: ")),
            "{query}: {problem:?}"
        );
    }
}

#[tokio::test]
async fn the_list_filters_by_status_and_provider() {
    let app = spawn_app().await;
    let good = app.create_ok(json!({"name": "good"})).await;
    let bad = app
        .create_ok(json!({"name": "bad", "template": "broken"}))
        .await;
    app.wait_for_status(&good, "provisioned").await;
    app.wait_for_status(&bad, "failed").await;

    assert_eq!(ids(&app, "status=failed").await, [bad.as_str()]);
    assert_eq!(ids(&app, "status=provisioned").await, [good.as_str()]);
    let both = [bad.clone(), good.clone()];
    assert_eq!(ids(&app, "status=provisioned,failed").await, both);
    assert_eq!(ids(&app, "status=failed&status=provisioned").await, both);
    assert!(ids(&app, "status=destroyed").await.is_empty());
    assert_eq!(ids(&app, "provider=local").await, both);
    assert!(ids(&app, "provider=nrec").await.is_empty());
    assert_eq!(ids(&app, "provider=local&status=failed").await, [bad]);
}

#[tokio::test]
async fn a_destroyed_vm_is_archived_hidden_from_the_list_and_keeps_its_history() {
    let app = spawn_app().await;
    let kept = app.create_ok(json!({"name": "kept"})).await;
    let gone = app.create_ok(json!({"name": "gone"})).await;
    app.wait_for_status(&kept, "provisioned").await;
    app.wait_for_status(&gone, "provisioned").await;
    let archive = format!("/api/v1/vms/{gone}/archive");

    let problem: Problem = app.post_json(&archive, &json!({}), 409).await;
    assert_eq!(problem.code, "conflict");
    assert!(
        problem
            .detail
            .contains("only a destroyed VM can be archived"),
        "{problem:?}"
    );
    let unknown = format!("/api/v1/vms/{}/archive", uuid::Uuid::new_v4());
    app.post_json::<Problem>(&unknown, &json!({}), 404).await;

    app.delete_json::<Vm>(&format!("/api/v1/vms/{gone}"), 202)
        .await;
    app.wait_for_status(&gone, "destroyed").await;
    let before = app.events(&gone).await;
    let archived: Vm = app.post_json(&archive, &json!({}), 200).await;
    assert!(archived.archived);
    assert_eq!(archived.status, "destroyed");
    let again: Vm = app.post_json(&archive, &json!({}), 200).await;
    assert!(again.archived);

    let after = app.events(&gone).await;
    assert_eq!(after[..before.len()], before[..], "the history is kept");
    assert_eq!(kinds(&after[before.len()..]), ["Archived"], "archived once");
    assert!(app.vm(&gone).await.archived);

    assert_eq!(ids(&app, "").await, [kept.as_str()], "hidden by default");
    assert_eq!(ids(&app, "archived=false").await, [kept.as_str()]);
    assert_eq!(ids(&app, "archived=true").await, [gone.as_str()]);
    assert_eq!(ids(&app, "archived=all").await, [gone.clone(), kept]);
    assert_eq!(ids(&app, "archived=true&status=destroyed").await, [gone]);
}
