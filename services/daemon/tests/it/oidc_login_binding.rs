//! A sign-in under way is bound to the browser that started it (login CSRF), and what an
//! unauthenticated `/auth/login` may store is bounded (security review A2 and B3).

use serde_json::Value;

use crate::helpers::{expect_json, TestApp};
use crate::oidc_login::status;
use crate::oidc_provider::{spawn_signed_in_app, Browser, TestProvider};

async fn count(app: &TestApp, table: &str) -> i64 {
    store::sqlx::query_scalar(&format!("SELECT count(*) FROM {table}"))
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

fn set_cookies(response: &reqwest::Response) -> Vec<String> {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_login_sets_a_short_lived_http_only_cookie_for_its_callback() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let login = Browser::new()
        .client
        .get(format!("{}/api/v1/auth/login", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(login.status(), 303);
    let cookies = set_cookies(&login);
    let cookie = cookies
        .iter()
        .find(|c| c.starts_with("provisioning_login="))
        .unwrap_or_else(|| panic!("a login cookie: {cookies:?}"));
    let attributes: Vec<&str> = cookie.split("; ").collect();
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=600"] {
        assert!(attributes.contains(&attribute), "{cookie}");
    }
    let value = attributes[0].trim_start_matches("provisioning_login=");
    assert!(value.len() >= 43, "256 bits: {value}");
}

#[tokio::test]
async fn a_callback_opened_in_another_browser_signs_nobody_in_and_records_nothing() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let attacker = Browser::new();
    let callback = attacker
        .callback_url(&app, "alice", "alice-password", "/")
        .await;
    let users = count(&app, "users").await;

    // The victim's browser: a fresh one, and one that started a sign-in of its own.
    let fresh = Browser::new();
    let started = Browser::new();
    let own = started
        .client
        .get(format!("{}/api/v1/auth/login", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 303);
    for victim in [&fresh, &started] {
        let answer = victim.client.get(&callback).send().await.unwrap();
        let body: Value = expect_json(answer, 400).await;
        assert_eq!(body["code"], "bad_request");
        assert!(body["detail"].as_str().unwrap().contains("state"), "{body}");
        assert_eq!(status(victim, &app).await["authenticated"], false);
    }
    assert_eq!(count(&app, "users").await, users, "no user made");
    assert_eq!(count(&app, "sessions").await, 0, "no session");
    // The captured login is not used up: it stays for the browser that started it.
    assert_eq!(count(&app, "oidc_logins").await, 2);

    let signed_in = attacker.client.get(&callback).send().await.unwrap();
    assert_eq!(signed_in.status(), 303);
    assert_eq!(
        status(&attacker, &app).await["user"]["email"],
        "alice@example.org"
    );
    let cleared = set_cookies(&signed_in);
    assert!(
        cleared
            .iter()
            .any(|c| c.starts_with("provisioning_login=;") && c.contains("Max-Age=0")),
        "the login cookie is removed once used: {cleared:?}"
    );
    assert!(cleared
        .iter()
        .any(|c| c.starts_with("provisioning_session=")));
    assert_eq!(
        count(&app, "oidc_logins").await,
        1,
        "the victim's own login"
    );
}

#[tokio::test]
async fn an_over_long_return_to_is_refused_and_nothing_is_stored() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let login = |return_to: String| {
        let url = reqwest::Url::parse_with_params(
            &format!("{}/api/v1/auth/login", app.address),
            &[("return_to", return_to)],
        )
        .unwrap();
        Browser::new().client.get(url).send()
    };
    let too_long = format!("/{}", "a".repeat(2048));
    let body: Value = expect_json(login(too_long).await.unwrap(), 400).await;
    let detail = body["detail"].as_str().unwrap();
    assert!(
        detail.contains("return_to") && detail.contains("2048"),
        "{body}"
    );
    assert_eq!(count(&app, "oidc_logins").await, 0);

    let longest = format!("/{}", "a".repeat(2047));
    assert_eq!(login(longest).await.unwrap().status(), 303);
    assert_eq!(count(&app, "oidc_logins").await, 1);
}

#[tokio::test]
async fn logins_under_way_past_the_cap_drop_the_oldest() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let login = store::sessions::PendingLogin {
        pkce_verifier: "verifier".into(),
        nonce: "nonce".into(),
        return_to: "/".into(),
    };
    for i in 0u8..8 {
        store::sessions::insert_login_within(&app.pool, &[i], &[i], &login, 5)
            .await
            .unwrap();
    }
    assert_eq!(count(&app, "oidc_logins").await, 5);
    let kept: Vec<Vec<u8>> =
        store::sqlx::query_scalar("SELECT state_hash FROM oidc_logins ORDER BY state_hash")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(kept, (3u8..8).map(|i| vec![i]).collect::<Vec<_>>());
    assert_eq!(store::sessions::MAX_PENDING_LOGINS, 10_000);
}
