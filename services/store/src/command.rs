//! The one command path for every aggregate: load the latest snapshot and the events after
//! it, decide, apply each new event once, and store the events (and, at a snapshot
//! boundary, the state they produce) in one transaction.
//!
//! Concurrency is optimistic: two writers of one aggregate both insert the same next
//! sequence, the events table's primary key lets one commit, and the other decides again on
//! the newer state. Snapshots are written in the same transaction as the events they
//! include, so there is one snapshot row per aggregate and it always equals a replay of its
//! events up to its `last_sequence`.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::time::Duration;

use cqrs_es::{Aggregate, DomainEvent};
use domain::catalog::Catalog;
use domain::provisioning::Provisioning;
use domain::{Actor, Decide};
use serde_json::Value;
use sqlx::{PgPool, Postgres, Transaction};
use time::OffsetDateTime;
use tokio::time::Instant;

use crate::StoreError;

/// An aggregate the store keeps: how often its state is snapshotted.
pub trait Stored: Decide<Command: Clone + Send + Sync, Error: Send + Sync + 'static> {
    /// A snapshot is written when a command's events reach or pass a multiple of this
    /// sequence; `None` for aggregates short enough to replay whole.
    const SNAPSHOT_EVERY: Option<u64>;
}

impl Stored for Provisioning {
    /// A VM with thousands of log lines stays cheap to load.
    const SNAPSHOT_EVERY: Option<u64> = Some(100);
}

impl Stored for Catalog {
    /// Admin changes are few.
    const SNAPSHOT_EVERY: Option<u64> = None;
}

/// Who did it and in which request: stored with every event of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    pub actor: Actor,
    pub correlation_id: String,
}

impl Metadata {
    pub fn new(actor: Actor, correlation_id: impl Into<String>) -> Self {
        Metadata {
            actor,
            correlation_id: correlation_id.into(),
        }
    }

    /// The map stored in the events' `metadata` column, the time of the command included.
    pub fn to_map(&self) -> BTreeMap<String, String> {
        let now = OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .expect("the current time is within RFC 3339's years");
        BTreeMap::from([
            ("actor".to_owned(), self.actor.name()),
            ("correlation_id".to_owned(), self.correlation_id.clone()),
            ("time".to_owned(), now),
        ])
    }
}

/// Why a command did not commit.
#[derive(Debug, thiserror::Error)]
pub enum CommandError<E: std::error::Error + 'static> {
    /// The aggregate refused it; nothing was written.
    #[error(transparent)]
    Rejected(E),
    /// Other writers committed first on every attempt, for longer than [`RETRY_FOR`].
    #[error("others kept changing it while the command was retried")]
    Conflict,
    #[error("event store error")]
    Store(#[from] StoreError),
}

/// One event a command stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded<E> {
    /// Its place in its aggregate's history, from 1.
    pub sequence: u64,
    /// Its place in the events table (`events.position`), for read-your-writes.
    pub position: i64,
    /// When it was stored (`events.recorded_at`).
    pub recorded_at: OffsetDateTime,
    pub event: E,
}

/// What a command stored, and the aggregate's state after it.
#[derive(Debug)]
pub struct Committed<A: Aggregate> {
    /// The command's events, in order; empty when it changed nothing.
    pub events: Vec<Recorded<A::Event>>,
    /// The aggregate's last sequence after the command.
    pub sequence: u64,
    pub state: A,
}

impl<A: Aggregate> Committed<A> {
    /// The position of the command's last event, if it stored any.
    pub fn last_position(&self) -> Option<i64> {
        self.events.last().map(|e| e.position)
    }
}

/// How long a command is tried again while other writers commit first: long enough that a
/// runner committing log lines every few milliseconds cannot starve a user's command.
pub const RETRY_FOR: Duration = Duration::from_secs(3);

/// Executes one command on aggregate `id`.
pub async fn execute<A>(
    pool: &PgPool,
    id: impl Display,
    command: A::Command,
    metadata: &Metadata,
) -> Result<Committed<A>, CommandError<A::Error>>
where
    A: Stored<Services = ()>,
{
    execute_all(pool, id, &(), vec![command], metadata).await
}

/// Executes `commands` in order on aggregate `id`, all or nothing: each is decided on the
/// state the previous ones left, and their events are stored in one transaction. Tried
/// again, with backoff and jitter, while other writers commit first.
pub async fn execute_all<A: Stored>(
    pool: &PgPool,
    id: impl Display,
    services: &A::Services,
    commands: Vec<A::Command>,
    metadata: &Metadata,
) -> Result<Committed<A>, CommandError<A::Error>> {
    let committed = execute_with(pool, id, services, commands, metadata, None).await?;
    Ok(committed.expect("without a receipt a command is never taken"))
}

