//! `provisioningd replay`: rebuilds read models from the events table into fresh tables and
//! swaps them in, while the API serves and the live projector folds.
//!
//! The fresh tables are made in a schema of their own (`replay`), with the live tables'
//! columns, constraints and indexes, and the fold runs with `search_path = replay, public`:
//! the very code of the live projector writes them. It folds up to the live projector's
//! checkpoint, then, in one transaction holding the live tables (`ACCESS EXCLUSIVE`: the
//! live projector waits, readers wait milliseconds), folds the last events up to the
//! checkpoint as it stands then, drops the live tables and moves the fresh ones into their
//! place under the same names. The fresh tables show exactly the events up to that
//! checkpoint, so the live projector continues from it into them: nothing is lost or
//! folded twice.
//!
//! The catalog's rows seeded by the migrations are not events (the first admin command
//! imports them, see `domain::catalog`): its fresh tables start as a copy of the live rows
//! and every catalog event is folded onto them (the fold only sets values, so this gives
//! the rows a fold from the seed gives).

use std::time::{Duration, Instant};

use store::feed::{self, Cursor, FeedEvent};
use store::lease::Lease;
use store::{sqlx, PgPool};

use crate::{fold, ProjectorError, Scope, CHECKPOINT};

/// The schema the fresh tables are built in.
const SCHEMA: &str = "replay";
/// Events read and folded per transaction.
const BATCH: i64 = 5000;
/// Tables loaded in bulk: made without their keys and indexes, which are built once the
/// fold has caught up (one sorted build is several times quicker than a b-tree kept up
/// row by row through a million inserts).
const BULK: [&str; 1] = ["vm_logs"];

/// The read models a replay can rebuild, by name (`--projection`).
pub const PROJECTIONS: [&str; 2] = ["vms", "catalog"];

impl Scope {
    /// The scope of `--projection NAME`; every read model when `None`.
    pub fn named(name: Option<&str>) -> Option<Scope> {
        match name {
            None => Some(Scope::ALL),
            Some("vms") => Some(Scope {
                vms: true,
                catalog: false,
            }),
            Some("catalog") => Some(Scope {
                vms: false,
                catalog: true,
            }),
            Some(_) => None,
        }
    }

    /// Its tables, referenced ones before those referencing them.
    fn tables(self) -> Vec<&'static str> {
        let mut tables = vec![];
        if self.vms {
            tables.extend(["vm_views", "vm_logs", "vm_holdings"]);
        }
        if self.catalog {
            tables.extend(["providers", "templates", "catalog_projection"]);
        }
        tables
    }
}

/// What a replay did.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub tables: Vec<&'static str>,
    /// Events read from the events table (of every aggregate).
    pub events: usize,
    /// The checkpoint the fresh tables reflect, where the live projector went on.
    pub reached: Cursor,
    pub elapsed: Duration,
}

