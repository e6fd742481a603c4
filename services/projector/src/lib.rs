//! The projector: folds committed events, in commit order, into the read models
//! (`vm_views`, `vm_logs`, and the catalog's `providers` and `templates`). Each batch and its
//! checkpoint commit in one transaction, so every event is folded exactly once; `rebuild`
//! replays the whole events table (onto the catalog tables as they are: the catalog's fold
//! only sets values, so replaying it changes nothing).

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use domain::provisioning::{ProvisioningEvent, VmId, VmView};
use store::feed::{self, UndecodableEvent};
use store::lease::{self, Lease};
use store::views::{self, NewLog};
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
}

/// Runs the projector until cancelled. Only the replica holding the lease folds.
pub async fn run(pool: PgPool, cancel: CancellationToken) {
    lease::follow(&pool, CHECKPOINT, &cancel, || pass(&pool)).await;
}

/// Folds the next batch of events; returns how many.
#[tracing::instrument(skip_all, err)]
pub async fn pass(pool: &PgPool) -> Result<usize, ProjectorError> {
    let cursor = feed::load_checkpoint(pool, CHECKPOINT).await?;
    let events = feed::read_after(pool, cursor, BATCH).await?;
    let Some(last) = events.last().map(|e| e.cursor) else {
        return Ok(0);
    };
    let mut tx = pool.begin().await?;
    // Per VM: its view, the time of its first event in this batch (its creation, for a new
    // VM) and of its last.
    let mut touched: HashMap<VmId, (VmView, OffsetDateTime, OffsetDateTime)> = HashMap::new();
    for event in &events {
        if store::catalog::fold(&mut tx, event).await? {
            continue;
        }
        let Some((vm, domain_event)) = event.provisioning()? else {
            continue; // other aggregates have read models of their own
        };
        let (view, _, at) = match touched.entry(vm) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                let view = views::load_for_update(&mut tx, vm).await?;
                let at = event.recorded_at;
                entry.insert((view.unwrap_or_default(), at, at))
            }
        };
        if view.update(event.sequence, &domain_event) {
            *at = event.recorded_at;
            fold_log(&mut tx, vm, &domain_event, event.recorded_at).await?;
        }
    }
    for (vm, (view, first, last)) in &touched {
        views::save(&mut tx, *vm, view, *first, *last).await?;
    }
    feed::save_checkpoint(&mut *tx, CHECKPOINT, last).await?;
    tx.commit().await?;
    Ok(events.len())
}

async fn fold_log(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    vm: VmId,
    event: &ProvisioningEvent,
    at: OffsetDateTime,
) -> Result<(), sqlx::Error> {
    if let ProvisioningEvent::LogLine {
        job_id,
        line,
        level,
        kind,
        message,
    } = event
    {
        let log = NewLog {
            vm,
            job_id: job_id.get(),
            line: *line,
            level,
            kind,
            message,
            at,
        };
        views::insert_log(tx, log).await?;
    }
    Ok(())
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
