//! Interrupting and stopping a runner.

use std::time::Duration;

use http::{Method, StatusCode};
use serde_json::{json, Value};

use super::*;
use crate::Executor;

pub(super) const PODS: &str = "/api/v1/namespaces/provisioning/pods";

fn not_found(what: &str) -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "status": "Failure",
        "reason": "NotFound", "code": 404, "message": format!("{what} \"{NAME}\" not found"),
    })
}

fn no_pods() -> Value {
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []})
}

/// Awaits a delete of the Job's pods by the `job-name` label; returns the grace period.
async fn expect_pods_deleted(server: &mut ApiServer, answer: (StatusCode, Value)) -> Value {
    let (request, send) = server.next_request().await.expect("no call");
    assert_eq!(request.method(), Method::DELETE);
    assert_eq!(request.uri().path(), PODS);
    let query = request.uri().query().unwrap_or_default().to_owned();
    assert!(
        query.contains(&format!("labelSelector=job-name%3D{NAME}")),
        "{query}"
    );
    let bytes = request.into_body().collect_bytes().await.unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    respond(send, answer.0, answer.1);
    body["gracePeriodSeconds"].clone()
}

#[tokio::test]
async fn interrupting_a_runner_deletes_its_pods_with_a_grace_period_and_keeps_the_job() {
    let (executor, mut server) = executor();
    let scenario = tokio::spawn(async move {
        let ok = (StatusCode::OK, no_pods());
        let gone = (StatusCode::NOT_FOUND, not_found("pods"));
        let graces = [
            expect_pods_deleted(&mut server, ok).await,
            expect_pods_deleted(&mut server, gone).await,
        ];
        (graces, server)
    });
    let runner = format!("kubernetes:provisioning/{NAME}");
    executor.interrupt(&runner).await.unwrap();
    // A Job or pod gone already is no error.
    executor.interrupt(&runner).await.unwrap();
    let (graces, mut server) = within_a_second(scenario).await;
    assert_eq!(graces, [json!(120), json!(120)]);
    drop(executor);
    let extra = tokio::time::timeout(Duration::from_secs(1), server.next_request()).await;
    assert!(
        matches!(extra, Ok(None)),
        "the Job was touched, or another call made"
    );
}

#[tokio::test]
async fn stopping_a_runner_deletes_its_job_in_the_background_then_its_pods_at_once() {
    let (executor, mut server) = executor();
    let path = format!("{JOBS}/{NAME}");
    let scenario = tokio::spawn(async move {
        let mut graces = vec![];
        for found in [true, false] {
            let (body, _, send) = expect(&mut server, Method::DELETE, &path).await;
            assert_eq!(body["propagationPolicy"], "Background");
            let answer = if found {
                (
                    StatusCode::OK,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                )
            } else {
                (StatusCode::NOT_FOUND, not_found("jobs.batch"))
            };
            respond(send, answer.0, answer.1);
            graces.push(expect_pods_deleted(&mut server, (StatusCode::OK, no_pods())).await);
        }
        graces
    });
    let runner = format!("kubernetes:provisioning/{NAME}");
    executor.stop(&runner).await.unwrap();
    // A Job gone already is no error.
    executor.stop(&runner).await.unwrap();
    let graces = within_a_second(scenario).await;
    assert_eq!(graces, [json!(0), json!(0)]);
}

#[tokio::test]
async fn a_runner_of_another_namespace_or_executor_is_refused() {
    let (executor, _server) = executor();
    for runner in [
        "kubernetes:elsewhere/x",
        "kubernetes:provisioning-other/x",
        "kubernetes:provisioning/",
        "local:42",
    ] {
        assert!(executor.stop(runner).await.is_err(), "{runner}");
        assert!(executor.interrupt(runner).await.is_err(), "{runner}");
    }
}

#[tokio::test]
async fn a_runner_may_run_while_its_job_exists_and_is_gone_once_the_job_is() {
    let (executor, mut server) = executor();
    let path = format!("{JOBS}/{NAME}");
    let scenario = tokio::spawn(async move {
        let job = json!({
            "kind": "Job", "apiVersion": "batch/v1",
            "metadata": {"name": NAME, "namespace": "provisioning"},
        });
        let (_, _, send) = expect(&mut server, Method::GET, &path).await;
        respond(send, StatusCode::OK, job);
        let (_, _, send) = expect(&mut server, Method::GET, &path).await;
        respond(send, StatusCode::NOT_FOUND, not_found("jobs.batch"));
    });
    let runner = format!("kubernetes:provisioning/{NAME}");
    assert!(executor.is_running(&runner).await.unwrap());
    assert!(!executor.is_running(&runner).await.unwrap());
    within_a_second(scenario).await;
}