impl Replayed {
    pub fn events_per_s(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Rebuilds the read models of `scope` and swaps them in; see the module's documentation.
#[tracing::instrument(skip_all, err)]
pub async fn replay(pool: &PgPool, scope: Scope) -> Result<Replayed, ProjectorError> {
    let Some(lease) = Lease::try_acquire(pool, "replay").await? else {
        return Err(ProjectorError::ReplayRunning);
    };
    let started = Instant::now();
    let tables = scope.tables();
    create_fresh_tables(pool, &tables).await?;
    // Up to the live checkpoint, as often as it moved on meanwhile by more than a batch.
    let mut cursor = Cursor::default();
    let mut events = 0;
    loop {
        let target = feed::load_checkpoint(pool, CHECKPOINT).await?;
        let before = events;
        // The next page is read while the current one is folded and written.
        let mut page = read_until(pool, cursor, target).await?;
        while let Some(last) = page.last().map(|e| e.cursor) {
            let (folded, next) = tokio::join!(
                fold_page(pool, &page, scope),
                read_until(pool, last, target)
            );
            folded?;
            events += page.len();
            cursor = last;
            page = next?;
        }
        if events - before < BATCH as usize {
            break;
        }
    }
    index_bulk_tables(pool, &tables).await?;
    let (n, reached) = swap(pool, &tables, cursor, scope).await?;
    events += n;
    sqlx::query(&format!("DROP SCHEMA {SCHEMA} CASCADE"))
        .execute(pool)
        .await?;
    lease.release().await;
    Ok(Replayed {
        tables,
        events,
        reached,
        elapsed: started.elapsed(),
    })
}

/// Empty copies of `tables` in the replay schema (the catalog's with the live rows), with
/// their columns, defaults, checks, keys, indexes and foreign keys (the bulk tables' keys
/// and indexes come later, see [`index_bulk_tables`]).
async fn create_fresh_tables(pool: &PgPool, tables: &[&str]) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(&format!("DROP SCHEMA IF EXISTS {SCHEMA} CASCADE"))
        .execute(&mut *tx)
        .await?;
    sqlx::query(&format!("CREATE SCHEMA {SCHEMA}"))
        .execute(&mut *tx)
        .await?;
    for table in tables {
        let except = if BULK.contains(table) {
            "EXCLUDING INDEXES"
        } else {
            ""
        };
        sqlx::query(&format!(
            "CREATE TABLE {SCHEMA}.{table} (LIKE public.{table} INCLUDING ALL {except})"
        ))
        .execute(&mut *tx)
        .await?;
    }
    // Foreign keys, as the live tables have them (printed with `public` on the path, so
    // the referenced table's name resolves to the fresh one here).
    let foreign: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT c.conrelid::regclass::text, c.conname, pg_get_constraintdef(c.oid)
         FROM pg_constraint c
         WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace
           AND c.conrelid::regclass::text = ANY($1) AND c.confrelid::regclass::text = ANY($1)",
    )
    .bind(tables)
    .fetch_all(&mut *tx)
    .await?;
    sqlx::query(&format!("SET LOCAL search_path = {SCHEMA}, public"))
        .execute(&mut *tx)
        .await?;
    for (table, name, definition) in foreign {
        sqlx::query(&format!(
            "ALTER TABLE {SCHEMA}.{table} ADD CONSTRAINT {name} {definition}"
        ))
        .execute(&mut *tx)
        .await?;
    }
    for table in tables {
        if ["providers", "templates", "catalog_projection"].contains(table) {
            sqlx::query(&format!(
                "INSERT INTO {SCHEMA}.{table} SELECT * FROM public.{table}"
            ))
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await
}

/// Gives the fresh bulk tables the live ones' keys and indexes, under the live names. Where
/// rows break a key (a log line stored twice, which the live table's `ON CONFLICT DO
/// NOTHING` kept once), the first row inserted is kept, as it was there.
async fn index_bulk_tables(pool: &PgPool, tables: &[&str]) -> Result<(), sqlx::Error> {
    for table in tables.iter().filter(|t| BULK.contains(t)) {
        let keys: Vec<(String, String, Vec<String>)> = sqlx::query_as(
            "SELECT c.conname::text, pg_get_constraintdef(c.oid),
                    array_agg(a.attname::text ORDER BY k.n)
             FROM pg_constraint c
             CROSS JOIN unnest(c.conkey) WITH ORDINALITY k (attnum, n)
             JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
             WHERE c.conrelid = ('public.' || $1)::regclass AND c.contype IN ('p', 'u')
             GROUP BY c.oid, c.conname",
        )
        .bind(table)
        .fetch_all(pool)
        .await?;
        for (name, definition, columns) in keys {
            let add = format!("ALTER TABLE {SCHEMA}.{table} ADD CONSTRAINT {name} {definition}");
            match sqlx::query(&add).execute(pool).await {
                Err(sqlx::Error::Database(e)) if e.code().as_deref() == Some("23505") => {
                    let same: Vec<String> =
                        columns.iter().map(|c| format!("a.{c} = b.{c}")).collect();
                    sqlx::query(&format!(
                        "DELETE FROM {SCHEMA}.{table} a USING {SCHEMA}.{table} b
                         WHERE {} AND a.ctid > b.ctid",
                        same.join(" AND ")
                    ))
                    .execute(pool)
                    .await?;
                    sqlx::query(&add).execute(pool).await?;
                }
                added => {
                    added?;
                }
            }
        }
        let others: Vec<String> = sqlx::query_scalar(
            "SELECT i.indexdef FROM pg_indexes i
             WHERE i.schemaname = 'public' AND i.tablename = $1
               AND NOT EXISTS (SELECT 1 FROM pg_constraint c
                               WHERE c.conindid = ('public.' || i.indexname)::regclass)",
        )
        .bind(table)
        .fetch_all(pool)
        .await?;
        for definition in others {
            let fresh = definition.replacen(" ON public.", &format!(" ON {SCHEMA}."), 1);
            sqlx::query(&fresh).execute(pool).await?;
        }
    }
    Ok(())
}

/// The events after `after` up to `until`, at most a batch.
async fn read_until(
    pool: &PgPool,
    after: Cursor,
    until: Cursor,
) -> Result<Vec<FeedEvent>, sqlx::Error> {
    if after >= until {
        return Ok(vec![]);
    }
    let mut events = feed::read_after(pool, after, BATCH).await?;
    events.retain(|e| e.cursor <= until);
    Ok(events)
}

/// Folds `events` into the fresh tables in a transaction of their own.
async fn fold_page(pool: &PgPool, events: &[FeedEvent], scope: Scope) -> Result<(), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query(&format!("SET LOCAL search_path = {SCHEMA}, public"))
        .execute(&mut *tx)
        .await?;
    fold(&mut tx, events, scope, None).await?;
    tx.commit().await
}

/// Folds the events after `after` up to `until` (at most a batch) into the fresh tables,
/// in `tx`; how many it read and the cursor of the last.
async fn fold_until(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    pool: &PgPool,
    after: Cursor,
    until: Cursor,
    scope: Scope,
) -> Result<(usize, Cursor), sqlx::Error> {
    let events = read_until(pool, after, until).await?;
    let Some(last) = events.last().map(|e| e.cursor) else {
        // Nothing (left) below the checkpoint: positions up to it held no events.
        return Ok((0, until));
    };
    sqlx::query(&format!("SET LOCAL search_path = {SCHEMA}, public"))
        .execute(&mut **tx)
        .await?;
    fold(tx, &events, scope, None).await?;
    Ok((events.len(), last))
}

/// Holds the live tables, folds the fresh ones up to the live checkpoint and puts them in
/// the live ones' place. Retried when it and the live projector wait for each other.
async fn swap(
    pool: &PgPool,
    tables: &[&str],
    from: Cursor,
    scope: Scope,
) -> Result<(usize, Cursor), ProjectorError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match try_swap(pool, tables, from, scope).await {
            Err(sqlx::Error::Database(e))
                if attempt < 10 && matches!(e.code().as_deref(), Some("40P01" | "55P03")) =>
            {
                tracing::info!(error = %e, "the swap waited for the live projector; again");
                tokio::time::sleep(Duration::from_millis(100 * attempt)).await;
            }
            done => return Ok(done?),
        }
    }
}

