//! NAIC's sign-in through the suite's real OpenID provider: `/api/auth/login` ends on the
//! frontend's `/kcauth/callback` with a session cookie that `/api/auth/status` accepts; the
//! cookie's requests keep the CSRF rule, and their events the user as actor and the
//! request's id; a disabled user gets NAIC's profile-status answer; sign-out.

use domain::identity::{Role, UserId};
use reqwest::Method;
use serde_json::{json, Value};

use crate::helpers::{expect_json, TestApp};
use crate::oidc_provider::{spawn_signed_in_app_with, Browser, TestProvider};

/// The API with sign-in through `provider`, and the projector (the create is read back
/// through `/api/v1`); no runners.
async fn signed_in_app(provider: &TestProvider) -> TestApp {
    let roles = daemon::Roles {
        dispatcher: false,
        ..daemon::Roles::ALL
    };
    spawn_signed_in_app_with(provider, roles, |_| {}).await
}

async fn naic_status(browser: &Browser, app: &TestApp) -> reqwest::Response {
    browser
        .request(app, Method::GET, "/api/auth/status")
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_browser_signs_in_at_the_naic_login_and_lands_on_the_frontends_callback() {
    let provider = TestProvider::start().await;
    let app = signed_in_app(&provider).await;
    let browser = Browser::new();
    let status: Value = expect_json(naic_status(&browser, &app).await, 200).await;
    assert_eq!(status, json!({"isAuthenticated": false, "user": null}));

    let login = browser
        .client
        .get(format!("{}/api/auth/login", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let to = login.headers()["location"].to_str().unwrap().to_owned();
    assert!(
        to.starts_with(&format!("{}/auth?", provider.issuer)),
        "{to}"
    );
    let params: std::collections::HashMap<_, _> = reqwest::Url::parse(&to)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert_eq!(params["code_challenge_method"], "S256");
    for name in ["code_challenge", "state", "nonce"] {
        assert!(params[name].len() >= 22, "{name}");
    }
    let back_to = format!("{}/api/v1/auth/callback", app.address);
    let callback = browser
        .authorize(&to, &back_to, "alice", "alice-password")
        .await;
    let signed_in = browser.client.get(&callback).send().await.unwrap();
    assert_eq!(signed_in.status(), 303);
    assert_eq!(signed_in.headers()["location"], "/kcauth/callback");

    let status: Value = expect_json(naic_status(&browser, &app).await, 200).await;
    assert_eq!(status["isAuthenticated"], true);
    let user = &status["user"];
    assert_eq!(user["email"], "alice@example.org");
    assert_eq!(user["firstName"], "Alice");
    assert_eq!(user["lastName"], "Example");
    assert_eq!(user["userType"], "USER");
    assert!(user["username"].is_string());
    let user_id = user["userId"].as_str().unwrap().to_owned();

    // The cookie works for NAIC's writes from the site's own pages only (Origin).
    let elsewhere = browser
        .client
        .post(format!("{}/api/vm/ssh/create", app.address))
        .json(&json!({"keyName": "laptop"}))
        .send()
        .await
        .unwrap();
    let refused: Value = expect_json(elsewhere, 403).await;
    assert!(refused["message"].as_str().unwrap().contains("Origin"));
    let key: Value = expect_json(
        browser
            .request(&app, Method::POST, "/api/vm/ssh/create")
            .json(&json!({"keyName": "laptop"}))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let created = browser
        .request(&app, Method::POST, "/api/vm/create")
        .header("x-request-id", "naic-create-1")
        .json(&json!({
            "vmName": "from-naic",
            "sshKeyId": key["keyId"],
            "vmTemplateId": "local:small",
            "duration": 2,
            "ipRanges": ["129.177.0.0/16"],
        }))
        .send()
        .await
        .unwrap();
    let id: Value = expect_json(created, 200).await;
    let id = id.as_str().unwrap();

    // The same VM in /api/v1, and in the audit history with the same actor and request.
    let ours: Value = expect_json(
        browser
            .request(&app, Method::GET, &format!("/api/v1/vms/{id}"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(ours["owner"], user_id.as_str());
    let root = app.user("root@example.org", Role::Admin).await;
    let audit: Value = root
        .json(
            "GET",
            &format!("/api/v1/audit?actor=user:{user_id}&limit=100"),
            None,
            200,
        )
        .await;
    let requested = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["aggregate_id"] == id)
        .unwrap_or_else(|| panic!("the create is in the audit history: {audit}"));
    assert_eq!(requested["actor"], format!("user:{user_id}"));
    assert_eq!(requested["correlation_id"], "naic-create-1");

    // A disabled user: NAIC's answer that sends the frontend to its profile-status page.
    let alice = UserId::new(user_id.parse().unwrap());
    store::users::set_status(&app.pool, alice, store::users::UserStatus::Disabled)
        .await
        .unwrap();
    let disabled: Value = expect_json(naic_status(&browser, &app).await, 403).await;
    assert_eq!(disabled["route"], "profile-status");
    assert_eq!(disabled["routeParam"], json!({"status": "disabled"}));
    assert!(disabled["message"].is_string());
    store::users::set_status(&app.pool, alice, store::users::UserStatus::Active)
        .await
        .unwrap();

    let logout = browser
        .request(&app, Method::POST, "/api/auth/logout")
        .send()
        .await
        .unwrap();
    let out: Value = expect_json(logout, 200).await;
    let url = reqwest::Url::parse(out["logoutUrl"].as_str().unwrap()).unwrap();
    assert!(url.as_str().starts_with(&provider.issuer), "{url}");
    let back: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(
        back["post_logout_redirect_uri"],
        format!("{}/", app.address)
    );
    let status: Value = expect_json(naic_status(&browser, &app).await, 200).await;
    assert_eq!(status, json!({"isAuthenticated": false, "user": null}));
    let sessions: i64 = store::sqlx::query_scalar("SELECT count(*) FROM sessions")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(sessions, 0);
}
