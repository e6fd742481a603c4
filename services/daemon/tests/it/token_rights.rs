//! Personal tokens cannot outlive or outrank what made them: a token made with a token
//! expires no later than it; tokens made through the admin token end when that admin token
//! is changed or removed; admins list and revoke any user's tokens.

use daemon::{Application, Roles};
use domain::identity::Role;
use secrecy::SecretString;
use serde_json::{json, Value};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::helpers::{base_config, spawn_app_with, TestApp};
use crate::oidc_provider::{spawn_signed_in_app, TestProvider, AUDIENCE};

async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

fn rfc3339(t: OffsetDateTime) -> String {
    t.format(&Rfc3339).unwrap()
}

fn expiry(token: &Value) -> Option<OffsetDateTime> {
    token["expires_at"]
        .as_str()
        .map(|t| OffsetDateTime::parse(t, &Rfc3339).unwrap())
}

async fn token_count(app: &TestApp) -> i64 {
    store::sqlx::query_scalar("SELECT count(*) FROM api_tokens")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_token_made_with_an_expiring_token_expires_no_later_than_it() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let in_an_hour = OffsetDateTime::now_utc() + time::Duration::hours(1);
    let short: Value = ada
        .json(
            "POST",
            "/api/v1/tokens",
            Some(&json!({"name": "short", "expires_at": rfc3339(in_an_hour)})),
            201,
        )
        .await;
    let limit = expiry(&short).unwrap();
    let with_short = app.with_token(short["token"].as_str().unwrap());

    // No expiry asked, or a later one: capped to the minting token's.
    let later = rfc3339(in_an_hour + time::Duration::days(30));
    for body in [
        json!({"name": "none"}),
        json!({"name": "later", "expires_at": later}),
    ] {
        let made: Value = with_short
            .json("POST", "/api/v1/tokens", Some(&body), 201)
            .await;
        assert_eq!(expiry(&made), Some(limit), "{body}: {made}");
    }
    // An earlier one is kept.
    let sooner = OffsetDateTime::now_utc() + time::Duration::minutes(10);
    let body = json!({"name": "sooner", "expires_at": rfc3339(sooner)});
    let made: Value = with_short
        .json("POST", "/api/v1/tokens", Some(&body), 201)
        .await;
    assert!(expiry(&made).unwrap() < limit, "{made}");
    // The cap is in the store too, not only in the answer.
    let stored: Vec<Option<OffsetDateTime>> = store::sqlx::query_scalar(
        "SELECT expires_at FROM api_tokens WHERE name IN ('none', 'later') ORDER BY name",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(stored, [Some(limit), Some(limit)]);

    // A token that never expires makes tokens as asked.
    let free: Value = ada
        .json(
            "POST",
            "/api/v1/tokens",
            Some(&json!({"name": "free"})),
            201,
        )
        .await;
    assert_eq!(expiry(&free), None);
}

#[tokio::test]
async fn a_token_made_with_a_jwt_expires_no_later_than_it() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let jwt = provider
        .access_token("alice", "alice-password", AUDIENCE)
        .await;
    let exp = api::auth::jwt::expires_at(&jwt).expect("the provider's JWTs expire");
    let made: Value = reqwest::Client::new()
        .post(format!("{}/api/v1/tokens", app.address))
        .bearer_auth(&jwt)
        .json(&json!({"name": "from-a-jwt"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(expiry(&made), Some(exp), "{made}");
}

/// An API-only application on `app`'s database with `admin_token` (none: off); its address,
/// and what stops it.
async fn api_with_admin_token(
    app: &TestApp,
    admin_token: Option<&str>,
) -> (String, tokio_util::sync::CancellationToken) {
    let config = base_config(&app.db_name, app.bus.subjects.prefix(), app.work.path());
    let roles = Roles {
        api: true,
        ..Roles::NONE
    };
    let admin_token = admin_token.map(|t| SecretString::from(t.to_owned()));
    let api = Application::build(config, roles, admin_token)
        .await
        .expect("the application starts");
    let address = format!("http://127.0.0.1:{}", api.port());
    let stop = api.shutdown_token();
    tokio::spawn(api.run_until_stopped());
    (address, stop)
}

async fn status_at(address: &str, token: &str) -> u16 {
    reqwest::Client::new()
        .get(format!("{address}/api/v1/tokens"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn tokens_made_through_the_admin_token_end_when_the_admin_token_changes_or_is_removed() {
    let app = app().await;
    // The built-in admin's token, and one it made in turn.
    let made: Value = app
        .post_json("/api/v1/tokens", &json!({"name": "builtin"}), 201)
        .await;
    let builtin = made["token"].as_str().unwrap().to_owned();
    let made: Value = app
        .with_token(&builtin)
        .json(
            "POST",
            "/api/v1/tokens",
            Some(&json!({"name": "child"})),
            201,
        )
        .await;
    let child = made["token"].as_str().unwrap().to_owned();
    // A user's token, made with a session or token of theirs, is no admin token's.
    let ada = app.user("ada@example.org", Role::Admin).await;

    // With the same admin token, they work.
    let (same, stop_same) = api_with_admin_token(&app, Some(&app.token)).await;
    for token in [&builtin, &child, &ada.token] {
        assert_eq!(status_at(&same, token).await, 200);
    }
    stop_same.cancel();

    // Another admin token, or none: the admin token's tokens are refused, the user's not.
    for admin_token in [Some("another-admin-token"), None] {
        let (address, stop) = api_with_admin_token(&app, admin_token).await;
        assert_eq!(status_at(&address, &builtin).await, 401, "{admin_token:?}");
        assert_eq!(status_at(&address, &child).await, 401, "{admin_token:?}");
        assert_eq!(
            status_at(&address, &ada.token).await,
            200,
            "{admin_token:?}"
        );
        stop.cancel();
    }
    // What is stored of the admin token is not the admin token.
    let rows: Vec<String> =
        store::sqlx::query_scalar("SELECT row_to_json(t)::text FROM api_tokens t")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert!(rows.iter().all(|r| !r.contains(&app.token)), "{rows:?}");
}

#[tokio::test]
async fn an_admin_lists_and_revokes_any_users_tokens() {
    let app = app().await;
    let admin = app.user("admin@example.org", Role::Admin).await;
    let ada = app.user("ada@example.org", Role::User).await;
    let path = format!("/api/v1/admin/users/{}/tokens", ada.id);

    let listed: Vec<Value> = admin.json("GET", &path, None, 200).await;
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["first", "tests"]);
    assert!(
        listed.iter().all(|t| t.get("token").is_none()),
        "{listed:?}"
    );
    let tests = listed[1]["id"].as_str().unwrap();

    // Unknown users and tokens, and another user's token under her id: 404, nothing revoked.
    let before = token_count(&app).await;
    let admins: Vec<Value> = admin.json("GET", "/api/v1/tokens", None, 200).await;
    let admins_token = admins[0]["id"].as_str().unwrap();
    let unknown_user = "00000000-0000-0000-0000-0000000000aa";
    for missing in [
        format!("/api/v1/admin/users/{unknown_user}/tokens"),
        "/api/v1/admin/users/not-a-uuid/tokens".to_owned(),
    ] {
        let problem: Value = admin.json("GET", &missing, None, 404).await;
        assert_eq!(problem["code"], "not_found", "{problem}");
    }
    for missing in [
        format!("{path}/{admins_token}"),
        format!("{path}/00000000-0000-0000-0000-0000000000bb"),
        format!("{path}/not-a-uuid"),
        format!("/api/v1/admin/users/{unknown_user}/tokens/{tests}"),
    ] {
        let problem: Value = admin.json("DELETE", &missing, None, 404).await;
        assert_eq!(problem["code"], "not_found", "{missing}: {problem}");
    }
    let live: i64 =
        store::sqlx::query_scalar("SELECT count(*) FROM api_tokens WHERE revoked_at IS NULL")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(live, before, "nothing was revoked");

    // A user may not use these routes, not even on herself.
    assert_eq!(ada.status("GET", &path, None).await, 403);

    assert_eq!(ada.status("GET", "/api/v1/tokens", None).await, 200);
    assert_eq!(
        admin
            .status("DELETE", &format!("{path}/{tests}"), None)
            .await,
        204
    );
    assert_eq!(ada.status("GET", "/api/v1/tokens", None).await, 401);
    let listed: Vec<Value> = admin.json("GET", &path, None, 200).await;
    let names: Vec<&str> = listed.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["first"]);
    // Once revoked, it is not found again.
    assert_eq!(
        admin
            .status("DELETE", &format!("{path}/{tests}"), None)
            .await,
        404
    );
}
