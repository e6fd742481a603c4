//! The ingest path as in production: runners publish Terraform lines to JetStream, the
//! ingester commits them as `LogLine` events; and the relay, which publishes them again.

use std::time::{Duration, Instant};

use bus::{Bus, Publisher, RunnerKeys, RunnerMessage, RunnerReport};
use domain::provisioning::{JobId, Provisioning, ProvisioningCommand, VmId};
use store::feed::Cursor;
use store::{Metadata, PgPool};

use crate::Error;

/// VMs each with a started job, ready for lines.
pub async fn vms_with_jobs(pool: &PgPool, jobs: usize) -> Result<Vec<VmId>, Error> {
    let meta = Metadata::new(store::Actor::Admin, "bench");
    let mut vms = vec![];
    for _ in 0..jobs {
        let vm = VmId::new();
        let spec = crate::spec();
        store::execute::<Provisioning>(
            pool,
            vm,
            ProvisioningCommand::Request {
                spec,
                at: time::OffsetDateTime::now_utc(),
            },
            &meta,
        )
        .await?;
        let start = ProvisioningCommand::StartJob {
            job_id: JobId::FIRST,
            runner: "bench".into(),
        };
        store::execute::<Provisioning>(pool, vm, start, &meta).await?;
        vms.push(vm);
    }
    Ok(vms)
}

/// The keys runners sign with: the daemons' master secret, which the bench's database keeps.
pub async fn keys(pool: &PgPool) -> Result<RunnerKeys, Error> {
    let master = store::runner_keys::runner_signing_key(pool).await?;
    Ok(RunnerKeys::new(master).ok_or("the runner signing key is too short")?)
}

/// One Terraform line of `vm`'s first job.
pub fn line(vm: VmId, line: u32) -> RunnerMessage {
    RunnerMessage {
        vm_id: vm,
        job_id: JobId::FIRST,
        report: RunnerReport::Log {
            line,
            level: "info".into(),
            kind: "apply_progress".into(),
            message: format!("aws_instance.vm: Still creating... [{line}s elapsed]"),
        },
    }
}

/// Publishes lines `from..from + per_job` of every VM, the jobs interleaved as runners
/// streaming at once would be.
pub async fn publish_lines(
    pool: &PgPool,
    bus: &Bus,
    vms: &[VmId],
    from: u32,
    per_job: u32,
) -> Result<(), Error> {
    let keys = keys(pool).await?;
    let keys: Vec<_> = vms
        .iter()
        .map(|vm| keys.for_job(*vm, JobId::FIRST))
        .collect();
    let mut publisher = Publisher::new(bus.jetstream.clone(), 200);
    for n in from..from + per_job {
        for (vm, key) in vms.iter().zip(&keys) {
            publisher
                .publish_runner(&bus.subjects, key, &line(*vm, n))
                .await?;
        }
    }
    publisher.flush().await?;
    Ok(())
}

/// Waits until the ingester's consumer has every message delivered and acked: it acks only
/// after the commit, so every line is an event by then.
pub async fn wait_ingested(bus: &Bus) -> Result<(), Error> {
    let mut consumer = bus::consumer(bus, "RUNNER", "ingester").await?;
    loop {
        let info = consumer.info().await?;
        if info.num_pending == 0 && info.num_ack_pending == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Lines per second from the first publish to the last commit, for `jobs` jobs streaming
/// `per_job` lines each at once. The ingester must be running.
pub async fn ingest(pool: &PgPool, bus: &Bus, jobs: usize, per_job: u32) -> Result<f64, Error> {
    let vms = vms_with_jobs(pool, jobs).await?;
    let start = Instant::now();
    publish_lines(pool, bus, &vms, 1, per_job).await?;
    wait_ingested(bus).await?;
    let elapsed = start.elapsed();
    check_lines(pool, &vms, per_job).await?;
    Ok(f64::from(per_job) * jobs as f64 / elapsed.as_secs_f64())
}

/// Fails unless each VM has exactly its lines as events: a fast wrong answer is no figure.
pub async fn check_lines(pool: &PgPool, vms: &[VmId], per_job: u32) -> Result<(), Error> {
    let ids: Vec<String> = vms.iter().map(ToString::to_string).collect();
    let (lines, distinct): (i64, i64) = store::sqlx::query_as(
        "SELECT count(*), count(DISTINCT (aggregate_id, payload::jsonb->'data'->>'line'))
         FROM events WHERE aggregate_id = ANY($1) AND event_type = 'LogLine'",
    )
    .bind(&ids)
    .fetch_one(pool)
    .await?;
    let expected = i64::from(per_job) * vms.len() as i64;
    if lines != expected || distinct != expected {
        return Err(format!("{lines} LogLine events ({distinct} distinct), not {expected}").into());
    }
    Ok(())
}

/// The place of the last committed event, which the relay must reach.
pub async fn last_cursor(pool: &PgPool) -> Result<Cursor, Error> {
    let (txid, position): (i64, i64) = store::sqlx::query_as(
        "SELECT txid::text::bigint, position FROM events ORDER BY events.txid DESC, events.position DESC LIMIT 1",
    )
    .fetch_one(pool)
    .await?;
    Ok(Cursor { txid, position })
}

/// Events per second the relay publishes from the backlog it has not published yet; the
/// relay must not be running.
pub async fn relay_backlog(pool: &PgPool, bus: &Bus) -> Result<(f64, usize), Error> {
    let start = Instant::now();
    let mut relayed = 0;
    loop {
        match relay::pass(pool, bus).await? {
            0 => break,
            n => relayed += n,
        }
    }
    Ok((relayed as f64 / start.elapsed().as_secs_f64(), relayed))
}

/// Lines per second from the first publish until the relay (running) published them all
/// on the events stream.
pub async fn pipeline(pool: &PgPool, bus: &Bus, jobs: usize, per_job: u32) -> Result<f64, Error> {
    let vms = vms_with_jobs(pool, jobs).await?;
    let start = Instant::now();
    publish_lines(pool, bus, &vms, 1, per_job).await?;
    wait_ingested(bus).await?;
    let last = last_cursor(pool).await?;
    while relay::checkpoint(pool).await? < last {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = start.elapsed();
    check_lines(pool, &vms, per_job).await?;
    Ok(f64::from(per_job) * jobs as f64 / elapsed.as_secs_f64())
}
