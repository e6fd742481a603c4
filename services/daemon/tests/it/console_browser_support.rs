//! What the console's browser tests share: signing in with a token, checking a page with
//! axe-core, and making a VM from the form.

use crate::browser::Chromium;
use crate::helpers::{TestApp, SSH_KEY};

/// Signs in through the console's token form, from `/console`.
pub async fn sign_in(browser: &Chromium, app: &TestApp, token: &str) {
    browser.goto(&format!("{}/console", app.address)).await;
    browser.fill("#token", token).await;
    browser
        .click("form[action='/console/sign-in'] button[type=submit]")
        .await;
    browser
        .wait_for_text("main h1", 10, |h| h.ends_with("VMs"))
        .await;
}

/// Opens `path` and asserts axe-core finds no serious or critical violation there.
pub async fn assert_accessible(browser: &Chromium, app: &TestApp, path: &str) {
    browser.goto(&format!("{}{path}", app.address)).await;
    let violations = browser.accessibility_violations().await;
    assert!(violations.is_empty(), "{path}: {violations:#?}");
}

/// Fills and sends the create form; lands on the VM's page.
pub async fn create_from_the_form(browser: &Chromium, app: &TestApp, name: &str) {
    browser
        .goto(&format!("{}/console/vms/new", app.address))
        .await;
    browser.fill("#name", name).await;
    browser.click("#template option[value='local/small']").await;
    browser.fill("#ssh_public_key", SSH_KEY).await;
    browser.fill("#networks", "192.0.2.0/24").await;
    browser
        .click("form[action='/console/vms'] button[type=submit]")
        .await;
    browser.wait_for_text("main h1", 10, |h| h == name).await;
}
