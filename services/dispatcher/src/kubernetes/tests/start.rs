//! Starting a runner: the Job, then the Secret of its keys and its ConfigMap, and what a
//! redelivery or an error does.

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{json, Value};

use super::*;
use crate::Executor;

pub(super) struct FirstDelivery {
    pub(super) result: Result<String, crate::ExecutorError>,
    pub(super) job: Value,
    pub(super) secret: Value,
    pub(super) config_map: Value,
    /// The bodies of the Job and the ConfigMap.
    pub(super) texts: String,
}

pub(super) async fn first_delivery() -> FirstDelivery {
    first_delivery_of(|dir| launch(dir, good_credentials())).await
}

/// The first delivery of the launch `make` prepares in a directory of its own.
pub(super) async fn first_delivery_of(
    make: impl FnOnce(&std::path::Path) -> Launch,
) -> FirstDelivery {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let (job, job_text, send) = expect(&mut server, Method::POST, JOBS).await;
        respond(send, StatusCode::CREATED, created(job.clone(), UID));
        let (secret, _, send) = expect(&mut server, Method::POST, SECRETS).await;
        respond(send, StatusCode::CREATED, created(secret.clone(), "s-uid"));
        let (config_map, cm_text, send) = expect(&mut server, Method::POST, CONFIG_MAPS).await;
        respond(
            send,
            StatusCode::CREATED,
            created(config_map.clone(), "cm-uid"),
        );
        (job, secret, config_map, format!("{job_text}\n{cm_text}"))
    });
    let result = executor.start(make(dir.path())).await;
    let (job, secret, config_map, texts) = within_a_second(scenario).await;
    FirstDelivery {
        result,
        job,
        secret,
        config_map,
        texts,
    }
}

#[tokio::test]
async fn a_job_is_created_with_its_spec_then_a_config_map_of_the_files_owned_by_the_job() {
    let FirstDelivery {
        result,
        job,
        config_map,
        ..
    } = first_delivery().await;
    assert_eq!(result.unwrap(), format!("kubernetes:provisioning/{NAME}"));

    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["metadata"]["name"], NAME);
    let labels = json!({
        "app.kubernetes.io/name": "provisioning-runner",
        "app.kubernetes.io/part-of": "provisioning",
        "provisioning/vm-id": VM,
        "provisioning/job": "3",
        "provisioning/action": "create",
    });
    assert_eq!(job["metadata"]["labels"], labels);
    let spec = &job["spec"];
    assert_eq!(spec["backoffLimit"], 0);
    assert_eq!(spec["ttlSecondsAfterFinished"], 600);
    // The launch's deadline (the action's and the cool-off), not a setting.
    assert_eq!(spec["activeDeadlineSeconds"], 3610);
    assert_eq!(spec["template"]["metadata"]["labels"], labels);
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(pod["terminationGracePeriodSeconds"], 120);
    assert_eq!(
        pod["volumes"],
        json!([
            {"name": "job", "configMap": {"name": NAME}},
            {"name": "work", "emptyDir": {}},
        ])
    );
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let runner = &containers[0];
    assert_eq!(runner["name"], "runner");
    assert_eq!(runner["image"], "registry.example/provisioning-runner:1");
    assert_eq!(runner["command"], json!(["provisioning-runner"]));
    assert_eq!(
        runner["volumeMounts"],
        json!([
            {"name": "job", "mountPath": "/job", "readOnly": true},
            {"name": "work", "mountPath": "/work"},
        ])
    );
    assert_eq!(
        runner["resources"]["requests"],
        json!({"cpu": "250m", "memory": "256Mi"})
    );
    assert_eq!(
        runner["resources"]["limits"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(
        runner["env"],
        json!([
            {"name": "NATS_URL", "value": "nats://nats:4222"},
            {"name": "RUNNER_PUBLISH_RETRY_SECS", "value": "120"},
            {"name": "RUNNER_SECRET_ENV", "value": "OS_PASSWORD,RUNNER_BACKEND_PASSWORD"},
            {"name": "RUNNER_WORKDIR", "value": "/work"},
            {"name": "RUNNER_SOURCE_DIR", "value": "/job"},
            {"name": "RUNNER_NAME", "value": format!("kubernetes:provisioning/{NAME}")},
            {"name": "OS_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "nrec", "key": "password", "optional": false}}},
            {"name": "RUNNER_BACKEND_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "tf-backend", "key": "password", "optional": false}}},
            {"name": "RUNNER_SIGNING_KEY", "valueFrom": {"secretKeyRef": {"name": NAME, "key": "signing-key", "optional": false}}},
        ])
    );

    assert_eq!(config_map["metadata"]["name"], NAME);
    assert_eq!(config_map["metadata"]["labels"], labels);
    assert_eq!(
        config_map["metadata"]["ownerReferences"],
        json!([{
            "apiVersion": "batch/v1", "kind": "Job", "name": NAME, "uid": UID,
            "controller": true, "blockOwnerDeletion": true,
        }])
    );
    assert_eq!(
        config_map["data"],
        json!({
            "backend.tf": "terraform {\n  backend \"pg\" {}\n}\n",
            "main.tf": "resource \"null_resource\" \"vm\" {}\n",
            "terraform.tfvars.json": "{\"vm_name\": \"web\"}",
        })
    );
}

#[tokio::test]
async fn the_signing_key_is_in_a_secret_of_the_jobs_own_and_in_no_spec() {
    let FirstDelivery {
        result,
        secret,
        texts,
        ..
    } = first_delivery().await;
    result.unwrap();
    assert_eq!(secret["metadata"]["name"], NAME);
    assert_eq!(secret["stringData"], json!({"signing-key": SIGNING_KEY}));
    assert_eq!(
        secret["metadata"]["ownerReferences"],
        json!([{
            "apiVersion": "batch/v1", "kind": "Job", "name": NAME, "uid": UID,
            "controller": true, "blockOwnerDeletion": true,
        }])
    );
    assert!(
        !texts.contains(SIGNING_KEY),
        "the key is in a spec: {texts}"
    );
}

#[tokio::test]
async fn no_credential_value_is_sent_to_the_api_server() {
    let FirstDelivery {
        result,
        texts: bodies,
        ..
    } = first_delivery().await;
    result.unwrap();
    assert!(bodies.contains("secretKeyRef"), "{bodies}");
    assert!(
        !bodies.contains(PLANTED),
        "a credential value was sent: {bodies}"
    );
}

#[tokio::test]
async fn a_redelivered_job_whose_job_exists_is_started_and_creates_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let (_, _, send) = expect(&mut server, Method::POST, JOBS).await;
        respond(send, StatusCode::CONFLICT, already_exists("jobs.batch"));
        let (_, _, send) = expect(&mut server, Method::GET, &format!("{JOBS}/{NAME}")).await;
        respond(
            send,
            StatusCode::OK,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": NAME, "uid": UID}}),
        );
        let (_, _, send) = expect(&mut server, Method::POST, SECRETS).await;
        respond(send, StatusCode::CONFLICT, already_exists("secrets"));
        let (config_map, _, send) = expect(&mut server, Method::POST, CONFIG_MAPS).await;
        assert_eq!(config_map["metadata"]["ownerReferences"][0]["uid"], UID);
        respond(send, StatusCode::CONFLICT, already_exists("configmaps"));
        server
    });
    let result = executor.start(launch(dir.path(), good_credentials())).await;
    let mut server = within_a_second(scenario).await;
    assert_eq!(result.unwrap(), format!("kubernetes:provisioning/{NAME}"));
    drop(executor);
    let extra = tokio::time::timeout(Duration::from_secs(1), server.next_request()).await;
    assert!(matches!(extra, Ok(None)), "an unexpected call was made");
}

