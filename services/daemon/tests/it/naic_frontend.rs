//! `PROVISIONING_FRONTEND_DIR`: the built frontend at `/`, `index.html` for the app's
//! routes, and the `/api` boundary (unknown API paths keep the JSON 404).

use daemon::Roles;
use serde_json::Value;

use crate::helpers::{try_spawn_app, TestApp};

const INDEX: &str = "<!doctype html><div id=\"root\"></div>";
const SCRIPT: &str = "console.log('app')";

async fn app_serving(dir: Option<&std::path::Path>) -> TestApp {
    let roles = Roles {
        api: true,
        ..Roles::NONE
    };
    let dir = dir.map(|d| d.to_owned());
    try_spawn_app(roles, move |c| c.frontend_dir = dir)
        .await
        .expect("the app starts")
}

async fn get(app: &TestApp, path: &str) -> reqwest::Response {
    app.client
        .get(format!("{}{path}", app.address))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_frontend_is_served_at_the_root_with_its_routes_and_never_for_the_api() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), INDEX).unwrap();
    std::fs::create_dir(dir.path().join("assets")).unwrap();
    std::fs::write(dir.path().join("assets/index-abc123.js"), SCRIPT).unwrap();
    std::fs::write(dir.path().join(".env.production"), "SECRET=1").unwrap();
    let app = app_serving(Some(dir.path())).await;

    for route in [
        "/",
        "/dashboard",
        "/vm/9b2d3f0e-8c59-4a4e-9d3b-0d2f8a2b1c11",
        "/kcauth/callback",
        "/admin/providers",
    ] {
        let page = get(&app, route).await;
        assert_eq!(page.status(), 200, "{route}");
        let kind = page.headers()["content-type"].to_str().unwrap().to_owned();
        assert!(kind.starts_with("text/html"), "{route}: {kind}");
        assert_eq!(page.text().await.unwrap(), INDEX, "{route}");
    }
    let script = get(&app, "/assets/index-abc123.js").await;
    assert_eq!(script.status(), 200);
    assert!(script.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));
    assert!(script.headers()["cache-control"]
        .to_str()
        .unwrap()
        .contains("immutable"));
    assert_eq!(script.text().await.unwrap(), SCRIPT);
    // A missing file is no page; hidden files and escapes are never served.
    for path in ["/assets/index-old.js", "/.env.production", "/../Cargo.toml"] {
        assert_eq!(get(&app, path).await.status(), 404, "{path}");
    }

    // The /api boundary: JSON 404s, never the app.
    for path in [
        "/api",
        "/api/",
        "/api/nothing",
        "/api/v1/nothing",
        "/api/vm/a/b/c",
    ] {
        let response = get(&app, path).await;
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "not_found", "{path}");
    }
    // The API itself still answers.
    assert_eq!(get(&app, "/healthz").await.status(), 200);
    assert_eq!(get(&app, "/api/vm").await.status(), 401);
}

#[tokio::test]
async fn without_a_frontend_every_unknown_path_but_the_root_is_the_json_404() {
    let app = app_serving(None).await;
    // `/` is the console's then: it leads to its sign-in page.
    let root = get(&app, "/").await;
    assert_eq!(root.url().path(), "/console");
    assert_eq!(root.status(), 401);
    for path in ["/dashboard", "/api/nothing"] {
        let response = get(&app, path).await;
        assert_eq!(response.status(), 404, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["code"], "not_found", "{path}");
    }
}