async fn try_swap(
    pool: &PgPool,
    tables: &[&str],
    mut cursor: Cursor,
    scope: Scope,
) -> Result<(usize, Cursor), sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET LOCAL lock_timeout = '5s'")
        .execute(&mut *tx)
        .await?;
    let live: Vec<String> = tables.iter().map(|t| format!("public.{t}")).collect();
    sqlx::query(&format!(
        "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
        live.join(", ")
    ))
    .execute(&mut *tx)
    .await?;
    // The live projector commits its batches with its checkpoint, and holds these tables
    // while it folds: with them held, its checkpoint is what the live tables show.
    let target = feed::load_checkpoint(pool, CHECKPOINT).await?;
    let mut events = 0;
    while cursor < target {
        let (n, last) = fold_until(&mut tx, pool, cursor, target, scope).await?;
        events += n;
        cursor = last;
    }
    // The fresh tables' indexes get the live ones' names (their definitions match).
    let names: Vec<(String, String)> = sqlx::query_as(
        "SELECT f.indexname, l.indexname FROM pg_indexes l
         JOIN pg_indexes f ON f.schemaname = $2 AND f.tablename = l.tablename
          AND replace(replace(f.indexdef, f.indexname, ''), $2 || '.', '')
            = replace(replace(l.indexdef, l.indexname, ''), 'public.', '')
         WHERE l.schemaname = 'public' AND l.tablename = ANY($1)",
    )
    .bind(tables)
    .bind(SCHEMA)
    .fetch_all(&mut *tx)
    .await?;
    sqlx::query(&format!("DROP TABLE {}", live.join(", ")))
        .execute(&mut *tx)
        .await?;
    for table in tables {
        sqlx::query(&format!("ALTER TABLE {SCHEMA}.{table} SET SCHEMA public"))
            .execute(&mut *tx)
            .await?;
    }
    for (fresh, live) in names {
        if fresh != live {
            sqlx::query(&format!("ALTER INDEX public.{fresh} RENAME TO {live}"))
                .execute(&mut *tx)
                .await?;
        }
    }
    tx.commit().await?;
    Ok((events, target))
}
