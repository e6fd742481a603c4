//! The console's pages of the past in a real headless Chromium: an admin filters the audit
//! history, follows it live and sees a new event arrive without a reload, opens a VM as it
//! was before its destroy from its history, and a job's page; axe-core finds no serious or
//! critical violation on them. `screenshots` (ignored; `make screenshots`) adds their PNGs
//! to docs/console/.

use std::path::PathBuf;

use daemon::Roles;
use serde_json::{json, Value};

use crate::browser::{Chromium, Scripts};
use crate::console_browser_support::{assert_accessible, sign_in};
use crate::helpers::{spawn_app_with, TestApp};

/// A VM made on `local` and destroyed; its id and the position of its last event before
/// the destroy was asked.
async fn destroyed_vm(app: &TestApp, name: &str) -> (String, i64) {
    let vm = app.create_ok(json!({"name": name})).await;
    app.wait_for_status(&vm, "provisioned").await;
    let _: Value = app.delete_json(&format!("/api/v1/vms/{vm}"), 202).await;
    app.wait_for_status(&vm, "destroyed").await;
    let page: Value = app
        .get_json(&format!("/api/v1/audit?vm={vm}&exclude_logs=true"))
        .await;
    let items = page["items"].as_array().unwrap();
    let destroy = items
        .iter()
        .position(|e| e["type"] == "DestroyRequested")
        .unwrap();
    let before = items[destroy - 1]["position"].as_i64().unwrap();
    (vm, before)
}

async fn column(browser: &Chromium, css: &str) -> Vec<String> {
    let mut texts = vec![];
    for cell in browser
        .client
        .find_all(fantoccini::Locator::Css(css))
        .await
        .unwrap()
    {
        texts.push(cell.text().await.unwrap());
    }
    texts
}

#[tokio::test]
async fn an_admin_filters_the_audit_follows_it_live_and_opens_a_vm_as_it_was() {
    let app = spawn_app_with(Roles::ALL).await;
    let (past, before) = destroyed_vm(&app, "past-vm").await;
    let live = app.create_ok(json!({"name": "live-vm"})).await;
    app.wait_for_status(&live, "provisioned").await;
    let browser = Chromium::start(Scripts::On).await;
    sign_in(&browser, &app, &app.token).await;

    // Filtered by VM and types from the form.
    browser
        .goto(&format!("{}/console/admin/audit", app.address))
        .await;
    browser.fill("#vm", &past).await;
    browser.fill("#type", "Requested, DestroyRequested").await;
    browser.click("#audit-filters button[type=submit]").await;
    // The page before had every type; the filtered one has those two only.
    browser
        .wait_for_text("#audit-events tbody", 10, |t| {
            t.contains("DestroyRequested") && !t.contains("JobRequested")
        })
        .await;
    assert_eq!(
        column(&browser, "#audit-events tbody .type").await,
        ["Requested", "DestroyRequested"]
    );

    // Followed live with other filters: a new event arrives on the same page.
    browser.fill("#vm", &live).await;
    browser.fill("#type", "ExpiryExtended").await;
    browser.click("#audit-filters button[type=submit]").await;
    browser
        .wait_for_text("#no-events", 10, |t| t.starts_with("No events"))
        .await;
    browser
        .client
        .execute("window.stayed = true", vec![])
        .await
        .unwrap();
    browser.click("#follow").await;
    browser
        .wait_for_text("#follow-state", 10, |t| t == "Following live.")
        .await;
    let _: Value = app
        .post_json(
            &format!("/api/v1/vms/{live}/extend"),
            &json!({"hours": 1}),
            202,
        )
        .await;
    let row = browser
        .wait_for_text("#live-events tr", 30, |t| t.contains("ExpiryExtended"))
        .await;
    assert!(row.contains(&live), "{row}");
    let stayed = browser
        .client
        .execute("return window.stayed === true", vec![])
        .await
        .unwrap();
    assert_eq!(stayed, json!(true), "the page was not loaded again");

    // The VM as it was before its destroy, from its page's history.
    browser
        .goto(&format!("{}/console/vms/{past}", app.address))
        .await;
    assert_eq!(browser.text("#status").await, "destroyed");
    browser
        .click(&format!("a[href='/console/vms/{past}?at={before}']"))
        .await;
    browser
        .wait_for_text("#past", 10, |t| t.contains(&format!("position {before}")))
        .await;
    assert_eq!(browser.text("#status").await, "provisioned");
    browser.click("#now").await;
    browser
        .wait_for_text("#status", 10, |s| s == "destroyed")
        .await;

    for path in [
        format!("/console/admin/audit?vm={past}"),
        format!("/console/vms/{past}?at={before}"),
        format!("/console/vms/{past}?at=yesterday"),
        format!("/console/vms/{past}/jobs/1"),
    ] {
        assert_accessible(&browser, &app, &path).await;
    }
}

/// The PNGs of the audit history, a VM as it was and a job's output (`make screenshots`).
#[tokio::test]
#[ignore = "makes docs/console/*.png: run by `make screenshots`"]
async fn screenshots() {
    let dir = std::env::var("SCREENSHOTS_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/console"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    let app = spawn_app_with(Roles::ALL).await;
    let (vm, before) = destroyed_vm(&app, "web-1").await;
    let browser = Chromium::start(Scripts::On).await;
    sign_in(&browser, &app, &app.token).await;
    for (path, file) in [
        ("/console/admin/audit?limit=15".to_owned(), "audit.png"),
        (format!("/console/vms/{vm}?at={before}"), "vm-at.png"),
        (format!("/console/vms/{vm}/jobs/1"), "job.png"),
    ] {
        browser.goto(&format!("{}{path}", app.address)).await;
        browser.screenshot(&dir.join(file)).await;
    }
}
