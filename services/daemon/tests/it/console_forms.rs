//! The console's forms over plain HTTP, as a browser without JavaScript sends them: each
//! posts, is answered `303` to the page that shows what it did (or with the page again and
//! the refusal beside its field), and is refused from another site's page.

use domain::identity::Role;
use serde_json::Value;

use crate::console::{app, assert_is_a_page, browser, page, sign_in, vm_of};
use crate::helpers::{TestApp, SSH_KEY};

/// Posts `fields` to `path` from the console's own page, with `cookie`.
pub(crate) async fn post(
    app: &TestApp,
    cookie: &str,
    path: &str,
    fields: &[(&str, &str)],
) -> reqwest::Response {
    browser()
        .post(format!("{}{path}", app.address))
        .header("origin", &app.address)
        .header("cookie", cookie)
        .form(fields)
        .send()
        .await
        .unwrap()
}

pub(crate) fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

/// The VM's status and its jobs' states, through the API.
async fn vm_json(app: &TestApp, token: &str, id: &str) -> Value {
    app.client
        .get(format!("{}/api/v1/vms/{id}", app.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_vm_is_created_from_the_form_and_a_refusal_is_shown_beside_its_field() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let cookie = sign_in(&app, &alice.token).await;

    let (status, body) = page(&app, &cookie, "/console/vms/new").await;
    assert_eq!(status, 200, "{body}");
    assert_is_a_page(&body);
    for shown in [
        "value=\"local/small\"",
        "name=\"taskserv\"",
        "My address",
        "Your limits",
        "<code>",
    ] {
        assert!(body.contains(shown), "{shown}: {body}");
    }

    let mut fields = vec![
        ("name", "form-vm"),
        ("template", "local/small"),
        ("ssh_public_key", SSH_KEY),
        ("networks", "192.0.2.0/24"),
        ("duration_hours", "4"),
    ];
    // A name the domain refuses: the form again, the reason beside the name.
    fields[0] = ("name", "not a name!");
    let response = post(&app, &cookie, "/console/vms", &fields).await;
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(body.contains("id=\"name-error\""), "{body}");
    assert!(
        body.contains("value=\"not a name!\""),
        "what was typed is kept: {body}"
    );
    // Too wide a network: refused by the application layer, beside the networks.
    fields[0] = ("name", "form-vm");
    fields[3] = ("networks", "0.0.0.0/0");
    let response = post(&app, &cookie, "/console/vms", &fields).await;
    assert_eq!(response.status(), 422);
    let body = response.text().await.unwrap();
    assert!(body.contains("id=\"networks-error\""), "{body}");

    fields[3] = ("networks", "192.0.2.0/24");
    let response = post(&app, &cookie, "/console/vms", &fields).await;
    assert_eq!(response.status(), 303);
    let to = location(&response);
    assert!(
        to.starts_with("/console/vms/") && to.ends_with("?done=created"),
        "{to}"
    );
    let (status, body) = page(&app, &cookie, &to).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("<h1>form-vm</h1>") && body.contains("was requested"),
        "{body}"
    );

    // From another site's page: refused, nothing made.
    let response = browser()
        .post(format!("{}/console/vms", app.address))
        .header("origin", "https://elsewhere.test")
        .header("cookie", &cookie)
        .form(&fields)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
}

#[tokio::test]
async fn a_queued_job_is_cancelled_a_vm_extended_and_destroyed_from_its_page() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let id = vm_of(&alice, "alice-vm").await;
    let cookie = sign_in(&app, &alice.token).await;
    let before = vm_json(&app, &alice.token, &id).await;

    let response = post(
        &app,
        &cookie,
        &format!("/console/vms/{id}/extend"),
        &[("hours", "2")],
    )
    .await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        location(&response),
        format!("/console/vms/{id}?done=extended")
    );
    let after = vm_json(&app, &alice.token, &id).await;
    assert_ne!(before["expires_at"], after["expires_at"], "{after}");
    // Out of bounds: the page again, with the reason.
    let response = post(
        &app,
        &cookie,
        &format!("/console/vms/{id}/extend"),
        &[("hours", "500")],
    )
    .await;
    assert_eq!(response.status(), 422);
    assert!(response.text().await.unwrap().contains("id=\"refusal\""));

    // The create job waits (no dispatcher): cancelled from its row's button.
    let response = post(
        &app,
        &cookie,
        &format!("/console/vms/{id}/jobs/1/cancel"),
        &[],
    )
    .await;
    assert_eq!(response.status(), 303);
    let (_, body) = page(&app, &cookie, &format!("/console/vms/{id}")).await;
    assert!(body.contains("cancelled"), "{body}");

    let response = post(&app, &cookie, &format!("/console/vms/{id}/destroy"), &[]).await;
    assert_eq!(response.status(), 303);
    let vm = vm_json(&app, &alice.token, &id).await;
    let status = vm["status"].as_str().unwrap();
    assert!(
        ["destroy_requested", "destroying", "destroyed"].contains(&status),
        "{vm}"
    );
}

