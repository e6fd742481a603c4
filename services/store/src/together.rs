//! Commands on many aggregates stored in one transaction: the ingester's path, where a
//! pull batch holds the lines of many VMs and one commit per VM would make Postgres round
//! trips, not the machine, the limit.
//!
//! Each aggregate is loaded and decided as in [`crate::execute_all`]; the events of all of
//! them are written by one multi-row `INSERT` whose primary key still decides concurrency:
//! if another writer stored an event of any of them first, nothing is written and the
//! caller gets [`CommandError::Conflict`] at once (no retry here: the caller falls back to
//! the one-aggregate path, which decides again and retries).
//!
//! The caller keeps the states it committed in [`States`], so that an aggregate written
//! batch after batch (a job's lines) is not loaded again each time: a kept state is the one
//! its own commit left, and if another writer stored an event of it since, the primary key
//! refuses the batch as above, and the states of the batch are forgotten.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use sqlx::PgPool;
use time::OffsetDateTime;

use crate::command::write_snapshot;
use crate::{CommandError, Committed, Metadata, Recorded, StoreError, Stored};

/// One aggregate's part of [`execute_together`]: what it stored, or why it refused.
pub type Outcome<A> = Result<Committed<A>, <A as cqrs_es::Aggregate>::Error>;

/// The commands for one aggregate, in order, and who sent them.
pub struct Batch<A: Stored> {
    pub id: String,
    pub commands: Vec<A::Command>,
    pub metadata: Metadata,
}

/// The states and last sequences of aggregates as this process committed them, at most
/// `capacity` of them (an arbitrary one is dropped for a new one beyond that).
pub struct States<A> {
    kept: Mutex<HashMap<String, (A, u64)>>,
    capacity: usize,
}

