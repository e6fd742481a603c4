//! The watcher and the reconciler against a scripted API server: the watches deliver what
//! a cluster would send for each end a runner cannot report, and the test reads what was
//! reported as failed.

use std::sync::Arc;
use std::time::Duration;

use domain::provisioning::{JobId, VmId};
use http::{Method, StatusCode};
use serde_json::{json, Value};
use store::liveness::RunnerJob;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::stop::PODS;
use super::*;
use crate::kubernetes::watcher::Reported;
use crate::kubernetes::{JobFailures, RunningJobs};
use crate::Executor;

const IMAGE: &str = "registry.example/provisioning-runner:1";

/// What was reported failed, in order.
struct Recorder(mpsc::UnboundedSender<(JobId, String)>);

#[async_trait::async_trait]
impl JobFailures for Recorder {
    async fn failed(&self, vm: VmId, job: JobId, reason: String) {
        assert_eq!(vm.to_string(), VM);
        self.0.send((job, reason)).unwrap();
    }
}

/// The store's running jobs, as given.
struct Running(Vec<u32>);

#[async_trait::async_trait]
impl RunningJobs for Running {
    async fn with_runner_prefix(&self, prefix: &str) -> Result<Vec<RunnerJob>, String> {
        assert_eq!(prefix, "kubernetes:provisioning/");
        Ok(self
            .0
            .iter()
            .map(|&n| RunnerJob {
                vm: VM.parse().unwrap(),
                job: JobId::new(n),
                runner: format!("{prefix}{}", name(n)),
            })
            .collect())
    }
}

fn name(n: u32) -> String {
    format!("prov-{VM}-{n}")
}

fn labels(n: u32) -> Value {
    json!({
        "app.kubernetes.io/name": "provisioning-runner",
        "app.kubernetes.io/part-of": "provisioning",
        "provisioning/vm-id": VM,
        "provisioning/job": n.to_string(),
        "provisioning/action": "create",
    })
}

fn job(n: u32, conditions: Value) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name(n), "namespace": "provisioning", "labels": labels(n),
                     "resourceVersion": format!("{}", 100 + n)},
        "spec": {"activeDeadlineSeconds": 3610, "template": {}},
        "status": {"conditions": conditions},
    })
}

fn condition(kind: &str, reason: &str, message: &str) -> Value {
    json!([{"type": kind, "status": "True", "reason": reason, "message": message}])
}

fn pod(n: u32, status: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("{}-x7k2p", name(n)), "namespace": "provisioning",
                     "labels": labels(n), "resourceVersion": format!("{}", 200 + n)},
        "spec": {"containers": [{"name": "runner", "image": IMAGE,
                                 "resources": {"limits": {"memory": "1Gi"}}}]},
        "status": status,
    })
}

fn container(state: Value) -> Value {
    json!({"containerStatuses": [{"name": "runner", "image": IMAGE, "imageID": "",
                                  "ready": false, "restartCount": 0, "state": state}]})
}

fn waiting(reason: &str, message: &str) -> Value {
    container(json!({"waiting": {"reason": reason, "message": message}}))
}

fn event(kind: &str, object: Value) -> Value {
    json!({"type": kind, "object": object})
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items})
}

