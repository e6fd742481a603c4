//! What the expiry sweep and the boot timeout look for in the read model, and the key
//! callback tokens are signed with.

use std::time::Duration;

use domain::provisioning::{VmId, VmView};
use sqlx::PgPool;

/// The VMs not being destroyed that have expired, or for which one of `warnings` (each a
/// time before the expiry) is due and was not sent (nor a shorter one), with their views,
/// soonest first. Those warned already are left out in the query, so they never crowd the
/// ones still to warn out of the `limit`.
pub async fn expiring(
    pool: &PgPool,
    warnings: &[Duration],
    limit: i64,
) -> Result<Vec<(VmId, VmView)>, sqlx::Error> {
    let warnings: Vec<f64> = warnings.iter().map(Duration::as_secs_f64).collect();
    let rows: Vec<(uuid::Uuid, serde_json::Value)> = sqlx::query_as(
        "SELECT id, state FROM vm_views
         WHERE status NOT IN ('destroy_requested', 'destroying', 'destroyed')
           AND (expires_at <= now()
                OR EXISTS (
                    SELECT 1 FROM unnest($1::float8[]) AS w(secs)
                    WHERE expires_at <= now() + make_interval(secs => w.secs)
                      AND w.secs < COALESCE(
                          (state->'lifecycle'->'expiry'->>'warned_within')::float8,
                          'infinity')))
         ORDER BY expires_at LIMIT $2",
    )
    .bind(&warnings)
    .bind(limit)
    .fetch_all(pool)
    .await?;
    crate::views::decode_states(rows)
}

/// The VMs whose last create succeeded more than `timeout` ago and that have not phoned
/// home, with their views.
pub async fn boot_overdue(
    pool: &PgPool,
    timeout: Duration,
    limit: i64,
) -> Result<Vec<(VmId, VmView)>, sqlx::Error> {
    let rows: Vec<(uuid::Uuid, serde_json::Value)> = sqlx::query_as(
        "SELECT id, state FROM vm_views
         WHERE boot_since < now() - make_interval(secs => $1)
           AND status IN ('provisioned', 'initializing')
         ORDER BY boot_since LIMIT $2",
    )
    .bind(timeout.as_secs_f64())
    .bind(limit)
    .fetch_all(pool)
    .await?;
    crate::views::decode_states(rows)
}

/// The deployment's callback key: made once, by whichever daemon asks first, and the same
/// for every daemon after.
pub async fn callback_key(pool: &PgPool) -> Result<Vec<u8>, sqlx::Error> {
    // Two v4 UUIDs: 244 bits from the operating system's random source.
    let fresh = [uuid::Uuid::new_v4(), uuid::Uuid::new_v4()]
        .iter()
        .flat_map(|u| *u.as_bytes())
        .collect::<Vec<u8>>();
    sqlx::query("INSERT INTO callback_keys (id, key) VALUES (1, $1) ON CONFLICT DO NOTHING")
        .bind(&fresh)
        .execute(pool)
        .await?;
    sqlx::query_scalar("SELECT key FROM callback_keys WHERE id = 1")
        .fetch_one(pool)
        .await
}
