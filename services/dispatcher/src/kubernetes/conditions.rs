//! Reading a runner's Job and pod for an end its runner could not report, without I/O. Each
//! reason names what happened, for the person reading the failed job.

use domain::provisioning::{JobId, VmId};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::manifest::{JOB_LABEL, VM_LABEL};

/// Waiting reasons of a container whose image will not come: the pod would wait until the
/// Job's deadline.
const IMAGE_PULL_FAILURES: &[&str] = &["ErrImagePull", "ImagePullBackOff", "InvalidImageName"];
/// A container that cannot be made from its spec, most often a Secret or key missing.
const CONFIG_FAILURE: &str = "CreateContainerConfigError";

/// The VM and job a Job or pod of ours runs, from its labels.
pub fn ids(meta: &ObjectMeta) -> Option<(VmId, JobId)> {
    let labels = meta.labels.as_ref()?;
    let vm = labels.get(VM_LABEL)?.parse::<VmId>().ok()?;
    let job = labels.get(JOB_LABEL)?.parse::<u32>().ok()?;
    Some((vm, JobId::new(job)))
}

/// A pod failure the runner cannot report, and whether the pod is stuck with it (waiting
/// for ever) rather than ended.
pub fn pod_failure(pod: &Pod) -> Option<(String, Stuck)> {
    let name = pod.metadata.name.as_deref().unwrap_or("?");
    let status = pod.status.as_ref()?;
    if status.reason.as_deref() == Some("Evicted") {
        let message = status.message.as_deref().unwrap_or("no message");
        return Some((
            format!("the runner's pod {name} was evicted: {message}"),
            Stuck(false),
        ));
    }
    for container in status.container_statuses.iter().flatten() {
        let state = container.state.as_ref();
        if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
            let reason = waiting.reason.as_deref().unwrap_or_default();
            let message = waiting.message.as_deref().unwrap_or("no message");
            if IMAGE_PULL_FAILURES.contains(&reason) {
                return Some((
                    format!(
                        "the runner's pod {name} could not pull image {}: {reason}: {message}",
                        container.image
                    ),
                    Stuck(true),
                ));
            }
            if reason == CONFIG_FAILURE {
                return Some((
                    format!("the runner's pod {name} could not start its container: {reason}: {message}"),
                    Stuck(true),
                ));
            }
        }
        if let Some(terminated) = state.and_then(|s| s.terminated.as_ref()) {
            if terminated.reason.as_deref() == Some("OOMKilled") {
                return Some((
                    format!(
                        "the runner's pod {name} was killed for using more memory than its limit ({}): OOMKilled",
                        memory_limit(pod).unwrap_or("none set")
                    ),
                    Stuck(false),
                ));
            }
        }
    }
    None
}

/// Whether a failed pod will wait until the Job's deadline unless its Job is deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stuck(pub bool);

fn memory_limit(pod: &Pod) -> Option<&str> {
    let container = pod.spec.as_ref()?.containers.first()?;
    let limits = container.resources.as_ref()?.limits.as_ref()?;
    limits.get("memory").map(|q| q.0.as_str())
}

/// A Job that ended failed: its runner exits 0 once it has reported, so a failed Job is a
/// runner that did not (or a deadline that stopped it).
pub fn job_failure(job: &Job, namespace: &str) -> Option<String> {
    let name = job.metadata.name.as_deref().unwrap_or("?");
    let failed = condition(job, "Failed")?;
    let reason = failed.reason.as_deref().unwrap_or("no reason");
    let message = failed.message.as_deref().unwrap_or("no message");
    if reason == "DeadlineExceeded" {
        let deadline = job
            .spec
            .as_ref()
            .and_then(|s| s.active_deadline_seconds)
            .map_or("its".to_owned(), |s| format!("its {s} s"));
        return Some(format!(
            "the runner's Kubernetes Job {namespace}/{name} ran past {deadline} deadline and was stopped: DeadlineExceeded"
        ));
    }
    Some(format!(
        "the runner's Kubernetes Job {namespace}/{name} failed before its runner reported: {reason}: {message}"
    ))
}

/// Whether the Job completed or failed (the Job controller's verdict, not the runner's).
pub fn finished(job: &Job) -> bool {
    condition(job, "Complete").is_some() || condition(job, "Failed").is_some()
}

fn condition<'a>(
    job: &'a Job,
    kind: &str,
) -> Option<&'a k8s_openapi::api::batch::v1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == kind && c.status == "True")
}

/// Why a Job deleted before it finished ended its job.
pub fn deleted(namespace: &str, name: &str) -> String {
    format!(
        "the runner's Kubernetes Job {namespace}/{name} was deleted before it completed (not by the dispatcher)"
    )
}
