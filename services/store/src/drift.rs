//! What the drift check reads and writes: the running VMs due for a refresh, the longest
//! unchecked first, and when each was last checked (`drift_checks`).

use std::time::Duration;

use domain::provisioning::VmId;
use sqlx::PgPool;

/// The statuses of a VM that exists in its cloud and is not on its way out: created, and
/// not failed, destroyed or to be destroyed. `initializing`, `running` and `unreachable`
/// are the boot statuses that follow `provisioned` once the VM calls back.
pub const RUNNING_STATUSES: &[&str] = &["provisioned", "initializing", "running", "unreachable"];

/// At most `limit` VMs with a running status and no job to come (active or waiting) that
/// were not checked within `interval`, the longest unchecked first. A VM never checked
/// counts from its request, so its first check comes an interval after it.
pub async fn due(pool: &PgPool, interval: Duration, limit: i64) -> Result<Vec<VmId>, sqlx::Error> {
    let statuses: Vec<String> = RUNNING_STATUSES.iter().map(|s| (*s).to_owned()).collect();
    let ids: Vec<uuid::Uuid> = sqlx::query_scalar(
        "SELECT v.id FROM vm_views v LEFT JOIN drift_checks c ON c.vm_id = v.id
         WHERE v.status = ANY($1)
           AND NULLIF(v.state->'lifecycle'->'active_job', 'null'::jsonb) IS NULL
           AND COALESCE(jsonb_array_length(v.state->'lifecycle'->'waiting'), 0) = 0
           AND COALESCE(c.checked_at, v.created_at) <= now() - make_interval(secs => $2)
         ORDER BY COALESCE(c.checked_at, v.created_at), v.id
         LIMIT $3",
    )
    .bind(statuses)
    .bind(interval.as_secs_f64())
    .bind(limit)
    .fetch_all(pool)
    .await?;
    Ok(ids.into_iter().map(VmId::from).collect())
}

/// Records that the drift check took `vm` now.
pub async fn checked(pool: &PgPool, vm: VmId) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO drift_checks (vm_id, checked_at) VALUES ($1, now())
         ON CONFLICT (vm_id) DO UPDATE SET checked_at = excluded.checked_at",
    )
    .bind(vm.as_uuid())
    .execute(pool)
    .await?;
    Ok(())
}
