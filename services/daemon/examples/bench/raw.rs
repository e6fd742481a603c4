//! The ceilings: what JetStream and Postgres do on this machine with nothing of ours in
//! between, measured in the same run as the pipeline's figures.

use std::time::{Duration, Instant};

use bus::async_nats::{self, jetstream::stream};
use bus::{Bus, Publisher};
use store::{sqlx, PgPool};

/// JetStream publishes per second with 200 acks in flight, 300-byte payloads, each with a
/// `Nats-Msg-Id` as the relay and runners send them.
pub async fn jetstream_publish(bus: &Bus, messages: usize) -> Result<f64, async_nats::Error> {
    let name = format!("{}_RAW", bus.subjects.prefix().to_uppercase());
    let subject = format!("{}.raw", bus.subjects.prefix());
    bus.jetstream
        .create_stream(stream::Config {
            name: name.clone(),
            subjects: vec![format!("{subject}.>")],
            ..Default::default()
        })
        .await?;
    let payload = bus::Bytes::from(vec![b'x'; 300]);
    let mut publisher = Publisher::new(bus.jetstream.clone(), 200);
    let start = Instant::now();
    for n in 0..messages {
        let id = format!("raw-{n}");
        publisher
            .publish(format!("{subject}.{}", n % 100), &id, payload.clone())
            .await?;
    }
    publisher.flush().await?;
    let rate = messages as f64 / start.elapsed().as_secs_f64();
    bus.jetstream.delete_stream(&name).await?;
    Ok(rate)
}

/// One-row insert and commit per transaction, from 16 connections at once, for `time`.
pub async fn postgres_commit(pool: &PgPool, time: Duration) -> Result<f64, sqlx::Error> {
    sqlx::query(
        "CREATE TABLE bench_commit (id bigserial PRIMARY KEY, aggregate_id text NOT NULL,
                                    payload json NOT NULL)",
    )
    .execute(pool)
    .await?;
    let start = Instant::now();
    let writers = (0..16).map(|w| async move {
        let mut done = 0u64;
        while start.elapsed() < time {
            let mut tx = pool.begin().await?;
            sqlx::query("INSERT INTO bench_commit (aggregate_id, payload) VALUES ($1, $2)")
                .bind(format!("writer-{w}"))
                .bind(serde_json::json!({"n": done}))
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            done += 1;
        }
        Ok::<u64, sqlx::Error>(done)
    });
    let mut total = 0;
    for done in futures::future::join_all(writers).await {
        total += done?;
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    sqlx::query("DROP TABLE bench_commit").execute(pool).await?;
    Ok(rate)
}

/// Rows per second of events-shaped rows (the events table's columns, keys and indexes)
/// written 500 per statement and transaction, from 4 connections at once, for `time`.
pub async fn postgres_batch_rows(pool: &PgPool, time: Duration) -> Result<f64, sqlx::Error> {
    const ROWS: usize = 500;
    sqlx::query("CREATE TABLE bench_batch (LIKE events INCLUDING ALL)")
        .execute(pool)
        .await?;
    let start = Instant::now();
    let writers = (0..4).map(|w| async move {
        let id = format!("writer-{w}");
        let payload = serde_json::json!({"LogLine": {"job_id": 1, "line": 1, "level": "info",
            "kind": "apply_progress", "message": "aws_instance.vm: Still creating... [10s elapsed]"}});
        let payloads = vec![payload; ROWS];
        let mut next = 1i64;
        let mut done = 0u64;
        while start.elapsed() < time {
            let sequences: Vec<i64> = (next..next + ROWS as i64).collect();
            next += ROWS as i64;
            sqlx::query(
                "INSERT INTO bench_batch
                     (aggregate_type, aggregate_id, sequence, event_type, event_version,
                      payload, metadata)
                 SELECT 'Bench', $1, s, 'LogLine', '1', p::json, '{}'::json
                 FROM unnest($2::bigint[], $3::jsonb[]) AS e(s, p)",
            )
            .bind(&id)
            .bind(&sequences)
            .bind(&payloads)
            .execute(pool)
            .await?;
            done += ROWS as u64;
        }
        Ok::<u64, sqlx::Error>(done)
    });
    let mut total = 0;
    for done in futures::future::join_all(writers).await {
        total += done?;
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    sqlx::query("DROP TABLE bench_batch").execute(pool).await?;
    Ok(rate)
}
