//! `replay_events_per_s`: `provisioningd replay` of every read model over a table of 1M
//! events, beside `events_seq_read_per_s`, a plain sequential read of the same table.

use std::time::Instant;

use domain::provisioning::ProvisioningEvent;
use futures::TryStreamExt;
use store::PgPool;

use crate::Error;

/// Adds `vms` VMs of `per_vm` events each (a request, then log lines), a hundred VMs to a
/// statement (each well inside the statement timeout), and moves the projector's
/// checkpoint to the end: the replay rebuilds up to it.
pub async fn seed(pool: &PgPool, vms: i64, per_vm: i64) -> Result<(), Error> {
    let requested = serde_json::to_string(&ProvisioningEvent::Requested {
        spec: crate::spec(),
        expires_at: None,
    })?;
    for first in (0..vms).step_by(100) {
        seed_vms(pool, &requested, (vms - first).min(100), per_vm).await?;
    }
    store::sqlx::query(
        "INSERT INTO event_checkpoints (name, txid, position)
         SELECT 'projector', txid, position FROM events ORDER BY txid DESC, position DESC LIMIT 1
         ON CONFLICT (name) DO UPDATE SET txid = excluded.txid, position = excluded.position",
    )
    .execute(pool)
    .await?;
    store::sqlx::query("VACUUM ANALYZE events")
        .execute(pool)
        .await?;
    Ok(())
}

async fn seed_vms(pool: &PgPool, requested: &str, vms: i64, per_vm: i64) -> Result<(), Error> {
    store::sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version,
                             payload, metadata)
         SELECT 'Provisioning', v.id::text, s,
                CASE WHEN s = 1 THEN 'Requested' ELSE 'LogLine' END, '1.1',
                CASE WHEN s = 1 THEN $1::text::json
                     ELSE json_build_object('type', 'LogLine', 'data', json_build_object(
                         'job_id', 1, 'line', s - 1, 'level', 'info', 'kind', 'plain',
                         'message', 'openstack_compute_instance_v2.vm: Still creating... ' || s))
                END,
                '{\"actor\": \"runner\", \"correlation_id\": \"bench\"}'::json
         FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, $2)) v,
              generate_series(1, $3) s",
    )
    .bind(requested)
    .bind(vms)
    .bind(per_vm)
    .execute(pool)
    .await?;
    Ok(())
}

/// Every row of the events table, every column, read once in one query: rows/s.
pub async fn seq_read(pool: &PgPool) -> Result<(f64, u64), Error> {
    let started = Instant::now();
    let mut rows = store::sqlx::query(
        "SELECT txid::text, position, aggregate_type, aggregate_id, sequence, event_type,
                event_version, payload::text, metadata::text, recorded_at FROM events",
    )
    .fetch(pool);
    let mut n = 0u64;
    while rows.try_next().await?.is_some() {
        n += 1;
    }
    Ok((n as f64 / started.elapsed().as_secs_f64(), n))
}

/// A replay of every read model: events/s.
pub async fn replay(pool: &PgPool) -> Result<f64, Error> {
    let done = projector::replay(pool, projector::Scope::ALL).await?;
    println!(
        "replay: {} events into {} in {:.1} s, up to position {}",
        done.events,
        done.tables.join(", "),
        done.elapsed.as_secs_f64(),
        done.reached.position
    );
    Ok(done.events_per_s())
}
