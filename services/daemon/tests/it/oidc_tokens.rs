//! The provider's tokens: bearer JWTs for programs (good, tampered, expired, for another
//! audience), and a session's access token refreshed when it expires, or the session ended
//! when the provider refuses.

use std::time::Duration;

use base64::Engine;
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{expect_json, TestApp, SSH_KEY};
use crate::oidc_provider::{
    spawn_signed_in_app, Browser, TestProvider, AUDIENCE, CLIENT_ID, ELSEWHERE, SHORT_LIVED,
};

async fn get_with(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{}{path}", app.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// The detail of a 401 for `token`.
async fn refused(app: &TestApp, token: &str) -> String {
    let body: Value = expect_json(get_with(app, token, "/api/v1/vms").await, 401).await;
    assert_eq!(body["code"], "unauthorized");
    body["detail"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_good_jwt_is_the_user_who_signed_in_as_its_subject() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    browser.sign_in(&app, "alice", "alice-password").await;
    let token = provider
        .access_token("alice", "alice-password", AUDIENCE)
        .await;

    let added = reqwest::Client::new()
        .post(format!("{}/api/v1/ssh-keys", app.address))
        .bearer_auth(&token)
        .json(&json!({"name": "from-a-program", "public_key": SSH_KEY}))
        .send()
        .await
        .unwrap();
    assert_eq!(added.status(), 201);
    // The browser's session sees the key: the same user.
    let keys: Value = browser
        .request(&app, Method::GET, "/api/v1/ssh-keys")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(keys[0]["name"], "from-a-program", "{keys}");
    let users: i64 = store::sqlx::query_scalar("SELECT count(*) FROM users WHERE email = $1")
        .bind("alice@example.org")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(users, 1);

    // Disabled in the database: the token no longer works.
    store::sqlx::query("UPDATE users SET status = 'disabled' WHERE email = 'alice@example.org'")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(get_with(&app, &token, "/api/v1/vms").await.status(), 401);
}

#[tokio::test]
async fn a_jwt_of_someone_who_never_signed_in_makes_the_user_from_its_email() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let carol = provider
        .access_token("carol", "carol-password", AUDIENCE)
        .await;
    assert_eq!(get_with(&app, &carol, "/api/v1/vms").await.status(), 200);
    let made: (String, String) =
        store::sqlx::query_as("SELECT subject, role FROM users WHERE email = 'carol@example.org'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(made, ("carol".to_owned(), "user".to_owned()));

    let nameless = provider
        .access_token("noemail", "noemail-password", AUDIENCE)
        .await;
    let detail = refused(&app, &nameless).await;
    assert!(detail.contains("never signed in"), "{detail}");
}

#[tokio::test]
async fn an_id_token_is_refused_as_a_bearer_token_even_when_the_audience_is_the_client_id() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |config| {
        if let Some(oidc) = config.oidc.as_mut() {
            oidc.audience = Some(CLIENT_ID.into());
        }
    })
    .await;
    Browser::new()
        .sign_in(&app, "alice", "alice-password")
        .await;
    // The ID token of alice's sign-in: its audience is the client id, as configured here.
    let id_token: Option<String> = store::sqlx::query_scalar("SELECT id_token FROM sessions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    let detail = refused(&app, &id_token.expect("an ID token")).await;
    assert!(detail.contains("ID token"), "{detail}");
}

/// `token` with its payload changed by `change`, the signature kept.
fn tampered(token: &str, change: impl FnOnce(&mut Value)) -> String {
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let parts: Vec<&str> = token.split('.').collect();
    let mut payload: Value = serde_json::from_slice(&engine.decode(parts[1]).unwrap()).unwrap();
    change(&mut payload);
    let payload = engine.encode(serde_json::to_vec(&payload).unwrap());
    format!("{}.{payload}.{}", parts[0], parts[2])
}

#[tokio::test]
async fn tampered_expired_and_foreign_jwts_are_refused() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let short = provider
        .access_token("alice", "alice-password", SHORT_LIVED)
        .await;
    let good = provider
        .access_token("alice", "alice-password", AUDIENCE)
        .await;
    assert_eq!(get_with(&app, &good, "/api/v1/vms").await.status(), 200);

    let other_subject = tampered(&good, |p| p["sub"] = json!("carol"));
    assert!(refused(&app, &other_subject).await.contains("signature"));
    let longer = tampered(&good, |p| {
        p["exp"] = json!(p["exp"].as_i64().unwrap() + 3600)
    });
    assert!(refused(&app, &longer).await.contains("signature"));

    let elsewhere = provider
        .access_token("alice", "alice-password", ELSEWHERE)
        .await;
    assert!(refused(&app, &elsewhere).await.contains("audience"));

    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let unsigned = format!(
        "{}.{}.",
        engine.encode(br#"{"alg":"none","typ":"JWT"}"#),
        good.split('.').nth(1).unwrap()
    );
    let detail = refused(&app, &unsigned).await;
    assert!(
        detail.contains("not a JWT") || detail.contains("algorithm"),
        "{detail}"
    );
    let unknown_key = {
        let parts: Vec<&str> = good.split('.').collect();
        let mut header: Value = serde_json::from_slice(&engine.decode(parts[0]).unwrap()).unwrap();
        header["kid"] = json!("made-up");
        let header = engine.encode(serde_json::to_vec(&header).unwrap());
        format!("{header}.{}.{}", parts[1], parts[2])
    };
    assert!(refused(&app, &unknown_key).await.contains("key"));

    // One second to live, two of leeway: expired well after that.
    let lived = api::oidc::jwt::LEEWAY_SECS + 2;
    tokio::time::sleep(Duration::from_secs(lived)).await;
    assert!(refused(&app, &short).await.contains("expired"));
    // The good one still works after all these.
    assert_eq!(get_with(&app, &good, "/api/v1/vms").await.status(), 200);
}

#[tokio::test]
async fn an_expired_access_token_is_refreshed_and_a_refused_refresh_ends_the_session() {
    let provider = TestProvider::start_with(&[("OIDC_ACCESS_TOKEN_TTL", "1")]).await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    assert_eq!(
        browser
            .sign_in(&app, "alice", "alice-password")
            .await
            .status(),
        303
    );
    let tokens = || async {
        store::sqlx::query_as::<_, (String, Option<String>)>(
            "SELECT access_token, refresh_token FROM sessions",
        )
        .fetch_all(&app.pool)
        .await
        .unwrap()
    };
    let before = tokens().await;
    assert_eq!(before.len(), 1);
    assert!(before[0].1.is_some(), "the provider gave a refresh token");
    let vms = || browser.request(&app, Method::GET, "/api/v1/vms").send();

    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(vms().await.unwrap().status(), 200);
    let after = tokens().await;
    assert_ne!(after[0].0, before[0].0, "a new access token");
    assert_ne!(after[0].1, before[0].1, "the refresh token rotated");

    provider.revoke_refresh_tokens().await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(vms().await.unwrap().status(), 401);
    assert!(tokens().await.is_empty(), "the session ended");
    assert_eq!(vms().await.unwrap().status(), 401);
}
