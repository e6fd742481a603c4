//! When each claimed or running job last showed a sign of life (`job_liveness`): the
//! dispatcher's claim, then every runner message at its first delivery (one delivered again
//! says nothing new). The watchdog judges silence from here.

use domain::provisioning::{JobAction, JobId, JobLimits, VmId};
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

/// Every job of `jobs` heard from now, in one statement: the ingester touches the jobs of
/// a whole pull batch at once rather than one commit per job.
pub async fn touch_all(pool: &PgPool, jobs: &[(VmId, JobId)]) -> Result<(), sqlx::Error> {
    let mut jobs = jobs.to_vec();
    // In a stable order, so two ingesters touching the same rows cannot deadlock.
    jobs.sort_by_key(|(vm, job)| (vm.as_uuid(), job.get()));
    jobs.dedup();
    let vms: Vec<Uuid> = jobs.iter().map(|(vm, _)| vm.as_uuid()).collect();
    let ids: Vec<i64> = jobs.iter().map(|(_, job)| i64::from(job.get())).collect();
    sqlx::query(
        "INSERT INTO job_liveness (vm_id, job_id)
         SELECT * FROM unnest($1::uuid[], $2::bigint[])
         ON CONFLICT (vm_id, job_id) DO UPDATE SET last_seen = now()",
    )
    .bind(&vms)
    .bind(&ids)
    .execute(pool)
    .await?;
    Ok(())
}

/// A dispatcher claimed the job (to run `action`): its deadline counts from now.
pub async fn claim(
    pool: &PgPool,
    vm: VmId,
    job: JobId,
    action: JobAction,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO job_liveness (vm_id, job_id, action) VALUES ($1, $2, $3)
         ON CONFLICT (vm_id, job_id) DO UPDATE
         SET last_seen = now(), claimed_at = now(), action = $3",
    )
    .bind(vm.as_uuid())
    .bind(i64::from(job.get()))
    .bind(action.as_str())
    .execute(pool)
    .await?;
    Ok(())
}

/// A force-cancel ended the job: its runner is to be killed.
pub async fn request_stop(pool: &PgPool, vm: VmId, job: JobId) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE job_liveness SET stop_requested = true WHERE vm_id = $1 AND job_id = $2")
        .bind(vm.as_uuid())
        .bind(i64::from(job.get()))
        .execute(pool)
        .await?;
    Ok(())
}

/// A job that needs the watchdog's hand: past its deadline, or ended by a force-cancel
/// with its runner maybe still running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueJob {
    pub vm: VmId,
    pub job: JobId,
    pub runner: Option<String>,
    pub stop_requested: bool,
}

/// The jobs past their action's deadline, or whose runner is to be stopped.
pub async fn due(pool: &PgPool, limits: &JobLimits) -> Result<Vec<DueJob>, sqlx::Error> {
    let rows: Vec<(Uuid, i64, Option<String>, bool)> = sqlx::query_as(
        "SELECT vm_id, job_id, runner, stop_requested FROM job_liveness
         WHERE stop_requested
            OR (action = 'create' AND claimed_at < now() - make_interval(secs => $1))
            OR (action = 'destroy' AND claimed_at < now() - make_interval(secs => $2))
            OR (action = 'refresh' AND claimed_at < now() - make_interval(secs => $3))
         ORDER BY claimed_at",
    )
    .bind(limits.create.as_secs_f64())
    .bind(limits.destroy.as_secs_f64())
    .bind(limits.refresh.as_secs_f64())
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(vm, job, runner, stop_requested)| DueJob {
            vm: VmId::from(vm),
            job: JobId::new(u32::try_from(job).unwrap_or_default()),
            runner,
            stop_requested,
        })
        .collect())
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
