//! Personal API tokens (`/api/v1/tokens`): made and listed by their user, the secret shown
//! once and stored only as its hash, refused once revoked or expired, and refused for a
//! disabled user.

use daemon::Roles;
use domain::identity::Role;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, TestApp};

async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

#[tokio::test]
async fn a_token_works_until_it_is_revoked_and_its_list_shows_no_secret() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let made: Value = ada
        .json("POST", "/api/v1/tokens", Some(&json!({"name": "ci"})), 201)
        .await;
    let secret = made["token"].as_str().unwrap().to_owned();
    assert!(
        secret.starts_with("pat_") && secret.len() == 4 + 64,
        "{secret}"
    );
    assert_eq!(made["name"], "ci");
    assert_eq!(made["prefix"], &secret[..12]);
    assert_eq!(made["last_used_at"], Value::Null);

    let ci = app.with_token(&secret);
    assert_eq!(ci.status("GET", "/api/v1/ssh-keys", None).await, 200);
    let list: Vec<Value> = ci.json("GET", "/api/v1/tokens", None, 200).await;
    let names: Vec<&str> = list.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["first", "tests", "ci"]);
    let listed = serde_json::to_string(&list).unwrap();
    assert!(!listed.contains(&secret[12..]), "{listed}");
    assert!(list.iter().all(|t| t.get("token").is_none()));
    // Used just now: its last use is recorded.
    assert_ne!(list[2]["last_used_at"], Value::Null, "{list:?}");

    // Stored as its SHA-256 only: no column holds the secret.
    let rows: Vec<String> =
        store::sqlx::query_scalar("SELECT row_to_json(t)::text FROM api_tokens t")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(rows.iter().all(|r| !r.contains(&secret[12..])), "{rows:?}");

    let path = format!("/api/v1/tokens/{}", made["id"].as_str().unwrap());
    assert_eq!(ada.status("DELETE", &path, None).await, 204);
    let refused = ci.send("GET", "/api/v1/ssh-keys", None).await;
    assert_eq!(refused.status(), 401);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "unauthorized");
    assert_eq!(ada.status("DELETE", &path, None).await, 404);
    // The user's other tokens still work.
    assert_eq!(ada.status("GET", "/api/v1/ssh-keys", None).await, 200);
}

#[tokio::test]
async fn an_expired_token_is_refused_and_an_expiry_in_the_past_is_invalid() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(2);
    let soon = soon
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let made: Value = ada
        .json(
            "POST",
            "/api/v1/tokens",
            Some(&json!({"name": "short", "expires_at": soon})),
            201,
        )
        .await;
    let short = app.with_token(made["token"].as_str().unwrap());
    assert_eq!(short.status("GET", "/api/v1/ssh-keys", None).await, 200);
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    assert_eq!(short.status("GET", "/api/v1/ssh-keys", None).await, 401);

    let before: i64 = store::sqlx::query_scalar("SELECT count(*) FROM api_tokens")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    for (body, field) in [
        (
            json!({"name": "old", "expires_at": "2020-01-01T00:00:00Z"}),
            "expires_at",
        ),
        (json!({"name": ""}), "name"),
        (json!({"name": "a\nb"}), "name"),
    ] {
        let problem: Value = ada.json("POST", "/api/v1/tokens", Some(&body), 422).await;
        assert!(
            problem["detail"].as_str().unwrap().starts_with(field),
            "{problem}"
        );
    }
    let after: i64 = store::sqlx::query_scalar("SELECT count(*) FROM api_tokens")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(before, after);
}

#[tokio::test]
async fn a_disabled_user_is_refused_with_a_live_token_and_unknown_tokens_too() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    assert_eq!(ada.status("GET", "/api/v1/tokens", None).await, 200);
    let id = ada.id.parse().unwrap();
    store::users::set_status(&app.pool, id, store::users::UserStatus::Disabled)
        .await
        .unwrap();
    assert_eq!(ada.status("GET", "/api/v1/tokens", None).await, 401);
    store::users::set_status(&app.pool, id, store::users::UserStatus::Active)
        .await
        .unwrap();
    assert_eq!(ada.status("GET", "/api/v1/tokens", None).await, 200);

    let unknown = format!("pat_{}", "0".repeat(64));
    for token in [unknown.as_str(), "pat_", "not-a-token", ""] {
        let response = app
            .with_token(token)
            .send("GET", "/api/v1/tokens", None)
            .await;
        assert_eq!(response.status(), 401, "{token:?}");
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
    }
    let basic = app
        .with_token("")
        .request("GET", "/api/v1/tokens")
        .basic_auth("ada", Some("secret"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);
}

#[tokio::test]
async fn one_users_tokens_are_not_anothers() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let bob = app.user("bob@example.org", Role::Admin).await;
    let made: Value = ada
        .json(
            "POST",
            "/api/v1/tokens",
            Some(&json!({"name": "mine"})),
            201,
        )
        .await;
    let bobs: Vec<Value> = bob.json("GET", "/api/v1/tokens", None, 200).await;
    assert!(bobs.iter().all(|t| t["id"] != made["id"]));
    let path = format!("/api/v1/tokens/{}", made["id"].as_str().unwrap());
    // Not even an admin revokes another's token through this route.
    assert_eq!(bob.status("DELETE", &path, None).await, 404);
    let theirs = app.with_token(made["token"].as_str().unwrap());
    assert_eq!(theirs.status("GET", "/api/v1/tokens", None).await, 200);
}
