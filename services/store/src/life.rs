//! What the expiry sweep and the boot timeout look for in the read model, and the key
//! callback tokens are signed with.

use std::time::Duration;

use domain::provisioning::{VmId, VmView};
use sqlx::PgPool;

/// The VMs that expire within `horizon` (the longest warning) or have expired, and are not
/// being destroyed, with their views, soonest first.
pub async fn expiring(
    pool: &PgPool,
    horizon: Duration,
    limit: i64,
) -> Result<Vec<(VmId, VmView)>, sqlx::Error> {
    views_where(
        pool,
        "expires_at <= now() + make_interval(secs => $1)
         AND status NOT IN ('destroy_requested', 'destroying', 'destroyed')
         ORDER BY expires_at",
        horizon,
        limit,
    )
    .await
}

/// The VMs whose last create succeeded more than `timeout` ago and that have not phoned
/// home, with their views.
pub async fn boot_overdue(
    pool: &PgPool,
    timeout: Duration,
    limit: i64,
) -> Result<Vec<(VmId, VmView)>, sqlx::Error> {
    views_where(
        pool,
        "boot_since < now() - make_interval(secs => $1)
         AND status IN ('provisioned', 'initializing')
         ORDER BY boot_since",
        timeout,
        limit,
    )
    .await
}

/// The views of the VMs `condition` (with `$1`, seconds) selects, at most `limit`.
async fn views_where(
    pool: &PgPool,
    condition: &str,
    secs: Duration,
    limit: i64,
) -> Result<Vec<(VmId, VmView)>, sqlx::Error> {
    let sql = format!("SELECT id, state FROM vm_views WHERE {condition} LIMIT $2");
    let rows: Vec<(uuid::Uuid, serde_json::Value)> = sqlx::query_as(&sql)
        .bind(secs.as_secs_f64())
        .bind(limit)
        .fetch_all(pool)
        .await?;
    rows.into_iter()
        .map(|(id, state)| {
            let view =
                serde_json::from_value(state).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
            Ok((VmId::from(id), view))
        })
        .collect()
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