#[tokio::test]
async fn a_redelivered_job_whose_config_map_is_missing_gets_it() {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let (_, _, send) = expect(&mut server, Method::POST, JOBS).await;
        respond(send, StatusCode::CONFLICT, already_exists("jobs.batch"));
        let (_, _, send) = expect(&mut server, Method::GET, &format!("{JOBS}/{NAME}")).await;
        respond(
            send,
            StatusCode::OK,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": NAME, "uid": UID}}),
        );
        let (secret, _, send) = expect(&mut server, Method::POST, SECRETS).await;
        assert_eq!(secret["metadata"]["ownerReferences"][0]["uid"], UID);
        respond(send, StatusCode::CREATED, created(secret, "s-uid"));
        let (config_map, _, send) = expect(&mut server, Method::POST, CONFIG_MAPS).await;
        assert_eq!(config_map["metadata"]["ownerReferences"][0]["uid"], UID);
        respond(send, StatusCode::CREATED, created(config_map, "cm-uid"));
    });
    let result = executor.start(launch(dir.path(), good_credentials())).await;
    within_a_second(scenario).await;
    result.unwrap();
}

#[tokio::test]
async fn a_credential_without_a_secret_is_refused_by_name_and_nothing_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let credentials = vec![
        credential("OS_PASSWORD", Some(("nrec", "password"))),
        credential("TF_VAR_api_token", None),
    ];
    let error = executor
        .start(launch(dir.path(), credentials))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("TF_VAR_api_token"), "{error}");
    assert!(!error.contains(PLANTED), "{error}");
    drop(executor);
    let call = tokio::time::timeout(Duration::from_secs(1), server.next_request()).await;
    assert!(matches!(call, Ok(None)), "the API server was called");
}

