//! Which user a sign-in becomes, through the real OpenID provider of `tests/oidc/`: an email
//! links to an existing row only when the provider verified it, never to the built-in admin;
//! an email another user holds, and first requests of a new subject at once, are answered
//! clearly (security review A1 and C2).

use reqwest::Method;
use serde_json::Value;

use crate::helpers::{expect_json, TestApp};
use crate::oidc_login::status;
use crate::oidc_provider::{spawn_signed_in_app, Browser, TestProvider, AUDIENCE};

const BUILTIN_ADMIN: &str = "00000000-0000-0000-0000-000000000001";

async fn me_with(app: &TestApp, token: &str) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("{}/api/v1/me", app.address))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    store::sqlx::query_scalar(sql)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_built_in_admins_email_signs_in_as_an_ordinary_new_user_verified_or_not() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let mut made = vec![];
    for (login, password) in [
        ("squatter", "squatter-password"),
        ("localadmin", "localadmin-password"),
    ] {
        let browser = Browser::new();
        assert_eq!(browser.sign_in(&app, login, password).await.status(), 303);
        let me = status(&browser, &app).await;
        assert_eq!(me["authenticated"], true, "{login}: {me}");
        assert_ne!(me["user"]["id"], BUILTIN_ADMIN, "{login}: {me}");
        assert_eq!(me["user"]["role"], "user", "{login}: {me}");
        assert_eq!(me["user"]["email"], "admin@localhost", "{login}: {me}");
        let admin_route = browser
            .request(&app, Method::GET, "/api/v1/admin/users")
            .send()
            .await
            .unwrap();
        assert_eq!(admin_route.status(), 403, "{login}");
        made.push(me["user"]["id"].clone());
    }
    assert_ne!(made[0], made[1], "two accounts, two users");

    // A program's JWT of a subject never seen, with that email: no browser needed.
    let token = provider
        .access_token("squatter", "squatter-password", AUDIENCE)
        .await;
    let me: Value = expect_json(me_with(&app, &token).await, 200).await;
    assert_eq!(me["id"], made[0], "the squatter's own user: {me}");

    // The built-in admin's row is as the migrations made it: nobody signed in as it.
    let (role, signed_in): (String, Option<time::OffsetDateTime>) =
        store::sqlx::query_as("SELECT role, last_sign_in_at FROM users WHERE id = $1")
            .bind(uuid::Uuid::parse_str(BUILTIN_ADMIN).unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!((role.as_str(), signed_in), ("super_admin", None));
}

#[tokio::test]
async fn a_bootstrap_admins_row_is_claimed_only_by_a_verified_email() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |config| {
        config.bootstrap_admins = vec!["dave@example.org".into()];
    })
    .await;
    let waiting: uuid::Uuid = store::sqlx::query_scalar(
        "SELECT id FROM users WHERE email = 'dave@example.org' AND subject IS NULL",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();

    // The same email, unverified: an ordinary new user, by browser or by a program's JWT.
    let impostor = Browser::new();
    impostor.sign_in(&app, "notdave", "notdave-password").await;
    let me = status(&impostor, &app).await;
    assert_eq!(me["user"]["role"], "user", "{me}");
    assert_ne!(me["user"]["id"], waiting.to_string(), "{me}");
    let token = provider
        .access_token("notdave", "notdave-password", AUDIENCE)
        .await;
    let by_jwt: Value = expect_json(me_with(&app, &token).await, 200).await;
    assert_eq!(by_jwt["role"], "user", "{by_jwt}");

    // Verified: the row made for that email, an admin.
    let dave = Browser::new();
    dave.sign_in(&app, "dave", "dave-password").await;
    let me = status(&dave, &app).await;
    assert_eq!(me["user"]["id"], waiting.to_string(), "{me}");
    assert_eq!(me["user"]["role"], "admin", "{me}");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM users WHERE role <> 'user' AND subject = 'notdave'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn grant_admin_after_a_first_sign_in_with_an_unverified_email_raises_nobody_until_verified() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    provider
        .change_account("carol", serde_json::json!({"emailVerified": false}))
        .await;
    let carol = Browser::new();
    carol.sign_in(&app, "carol", "carol-password").await;
    let first = status(&carol, &app).await;
    assert_eq!(first["user"]["role"], "user");

    // The operator names carol's email: her row is not raised on an unverified say-so.
    let granted = store::users::grant_admin(&app.pool, "carol@example.org")
        .await
        .unwrap();
    assert_ne!(granted.id.to_string(), first["user"]["id"]);
    assert_eq!(status(&carol, &app).await["user"]["role"], "user");

    // Once the provider verified it, her next sign-in takes the grant (one row left).
    provider
        .change_account("carol", serde_json::json!({"emailVerified": true}))
        .await;
    let again = Browser::new();
    again.sign_in(&app, "carol", "carol-password").await;
    let me = status(&again, &app).await;
    assert_eq!(me["user"]["id"], first["user"]["id"], "{me}");
    assert_eq!(me["user"]["role"], "admin", "{me}");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM users WHERE email = 'carol@example.org'"
        )
        .await,
        1
    );
}

#[tokio::test]
async fn a_verified_email_another_user_holds_is_a_409_and_records_nothing() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    assert_eq!(
        Browser::new()
            .sign_in(&app, "alice", "alice-password")
            .await
            .status(),
        303
    );
    let users = count(&app, "SELECT count(*) FROM users").await;

    // A second account of the provider with the same verified email.
    let twin = Browser::new();
    let refused = twin.sign_in(&app, "alicetwin", "alicetwin-password").await;
    let body: Value = expect_json(refused, 409).await;
    assert_eq!(body["code"], "conflict");
    assert!(body["detail"].as_str().unwrap().contains("email"), "{body}");
    assert_eq!(status(&twin, &app).await["authenticated"], false);
    let token = provider
        .access_token("alicetwin", "alicetwin-password", AUDIENCE)
        .await;
    let body: Value = expect_json(me_with(&app, &token).await, 409).await;
    assert!(body["detail"].as_str().unwrap().contains("email"), "{body}");

    // A user whose email changed at the provider to alice's.
    Browser::new()
        .sign_in(&app, "carol", "carol-password")
        .await;
    provider
        .change_account("carol", serde_json::json!({"email": "alice@example.org"}))
        .await;
    let carol = Browser::new();
    let body: Value = expect_json(carol.sign_in(&app, "carol", "carol-password").await, 409).await;
    assert_eq!(body["code"], "conflict");

    assert_eq!(count(&app, "SELECT count(*) FROM users").await, users + 1);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM users WHERE email = 'carol@example.org'"
        )
        .await,
        1,
        "carol keeps her email"
    );
    assert_eq!(count(&app, "SELECT count(*) FROM sessions").await, 2);
}

#[tokio::test]
async fn eight_first_requests_of_a_new_subject_at_once_make_one_user() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let token = provider
        .access_token("dave", "dave-password", AUDIENCE)
        .await;
    let answers = futures::future::join_all((0..8).map(|_| me_with(&app, &token))).await;
    let mut ids = vec![];
    for answer in answers {
        let me: Value = expect_json(answer, 200).await;
        ids.push(me["id"].clone());
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(
        count(&app, "SELECT count(*) FROM users WHERE subject = 'dave'").await,
        1
    );
}