impl<A> States<A> {
    pub fn new(capacity: usize) -> Self {
        States {
            kept: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    /// Takes out the kept states of `ids`: until they are put back after a commit, a
    /// failed attempt leaves nothing stale behind.
    fn take(&self, ids: &[String]) -> HashMap<String, (A, u64)> {
        let mut kept = self
            .kept
            .lock()
            .expect("the states' lock is never poisoned");
        ids.iter().filter_map(|id| kept.remove_entry(id)).collect()
    }

    fn put(&self, id: String, state: A, sequence: u64) {
        let mut kept = self
            .kept
            .lock()
            .expect("the states' lock is never poisoned");
        if kept.len() >= self.capacity && !kept.contains_key(&id) {
            if let Some(any) = kept.keys().next().cloned() {
                kept.remove(&any);
            }
        }
        kept.insert(id, (state, sequence));
    }

    /// How many states are kept.
    pub fn len(&self) -> usize {
        self.kept
            .lock()
            .expect("the states' lock is never poisoned")
            .len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Executes each batch's commands on its aggregate and stores the events of all the
/// aggregates that accepted them in one transaction. An aggregate that refused one of its
/// commands has nothing written and its error in its slot; the others commit together.
/// Two batches must not name the same aggregate. The states in `states` are used instead
/// of loading them, and the states committed are kept there.
#[tracing::instrument(skip_all, fields(aggregate = A::TYPE, aggregates = batches.len()), err)]
pub async fn execute_together<A: Stored + Clone>(
    pool: &PgPool,
    services: &A::Services,
    states: &States<A>,
    batches: Vec<Batch<A>>,
) -> Result<Vec<Outcome<A>>, CommandError<A::Error>> {
    let ids: Vec<String> = batches.iter().map(|b| b.id.clone()).collect();
    let mut loaded = states.take(&ids);
    let missing: Vec<String> = ids
        .iter()
        .filter(|id| !loaded.contains_key(*id))
        .cloned()
        .collect();
    if !missing.is_empty() {
        loaded.extend(load_many::<A>(pool, &missing).await?);
    }
    let mut decided = vec![];
    for batch in batches {
        let (state, before) = loaded.remove(&batch.id).unwrap_or_default();
        decided.push(decide(state, before, batch, services));
    }
    let rows = decided
        .iter()
        .filter_map(|d| d.as_ref().ok())
        .flat_map(|d| d.rows())
        .collect::<Result<Vec<_>, _>>()?;
    if rows.is_empty() {
        return Ok(decided
            .into_iter()
            .map(|d| d.map(|d| d.unstored(states)))
            .collect());
    }
    let mut tx = pool.begin().await.map_err(StoreError::from)?;
    // As in the one-aggregate path: the lock comes before the xid (see `feed::horizon`).
    sqlx::query("LOCK TABLE events IN ROW EXCLUSIVE MODE")
        .execute(&mut *tx)
        .await
        .map_err(StoreError::from)?;
    let stored = match insert_rows(&mut tx, A::TYPE, rows).await {
        Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
            return Err(CommandError::Conflict)
        }
        stored => stored.map_err(StoreError::from)?,
    };
    for d in decided.iter().filter_map(|d| d.as_ref().ok()) {
        if let Some(last_sequence) = d.snapshot_at() {
            let state = serde_json::to_value(&d.state).map_err(StoreError::from)?;
            write_snapshot(&mut tx, A::TYPE, &d.id, last_sequence, state)
                .await
                .map_err(StoreError::from)?;
        }
    }
    tx.commit().await.map_err(StoreError::from)?;
    crate::wake::followers(pool).await;
    let outcomes: Vec<Outcome<A>> = decided
        .into_iter()
        .map(|d| d.map(|d| d.recorded(&stored, states)))
        .collect();
    for committed in outcomes.iter().filter_map(|o| o.as_ref().ok()) {
        crate::command::count_committed(committed);
    }
    Ok(outcomes)
}

/// One aggregate's decision, before it is stored.
struct Decided<A: Stored> {
    id: String,
    before: u64,
    events: Vec<A::Event>,
    state: A,
    metadata: Value,
}

fn decide<A: Stored>(
    mut state: A,
    before: u64,
    batch: Batch<A>,
    services: &A::Services,
) -> Result<Decided<A>, A::Error> {
    let mut events = vec![];
    for command in batch.commands {
        for event in state.decide(command, services)? {
            state.apply(event.clone());
            events.push(event);
        }
    }
    let metadata = serde_json::to_value(batch.metadata.to_map()).expect("a map of strings is JSON");
    Ok(Decided {
        id: batch.id,
        before,
        events,
        state,
        metadata,
    })
}

/// One row of the events table to insert.
struct Row {
    aggregate_id: String,
    sequence: i64,
    event_type: String,
    event_version: String,
    payload: Value,
    metadata: Value,
}

impl<A: Stored + Clone> Decided<A> {
    fn rows(&self) -> impl Iterator<Item = Result<Row, StoreError>> + '_ {
        use cqrs_es::DomainEvent;
        self.events
            .iter()
            .zip(self.before + 1..)
            .map(|(event, sequence)| {
                Ok(Row {
                    aggregate_id: self.id.clone(),
                    sequence: i64::try_from(sequence).expect("sequences fit in a bigint"),
                    event_type: event.event_type(),
                    event_version: event.event_version(),
                    payload: serde_json::to_value(event)?,
                    metadata: self.metadata.clone(),
                })
            })
    }

    /// The last sequence to snapshot at, when the events reach or pass a multiple of
    /// `SNAPSHOT_EVERY` (the rule of the one-aggregate path).
    fn snapshot_at(&self) -> Option<i64> {
        let every = A::SNAPSHOT_EVERY.and_then(|e| i64::try_from(e).ok())?;
        let first = i64::try_from(self.before).ok()?;
        let after = first + self.events.len() as i64;
        (after / every > first / every).then_some(after)
    }

    fn unstored(self, states: &States<A>) -> Committed<A> {
        debug_assert!(self.events.is_empty());
        states.put(self.id, self.state.clone(), self.before);
        Committed {
            events: vec![],
            sequence: self.before,
            state: self.state,
        }
    }

    fn recorded(
        self,
        stored: &HashMap<(String, i64), (i64, OffsetDateTime)>,
        states: &States<A>,
    ) -> Committed<A> {
        let events: Vec<_> = self
            .events
            .into_iter()
            .zip(self.before + 1..)
            .map(|(event, sequence)| {
                let key = (self.id.clone(), sequence as i64);
                let (position, recorded_at) = stored[&key];
                Recorded {
                    sequence,
                    position,
                    recorded_at,
                    event,
                }
            })
            .collect();
        let sequence = events.last().map_or(self.before, |e| e.sequence);
        states.put(self.id, self.state.clone(), sequence);
        Committed {
            sequence,
            events,
            state: self.state,
        }
    }
}

/// Inserts the rows of every aggregate in one statement; each row's position and time by
/// `(aggregate_id, sequence)`.
async fn insert_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    aggregate_type: &str,
    rows: Vec<Row>,
) -> Result<HashMap<(String, i64), (i64, OffsetDateTime)>, sqlx::Error> {
    let mut ids = vec![];
    let mut sequences = vec![];
    let mut types = vec![];
    let mut versions = vec![];
    let mut payloads = vec![];
    let mut metadata = vec![];
    for row in rows {
        ids.push(row.aggregate_id);
        sequences.push(row.sequence);
        types.push(row.event_type);
        versions.push(row.event_version);
        payloads.push(row.payload);
        metadata.push(row.metadata);
    }
    let stored: Vec<(String, i64, i64, OffsetDateTime)> = sqlx::query_as(
        "INSERT INTO events
             (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         SELECT $1, e.id, e.sequence, e.event_type, e.event_version, e.payload::json,
                e.metadata::json
         FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[], $6::jsonb[], $7::jsonb[])
              AS e(id, sequence, event_type, event_version, payload, metadata)
         ORDER BY e.id, e.sequence
         RETURNING aggregate_id, sequence, position, recorded_at",
    )
    .bind(aggregate_type)
    .bind(&ids)
    .bind(&sequences)
    .bind(&types)
    .bind(&versions)
    .bind(&payloads)
    .bind(&metadata)
    .fetch_all(&mut **tx)
    .await?;
    Ok(stored
        .into_iter()
        .map(|(id, sequence, position, at)| ((id, sequence), (position, at)))
        .collect())
}

/// The current state and last sequence of each aggregate of `ids`, in two queries for all
/// of them: their snapshots, then the events after each one's snapshot.
async fn load_many<A: Stored>(
    pool: &PgPool,
    ids: &[String],
) -> Result<HashMap<String, (A, u64)>, StoreError> {
    let mut loaded: HashMap<String, (A, u64)> = HashMap::new();
    if A::SNAPSHOT_EVERY.is_some() {
        let snapshots: Vec<(String, i64, Value)> = sqlx::query_as(
            "SELECT aggregate_id, last_sequence, payload FROM snapshots
             WHERE aggregate_type = $1 AND aggregate_id = ANY($2)",
        )
        .bind(A::TYPE)
        .bind(ids)
        .fetch_all(pool)
        .await?;
        for (id, last_sequence, payload) in snapshots {
            match serde_json::from_value(payload) {
                Ok(state) => {
                    loaded.insert(id, (state, last_sequence as u64));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "a snapshot does not decode; replaying all events");
                }
            }
        }
    }
    let after: Vec<i64> = ids
        .iter()
        .map(|id| loaded.get(id).map_or(0, |(_, s)| *s as i64))
        .collect();
    let rows: Vec<(String, i64, String, String, Value)> = sqlx::query_as(
        "SELECT e.aggregate_id, e.sequence, e.event_type, e.event_version, e.payload
         FROM unnest($2::text[], $3::bigint[]) AS a(id, after)
         JOIN events e ON e.aggregate_type = $1 AND e.aggregate_id = a.id
                      AND e.sequence > a.after
         ORDER BY e.aggregate_id, e.sequence",
    )
    .bind(A::TYPE)
    .bind(ids)
    .bind(&after)
    .fetch_all(pool)
    .await?;
    for (id, sequence, event_type, version, payload) in rows {
        let (state, last) = loaded.entry(id).or_default();
        let payload = crate::upcast::upcast(&event_type, &version, payload);
        state.apply(serde_json::from_value(payload)?);
        *last = sequence as u64;
    }
    Ok(loaded)
}