/// Like [`execute_all`], and writes `receipt` (the answer to an idempotent request) in the
/// same transaction as the events, so a crash cannot leave one without the other. `None`
/// when another request already holds the receipt's key: nothing was written.
#[tracing::instrument(skip_all, fields(aggregate = A::TYPE, id = %id), err)]
pub async fn execute_with<A: Stored>(
    pool: &PgPool,
    id: impl Display,
    services: &A::Services,
    commands: Vec<A::Command>,
    metadata: &Metadata,
    receipt: Option<&Receipt<'_, A>>,
) -> Result<Option<Committed<A>>, CommandError<A::Error>> {
    let id = id.to_string();
    let deadline = Instant::now() + RETRY_FOR;
    let mut pause = Duration::from_millis(2);
    loop {
        let (mut state, before) = load::<A>(pool, &id).await?;
        let mut events = vec![];
        for command in commands.iter().cloned() {
            for event in state
                .decide(command, services)
                .map_err(CommandError::Rejected)?
            {
                state.apply(event.clone());
                events.push(event);
            }
        }
        match commit(pool, &id, before, events, state, metadata, receipt).await? {
            Outcome::Committed(committed) => {
                count_committed(&committed);
                return Ok(Some(committed));
            }
            Outcome::Taken => return Ok(None),
            Outcome::Lost if Instant::now() + pause < deadline => {
                tracing::debug!(?pause, "another writer committed first; trying again");
                tokio::time::sleep(jitter(pause)).await;
                pause = (pause * 2).min(Duration::from_millis(100));
            }
            Outcome::Lost => return Err(CommandError::Conflict),
        }
    }
}

/// Counts a command's events in the process's metrics, by type.
pub(crate) fn count_committed<A: Aggregate>(committed: &Committed<A>) {
    use cqrs_es::DomainEvent;
    let metrics = telemetry::metrics();
    for recorded in &committed.events {
        metrics.count_event(true, &recorded.event.event_type());
    }
}

/// A random pause between half of `pause` and all of it, so writers that collided do not
/// collide again.
fn jitter(pause: Duration) -> Duration {
    let random = uuid::Uuid::new_v4().as_u128();
    let fraction = (random % 1024) as f64 / 2048.0; // in [0, 0.5)
    pause.mul_f64(0.5 + fraction)
}

#[derive(sqlx::FromRow)]
struct SnapshotRow {
    last_sequence: i64,
    payload: Value,
}

#[derive(sqlx::FromRow)]
struct EventRow {
    sequence: i64,
    event_type: String,
    event_version: String,
    payload: Value,
}

/// The aggregate's current state and last sequence: its snapshot (if any) plus the events
/// after it.
pub async fn load<A: Stored>(pool: &PgPool, id: &str) -> Result<(A, u64), StoreError> {
    let snapshot: Option<SnapshotRow> = match A::SNAPSHOT_EVERY {
        Some(_) => {
            sqlx::query_as(
                "SELECT last_sequence, payload FROM snapshots
                 WHERE aggregate_type = $1 AND aggregate_id = $2",
            )
            .bind(A::TYPE)
            .bind(id)
            .fetch_optional(pool)
            .await?
        }
        None => None,
    };
    let (mut state, after) = match snapshot {
        Some(s) => match serde_json::from_value(s.payload) {
            Ok(state) => (state, s.last_sequence),
            Err(e) => {
                // The state's shape changed since: replay everything instead.
                tracing::warn!(error = %e, "a snapshot does not decode; replaying all events");
                (A::default(), 0)
            }
        },
        None => (A::default(), 0),
    };
    let rows: Vec<EventRow> = sqlx::query_as(
        "SELECT sequence, event_type, event_version, payload FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2 AND sequence > $3
         ORDER BY sequence",
    )
    .bind(A::TYPE)
    .bind(id)
    .bind(after)
    .fetch_all(pool)
    .await?;
    let mut sequence = after;
    for row in rows {
        let payload = crate::upcast::upcast(&row.event_type, &row.event_version, row.payload);
        state.apply(serde_json::from_value(payload)?);
        sequence = row.sequence;
    }
    Ok((state, u64::try_from(sequence).unwrap_or(0)))
}

/// The answer to an idempotent request, stored with the command's events under its key.
pub struct Receipt<'a, A: Aggregate> {
    pub key: &'a str,
    /// What the request was; the same key with another request is refused.
    pub fingerprint: &'a str,
    /// The answer (HTTP status and body) to the committed command.
    #[allow(clippy::type_complexity)]
    pub answer: &'a (dyn Fn(&Committed<A>) -> (u16, Value) + Send + Sync),
}

/// How one attempt to store a command's events ended.
enum Outcome<A: Aggregate> {
    Committed(Committed<A>),
    /// Another writer stored events after the loaded state first.
    Lost,
    /// Another request holds the receipt's key; nothing was written.
    Taken,
}

