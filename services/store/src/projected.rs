//! Read-your-writes on request: whether the read models (the projector) show an event,
//! named by its position, yet.

use cqrs_es::Aggregate;
use domain::provisioning::{Provisioning, VmId};
use sqlx::PgPool;

/// The follower whose checkpoint says how far the read models are.
const PROJECTOR: &str = "projector";

/// Whether the projector folded in the event at `position` (and so every earlier event of
/// its aggregate, which committed before it). A position with no event (a rolled-back
/// insert) counts once the projector's cursor passed it.
pub async fn reached(pool: &PgPool, position: i64) -> Result<bool, sqlx::Error> {
    let reached: Option<bool> = sqlx::query_scalar(
        "SELECT CASE
                    WHEN e.position IS NULL THEN c.position >= $1
                    ELSE (e.txid, e.position) <= (c.txid, c.position)
                END
         FROM event_checkpoints c
         LEFT JOIN events e ON e.position = $1
         WHERE c.name = $2",
    )
    .bind(position)
    .bind(PROJECTOR)
    .fetch_optional(pool)
    .await?;
    Ok(reached.unwrap_or(false))
}

/// When VM `vm` was requested (its first event), and the position and time of the last
/// event of that create: what the create answered. `None` if there is no such VM.
pub async fn requested(pool: &PgPool, vm: VmId) -> Result<Option<Requested>, sqlx::Error> {
    sqlx::query_as(
        "SELECT min(e.recorded_at) AS first_at, max(e.position) AS last_position,
                max(e.recorded_at) AS last_at
         FROM events e
         JOIN events f ON f.aggregate_type = e.aggregate_type
                      AND f.aggregate_id = e.aggregate_id AND f.sequence = 1
         WHERE e.aggregate_type = $1 AND e.aggregate_id = $2 AND e.txid = f.txid
         HAVING count(*) > 0",
    )
    .bind(Provisioning::TYPE)
    .bind(vm.to_string())
    .fetch_optional(pool)
    .await
}

/// See [`requested`].
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Requested {
    pub first_at: time::OffsetDateTime,
    pub last_position: i64,
    pub last_at: time::OffsetDateTime,
}
