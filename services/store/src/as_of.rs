//! Time travel: a VM as it was at a past position or time, folded from its events up to
//! there (as the read model folded them then).

use cqrs_es::Aggregate;
use domain::provisioning::{Provisioning, VmId, VmView};
use sqlx::PgPool;
use time::OffsetDateTime;

/// A point in the past: a position in the events table, or a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Position(i64),
    Time(OffsetDateTime),
}

/// A VM as it was at some point.
#[derive(Debug, Clone)]
pub struct AsOf {
    pub view: VmView,
    /// The times of its first event and of the last one folded.
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    /// The position of the VM's last event at or before the point: what the view reflects.
    pub position: i64,
}

/// VM `vm` as it was at `at`; `None` if it did not exist yet (or never did).
#[tracing::instrument(skip_all, fields(vm_id = %vm), err)]
pub async fn vm_as_of(pool: &PgPool, vm: VmId, at: At) -> Result<Option<AsOf>, sqlx::Error> {
    // A VM's events are a sequence committed one after the other: those at or before a
    // position (or a time) are the first N of them.
    let (position, time) = match at {
        At::Position(p) => (Some(p), None),
        At::Time(t) => (None, Some(t)),
    };
    let last: Option<(Option<i64>, Option<i64>)> = sqlx::query_as(
        "SELECT max(sequence), max(position) FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2
           AND ($3::bigint IS NULL OR position <= $3)
           AND ($4::timestamptz IS NULL OR recorded_at <= $4)",
    )
    .bind(Provisioning::TYPE)
    .bind(vm.to_string())
    .bind(position)
    .bind(time)
    .fetch_optional(pool)
    .await?;
    let Some((Some(sequence), Some(position))) = last else {
        return Ok(None);
    };
    let folded = crate::views::view_at(pool, vm, sequence as u64).await?;
    Ok(folded.and_then(|(view, created_at, updated_at)| {
        view.spec.is_some().then_some(AsOf {
            view,
            created_at,
            updated_at,
            position,
        })
    }))
}