/// Stores `events` after sequence `before` and, when they cross a snapshot boundary,
/// `state` as the snapshot, and the receipt if any, in one transaction.
async fn commit<A: Stored>(
    pool: &PgPool,
    id: &str,
    before: u64,
    events: Vec<A::Event>,
    state: A,
    metadata: &Metadata,
    receipt: Option<&Receipt<'_, A>>,
) -> Result<Outcome<A>, StoreError> {
    let first = i64::try_from(before).expect("sequences fit in a bigint");
    let after = first + events.len() as i64;
    let payloads = events
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<Value>, _>>()?;
    if events.is_empty() && receipt.is_none() {
        return Ok(Outcome::Committed(Committed {
            events: vec![],
            sequence: before,
            state,
        }));
    }
    let mut tx = pool.begin().await?;
    // Before the transaction has an xid: the feed's commit horizon waits only for
    // transactions holding this lock (see `feed::horizon`).
    sqlx::query("LOCK TABLE events IN ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await?;
    let inserted = insert_events(&mut tx, A::TYPE, id, first, &events, payloads, metadata);
    let rows = match inserted.await {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => return Ok(Outcome::Lost),
        inserted => inserted?,
    };
    if let Some(every) = A::SNAPSHOT_EVERY.and_then(|e| i64::try_from(e).ok()) {
        if after / every > first / every {
            write_snapshot(&mut tx, A::TYPE, id, after, serde_json::to_value(&state)?).await?;
        }
    }
    let events = events
        .into_iter()
        .zip(rows)
        .zip(before + 1..)
        .map(|((event, row), sequence)| Recorded {
            sequence,
            position: row.position,
            recorded_at: row.recorded_at,
            event,
        })
        .collect::<Vec<_>>();
    let committed = Committed {
        sequence: events.last().map_or(before, |e| e.sequence),
        events,
        state,
    };
    if let Some(receipt) = receipt {
        let (status, body) = (receipt.answer)(&committed);
        let answer = crate::idempotency::Answer {
            status,
            body,
            position: committed.last_position(),
        };
        let kept = crate::idempotency::keep(&mut tx, receipt.key, receipt.fingerprint, &answer);
        if !kept.await? {
            return Ok(Outcome::Taken); // rolled back when `tx` drops
        }
    }
    tx.commit().await?;
    crate::wake::followers(pool).await;
    Ok(Outcome::Committed(committed))
}

#[derive(sqlx::FromRow)]
struct InsertedRow {
    sequence: i64,
    position: i64,
    recorded_at: OffsetDateTime,
}

/// Inserts the events with the columns and payloads postgres-es wrote: `payload` is the
/// event as JSON (`{"type": .., "data": ..}`), `metadata` a map of strings.
async fn insert_events<E: DomainEvent>(
    tx: &mut Transaction<'_, Postgres>,
    aggregate_type: &str,
    id: &str,
    before: i64,
    events: &[E],
    payloads: Vec<Value>,
    metadata: &Metadata,
) -> Result<Vec<InsertedRow>, sqlx::Error> {
    if events.is_empty() {
        return Ok(vec![]);
    }
    let sequences: Vec<i64> = (before + 1..).take(events.len()).collect();
    let types: Vec<String> = events.iter().map(DomainEvent::event_type).collect();
    let versions: Vec<String> = events.iter().map(DomainEvent::event_version).collect();
    let metadata = serde_json::to_value(metadata.to_map()).expect("a map of strings is JSON");
    let mut rows: Vec<InsertedRow> = sqlx::query_as(
        "INSERT INTO events
             (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         SELECT $1, $2, e.sequence, e.event_type, e.event_version, e.payload::json, $7::json
         FROM unnest($3::bigint[], $4::text[], $5::text[], $6::jsonb[])
              AS e(sequence, event_type, event_version, payload)
         ORDER BY e.sequence
         RETURNING sequence, position, recorded_at",
    )
    .bind(aggregate_type)
    .bind(id)
    .bind(&sequences)
    .bind(&types)
    .bind(&versions)
    .bind(&payloads)
    .bind(&metadata)
    .fetch_all(&mut **tx)
    .await?;
    rows.sort_by_key(|r| r.sequence);
    Ok(rows)
}

/// Replaces the aggregate's snapshot with `state` at `last_sequence`. The events' insert
/// in the same transaction already holds the aggregate, so no other writer races this.
pub(crate) async fn write_snapshot(
    tx: &mut Transaction<'_, Postgres>,
    aggregate_type: &str,
    id: &str,
    last_sequence: i64,
    state: Value,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO snapshots (aggregate_type, aggregate_id, last_sequence, payload)
         VALUES ($1, $2, $3, $4::json)
         ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE
             SET last_sequence = EXCLUDED.last_sequence, payload = EXCLUDED.payload
             WHERE snapshots.last_sequence < EXCLUDED.last_sequence",
    )
    .bind(aggregate_type)
    .bind(id)
    .bind(last_sequence)
    .bind(state)
    .execute(&mut **tx)
    .await?;
    Ok(())
}