/// Answers like an API server: lists are empty, the first watch of each kind delivers its
/// events and ends, later watches stay open; deletes succeed and are recorded.
async fn serve(
    mut server: ApiServer,
    job_events: Vec<Value>,
    pod_events: Vec<Value>,
    deleted: mpsc::UnboundedSender<String>,
) {
    let mut events = [Some(job_events), Some(pod_events)];
    let mut open_watches = vec![];
    while let Some((request, send)) = server.next_request().await {
        let path = request.uri().path().to_owned();
        let query = request.uri().query().unwrap_or_default().to_owned();
        let kind = usize::from(path == PODS);
        match (request.method().clone(), query.contains("watch=true")) {
            (Method::GET, true) => {
                assert!(
                    query.contains("labelSelector=app.kubernetes.io%2Fname%3Dprovisioning-runner"),
                    "{query}"
                );
                match events[kind].take() {
                    Some(events) => {
                        let lines: Vec<String> = events.iter().map(Value::to_string).collect();
                        send.send_response(
                            http::Response::builder()
                                .status(StatusCode::OK)
                                .body(kube::client::Body::from(lines.join("\n").into_bytes()))
                                .unwrap(),
                        );
                    }
                    None => open_watches.push(send),
                }
            }
            (Method::GET, false) => {
                let kind = if kind == 1 { "PodList" } else { "JobList" };
                respond(send, StatusCode::OK, list(kind, vec![]));
            }
            (Method::DELETE, _) => {
                deleted.send(format!("{path}?{query}")).unwrap();
                let answer = if kind == 1 {
                    list("PodList", vec![])
                } else {
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})
                };
                respond(send, StatusCode::OK, answer);
            }
            (method, _) => panic!("unexpected call {method} {path}"),
        }
    }
}

#[tokio::test]
async fn each_end_a_runner_cannot_report_is_reported_failed_with_what_happened() {
    let (executor, server) = executor();
    let (deleted, mut deletes) = mpsc::unbounded_channel();
    let job_events = vec![
        event(
            "MODIFIED",
            job(
                1,
                condition(
                    "Failed",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                ),
            ),
        ),
        event(
            "MODIFIED",
            job(
                2,
                condition(
                    "Failed",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                ),
            ),
        ),
        event(
            "MODIFIED",
            job(
                3,
                condition(
                    "Complete",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                ),
            ),
        ),
        event(
            "DELETED",
            job(3, condition("Complete", "CompletionsReached", "done")),
        ),
        event("ADDED", job(4, json!([]))),
        event("DELETED", job(4, json!([]))),
        // Stopped by this executor before the watch began.
        event("DELETED", job(5, json!([]))),
    ];
    let pod_events = vec![
        event(
            "MODIFIED",
            pod(6, waiting("ErrImagePull", "failed to pull: not found")),
        ),
        event(
            "MODIFIED",
            pod(6, waiting("ImagePullBackOff", "Back-off pulling image")),
        ),
        event(
            "MODIFIED",
            pod(7, waiting("InvalidImageName", "couldn't parse image name")),
        ),
        event(
            "MODIFIED",
            pod(
                8,
                container(json!({"terminated": {"reason": "OOMKilled", "exitCode": 137}})),
            ),
        ),
        event(
            "MODIFIED",
            pod(
                9,
                json!({"phase": "Failed", "reason": "Evicted",
                                        "message": "The node was low on resource: memory."}),
            ),
        ),
        event(
            "MODIFIED",
            pod(
                10,
                waiting("CreateContainerConfigError", "secret \"nrec\" not found"),
            ),
        ),
        event("MODIFIED", pod(11, container(json!({"running": {}})))),
    ];
    let serving = tokio::spawn(serve(server, job_events, pod_events, deleted));
    executor
        .stop(&format!("kubernetes:provisioning/{}", name(5)))
        .await
        .unwrap();
    let (sender, mut reports) = mpsc::unbounded_channel();
    let watcher = executor.watcher(Arc::new(Recorder(sender)), Arc::new(Running(vec![])));
    let cancel = CancellationToken::new();
    let watching = tokio::spawn(watcher.run(cancel.clone()));

    let mut reported = std::collections::BTreeMap::new();
    while reported.len() < 8 {
        let (job, reason) = tokio::time::timeout(Duration::from_secs(2), reports.recv())
            .await
            .expect("a failure was not reported within seconds")
            .unwrap();
        assert!(
            reported.insert(job.get(), reason).is_none(),
            "job {job} reported twice"
        );
    }
    let ns_name = |n| format!("provisioning/{}", name(n));
    let expected = [
        (1, format!("the runner's Kubernetes Job {} ran past its 3610 s deadline and was stopped: DeadlineExceeded", ns_name(1))),
        (2, format!("the runner's Kubernetes Job {} failed before its runner reported: BackoffLimitExceeded: Job has reached the specified backoff limit", ns_name(2))),
        (4, format!("the runner's Kubernetes Job {} was deleted before it completed (not by the dispatcher)", ns_name(4))),
        (6, format!("the runner's pod {}-x7k2p could not pull image {IMAGE}: ErrImagePull: failed to pull: not found", name(6))),
        (7, format!("the runner's pod {}-x7k2p could not pull image {IMAGE}: InvalidImageName: couldn't parse image name", name(7))),
        (8, format!("the runner's pod {}-x7k2p was killed for using more memory than its limit (1Gi): OOMKilled", name(8))),
        (9, format!("the runner's pod {}-x7k2p was evicted: The node was low on resource: memory.", name(9))),
        (10, format!("the runner's pod {}-x7k2p could not start its container: CreateContainerConfigError: secret \"nrec\" not found", name(10))),
    ];
    for (job, reason) in expected {
        assert_eq!(reported.get(&job), Some(&reason), "job {job}");
    }
    // The completed Job, the one this executor stopped, and the running pod: nothing.
    let extra = tokio::time::timeout(Duration::from_millis(300), reports.recv()).await;
    assert!(extra.is_err(), "something more was reported: {extra:?}");

    // The stuck pods' Jobs are taken away, with their pods.
    let mut deletions = vec![];
    while let Ok(path) = deletes.try_recv() {
        deletions.push(path);
    }
    for n in [6, 10] {
        assert!(
            deletions
                .iter()
                .any(|p| p.starts_with(&format!("{JOBS}/{}?", name(n)))),
            "{deletions:?}"
        );
    }
    // A pod that ended (OOM, evicted) ends its Job by itself.
    for n in [8, 9] {
        assert!(
            !deletions
                .iter()
                .any(|p| p.starts_with(&format!("{JOBS}/{}?", name(n)))),
            "{deletions:?}"
        );
    }
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(1), watching)
        .await
        .expect("the watcher did not stop when cancelled")
        .unwrap();
    drop(executor);
    serving.abort();
}

