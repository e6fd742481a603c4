//! When each claimed or running job last showed a sign of life (`job_liveness`): the
//! dispatcher's claim, then every runner message. The watchdog judges silence from here.

use domain::provisioning::{JobId, VmId};
use sqlx::PgPool;
use uuid::Uuid;

/// A job heard from now (inserted if new).
pub async fn touch(pool: &PgPool, vm: VmId, job: JobId) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO job_liveness (vm_id, job_id) VALUES ($1, $2)
         ON CONFLICT (vm_id, job_id) DO UPDATE SET last_seen = now()",
    )
    .bind(vm.as_uuid())
    .bind(i64::from(job.get()))
    .execute(pool)
    .await?;
    Ok(())
}

/// Records the executor's name of the job's runner, once it started.
pub async fn set_runner(
    pool: &PgPool,
    vm: VmId,
    job: JobId,
    runner: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO job_liveness (vm_id, job_id, runner) VALUES ($1, $2, $3)
         ON CONFLICT (vm_id, job_id) DO UPDATE SET runner = $3, last_seen = now()",
    )
    .bind(vm.as_uuid())
    .bind(i64::from(job.get()))
    .bind(runner)
    .execute(pool)
    .await?;
    Ok(())
}

/// The job ended: nothing to watch any more.
pub async fn forget(pool: &PgPool, vm: VmId, job: JobId) -> Result<(), sqlx::Error> {
    sqlx::query("DELETE FROM job_liveness WHERE vm_id = $1 AND job_id = $2")
        .bind(vm.as_uuid())
        .bind(i64::from(job.get()))
        .execute(pool)
        .await?;
    Ok(())
}

/// A job not heard from for a while, with its runner's name if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SilentJob {
    pub vm: VmId,
    pub job: JobId,
    pub runner: Option<String>,
}

/// The jobs not heard from for `silence`.
pub async fn silent(
    pool: &PgPool,
    silence: std::time::Duration,
) -> Result<Vec<SilentJob>, sqlx::Error> {
    let rows: Vec<(Uuid, i64, Option<String>)> = sqlx::query_as(
        "SELECT vm_id, job_id, runner FROM job_liveness
         WHERE last_seen < now() - make_interval(secs => $1)
         ORDER BY last_seen",
    )
    .bind(silence.as_secs_f64())
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(vm, job, runner)| SilentJob {
            vm: VmId::from(vm),
            job: JobId::new(u32::try_from(job).unwrap_or_default()),
            runner,
        })
        .collect())
}

/// A claimed or running job whose runner is known, by the executor's name for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerJob {
    pub vm: VmId,
    pub job: JobId,
    pub runner: String,
}

/// The jobs whose runner's name starts with `prefix` (`kubernetes:<namespace>/`): what an
/// executor's reconciler compares with the runners that exist.
pub async fn with_runner_prefix(
    pool: &PgPool,
    prefix: &str,
) -> Result<Vec<RunnerJob>, sqlx::Error> {
    // `starts_with`, not LIKE: a prefix holding `_` or `%` means itself.
    let rows: Vec<(Uuid, i64, String)> = sqlx::query_as(
        "SELECT vm_id, job_id, runner FROM job_liveness
         WHERE starts_with(runner, $1)
         ORDER BY vm_id, job_id",
    )
    .bind(prefix)
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(vm, job, runner)| RunnerJob {
            vm: VmId::from(vm),
            job: JobId::new(u32::try_from(job).unwrap_or_default()),
            runner,
        })
        .collect())
}
