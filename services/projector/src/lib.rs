//! The projector: folds committed events, in commit order, into the read models
//! (`vm_views`, `vm_logs`, and the catalog's `providers` and `templates`). Each batch and its
//! checkpoint commit in one transaction, so every event is folded exactly once; `rebuild`
//! replays the whole events table (onto the catalog tables as they are: the catalog's fold
//! only sets values, so replaying it changes nothing).
//!
//! An event it cannot decode is parked in `dead_letters`, in the batch's transaction, and
//! the checkpoint moves past it: the other VMs' views keep up. An admin's replay (once a
//! version that reads it runs) folds the VM's view again from all its events up to the
//! checkpoint, with the replayed event's log line.
//!
//! [`replay`] rebuilds read models into fresh tables while this projector runs, and swaps
//! them in (see `replay.rs`).

mod replay;

pub use replay::{replay, Replayed, PROJECTIONS};

use std::collections::HashMap;

use domain::catalog::CatalogEvent;
use domain::provisioning::{ProvisioningEvent, Stamp, VmId, VmView};
use domain::AggregateKind;
use store::dead_letters;
use store::feed::{self, FeedEvent, UndecodableEvent};
use store::lease::{self, Lease};
use store::views::{self, NewLog, SavedView};
use store::{sqlx, PgPool};
use time::OffsetDateTime;
use tokio_util::sync::CancellationToken;

const CHECKPOINT: &str = "projector";
const BATCH: i64 = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ProjectorError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error(transparent)]
    Undecodable(#[from] UndecodableEvent),
    #[error("a projector is running: stop it (or its provisioningd) before rebuilding")]
    Running,
    #[error("another replay is running")]
    ReplayRunning,
}

/// Runs the projector until cancelled. Only the replica holding the lease folds.
pub async fn run(pool: PgPool, cancel: CancellationToken) {
    lease::follow(&pool, CHECKPOINT, &cancel, || pass(&pool)).await;
}

/// Folds the dead letters whose replay was asked for, then the next batch of events;
/// returns how many events it handled.
#[tracing::instrument(skip_all, err)]
pub async fn pass(pool: &PgPool) -> Result<usize, ProjectorError> {
    let replayed = replay_dead_letters(pool).await?;
    let cursor = feed::load_checkpoint(pool, CHECKPOINT).await?;
    let events = feed::read_after(pool, cursor, BATCH).await?;
    let Some(last) = events.last().map(|e| e.cursor) else {
        return Ok(replayed);
    };
    let mut tx = pool.begin().await?;
    fold(&mut tx, &events, Scope::ALL, Some(CHECKPOINT)).await?;
    feed::save_checkpoint(&mut *tx, CHECKPOINT, last).await?;
    tx.commit().await?;
    Ok(replayed + events.len())
}

/// Which read models a fold writes: the VMs' (`vm_views`, `vm_logs`), the catalog's
/// (`providers`, `templates`, `catalog_projection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    pub vms: bool,
    pub catalog: bool,
}

impl Scope {
    pub const ALL: Scope = Scope {
        vms: true,
        catalog: true,
    };
}

/// Folds `events` (in commit order) into the read models of `scope`, as the tables'
/// names resolve in `tx` (a replay folds into fresh tables of its own schema). An event
/// that cannot be decoded is parked for `follower`, or skipped when there is none (a
/// replay: the live projector parked it already). Log lines are written in one statement.
pub(crate) async fn fold(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    events: &[FeedEvent],
    scope: Scope,
    follower: Option<&str>,
) -> Result<(), sqlx::Error> {
    // The views of the batch's VMs, read in one statement.
    let mut vms: Vec<VmId> = events
        .iter()
        .filter(|e| scope.vms && e.is_vm())
        .filter_map(|e| e.aggregate_id.parse().ok())
        .collect();
    vms.sort_unstable();
    vms.dedup();
    let mut stored = views::load_many_for_update(tx, &vms).await?;
    // Per VM: its view, the time of its first event in this batch (its creation, for a new
    // VM) and of its last.
    let mut touched: HashMap<VmId, (VmView, OffsetDateTime, OffsetDateTime)> = HashMap::new();
    let mut logs = Vec::new();
    for event in events {
        match event.kind() {
            Some(AggregateKind::Catalog) => {
                if !scope.catalog {
                    continue;
                }
                if let Err(e) = decodable_catalog(event) {
                    if let Some(follower) = follower {
                        dead_letters::park(&mut **tx, follower, event, &e).await?;
                    }
                    continue;
                }
                store::catalog::fold(tx, event).await?;
                continue;
            }
            Some(AggregateKind::Vm) if scope.vms => {}
            Some(AggregateKind::Vm) => continue,
            // Clusters have no read model yet: their state is their aggregate's.
            Some(AggregateKind::Cluster) => continue,
            // A type this build does not know: a newer version's, with read models of its own.
            None => continue,
        }
        let (vm, domain_event) = match event.provisioning() {
            Ok(Some(decoded)) => decoded,
            Ok(None) => continue,
            Err(e) => {
                if let Some(follower) = follower {
                    dead_letters::park(&mut **tx, follower, event, &e.to_string()).await?;
                }
                continue;
            }
        };
        let (view, _, at) = touched.entry(vm).or_insert_with(|| {
            let at = event.recorded_at;
            (stored.remove(&vm).unwrap_or_default(), at, at)
        });
        let actor = event.actor();
        let stamp = Stamp {
            at: event.recorded_at,
            actor: actor.as_deref(),
        };
        if view.update(event.sequence, stamp, &domain_event) {
            *at = event.recorded_at;
            if let Some(log) = log_of(vm, domain_event, event.recorded_at) {
                logs.push(log);
            }
        }
    }
    let saved: Vec<SavedView> = touched
        .iter()
        .map(|(vm, (view, first, last))| SavedView {
            vm: *vm,
            view,
            created: *first,
            updated: *last,
        })
        .collect();
    views::save_many(tx, &saved).await?;
    views::insert_logs(tx, &logs).await?;
    Ok(())
}

