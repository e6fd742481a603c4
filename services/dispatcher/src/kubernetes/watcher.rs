//! The watcher of the runner Jobs this executor makes, and their pods: it reports each job
//! whose runner met an end it could not report (an image that will not pull, an OOM kill,
//! an eviction, the deadline, a failed or deleted Job). With it, the reconciler: at start
//! and every [`KubernetesConfig::reconcile_every`](super::KubernetesConfig), each job the
//! store says runs on a Job of this namespace whose Job is gone is reported failed (a Job
//! deleted while the watcher was not running).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use domain::provisioning::{JobId, VmId};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ListParams;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::conditions::{self, Stuck};
use super::follow::{follow, Seen};
use super::manifest::{self, SELECTOR};
use super::reporting::{JobFailures, RunningJobs};
use super::Runners;

pub struct JobWatcher {
    pub(super) runners: Runners,
    pub(super) reconcile_every: Duration,
    pub(super) failures: Arc<dyn JobFailures>,
    pub(super) running: Arc<dyn RunningJobs>,
}

/// The jobs reported already, so that a pod's next state change or the Job's own failure
/// does not report the same job again (the VM would refuse it, but the log would not).
pub(super) type Reported = HashSet<(VmId, JobId)>;

impl JobWatcher {
    /// Follows the Jobs and pods, and reconciles, until cancelled.
    pub async fn run(self, cancel: CancellationToken) {
        let (job_seen, mut jobs) = mpsc::channel(64);
        let (pod_seen, mut pods) = mpsc::channel(64);
        let follow_jobs = follow(self.runners.jobs(), SELECTOR, job_seen, cancel.clone());
        let follow_pods = follow(self.runners.pods(), SELECTOR, pod_seen, cancel.clone());
        let handle = async {
            let mut reported = Reported::new();
            // The first tick is at once: a reconcile at start.
            let mut reconcile = tokio::time::interval(self.reconcile_every);
            reconcile.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    Some(seen) = jobs.recv() => self.on_job(seen, &mut reported).await,
                    Some(seen) = pods.recv() => self.on_pod(seen, &mut reported).await,
                    _ = reconcile.tick() => {
                        if let Err(e) = self.reconcile(&reported).await {
                            tracing::warn!(error = %e, "could not reconcile the runner Jobs");
                        }
                    }
                }
            }
        };
        tokio::join!(follow_jobs, follow_pods, handle);
    }

    async fn on_job(&self, seen: Seen<Job>, reported: &mut Reported) {
        let (job, deleted) = match seen {
            Seen::Present(job) => (job, false),
            Seen::Deleted(job) => (job, true),
        };
        let Some(ids) = conditions::ids(&job.metadata) else {
            return;
        };
        let name = job.metadata.name.clone().unwrap_or_default();
        let namespace = self.runners.namespace.as_str();
        if deleted {
            let stopped_here = self.runners.forget_stopped(&name);
            if reported.remove(&ids) || stopped_here || conditions::finished(&job) {
                return;
            }
            self.report(ids, conditions::deleted(namespace, &name))
                .await;
        } else if let Some(reason) = conditions::job_failure(&job, namespace) {
            if reported.insert(ids) {
                self.report(ids, reason).await;
            }
        }
    }

    async fn on_pod(&self, seen: Seen<Pod>, reported: &mut Reported) {
        // A pod deleted is the Job's business: its failure or deletion is seen there.
        let Seen::Present(pod) = seen else { return };
        let Some(ids) = conditions::ids(&pod.metadata) else {
            return;
        };
        let Some((reason, stuck)) = conditions::pod_failure(&pod) else {
            return;
        };
        if !reported.insert(ids) {
            return;
        }
        self.report(ids, reason).await;
        if stuck == Stuck(true) {
            // It would wait until its deadline: take the Job (and its pod) away now.
            let name = manifest::name_of(ids.0, ids.1);
            if let Err(e) = self.runners.delete_job(&name, 0).await {
                tracing::warn!(job = %name, error = %e, "could not delete the Job of a stuck pod");
            }
        }
    }

    async fn report(&self, (vm, job): (VmId, JobId), reason: String) {
        self.failures.failed(vm, job, reason).await;
    }

    /// Reports each job running on a Job of this namespace whose Job does not exist. The
    /// store is read before the Jobs are listed: a runner is recorded only once its Job was
    /// created, so a Job made meanwhile is in the list.
    #[tracing::instrument(skip_all, err)]
    pub(super) async fn reconcile(&self, reported: &Reported) -> Result<(), String> {
        let namespace = &self.runners.namespace;
        let prefix = format!("kubernetes:{namespace}/");
        let running = self.running.with_runner_prefix(&prefix).await?;
        if running.is_empty() {
            return Ok(());
        }
        let existing: HashSet<String> = self
            .runners
            .jobs()
            .list(&ListParams::default().labels(SELECTOR))
            .await
            .map_err(|e| format!("could not list the runner Jobs: {e}"))?
            .items
            .into_iter()
            .filter_map(|job| job.metadata.name)
            .collect();
        for job in running {
            let name = job.runner.strip_prefix(&prefix).unwrap_or(&job.runner);
            if existing.contains(name) || reported.contains(&(job.vm, job.job)) {
                continue;
            }
            let reason = format!(
                "the runner's Kubernetes Job {namespace}/{name} no longer exists: it was deleted before its runner reported"
            );
            self.report((job.vm, job.job), reason).await;
        }
        Ok(())
    }
}