#[tokio::test]
async fn a_refresh_is_queued_from_the_vms_page_and_refused_once_it_is_destroyed() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let id = vm_of(&alice, "alice-vm").await;
    let cookie = sign_in(&app, &alice.token).await;

    let response = post(&app, &cookie, &format!("/console/vms/{id}/refresh"), &[]).await;
    assert_eq!(response.status(), 303);
    assert_eq!(
        location(&response),
        format!("/console/vms/{id}?done=refresh")
    );
    let vm = vm_json(&app, &alice.token, &id).await;
    let actions: Vec<&str> = vm["queue"]
        .as_array()
        .unwrap()
        .iter()
        .chain(vm["job"].as_object().map(|_| &vm["job"]))
        .map(|job| job["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"refresh"), "{vm}");
    let (_, body) = page(&app, &cookie, &format!("/console/vms/{id}?done=refresh")).await;
    assert!(body.contains("A refresh job is queued"), "{body}");

    let response = post(&app, &cookie, &format!("/console/vms/{id}/destroy"), &[]).await;
    assert_eq!(response.status(), 303);
    let response = post(&app, &cookie, &format!("/console/vms/{id}/refresh"), &[]).await;
    assert_eq!(response.status(), 409);
    assert!(response.text().await.unwrap().contains("id=\"refusal\""));
}

#[tokio::test]
async fn another_users_vm_and_the_admin_pages_are_closed_to_a_user() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let theirs = vm_of(&bob, "bob-vm").await;
    let cookie = sign_in(&app, &alice.token).await;

    for action in ["destroy", "extend", "refresh", "retry", "jobs/1/cancel"] {
        let response = post(
            &app,
            &cookie,
            &format!("/console/vms/{theirs}/{action}"),
            &[("hours", "1")],
        )
        .await;
        assert_eq!(response.status(), 404, "{action}");
        assert!(!response.text().await.unwrap().contains("bob-vm"));
    }
    for path in [
        "/console/admin/users",
        "/console/admin/catalog",
        "/console/admin/policies",
        "/console/admin/dead-letters",
    ] {
        let (status, body) = page(&app, &cookie, path).await;
        assert_eq!(status, 403, "{path}");
        assert_is_a_page(&body);
        assert!(body.contains("Only admins"), "{body}");
    }
    let response = post(&app, &cookie, "/console/admin/policies/reload", &[]).await;
    assert_eq!(response.status(), 403);

    let admin = sign_in(&app, &app.token).await;
    for path in [
        "/console/admin/users",
        "/console/admin/catalog",
        "/console/admin/policies",
        "/console/admin/dead-letters",
    ] {
        let (status, body) = page(&app, &admin, path).await;
        assert_eq!(status, 200, "{path}: {body}");
    }
    let (_, body) = page(&app, &admin, "/console/admin/users").await;
    assert!(body.contains("alice@example.test"), "{body}");
    // An admin disables alice: her next page is the sign-in form.
    let alice_id = alice.id.clone();
    let response = post(
        &app,
        &admin,
        &format!("/console/admin/users/{alice_id}"),
        &[("role", "user"), ("status", "disabled")],
    )
    .await;
    assert_eq!(response.status(), 303);
    let (status, _) = page(&app, &cookie, "/console/vms").await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn keys_and_tokens_are_made_listed_and_removed_and_secrets_shown_once() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let cookie = sign_in(&app, &alice.token).await;

    let response = post(
        &app,
        &cookie,
        "/console/keys",
        &[("name", "laptop"), ("public_key", SSH_KEY)],
    )
    .await;
    assert_eq!(response.status(), 303);
    let (_, body) = page(&app, &cookie, "/console/keys").await;
    assert!(
        body.contains("laptop") && body.contains("SHA256:"),
        "{body}"
    );
    // The same key again: refused, beside the add form.
    let response = post(
        &app,
        &cookie,
        "/console/keys",
        &[("name", "again"), ("public_key", SSH_KEY)],
    )
    .await;
    assert_eq!(response.status(), 409);
    assert!(response.text().await.unwrap().contains("id=\"add-error\""));

    let response = post(&app, &cookie, "/console/keys/generate", &[("name", "made")]).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    assert!(body.contains("BEGIN OPENSSH PRIVATE KEY"), "{body}");
    let (_, body) = page(&app, &cookie, "/console/keys").await;
    assert!(
        !body.contains("PRIVATE KEY") && body.contains("made"),
        "{body}"
    );
    let keys: Value = alice.json("GET", "/api/v1/ssh-keys", None, 200).await;
    let first = keys[0]["id"].as_str().unwrap().to_owned();
    let response = post(&app, &cookie, &format!("/console/keys/{first}/delete"), &[]).await;
    assert_eq!(response.status(), 303);
    let keys: Value = alice.json("GET", "/api/v1/ssh-keys", None, 200).await;
    assert_eq!(keys.as_array().unwrap().len(), 1, "{keys}");

    let response = post(
        &app,
        &cookie,
        "/console/tokens",
        &[("name", "ci"), ("days", "30")],
    )
    .await;
    assert_eq!(response.status(), 201);
    let body = response.text().await.unwrap();
    let start = body.find("value=\"pat_").expect("the secret is shown") + 7;
    let secret = &body[start..start + 68];
    let (_, body) = page(&app, &cookie, "/console/tokens").await;
    assert!(body.contains("ci") && !body.contains(secret), "{body}");
    let me = app
        .client
        .get(format!("{}/api/v1/me", app.address))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 200, "the token works");
    let tokens: Value = alice.json("GET", "/api/v1/tokens", None, 200).await;
    let ci = tokens
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ci")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let response = post(&app, &cookie, &format!("/console/tokens/{ci}/revoke"), &[]).await;
    assert_eq!(response.status(), 303);
    let me = app
        .client
        .get(format!("{}/api/v1/me", app.address))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    assert_eq!(me.status(), 401, "revoked");

    let (status, body) = page(&app, &cookie, "/console/limits").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("Longest duration") && body.contains("<code>"),
        "{body}"
    );
}