/// A catalog event the catalog's fold can read (checked first, so a bad one is parked
/// rather than failing the batch); other aggregates pass.
fn decodable_catalog(event: &FeedEvent) -> Result<(), String> {
    if event.kind() != Some(AggregateKind::Catalog) {
        return Ok(());
    }
    serde_json::from_value::<CatalogEvent>(event.payload.clone())
        .map(|_| ())
        .map_err(|e| {
            UndecodableEvent {
                aggregate_type: event.aggregate_type.clone(),
                aggregate_id: event.aggregate_id.clone(),
                sequence: event.sequence,
                reason: e.to_string(),
            }
            .to_string()
        })
}

/// Folds the dead letters an admin asked to replay; each is resolved, or keeps its new
/// error.
async fn replay_dead_letters(pool: &PgPool) -> Result<usize, ProjectorError> {
    let due = dead_letters::replays_due(pool, CHECKPOINT).await?;
    let checkpoint = feed::load_checkpoint(pool, CHECKPOINT).await?;
    for (id, event) in &due {
        let mut tx = pool.begin().await?;
        match refold(&mut tx, pool, event, checkpoint).await? {
            Ok(()) => dead_letters::resolve(&mut *tx, *id).await?,
            Err(error) => dead_letters::replay_failed(&mut *tx, *id, &error).await?,
        }
        tx.commit().await?;
    }
    Ok(due.len())
}

/// Folds a parked event again: a catalog event as usual; a VM's event by folding the VM's
/// view anew from all its events the projector has passed (so the later ones, folded
/// already, stay in), and adding the event's log line.
async fn refold(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    pool: &PgPool,
    event: &FeedEvent,
    checkpoint: feed::Cursor,
) -> Result<Result<(), String>, ProjectorError> {
    match event.kind() {
        Some(AggregateKind::Catalog) => {
            if let Err(error) = decodable_catalog(event) {
                return Ok(Err(error));
            }
            store::catalog::fold(tx, event).await?;
            return Ok(Ok(()));
        }
        Some(AggregateKind::Vm) => {}
        Some(AggregateKind::Cluster) | None => return Ok(Ok(())),
    }
    let (vm, domain_event) = match event.provisioning() {
        Ok(Some(decoded)) => decoded,
        Ok(None) => return Ok(Ok(())),
        Err(e) => return Ok(Err(e.to_string())),
    };
    views::load_for_update(tx, vm).await?; // holds the row against a concurrent fold
    let history = feed::read_aggregate(pool, &event.aggregate_type, &event.aggregate_id).await?;
    let mut view = VmView::default();
    let (mut first, mut last) = (None, event.recorded_at);
    for past in history.iter().filter(|e| e.cursor <= checkpoint) {
        match past.provisioning() {
            Ok(Some((_, e))) => {
                let actor = past.actor();
                let stamp = Stamp {
                    at: past.recorded_at,
                    actor: actor.as_deref(),
                };
                view.update(past.sequence, stamp, &e);
                first.get_or_insert(past.recorded_at);
                last = past.recorded_at;
            }
            Ok(None) => {}
            Err(e) => return Ok(Err(e.to_string())),
        }
    }
    views::save(tx, vm, &view, first.unwrap_or(last), last).await?;
    let log = log_of(vm, domain_event, event.recorded_at);
    views::insert_logs(tx, log.as_slice()).await?;
    Ok(Ok(()))
}

/// The `vm_logs` row of a log line.
fn log_of(vm: VmId, event: ProvisioningEvent, at: OffsetDateTime) -> Option<NewLog> {
    match event {
        ProvisioningEvent::LogLine {
            job_id,
            line,
            level,
            kind,
            message,
        } => Some(NewLog {
            vm,
            job_id: job_id.get(),
            line,
            level,
            kind,
            message,
            at,
        }),
        _ => None,
    }
}

/// Empties the read models and folds the whole events table again.
#[tracing::instrument(skip_all, err)]
pub async fn rebuild(pool: &PgPool) -> Result<usize, ProjectorError> {
    // Hold the projector's lease, so no running projector folds into the tables meanwhile.
    let Some(lease) = Lease::try_acquire(pool, CHECKPOINT).await? else {
        return Err(ProjectorError::Running);
    };
    let mut tx = pool.begin().await?;
    views::reset(&mut tx).await?;
    feed::save_checkpoint(&mut *tx, CHECKPOINT, feed::Cursor::default()).await?;
    tx.commit().await?;
    let mut total = 0;
    loop {
        match pass(pool).await? {
            0 => break,
            n => total += n,
        }
    }
    lease.release().await;
    Ok(total)
}
