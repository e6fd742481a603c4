//! The clusters' process manager: follows the commit-order feed, once in the deployment
//! (under a lease), and for each cluster with news (an event of the cluster or of one of its
//! nodes' VMs) loads it and its VMs, asks `domain::cluster::coordinator::decide` what comes
//! next and carries it out, until nothing is left to do. Every few seconds it also looks at
//! every cluster not yet ended, so a gate's deadline is noticed without an event, and a
//! coordinator that starts (or takes the lease over) picks up whatever was left.
//!
//! It keeps nothing of its own but where it is in the feed, and that only to find news
//! early: a decision depends on the events and the clock alone, each is idempotent, and a
//! node's VM id is derived, so it may be killed at any point and resumes without a
//! duplicate node or a lost step.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use domain::cluster::coordinator::{decide, watched, NodeVm};
use domain::cluster::{Cluster, ClusterId};
use domain::identity::{Role, UserId};
use domain::provisioning::{Provisioning, VmId};
use domain::AggregateKind;
use store::feed;
use time::OffsetDateTime;
use tokio::sync::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::nodes::{Loaded, Stop};
use crate::{App, Caller, ClientAddr, Error, Principal};

/// The lease and the feed checkpoint's name.
const NAME: &str = "cluster-coordinator";
const BATCH: i64 = 500;
/// Rounds of decisions for one cluster in one pass; each round's actions change what the
/// next decides, so a round that decides nothing ends it well before.
const ROUNDS: usize = 64;

/// What the coordinator carries from one pass to the next.
struct Progress {
    /// Clusters with news not handled yet (a failed step stays).
    pending: BTreeSet<ClusterId>,
    /// When every cluster not ended was last looked at.
    swept: Option<Instant>,
}

/// Runs the coordinator until cancelled; `sweep` is how often every cluster not ended is
/// looked at (a gate's deadline is noticed that late at most).
pub async fn run(app: App, sweep: Duration, cancel: CancellationToken) {
    let progress = Arc::new(Mutex::new(Progress {
        pending: BTreeSet::new(),
        swept: None,
    }));
    let pool = app.pool.clone();
    store::lease::follow(&pool, NAME, &cancel, || {
        let app = app.clone();
        let progress = progress.clone();
        let cancel = cancel.clone();
        async move {
            let mut progress = progress.lock().await;
            // A pass stopped midway loses nothing (see above): a stop need not wait for a
            // statement that hangs.
            tokio::select! {
                _ = cancel.cancelled() => Ok(0),
                done = pass(&app, &mut progress, sweep) => done,
            }
        }
    })
    .await;
}

/// Reads the news in the feed, then steps every cluster with news; how many events it read.
async fn pass(app: &App, progress: &mut Progress, sweep: Duration) -> Result<usize, Error> {
    let pool = &app.pool;
    let cursor = match feed::load_checkpoint(pool, NAME).await? {
        // Never run: what came before is picked up by the first sweep.
        c if c == feed::Cursor::default() => feed::head(pool).await?,
        c => c,
    };
    let events = feed::read_after(pool, cursor, BATCH).await?;
    let mut vms = BTreeSet::new();
    for event in &events {
        match event.kind() {
            Some(AggregateKind::Cluster) => {
                if let Ok(id) = event.aggregate_id.parse() {
                    progress.pending.insert(id);
                }
            }
            Some(AggregateKind::Vm) if event.event_type != "LogLine" => {
                if let Ok(vm) = event.aggregate_id.parse::<VmId>() {
                    vms.insert(vm);
                }
            }
            _ => {}
        }
    }
    for vm in vms {
        if let Some(cluster) = store::clusters::cluster_of_vm(pool, vm).await? {
            progress.pending.insert(cluster);
        }
    }
    if let Some(last) = events.last() {
        feed::save_checkpoint(pool, NAME, last.cursor).await?;
    }
    if progress.swept.is_none_or(|at| at.elapsed() >= sweep) {
        progress
            .pending
            .extend(store::clusters::active(pool).await?);
        progress.swept = Some(Instant::now());
    }
    for id in progress.pending.clone() {
        match app.step_cluster(id).await {
            Ok(()) => {
                progress.pending.remove(&id);
            }
            Err(e) => {
                tracing::warn!(cluster = %id, error = %e, "cluster step failed; trying again")
            }
        }
    }
    Ok(events.len())
}

impl App {
    /// Decides and carries out what comes next for cluster `id`, round after round, until
    /// it has to wait (for a VM, a gate, a deadline).
    #[tracing::instrument(skip_all, fields(cluster = %id), err)]
    pub async fn step_cluster(&self, id: ClusterId) -> Result<(), Error> {
        let mut caller = None;
        for _ in 0..ROUNDS {
            let (cluster, _) = store::load::<Cluster>(&self.pool, &id.to_string()).await?;
            let Some(owner) = cluster.requested().map(|r| r.owner) else {
                return Ok(());
            };
            let mut vms = BTreeMap::new();
            for vm in watched(&cluster) {
                let (state, _) = store::load::<Provisioning>(&self.pool, &vm.to_string()).await?;
                vms.insert(vm, state);
            }
            let summaries = vms
                .iter()
                .filter_map(|(id, vm)| Some((*id, NodeVm::of(vm)?)))
                .collect();
            let now = OffsetDateTime::now_utc();
            let actions = decide(&cluster, &summaries, now);
            if actions.is_empty() {
                return Ok(());
            }
            let caller = match &caller {
                Some(c) => c,
                None => caller.insert(self.owner_caller(id, owner).await?),
            };
            let loaded = Loaded {
                id,
                cluster: &cluster,
                vms: &vms,
            };
            for action in &actions {
                tracing::debug!(cluster = %id, ?action, "carrying out");
                match self.carry_out(caller, &loaded, action, now).await {
                    Ok(()) => {}
                    Err(Stop::Refused(why)) => {
                        self.refused(caller, &loaded, why)
                            .await
                            .map_err(stop_error)?;
                        break;
                    }
                    Err(Stop::Later(e)) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// The cluster's owner as the caller of the node use cases: their policies and limits
    /// apply; the events name them, with the cluster as correlation id.
    async fn owner_caller(&self, id: ClusterId, owner: UserId) -> Result<Caller, Error> {
        let principal = match store::users::get(&self.pool, owner).await? {
            Some(user) => Principal {
                user: user.id,
                email: user.email,
                role: user.role,
                groups: user.groups,
            },
            None => Principal {
                user: owner,
                email: String::new(),
                role: Role::User,
                groups: vec![],
            },
        };
        Ok(Caller {
            principal,
            request_id: format!("cluster:{id}"),
            client_addr: ClientAddr(Err("the cluster coordinator has no client address".into())),
        })
    }
}

fn stop_error(stop: Stop) -> Error {
    match stop {
        Stop::Later(e) => e,
        Stop::Refused(why) => Error::Conflict(why),
    }
}