#[tokio::test]
async fn the_root_is_the_console_and_its_streams_need_the_consoles_caller() {
    let app = app().await;
    let alice = app.user("alice@example.test", Role::User).await;
    let bob = app.user("bob@example.test", Role::User).await;
    let theirs = vm_of(&bob, "bob-vm").await;
    let response = browser()
        .get(format!("{}/", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 303);
    assert_eq!(location(&response), "/console");

    let stream = |cookie: String, path: String| {
        let app = &app;
        async move {
            browser()
                .get(format!("{}{path}", app.address))
                .header("cookie", cookie)
                .send()
                .await
                .unwrap()
        }
    };
    let response = stream(String::new(), "/console/streams/vms".into()).await;
    assert_eq!(response.status(), 401);
    let cookie = sign_in(&app, &alice.token).await;
    let response = stream(cookie.clone(), format!("/console/streams/vms/{theirs}")).await;
    assert_eq!(response.status(), 404);
    let response = stream(cookie, "/console/streams/vms".into()).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
}

#[tokio::test]
async fn an_admin_disables_and_moves_a_template_in_the_catalog() {
    let app = app().await;
    let admin = sign_in(&app, &app.token).await;
    let (status, body) = page(&app, &admin, "/console/admin/catalog").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("<code>small</code>"), "{body}");
    let templates = |app: &TestApp| {
        let client = app.client.clone();
        let url = format!("{}/api/v1/admin/templates?provider=local", app.address);
        let token = app.token.clone();
        async move {
            let all: Value = client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            all.as_array().unwrap().clone()
        }
    };
    let before = templates(&app).await;
    let fields = [
        ("provider", "local"),
        ("template", "small"),
        ("action", "disable"),
    ];
    let response = post(&app, &admin, "/console/admin/catalog", &fields).await;
    assert_eq!(response.status(), 303);
    let after = templates(&app).await;
    let small = after.iter().find(|t| t["id"] == "small").unwrap();
    assert_eq!(small["enabled"], false, "{small}");

    let second = before[1]["id"].as_str().unwrap().to_owned();
    let fields = [
        ("provider", "local"),
        ("template", second.as_str()),
        ("action", "up"),
    ];
    let response = post(&app, &admin, "/console/admin/catalog", &fields).await;
    assert_eq!(response.status(), 303);
    let after = templates(&app).await;
    assert_eq!(after[0]["id"], second.as_str(), "{after:?}");
}
