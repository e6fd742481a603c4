//! Sign-in for browsers through the real OpenID provider of `tests/oidc/`: the whole flow,
//! the session cookie, a replayed `state`, open redirects, CSRF, and the user's status and
//! role read from the database on every request.

use reqwest::Method;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::helpers::{expect_json, TestApp, SSH_KEY};
use crate::oidc_provider::{spawn_signed_in_app, Browser, TestProvider};

pub(crate) async fn status(browser: &Browser, app: &TestApp) -> Value {
    let response = browser
        .request(app, Method::GET, "/api/v1/auth/status")
        .send()
        .await
        .unwrap();
    expect_json(response, 200).await
}

fn session_cookie(response: &reqwest::Response) -> String {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("provisioning_session="))
        .expect("a session cookie")
}

async fn add_key(browser: &Browser, app: &TestApp, name: &str) -> reqwest::Response {
    browser
        .request(app, Method::POST, "/api/v1/ssh-keys")
        .json(&json!({"name": name, "public_key": SSH_KEY}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_browser_signs_in_through_the_provider_uses_the_api_and_signs_out() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    assert_eq!(
        status(&browser, &app).await,
        json!({"authenticated": false, "user": null})
    );

    // The login redirects to the provider with PKCE, a state and a nonce.
    let login = browser
        .client
        .get(format!("{}/api/v1/auth/login?return_to=/vms", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let to = reqwest::Url::parse(login.headers()["location"].to_str().unwrap()).unwrap();
    assert!(to
        .as_str()
        .starts_with(&format!("{}/auth?", provider.issuer)));
    let params: std::collections::HashMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(params["code_challenge_method"], "S256");
    assert_eq!(params["response_type"], "code");
    assert_eq!(params["client_id"], "provisioning");
    for name in ["code_challenge", "state", "nonce"] {
        assert!(params[name].len() >= 22, "{name}: {}", params[name]);
    }
    assert_eq!(
        params["redirect_uri"],
        format!("{}/api/v1/auth/callback", app.address)
    );

    // Through the provider's login and consent pages, and back.
    let back_to = format!("{}/api/v1/auth/callback", app.address);
    let callback = browser
        .authorize(to.as_str(), &back_to, "alice", "alice-password")
        .await;
    let signed_in = browser.client.get(&callback).send().await.unwrap();
    assert_eq!(signed_in.status(), 303);
    assert_eq!(signed_in.headers()["location"], "/vms");
    let cookie = session_cookie(&signed_in);
    let attributes: Vec<&str> = cookie.split("; ").collect();
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/"] {
        assert!(attributes.contains(&attribute), "{cookie}");
    }
    // Plain http on loopback: no `Secure`, or the browser would never send it back.
    assert!(!attributes.contains(&"Secure"), "{cookie}");
    let id = attributes[0].trim_start_matches("provisioning_session=");
    assert!(id.len() >= 22, "at least 128 bits: {id}");

    // Stored by its hash only.
    let stored: Vec<Vec<u8>> = store::sqlx::query_scalar("SELECT id_hash FROM sessions")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(stored, [Sha256::digest(id.as_bytes()).to_vec()]);

    let me = status(&browser, &app).await;
    assert_eq!(me["authenticated"], true);
    assert_eq!(me["user"]["email"], "alice@example.org");
    assert_eq!(me["user"]["name"], "Alice Example");
    assert_eq!(me["user"]["role"], "user");
    assert_eq!(me["user"]["groups"], json!(["gpu-users", "staff"]));

    // The API with the cookie alone: a read, and a change from the site's own pages.
    let list = browser
        .request(&app, Method::GET, "/api/v1/vms")
        .send()
        .await
        .unwrap();
    assert_eq!(list.status(), 200);
    assert_eq!(add_key(&browser, &app, "laptop").await.status(), 201);

    let logout = browser
        .request(&app, Method::POST, "/api/v1/auth/logout")
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), 200);
    assert!(session_cookie(&logout).contains("Max-Age=0"));
    let out: Value = logout.json().await.unwrap();
    let end = reqwest::Url::parse(out["end_session_url"].as_str().unwrap()).unwrap();
    assert!(end
        .as_str()
        .starts_with(&format!("{}/session/end?", provider.issuer)));
    assert!(end.query_pairs().any(|(k, _)| k == "id_token_hint"));
    // The provider takes it: it asks the user to confirm signing out there.
    let page = browser.client.get(end).send().await.unwrap();
    assert_eq!(page.status(), 200, "{}", page.text().await.unwrap());

    // The session is gone: from the browser, and for the old cookie sent again.
    assert_eq!(status(&browser, &app).await["authenticated"], false);
    let replayed = reqwest::Client::new()
        .get(format!("{}/api/v1/vms", app.address))
        .header("cookie", format!("provisioning_session={id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(replayed.status(), 401);
    let sessions: i64 = store::sqlx::query_scalar("SELECT count(*) FROM sessions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 0);
}

#[tokio::test]
async fn a_state_works_once() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    let login = browser
        .client
        .get(format!("{}/api/v1/auth/login", app.address))
        .send()
        .await
        .unwrap();
    let bound = login
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("provisioning_login="))
        .expect("a login cookie");
    let bound = bound.split(';').next().unwrap().to_owned();
    let back_to = format!("{}/api/v1/auth/callback", app.address);
    let callback = browser
        .authorize(
            login.headers()["location"].to_str().unwrap(),
            &back_to,
            "alice",
            "alice-password",
        )
        .await;
    let first = browser.client.get(&callback).send().await.unwrap();
    assert_eq!(first.status(), 303);

    // Again, even with the browser's own login cookie.
    let again = reqwest::Client::new()
        .get(&callback)
        .header("cookie", &bound)
        .send()
        .await
        .unwrap();
    let body: Value = expect_json(again, 400).await;
    assert!(body["detail"].as_str().unwrap().contains("state"), "{body}");
    let made_up = reqwest::Url::parse_with_params(
        &format!("{}/api/v1/auth/callback", app.address),
        &[("code", "x"), ("state", "never-issued")],
    )
    .unwrap();
    let unknown = Browser::new().client.get(made_up).send().await.unwrap();
    assert_eq!(unknown.status(), 400);
    let sessions: i64 = store::sqlx::query_scalar("SELECT count(*) FROM sessions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 1, "only the first callback signed in");
}

#[tokio::test]
async fn return_to_must_be_a_path_of_this_site() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let client = Browser::new().client;
    let login = |return_to: &str| {
        let url = reqwest::Url::parse_with_params(
            &format!("{}/api/v1/auth/login", app.address),
            &[("return_to", return_to)],
        )
        .unwrap();
        client.get(url).send()
    };
    for evil in [
        "//evil.example/",
        "/\\evil.example",
        "\\\\evil.example",
        "https://evil.example/",
        "http:evil.example",
        "evil.example",
        "/\t/evil.example",
        "/\r\nLocation: https://evil.example/",
    ] {
        let response = login(evil).await.unwrap();
        let body: Value = expect_json(response, 400).await;
        assert!(
            body["detail"].as_str().unwrap().contains("return_to"),
            "{evil:?}: {body}"
        );
    }
    let logins: i64 = store::sqlx::query_scalar("SELECT count(*) FROM oidc_logins")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(logins, 0, "a refused login records nothing");

    // A path of the site is where the browser lands.
    let browser = Browser::new();
    let callback = browser
        .callback_url(&app, "alice", "alice-password", "/vms%3Ftab%3Dlogs")
        .await;
    let signed_in = browser.client.get(&callback).send().await.unwrap();
    assert_eq!(signed_in.headers()["location"], "/vms?tab=logs");
}

#[tokio::test]
async fn a_change_with_the_cookie_from_another_site_is_refused() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    assert_eq!(
        browser
            .sign_in(&app, "alice", "alice-password")
            .await
            .status(),
        303
    );
    let key = json!({"name": "laptop", "public_key": SSH_KEY});
    let url = format!("{}/api/v1/ssh-keys", app.address);
    let foreign = browser
        .client
        .post(&url)
        .header("origin", "http://evil.example")
        .json(&key)
        .send()
        .await
        .unwrap();
    let body: Value = expect_json(foreign, 403).await;
    assert_eq!(body["code"], "forbidden");
    let nameless = browser.client.post(&url).json(&key).send().await.unwrap();
    assert_eq!(nameless.status(), 403);
    let logout = browser
        .client
        .post(format!("{}/api/v1/auth/logout", app.address))
        .header("origin", "http://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(
        logout.status(),
        403,
        "another site cannot sign the user out"
    );

    // Nothing was registered; the session still works.
    let keys: Value = expect_json(
        browser
            .request(&app, Method::GET, "/api/v1/ssh-keys")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(keys.as_array().map(Vec::len), Some(0), "{keys}");
    // A page of the site named by `Referer` alone (no `Origin`) is fine.
    let referred = browser
        .client
        .post(&url)
        .header("referer", format!("{}/vms", app.address))
        .json(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(referred.status(), 201);
}

async fn set_user(app: &TestApp, email: &str, column: &str, value: &str) {
    store::sqlx::query(&format!("UPDATE users SET {column} = $1 WHERE email = $2"))
        .bind(value)
        .bind(email)
        .execute(&app.pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_disabled_user_with_a_live_session_is_refused_at_once() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    browser.sign_in(&app, "carol", "carol-password").await;
    let vms = || browser.request(&app, Method::GET, "/api/v1/vms").send();
    assert_eq!(vms().await.unwrap().status(), 200);

    set_user(&app, "carol@example.org", "status", "disabled").await;
    assert_eq!(vms().await.unwrap().status(), 401);
    assert_eq!(status(&browser, &app).await["authenticated"], false);

    // Signing in again does not get around it.
    let again = Browser::new();
    let refused = again.sign_in(&app, "carol", "carol-password").await;
    assert_eq!(refused.status(), 403);
}

#[tokio::test]
async fn a_role_changed_in_the_database_takes_effect_at_once() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    browser.sign_in(&app, "alice", "alice-password").await;
    let admin_route = || {
        browser
            .request(&app, Method::GET, "/api/v1/admin/providers")
            .send()
    };
    assert_eq!(admin_route().await.unwrap().status(), 403);

    set_user(&app, "alice@example.org", "role", "admin").await;
    assert_eq!(admin_route().await.unwrap().status(), 200);
    assert_eq!(status(&browser, &app).await["user"]["role"], "admin");

    set_user(&app, "alice@example.org", "role", "user").await;
    assert_eq!(admin_route().await.unwrap().status(), 403);
}

#[tokio::test]
async fn a_bootstrap_admin_is_an_admin_from_the_first_sign_in() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |config| {
        config.bootstrap_admins = vec!["bob@example.org".into()];
    })
    .await;
    let bob = Browser::new();
    bob.sign_in(&app, "bob", "bob-password").await;
    let me = status(&bob, &app).await;
    // The provider says `Bob@Example.org`: emails are kept lowercased.
    assert_eq!(me["user"]["email"], "bob@example.org");
    assert_eq!(me["user"]["role"], "admin");
    let carol = Browser::new();
    carol.sign_in(&app, "carol", "carol-password").await;
    assert_eq!(status(&carol, &app).await["user"]["role"], "user");
}
