//! The console's first pages, read over plain HTTP: the sign-in form with a token, the VM
//! list (a user's own VMs; an admin's: everyone's with owners), a VM's page, another
//! user's VM answered with a 404 page, and the style sheet under its content hash.

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp};
use crate::users::Caller;

pub(crate) async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

/// A browser that does not follow redirects, so the tests see them.
pub(crate) fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// Posts `token` to the sign-in form from the console's own page.
pub(crate) async fn post_sign_in(app: &TestApp, token: &str, next: &str) -> reqwest::Response {
    browser()
        .post(format!("{}/console/sign-in", app.address))
        .header("origin", &app.address)
        .form(&[("token", token), ("next", next)])
        .send()
        .await
        .unwrap()
}

/// Signs in with `token`; the `Cookie` header the browser sends afterwards.
pub(crate) async fn sign_in(app: &TestApp, token: &str) -> String {
    let response = post_sign_in(app, token, "/console").await;
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/console");
    let set = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(set.contains(attribute), "{set}");
    }
    // Plain http on loopback, as the tests serve it: the one case without `Secure`.
    assert!(!set.contains("Secure"), "{set}");
    set.split(';').next().unwrap().to_owned()
}

/// The status and body of `GET path` with `cookie`.
pub(crate) async fn page(app: &TestApp, cookie: &str, path: &str) -> (u16, String) {
    let mut request = browser().get(format!("{}{path}", app.address));
    if !cookie.is_empty() {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    if status != 404 || path.starts_with("/console/vms/") {
        let kind = response.headers()["content-type"].to_str().unwrap();
        assert!(kind.starts_with("text/html"), "{path}: {kind}");
    }
    (status, response.text().await.unwrap())
}

pub(crate) fn assert_is_a_page(body: &str) {
    assert!(body.contains("<html lang=\"en\">"), "{body}");
    assert!(body.contains("<main"), "{body}");
    assert!(body.contains("href=\"#content\""), "a skip link: {body}");
}

/// A VM named `name` requested by `caller` (template `medium` with grafana), once the read
/// model shows it; its id.
pub(crate) async fn vm_of(caller: &Caller, name: &str) -> String {
    let body = vm_request(json!({
        "name": name,
        "template": "medium",
        "taskservs": [{"name": "grafana"}],
    }));
    let vm: Value = caller.json("POST", "/api/v1/vms", Some(&body), 202).await;
    let id = vm["id"].as_str().unwrap().to_owned();
    // Read through the API first: it waits for the read model to hold the request.
    let _: Value = caller
        .json("GET", &format!("/api/v1/vms/{id}"), None, 200)
        .await;
    id
}

#[tokio::test]
async fn a_visitor_who_is_not_signed_in_is_shown_the_sign_in_form() {
    let app = app().await;
    for path in [
        "/console",
        "/console/vms",
        &format!("/console/vms/{}", uuid::Uuid::new_v4()),
    ] {
        let (status, body) = page(&app, "", path).await;
        assert_eq!(status, 401, "{path}");
        assert_is_a_page(&body);
        assert!(body.contains("action=\"/console/sign-in\""), "{body}");
        assert!(
            body.contains(&format!("name=\"next\" value=\"{path}\"")),
            "{body}"
        );
    }
    // A token that lets no one in shows the form again, without the token.
    let response = post_sign_in(&app, "pat_not-a-token", "/console").await;
    assert_eq!(response.status(), 401);
    let body = response.text().await.unwrap();
    assert!(
        body.contains("not valid") && !body.contains("pat_not-a-token"),
        "{body}"
    );
    // A form sent from another site is refused, however good its token.
    let response = browser()
        .post(format!("{}/console/sign-in", app.address))
        .header("origin", "https://elsewhere.test")
        .form(&[("token", app.token.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert!(response.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn a_user_sees_their_own_vms_and_another_users_vm_is_not_found() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let mine = vm_of(&alice, "alice-vm").await;
    let theirs = vm_of(&bob, "bob-vm").await;
    let cookie = sign_in(&app, &alice.token).await;

    for path in ["/console", "/console/vms"] {
        let (status, body) = page(&app, &cookie, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert_is_a_page(&body);
        assert!(body.contains("alice-vm"), "{body}");
        assert!(
            body.contains(&format!("href=\"/console/vms/{mine}\"")),
            "{body}"
        );
        assert!(
            !body.contains("bob-vm") && !body.contains(&theirs),
            "{body}"
        );
        assert!(
            body.contains("alice@example.test"),
            "who is signed in: {body}"
        );
    }
    let (status, body) = page(&app, &cookie, &format!("/console/vms/{theirs}")).await;
    assert_eq!(status, 404);
    assert_is_a_page(&body);
    assert!(!body.contains("bob-vm"), "{body}");
    // Not a VM id at all: the same page.
    let (status, _) = page(&app, &cookie, "/console/vms/nope").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn an_admin_sees_every_vm_with_its_owner() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    vm_of(&alice, "alice-vm").await;
    let theirs = vm_of(&bob, "bob-vm").await;
    let cookie = sign_in(&app, &app.token).await;

    let (status, body) = page(&app, &cookie, "/console").await;
    assert_eq!(status, 200, "{body}");
    for shown in [
        "alice-vm",
        "bob-vm",
        "alice@example.test",
        "bob@example.test",
    ] {
        assert!(body.contains(shown), "{shown}: {body}");
    }
    let (status, body) = page(&app, &cookie, &format!("/console/vms/{theirs}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("bob@example.test"), "{body}");
}

#[tokio::test]
async fn the_vm_page_shows_its_status_jobs_taskservs_and_history() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let id = vm_of(&alice, "alice-vm").await;
    let cookie = sign_in(&app, &alice.token).await;

    let (status, body) = page(&app, &cookie, &format!("/console/vms/{id}")).await;
    assert_eq!(status, 200, "{body}");
    assert_is_a_page(&body);
    assert!(body.contains("<h1>alice-vm</h1>"), "{body}");
    assert!(body.contains("id=\"status\">requested<"), "{body}");
    assert!(body.contains("<td>create</td>"), "its create job: {body}");
    assert!(body.contains("<td>grafana"), "its taskserv: {body}");
    assert!(body.contains(">pending<"), "the taskserv's state: {body}");
    assert!(body.contains("<td>Requested</td>"), "its history: {body}");
}

#[tokio::test]
async fn the_style_sheet_is_served_under_its_content_hash_with_a_long_cache() {
    let app = app().await;
    let (_, body) = page(&app, "", "/console").await;
    let start = body
        .find("/console/assets/console.")
        .expect("the sheet is linked");
    let href = &body[start..start + body[start..].find('"').unwrap()];
    assert!(href.ends_with(".css"), "{href}");

    let response = browser()
        .get(format!("{}{href}", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/css"));
    let cache = response.headers()["cache-control"].to_str().unwrap();
    assert!(
        cache.contains("max-age=31536000") && cache.contains("immutable"),
        "{cache}"
    );
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("prefers-color-scheme: dark"));

    let stale = browser()
        .get(format!(
            "{}/console/assets/console.0000000000000000.css",
            app.address
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 404);
}
