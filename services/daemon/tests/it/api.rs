use serde_json::{json, Value};

use crate::helpers::{expect_json, spawn_app, vm_request};
use crate::wire::Problem;

#[tokio::test]
async fn health_answers_without_a_token_and_nothing_else_does() {
    let app = spawn_app().await;
    let health = app
        .client
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let ready = app
        .client
        .get(format!("{}/readyz", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 200);

    for path in ["/api/v1/vms", "/api/v1/providers", "/api/v1/openapi.json"] {
        let anonymous = app
            .client
            .get(format!("{}{path}", app.address))
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), 401, "{path}");
        let wrong = app
            .client
            .get(format!("{}{path}", app.address))
            .bearer_auth("not-the-token")
            .send()
            .await
            .unwrap();
        let body: Problem = expect_json(wrong, 401).await;
        assert_eq!(body.code, "unauthorized");
    }
}

#[tokio::test]
async fn bad_input_is_rejected_naming_the_field_and_writes_no_event() {
    let app = spawn_app().await;
    let cases = [
        (json!({"name": "Web 1"}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "web/1"}), "name"),
        (json!({"name": "a".repeat(64)}), "name"),
        (json!({"provider": "nowhere"}), "provider"),
        (json!({"template": "huge"}), "template"),
        (
            json!({"ssh_public_key": "ssh-rsa not-a-key"}),
            "ssh_public_key",
        ),
        (
            json!({"allow_ssh_from": ["192.0.2.0/24", "everywhere"]}),
            "allow_ssh_from",
        ),
        (json!({"allow_ssh_from": []}), "allow_ssh_from"),
        (json!({"duration_hours": 0}), "duration_hours"),
        (json!({"duration_hours": 169}), "duration_hours"),
        (json!({"duration_hours": "long"}), "duration_hours"),
    ];
    for (fields, field) in cases {
        let body: Problem = app
            .post_json("/api/v1/vms", &vm_request(fields.clone()), 422)
            .await;
        assert_eq!(body.code, "invalid_field", "{fields}");
        assert!(body.detail.contains(field), "{fields}: {body:?}");
    }
    let mut missing = vm_request(json!({}));
    missing.as_object_mut().unwrap().remove("name");
    let body: Problem = app.post_json("/api/v1/vms", &missing, 422).await;
    assert!(body.detail.contains("name"), "{body:?}");

    let malformed = app
        .post("/api/v1/vms")
        .header("content-type", "application/json")
        .body("{\"name\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);

    assert_eq!(app.count_events().await, 0, "no event was written");
}

#[tokio::test]
async fn unknown_vms_are_not_found() {
    let app = spawn_app().await;
    let id = uuid::Uuid::new_v4();
    for path in [
        format!("/api/v1/vms/{id}"),
        format!("/api/v1/vms/{id}/events"),
        format!("/api/v1/vms/{id}/logs"),
        "/api/v1/vms/not-a-uuid".to_owned(),
    ] {
        let response = app.get(&path).send().await.unwrap();
        assert_eq!(response.status(), 404, "{path}");
    }
    let response = app
        .delete(&format!("/api/v1/vms/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    assert_eq!(app.count_events().await, 0);
}

#[tokio::test]
async fn the_catalog_lists_the_local_provider_and_its_templates() {
    let app = spawn_app().await;
    let providers: Vec<Value> = app.get_json("/api/v1/providers").await;
    assert!(providers
        .iter()
        .any(|p| p["id"] == "local" && p["enabled"] == true));
    let templates: Vec<Value> = app.get_json("/api/v1/providers/local/templates").await;
    let ids: Vec<&str> = templates
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["small", "medium", "large", "broken"]);
    assert_eq!(templates[0]["flavor_name"], "local.small");
    let unknown = app
        .get("/api/v1/providers/nowhere/templates")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

#[tokio::test]
async fn the_openapi_document_covers_every_route_and_the_committed_copy_is_current() {
    let app = spawn_app().await;
    let served: Value = app.get_json("/api/v1/openapi.json").await;
    let paths = served["paths"].as_object().unwrap();
    for path in [
        "/healthz",
        "/readyz",
        "/api/v1/vms",
        "/api/v1/vms/{id}",
        "/api/v1/vms/{id}/events",
        "/api/v1/vms/{id}/logs",
        "/api/v1/vms/{id}/stream",
        "/api/v1/vms/{id}/retry",
        "/api/v1/vms/{id}/refresh",
        "/api/v1/vms/{id}/jobs",
        "/api/v1/vms/{id}/jobs/{job}",
        "/api/v1/vms/{id}/jobs/{job}/logs",
        "/api/v1/vms/{id}/jobs/{job}/cancel",
        "/api/v1/vms/{id}/jobs/{job}/force-cancel",
        "/api/v1/vms/{id}/archive",
        "/api/v1/ssh-keys",
        "/api/v1/ssh-keys/generate",
        "/api/v1/ssh-keys/{id}",
        "/api/v1/providers",
        "/api/v1/providers/{provider}/templates",
        "/api/v1/openapi.json",
        "/api/v1/auth/login",
        "/api/v1/auth/callback",
        "/api/v1/auth/status",
        "/api/v1/auth/logout",
    ] {
        assert!(paths.contains_key(path), "{path} is documented");
    }
    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/openapi.json"
    ))
    .expect("docs/openapi.json exists");
    assert!(
        committed.trim_end() == api::openapi_json().trim_end(),
        "docs/openapi.json is stale: run `provisioningd openapi > docs/openapi.json`"
    );
}

/// The server refuses a NUL character in any query parameter (`input::refuse_bad_text`), so
/// every text one must say so: a pattern, a format or an enum.
#[test]
fn every_text_query_parameter_of_the_document_states_what_it_takes() {
    let document: Value = serde_json::from_str(&api::openapi_json()).unwrap();
    let schemas = &document["components"]["schemas"];
    let mut unstated = vec![];
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let parameters = operation["parameters"].as_array().into_iter().flatten();
            for parameter in parameters.filter(|p| p["in"] == "query") {
                let mut schema = &parameter["schema"];
                if let Some(name) = schema["$ref"].as_str().and_then(|r| r.rsplit('/').next()) {
                    schema = &schemas[name];
                }
                let text = schema["type"] == "string";
                let stated = ["pattern", "format", "enum"]
                    .iter()
                    .any(|k| schema.get(k).is_some());
                if text && !stated {
                    unstated.push(format!(
                        "{method} {path} ?{}",
                        parameter["name"].as_str().unwrap_or_default()
                    ));
                }
            }
        }
    }
    assert!(unstated.is_empty(), "{unstated:#?}");
}
