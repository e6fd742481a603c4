//! The admins' new console pages in a real headless Chromium: a template edited from its
//! form (a refusal beside its field first), the gauges page following a VM made meanwhile
//! without a reload, and axe-core finding no serious or critical violation on the catalog
//! forms, the gauges page, the filtered VM list and the create form with its params.

use daemon::Roles;
use domain::identity::Role;

use crate::browser::{Chromium, Scripts};
use crate::console::vm_of;
use crate::console_browser_support::{assert_accessible, sign_in};
use crate::helpers::spawn_app_with;

#[tokio::test]
async fn an_admin_edits_a_template_and_the_gauges_follow_a_vm_made_meanwhile() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let alice = app.user("alice@example.test", Role::User).await;
    let browser = Chromium::start(Scripts::On).await;
    sign_in(&browser, &app, &app.token).await;

    browser
        .goto(&format!("{}/console/admin/catalog", app.address))
        .await;
    browser
        .click("a[href='/console/admin/catalog/templates/local/small']")
        .await;
    browser
        .wait_for_text("main h1", 10, |h| h == "Template local/small")
        .await;
    browser.fill("#cpu", "0").await;
    browser.click("main form button[type=submit]").await;
    browser
        .wait_for_text("#cpu-error", 10, |e| e.contains("greater than 0"))
        .await;
    let violations = browser.accessibility_violations().await;
    assert!(violations.is_empty(), "the refused form: {violations:#?}");
    browser.fill("#cpu", "1").await;
    browser.fill("#name", "Tiny box").await;
    browser.click("main form button[type=submit]").await;
    browser
        .wait_for_text(".notice", 10, |n| n.contains("saved"))
        .await;
    browser
        .wait_for_text("main", 10, |m| m.contains("Tiny box (1 vCPU"))
        .await;

    browser
        .goto(&format!("{}/console/admin/gauges", app.address))
        .await;
    assert_eq!(browser.text("#jobs-queued").await, "0");
    browser
        .client
        .execute("window.stayed = true", vec![])
        .await
        .unwrap();
    vm_of(&alice, "meanwhile").await;
    browser
        .wait_for_text("#jobs-queued", 15, |q| q == "1")
        .await;
    browser
        .wait_for_text("#vms-by-provider", 5, |p| {
            p.contains("local") && p.contains('1')
        })
        .await;
    let stayed = browser
        .client
        .execute("return window.stayed === true", vec![])
        .await
        .unwrap();
    assert_eq!(
        stayed,
        serde_json::json!(true),
        "the page was not loaded again"
    );

    for path in [
        "/console/admin/gauges",
        "/console/admin/catalog",
        "/console/admin/catalog/new-provider",
        "/console/admin/catalog/new-template",
        "/console/admin/catalog/providers/local",
        "/console/admin/catalog/templates/local/medium",
        "/console/vms?status=requested&limit=1",
        "/console/vms/new",
    ] {
        assert_accessible(&browser, &app, path).await;
    }
}
