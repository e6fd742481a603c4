use std::collections::{BTreeMap, BTreeSet};

use super::document;
use serde_json::Value;

/// Every operation of the document: (method, path, operation).
fn operations() -> Vec<(String, String, Value)> {
    let doc = document();
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            all.push((method.clone(), path.clone(), operation.clone()));
        }
    }
    all
}

#[test]
fn every_operation_lists_the_answers_of_the_layers_around_it_with_the_error_body() {
    for (method, path, operation) in operations() {
        let responses = operation["responses"].as_object().unwrap();
        let has = |status: &str| responses.contains_key(status);
        let secured = operation["security"]
            .as_array()
            .is_some_and(|s| !s.is_empty());
        if secured {
            assert!(has("401"), "{method} {path} lists 401");
        }
        if operation.get("requestBody").is_some() {
            assert!(has("413"), "{method} {path} lists 413");
            assert!(
                has("400") && has("422"),
                "{method} {path} lists 400 and 422"
            );
        }
        if path.starts_with("/api/v1/") {
            assert!(has("503"), "{method} {path} lists 503");
        }
        if path.contains('{') {
            assert!(has("404"), "{method} {path} lists 404");
        }
        if secured && (path.starts_with("/api/v1/admin/") || path.starts_with("/api/v1/audit")) {
            assert!(has("403"), "{method} {path} lists 403");
        }
        for (status, response) in responses {
            if status.as_str() >= "400" {
                let schema = &response["content"]["application/json"]["schema"]["$ref"];
                assert_eq!(
                    schema, "#/components/schemas/ErrorBody",
                    "{method} {path} {status} answers with ErrorBody"
                );
            }
        }
    }
}

#[test]
fn operation_ids_are_unique() {
    let mut seen = BTreeSet::new();
    for (method, path, operation) in operations() {
        let id = operation["operationId"].as_str().unwrap().to_owned();
        assert!(seen.insert(id.clone()), "{method} {path}: {id} is unique");
    }
}

#[test]
fn what_a_create_answers_links_to_the_operations_on_what_it_made() {
    let ids: BTreeMap<String, (String, String)> = operations()
        .into_iter()
        .map(|(m, p, op)| (op["operationId"].as_str().unwrap().to_owned(), (m, p)))
        .collect();
    for (method, path, status, expected) in [
        ("post", "/api/v1/vms", "202", 15),
        ("post", "/api/v1/ssh-keys", "201", 2),
        ("post", "/api/v1/ssh-keys/generate", "201", 2),
        ("post", "/api/v1/tokens", "201", 1),
        ("post", "/api/v1/admin/providers", "201", 3),
        ("post", "/api/v1/admin/templates", "201", 1),
    ] {
        let (_, _, operation) = operations()
            .into_iter()
            .find(|(m, p, _)| m == method && p == path)
            .unwrap();
        let links = operation["responses"][status]["links"].as_object().unwrap();
        assert_eq!(links.len(), expected, "{method} {path}: {links:?}");
        for link in links.values() {
            let target = link["operationId"].as_str().unwrap();
            let (_, target_path) = &ids[target];
            for name in link["parameters"].as_object().unwrap().keys() {
                assert!(
                    target_path.contains(&format!("{{{name}}}")),
                    "{target} takes {name} in its path"
                );
            }
        }
    }
}
