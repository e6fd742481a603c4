//! The console in a real headless Chromium: sign-in (with a token, and through the suite's
//! OpenID provider), a VM created on `local` from the form whose status and Terraform lines
//! arrive without a reload, a queued job cancelled, an extension and a destroy, the 403 and
//! 404 pages, a page read without JavaScript, and axe-core finding no serious or critical
//! violation on each page. `screenshots` (ignored; `make screenshots`) makes the PNGs of
//! docs/console/.

use std::path::PathBuf;

use daemon::Roles;
use domain::identity::Role;

use crate::browser::{Chromium, Scripts};
use crate::console::vm_of;
use crate::console_browser_support::{assert_accessible, create_from_the_form, sign_in};
use crate::helpers::spawn_app_with;
use crate::oidc_provider::{spawn_signed_in_app, TestProvider};

#[tokio::test]
async fn a_vm_made_from_the_form_comes_up_live_and_is_extended_and_destroyed() {
    let app = spawn_app_with(Roles::ALL).await;
    let alice = app.user("alice@example.test", Role::User).await;
    let browser = Chromium::start(Scripts::On).await;
    sign_in(&browser, &app, &alice.token).await;
    create_from_the_form(&browser, &app, "live-vm").await;
    browser
        .client
        .execute("window.stayed = true", vec![])
        .await
        .unwrap();

    // The status and Terraform's lines arrive over the streams, on the same page.
    browser
        .wait_for_text("#status", 120, |s| {
            ["provisioned", "initializing", "running"].contains(&s)
        })
        .await;
    browser
        .wait_for_text("#log", 10, |log| !log.is_empty())
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

    browser.fill("#hours", "2").await;
    browser.click("form[action$='/extend'] button").await;
    browser
        .wait_for_text(".notice", 10, |n| n.contains("extended"))
        .await;
    browser.click("form[action$='/destroy'] button").await;
    browser
        .wait_for_text(".notice", 10, |n| n.contains("destroyed"))
        .await;
    browser
        .wait_for_text("#status", 120, |s| s == "destroyed")
        .await;
}

#[tokio::test]
async fn a_queued_job_is_cancelled_and_a_user_meets_the_403_and_404_pages() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let mine = vm_of(&alice, "alice-vm").await;
    let theirs = vm_of(&bob, "bob-vm").await;
    let browser = Chromium::start(Scripts::On).await;
    sign_in(&browser, &app, &alice.token).await;

    browser
        .goto(&format!("{}/console/vms/{mine}", app.address))
        .await;
    assert_eq!(browser.text("#job-1 .status").await, "queued");
    browser.click("#job-1 form[action$='/cancel'] button").await;
    browser
        .wait_for_text("#job-1 .status", 10, |s| s == "cancelled")
        .await;

    browser
        .goto(&format!("{}/console/admin/users", app.address))
        .await;
    assert_eq!(browser.text("main h1").await, "Not allowed");
    browser
        .goto(&format!("{}/console/vms/{theirs}", app.address))
        .await;
    assert_eq!(browser.text("main h1").await, "Not found");

    for path in [
        "/console/vms".to_owned(),
        format!("/console/vms/{mine}"),
        "/console/vms/new".into(),
        "/console/clusters".into(),
        "/console/clusters/new".into(),
        "/console/keys".into(),
        "/console/tokens".into(),
        "/console/limits".into(),
        "/console/admin/users".into(),
        format!("/console/vms/{theirs}"),
    ] {
        assert_accessible(&browser, &app, &path).await;
    }
    // At a phone's width too.
    browser.resize(390, 844).await;
    assert_accessible(&browser, &app, &format!("/console/vms/{mine}")).await;
}

#[tokio::test]
async fn the_admin_pages_and_the_sign_in_page_are_accessible() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let browser = Chromium::start(Scripts::On).await;
    assert_accessible(&browser, &app, "/console/sign-in").await;
    sign_in(&browser, &app, &app.token).await;
    for path in [
        "/console/admin/users",
        "/console/admin/catalog",
        "/console/admin/policies",
        "/console/admin/dead-letters",
    ] {
        assert_accessible(&browser, &app, path).await;
    }
}

#[tokio::test]
async fn a_page_reads_and_a_form_works_without_javascript() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let alice = app.user("alice@example.test", Role::User).await;
    let mine = vm_of(&alice, "alice-vm").await;
    let browser = Chromium::start(Scripts::Off).await;
    sign_in(&browser, &app, &alice.token).await;
    browser
        .goto(&format!("{}/console/vms/{mine}", app.address))
        .await;
    assert_eq!(browser.text("main h1").await, "alice-vm");
    assert_eq!(browser.text("#status").await, "requested");
    browser.click("form[action$='/extend'] button").await;
    browser
        .wait_for_text(".notice", 10, |n| n.contains("extended"))
        .await;
}

#[tokio::test]
async fn a_user_signs_in_through_the_openid_provider() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Chromium::start(Scripts::On).await;
    browser.goto(&format!("{}/console", app.address)).await;
    browser.click("a[href^='/api/v1/auth/login']").await;
    // The provider's login page, then its consent page, then back to the console.
    for _ in 0..5 {
        let url = browser.client.current_url().await.unwrap();
        if url.as_str().starts_with(&app.address) && url.path().starts_with("/console") {
            break;
        }
        if browser
            .client
            .find(fantoccini::Locator::Css("input[name=login]"))
            .await
            .is_ok()
        {
            browser.fill("input[name=login]", "alice").await;
            browser.fill("input[name=password]", "alice-password").await;
        }
        browser.click("button[type=submit]").await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    browser
        .wait_for_text("main h1", 10, |h| h == "My VMs")
        .await;
    assert_eq!(
        browser.text("header form .muted").await,
        "alice@example.org"
    );
}

/// The PNGs of docs/console/ (`make screenshots`): the main pages, with a VM made on
/// `local` from the form.
#[tokio::test]
#[ignore = "makes docs/console/*.png: run by `make screenshots`"]
async fn screenshots() {
    let dir = std::env::var("SCREENSHOTS_DIR").map_or_else(
        |_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/console"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    let app = spawn_app_with(Roles::ALL).await;
    let alice = app.user("alice@example.test", Role::User).await;
    vm_of(&alice, "staging-db").await;
    let browser = Chromium::start(Scripts::On).await;
    browser.goto(&format!("{}/console", app.address)).await;
    browser.screenshot(&dir.join("sign-in.png")).await;
    sign_in(&browser, &app, &app.token).await;
    browser
        .goto(&format!("{}/console/vms/new", app.address))
        .await;
    browser.screenshot(&dir.join("create.png")).await;
    create_from_the_form(&browser, &app, "web-1").await;
    browser
        .wait_for_text("#status", 120, |s| {
            ["provisioned", "initializing", "running"].contains(&s)
        })
        .await;
    browser.screenshot(&dir.join("vm.png")).await;
    for (path, file) in [
        ("/console/vms", "vms.png"),
        ("/console/keys", "keys.png"),
        ("/console/limits", "limits.png"),
        ("/console/admin/users", "users.png"),
        (
            "/console/admin/catalog/templates/local/small",
            "template.png",
        ),
        ("/console/admin/gauges", "gauges.png"),
        ("/console/clusters/new", "cluster-new.png"),
    ] {
        browser.goto(&format!("{}{path}", app.address)).await;
        browser.screenshot(&dir.join(file)).await;
    }
    browser.resize(390, 844).await;
    browser.goto(&format!("{}/console/vms", app.address)).await;
    browser.screenshot(&dir.join("vms-phone.png")).await;
}