#[tokio::test]
async fn the_reconciler_fails_a_running_job_whose_job_vanished_and_leaves_one_whose_job_exists() {
    let (executor, mut server) = executor();
    let (sender, mut reports) = mpsc::unbounded_channel();
    let watcher = executor.watcher(Arc::new(Recorder(sender)), Arc::new(Running(vec![1, 2])));
    let scenario = tokio::spawn(async move {
        let (request, send) = server.next_request().await.expect("no list call");
        assert_eq!(request.method(), Method::GET);
        assert_eq!(request.uri().path(), JOBS);
        let query = request.uri().query().unwrap_or_default().to_owned();
        assert!(
            query.contains("labelSelector=app.kubernetes.io%2Fname%3Dprovisioning-runner"),
            "{query}"
        );
        assert!(!query.contains("watch"), "{query}");
        respond(
            send,
            StatusCode::OK,
            list("JobList", vec![job(1, json!([]))]),
        );
    });
    watcher.reconcile(&Reported::new()).await.unwrap();
    within_a_second(scenario).await;
    let (job, reason) = reports.try_recv().expect("nothing was reported");
    assert_eq!(job, JobId::new(2));
    assert_eq!(
        reason,
        format!("the runner's Kubernetes Job provisioning/{} no longer exists: it was deleted before its runner reported", name(2))
    );
    assert!(
        reports.try_recv().is_err(),
        "the job whose Job exists was reported"
    );
}

#[tokio::test]
async fn the_reconciler_asks_nothing_of_the_api_server_when_no_job_is_running() {
    let (executor, mut server) = executor();
    let (sender, mut reports) = mpsc::unbounded_channel();
    let watcher = executor.watcher(Arc::new(Recorder(sender)), Arc::new(Running(vec![])));
    watcher.reconcile(&Reported::new()).await.unwrap();
    drop((watcher, executor));
    let call = tokio::time::timeout(Duration::from_secs(1), server.next_request()).await;
    assert!(matches!(call, Ok(None)), "the API server was called");
    assert!(reports.try_recv().is_err());
}
