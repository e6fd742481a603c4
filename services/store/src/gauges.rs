//! What the platform gauges count from the read model: VMs by status and provider, jobs
//! running and queued, and the age of the oldest running job.

use sqlx::PgPool;

/// VMs not archived, as `(status, provider, count)`; a pair with none is left out.
pub async fn vms(pool: &PgPool) -> Result<Vec<(String, String, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT status, provider, count(*) FROM vm_views WHERE NOT archived
         GROUP BY status, provider ORDER BY status, provider",
    )
    .fetch_all(pool)
    .await
}

/// Jobs running and queued, and the age in seconds of the oldest running one (`None` when
/// none runs).
pub async fn jobs(pool: &PgPool) -> Result<(i64, i64, Option<f64>), sqlx::Error> {
    // Only VMs not destroyed can have a job queued or running.
    let (running, queued, oldest): (i64, i64, Option<f64>) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE j->>'state' = 'running'),
                count(*) FILTER (WHERE j->>'state' = 'queued'),
                extract(epoch FROM now() - min(coalesce(j->>'started_at', j->>'queued_at')
                    ::timestamptz) FILTER (WHERE j->>'state' = 'running'))::float8
         FROM vm_views, jsonb_array_elements(state->'jobs') AS j
         WHERE status <> 'destroyed' AND j->>'state' IN ('running', 'queued')",
    )
    .fetch_one(pool)
    .await?;
    Ok((running, queued, oldest.map(|s| s.max(0.0))))
}