#[tokio::test]
async fn a_job_whose_config_map_cannot_be_created_is_deleted_and_the_start_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let (job, _, send) = expect(&mut server, Method::POST, JOBS).await;
        respond(send, StatusCode::CREATED, created(job, UID));
        let (secret, _, send) = expect(&mut server, Method::POST, SECRETS).await;
        respond(send, StatusCode::CREATED, created(secret, "s-uid"));
        let (_, _, send) = expect(&mut server, Method::POST, CONFIG_MAPS).await;
        respond(
            send,
            StatusCode::FORBIDDEN,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "message": "configmaps is forbidden", "reason": "Forbidden", "code": 403}),
        );
        let (body, _, send) = expect(&mut server, Method::DELETE, &format!("{JOBS}/{NAME}")).await;
        assert_eq!(body["propagationPolicy"], "Background");
        respond(
            send,
            StatusCode::OK,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": NAME, "uid": UID}}),
        );
    });
    let error = executor
        .start(launch(dir.path(), good_credentials()))
        .await
        .unwrap_err()
        .to_string();
    within_a_second(scenario).await;
    assert!(
        error.contains("ConfigMap") && error.contains("forbidden"),
        "{error}"
    );
}

#[test]
fn names_are_dns_labels_unique_per_vm_and_job() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = launch(dir.path(), vec![]);
    launch.job_id = JobId::new(u32::MAX);
    let name = crate::kubernetes::manifest::name(&launch);
    assert!(name.len() <= 63, "{name}");
    assert!(name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
    assert!(name.starts_with("prov-") && !name.ends_with('-'));
    assert!(name.contains(VM));
}

#[tokio::test]
async fn a_job_created_despite_an_error_answer_is_read_back_and_started() {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let (_, _, send) = expect(&mut server, Method::POST, JOBS).await;
        let timeout = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "Timeout", "code": 504, "message": "the server was unable to return a response in the time allotted",
        });
        respond(send, StatusCode::GATEWAY_TIMEOUT, timeout);
        let (_, _, send) = expect(&mut server, Method::GET, &format!("{JOBS}/{NAME}")).await;
        respond(
            send,
            StatusCode::OK,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": NAME, "uid": UID}}),
        );
        let (secret, _, send) = expect(&mut server, Method::POST, SECRETS).await;
        assert_eq!(secret["metadata"]["ownerReferences"][0]["uid"], UID);
        respond(send, StatusCode::CREATED, created(secret, "s-uid"));
        let (config_map, _, send) = expect(&mut server, Method::POST, CONFIG_MAPS).await;
        assert_eq!(config_map["metadata"]["ownerReferences"][0]["uid"], UID);
        respond(send, StatusCode::CREATED, created(config_map, "cm-uid"));
    });
    let result = executor.start(launch(dir.path(), good_credentials())).await;
    within_a_second(scenario).await;
    assert_eq!(result.unwrap(), format!("kubernetes:provisioning/{NAME}"));
}

#[tokio::test]
async fn a_job_that_cannot_be_created_and_does_not_exist_fails_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let (_, _, send) = expect(&mut server, Method::POST, JOBS).await;
        let forbidden = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "Forbidden", "code": 403, "message": "jobs.batch is forbidden",
        });
        respond(send, StatusCode::FORBIDDEN, forbidden);
        let (_, _, send) = expect(&mut server, Method::GET, &format!("{JOBS}/{NAME}")).await;
        let not_found = json!({
            "kind": "Status", "apiVersion": "v1", "status": "Failure",
            "reason": "NotFound", "code": 404, "message": "not found",
        });
        respond(send, StatusCode::NOT_FOUND, not_found);
    });
    let result = executor.start(launch(dir.path(), good_credentials())).await;
    within_a_second(scenario).await;
    let error = result.unwrap_err().to_string();
    assert!(error.contains("forbidden"), "{error}");
}

#[tokio::test]
async fn a_job_whose_signing_key_secret_cannot_be_created_is_deleted_and_the_start_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let (job, _, send) = expect(&mut server, Method::POST, JOBS).await;
        respond(send, StatusCode::CREATED, created(job, UID));
        let (_, _, send) = expect(&mut server, Method::POST, SECRETS).await;
        respond(
            send,
            StatusCode::FORBIDDEN,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "message": "secrets is forbidden", "reason": "Forbidden", "code": 403}),
        );
        let (_, _, send) = expect(&mut server, Method::DELETE, &format!("{JOBS}/{NAME}")).await;
        respond(
            send,
            StatusCode::OK,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": NAME, "uid": UID}}),
        );
    });
    let error = executor
        .start(launch(dir.path(), good_credentials()))
        .await
        .unwrap_err()
        .to_string();
    within_a_second(scenario).await;
    assert!(
        error.contains("Secret") && error.contains("forbidden"),
        "{error}"
    );
    assert!(!error.contains(SIGNING_KEY), "{error}");
}
