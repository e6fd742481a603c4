//! The VM read models: `vm_views` (one row per VM) and `vm_logs` (Terraform lines).

use std::collections::HashMap;

use cqrs_es::Aggregate;
use domain::identity::UserId;
use domain::provisioning::{Provisioning, Stamp, VmId, VmView};
use serde::Serialize;
use sqlx::{PgPool, Postgres, Transaction};
use time::OffsetDateTime;
use uuid::Uuid;

/// A row of `vm_views`, as the API shows it.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct VmRow {
    pub id: Uuid,
    pub name: String,
    pub provider: String,
    pub template: String,
    pub status: String,
    pub ip: Option<String>,
    pub last_error: Option<String>,
    pub created_at: OffsetDateTime,
    pub updated_at: OffsetDateTime,
    pub last_sequence: i64,
    /// The job the VM runs or is about to run, if any (from the folded view).
    pub active_job: Option<sqlx::types::Json<domain::provisioning::ActiveJob>>,
    /// The jobs waiting behind it, in order.
    pub waiting: sqlx::types::Json<Vec<domain::provisioning::WaitingJob>>,
    /// When the expiry sweep destroys it.
    pub expires_at: Option<OffsetDateTime>,
    /// The boot of the VM its last create made: callbacks, hostname.
    pub boot: Option<sqlx::types::Json<domain::provisioning::Boot>>,
    /// What the application on the VM last reported.
    pub app: Option<sqlx::types::Json<domain::provisioning::AppStatus>>,
    pub archived: bool,
    /// What the last refresh found drifted, until a successful create clears it.
    pub drift: Option<sqlx::types::Json<domain::provisioning::DriftReport>>,
    /// Who asked for it.
    pub owner: Uuid,
    /// Its taskservs, in order, with their state.
    pub taskservs: sqlx::types::Json<Vec<domain::provisioning::TaskservEntry>>,
}

const COLUMNS: &str =
    "id, name, provider, template, status, ip, last_error, created_at, updated_at, last_sequence,
     archived, NULLIF(state->'lifecycle'->'active_job', 'null'::jsonb) AS active_job,
     COALESCE(state->'lifecycle'->'waiting', '[]'::jsonb) AS waiting, expires_at,
     NULLIF(state->'lifecycle'->'boot', 'null'::jsonb) AS boot,
     NULLIF(state->'lifecycle'->'app', 'null'::jsonb) AS app,
     NULLIF(state->'drift', 'null'::jsonb) AS drift, owner,
     COALESCE(state->'lifecycle'->'taskservs', '[]'::jsonb) AS taskservs";

pub async fn get(pool: &PgPool, vm: VmId) -> Result<Option<VmRow>, sqlx::Error> {
    sqlx::query_as(&format!("SELECT {COLUMNS} FROM vm_views WHERE id = $1"))
        .bind(vm.as_uuid())
        .fetch_optional(pool)
        .await
}

/// The rows of `vms` that exist, in no particular order.
pub async fn get_many(pool: &PgPool, vms: &[Uuid]) -> Result<Vec<VmRow>, sqlx::Error> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM vm_views WHERE id = ANY($1)"
    ))
    .bind(vms)
    .fetch_all(pool)
    .await
}

/// Which VMs a list shows, and from where.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only VMs with one of these statuses; all when empty.
    pub statuses: Vec<String>,
    pub provider: Option<String>,
    /// `Some(false)`: not archived (the default list); `Some(true)`: only archived; `None`:
    /// both.
    pub archived: Option<bool>,
    /// Only VMs after this one in the list's order (`created_at DESC, id`): the last of the
    /// previous page.
    pub after: Option<(OffsetDateTime, Uuid)>,
    pub limit: i64,
    /// Only this user's VMs; everyone's when `None` (for admins).
    pub owner: Option<UserId>,
    /// Only VMs whose name holds this, in any case.
    pub name_contains: Option<String>,
}

/// The VMs `filter` selects, newest first (then by id, so pages never overlap nor skip a
/// VM created in the same microsecond), at most `filter.limit`.
pub async fn list(pool: &PgPool, filter: &ListFilter) -> Result<Vec<VmRow>, sqlx::Error> {
    let mut query = sqlx::QueryBuilder::new(format!("SELECT {COLUMNS} FROM vm_views WHERE true"));
    if let Some(archived) = filter.archived {
        query.push(" AND archived = ").push_bind(archived);
    }
    if !filter.statuses.is_empty() {
        query
            .push(" AND status = ANY(")
            .push_bind(filter.statuses.clone())
            .push(")");
    }
    if let Some(provider) = &filter.provider {
        query.push(" AND provider = ").push_bind(provider.clone());
    }
    if let Some(owner) = filter.owner {
        query.push(" AND owner = ").push_bind(owner.as_uuid());
    }
    if let Some(part) = &filter.name_contains {
        // strpos, not LIKE: what is typed holds no pattern.
        query
            .push(" AND strpos(lower(name), lower(")
            .push_bind(part.clone())
            .push(")) > 0");
    }
    if let Some((created_at, id)) = filter.after {
        query
            .push(" AND (created_at < ")
            .push_bind(created_at)
            .push(" OR (created_at = ")
            .push_bind(created_at)
            .push(" AND id > ")
            .push_bind(id)
            .push("))");
    }
    query
        .push(" ORDER BY created_at DESC, id LIMIT ")
        .push_bind(filter.limit);
    query.build_query_as().fetch_all(pool).await
}

/// VMs of a user of one size: how many, and what one takes, from its template as the
/// catalog has it now (zero for a template since removed).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Holding {
    pub vms: i64,
    pub cpu: i32,
    pub ram_gb: i32,
    pub gpu: Option<String>,
}

/// The VMs of `owner` that are not destroyed, counted by their templates' sizes: one row
/// per size, read from the counts the projector keeps (`vm_holdings`, a row per template
/// the owner holds), however many VMs the user holds.
#[tracing::instrument(skip_all, fields(owner = %owner), err)]
pub async fn holdings(pool: &PgPool, owner: UserId) -> Result<Vec<Holding>, sqlx::Error> {
    sqlx::query_as(
        "SELECT sum(h.vms)::bigint AS vms, coalesce(t.cpu, 0) AS cpu,
                coalesce(t.ram_gb, 0) AS ram_gb, t.gpu
         FROM vm_holdings h
         LEFT JOIN templates t ON t.provider_id = h.provider AND t.id = h.template
         WHERE h.owner = $1
         GROUP BY 2, 3, 4",
    )
    .bind(owner.as_uuid())
    .fetch_all(pool)
    .await
}

/// The folded view of a VM as the read model has it: its jobs with who and when.
pub async fn view(pool: &PgPool, vm: VmId) -> Result<Option<VmView>, sqlx::Error> {
    let state: Option<serde_json::Value> =
        sqlx::query_scalar("SELECT state FROM vm_views WHERE id = $1")
            .bind(vm.as_uuid())
            .fetch_optional(pool)
            .await?;
    state
        .map(|s| serde_json::from_value(s).map_err(|e| sqlx::Error::Decode(Box::new(e))))
        .transpose()
}

/// The folded view of a VM, to continue folding from; locked until the transaction ends.
pub async fn load_for_update(
    tx: &mut Transaction<'_, Postgres>,
    vm: VmId,
) -> Result<Option<VmView>, sqlx::Error> {
    Ok(load_many_for_update(tx, &[vm]).await?.remove(&vm))
}

/// The folded views of `vms` that have one, to continue folding from; locked until the
/// transaction ends. One statement, however many VMs.
pub async fn load_many_for_update(
    tx: &mut Transaction<'_, Postgres>,
    vms: &[VmId],
) -> Result<HashMap<VmId, VmView>, sqlx::Error> {
    let ids: Vec<Uuid> = vms.iter().map(|vm| vm.as_uuid()).collect();
    let rows: Vec<(Uuid, serde_json::Value)> =
        sqlx::query_as("SELECT id, state FROM vm_views WHERE id = ANY($1) ORDER BY id FOR UPDATE")
            .bind(ids)
            .fetch_all(&mut **tx)
            .await?;
    Ok(decode_states(rows)?.into_iter().collect())
}

/// `vm_views` rows' `state` as the views they hold.
pub(crate) fn decode_states(
    rows: Vec<(Uuid, serde_json::Value)>,
) -> Result<Vec<(VmId, VmView)>, sqlx::Error> {
    rows.into_iter()
        .map(|(id, state)| {
            let view =
                serde_json::from_value(state).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
            Ok((VmId::from(id), view))
        })
        .collect()
}

/// One VM's view to write: the view, the time of its first event (its creation, counted
/// only when the row is new) and of its last.
pub struct SavedView<'a> {
    pub vm: VmId,
    pub view: &'a VmView,
    pub created: OffsetDateTime,
    pub updated: OffsetDateTime,
}

/// Writes the views of several VMs, in one statement; a VM without a `Requested` event
/// yet is left out (nothing to show).
pub async fn save_many(
    tx: &mut Transaction<'_, Postgres>,
    views: &[SavedView<'_>],
) -> Result<(), sqlx::Error> {
    let mut columns = Columns::default();
    for saved in views {
        let Some(spec) = &saved.view.spec else {
            continue;
        };
        let view = saved.view;
        columns.ids.push(saved.vm.as_uuid());
        columns.names.push(spec.name.as_str().to_owned());
        columns.providers.push(spec.provider.as_str().to_owned());
        columns.templates.push(spec.template.as_str().to_owned());
        columns
            .statuses
            .push(view.lifecycle.status.as_str().to_owned());
        columns.ips.push(view.lifecycle.ip.clone());
        columns.errors.push(view.lifecycle.last_error.clone());
        columns.created.push(saved.created);
        columns.updated.push(saved.updated);
        columns.sequences.push(view.last_sequence as i64);
        columns
            .states
            .push(serde_json::to_value(view).map_err(|e| sqlx::Error::Encode(Box::new(e)))?);
        columns.archived.push(view.archived);
        columns.expires.push(view.expires_at());
        columns.boots.push(view.boot_since);
        columns.owners.push(spec.owner.as_uuid());
    }
    if columns.ids.is_empty() {
        return Ok(());
    }
    // The rows as they were (the statement's snapshot) and as written give each owner's
    // change of holdings; `vm_holdings` takes it in the same statement, and says whether a
    // count fell to zero.
    let emptied: Vec<bool> = sqlx::query_scalar(
        "WITH input (id, name, provider, template, status, ip, last_error, created_at,
                     updated_at, last_sequence, state, archived, expires_at, boot_since,
                     owner) AS (
           SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[],
                                $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[],
                                $10::bigint[], $11::jsonb[], $12::bool[], $13::timestamptz[],
                                $14::timestamptz[], $15::uuid[])),
         before AS (
           SELECT v.owner, v.provider, v.template FROM vm_views v JOIN input USING (id)
           WHERE v.status <> 'destroyed'),
         written AS (
           INSERT INTO vm_views (id, name, provider, template, status, ip, last_error,
                                 created_at, updated_at, last_sequence, state, archived,
                                 expires_at, boot_since, owner)
           SELECT * FROM input
           ON CONFLICT (id) DO UPDATE
           SET status = excluded.status, ip = excluded.ip, last_error = excluded.last_error,
               updated_at = excluded.updated_at, last_sequence = excluded.last_sequence,
               state = excluded.state, archived = excluded.archived,
               expires_at = excluded.expires_at, boot_since = excluded.boot_since
           RETURNING owner, provider, template, status),
         change AS (
           SELECT owner, provider, template, sum(d)::bigint AS d FROM (
             SELECT owner, provider, template, -1 AS d FROM before
             UNION ALL
             SELECT owner, provider, template, 1 FROM written WHERE status <> 'destroyed'
           ) c GROUP BY owner, provider, template HAVING sum(d) <> 0)
         INSERT INTO vm_holdings (owner, provider, template, vms)
         SELECT owner, provider, template, d FROM change
         ON CONFLICT (owner, provider, template) DO UPDATE
         SET vms = vm_holdings.vms + excluded.vms
         RETURNING vms = 0",
    )
    .bind(columns.ids)
    .bind(columns.names)
    .bind(columns.providers)
    .bind(columns.templates)
    .bind(columns.statuses)
    .bind(columns.ips)
    .bind(columns.errors)
    .bind(columns.created)
    .bind(columns.updated)
    .bind(columns.sequences)
    .bind(columns.states)
    .bind(columns.archived)
    .bind(columns.expires)
    .bind(columns.boots)
    .bind(columns.owners)
    .fetch_all(&mut **tx)
    .await?;
    if emptied.contains(&true) {
        sqlx::query("DELETE FROM vm_holdings WHERE vms = 0")
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// The columns of `vm_views` rows, one array each, for [`save_many`].
#[derive(Default)]
struct Columns {
    ids: Vec<Uuid>,
    names: Vec<String>,
    providers: Vec<String>,
    templates: Vec<String>,
    statuses: Vec<String>,
    ips: Vec<Option<String>>,
    errors: Vec<Option<String>>,
    created: Vec<OffsetDateTime>,
    updated: Vec<OffsetDateTime>,
    sequences: Vec<i64>,
    states: Vec<serde_json::Value>,
    archived: Vec<bool>,
    expires: Vec<Option<OffsetDateTime>>,
    boots: Vec<Option<OffsetDateTime>>,
    owners: Vec<Uuid>,
}

/// Writes a VM's view; `created` counts only when the row is new.
pub async fn save(
    tx: &mut Transaction<'_, Postgres>,
    vm: VmId,
    view: &VmView,
    created: OffsetDateTime,
    updated: OffsetDateTime,
) -> Result<(), sqlx::Error> {
    let saved = SavedView {
        vm,
        view,
        created,
        updated,
    };
    save_many(tx, &[saved]).await
}

/// One Terraform line of a job.
#[derive(Debug, Clone, Serialize, sqlx::FromRow)]
pub struct LogRow {
    pub job_id: i32,
    pub line: i32,
    pub level: String,
    pub kind: String,
    pub message: String,
    pub recorded_at: OffsetDateTime,
}

pub struct NewLog {
    pub vm: VmId,
    pub job_id: u32,
    pub line: u32,
    pub level: String,
    pub kind: String,
    pub message: String,
    pub at: OffsetDateTime,
}

/// Writes log lines, in one statement; a line written already stays as it is.
pub async fn insert_logs(
    tx: &mut Transaction<'_, Postgres>,
    logs: &[NewLog],
) -> Result<(), sqlx::Error> {
    if logs.is_empty() {
        return Ok(());
    }
    let vms: Vec<Uuid> = logs.iter().map(|l| l.vm.as_uuid()).collect();
    let jobs: Vec<i32> = logs.iter().map(|l| l.job_id as i32).collect();
    let lines: Vec<i32> = logs.iter().map(|l| l.line as i32).collect();
    let levels: Vec<&str> = logs.iter().map(|l| l.level.as_str()).collect();
    let kinds: Vec<&str> = logs.iter().map(|l| l.kind.as_str()).collect();
    let messages: Vec<&str> = logs.iter().map(|l| l.message.as_str()).collect();
    let ats: Vec<OffsetDateTime> = logs.iter().map(|l| l.at).collect();
    sqlx::query(
        "INSERT INTO vm_logs (vm_id, job_id, line, level, kind, message, recorded_at)
         SELECT * FROM unnest($1::uuid[], $2::int[], $3::int[], $4::text[], $5::text[],
                              $6::text[], $7::timestamptz[])
         ON CONFLICT DO NOTHING",
    )
    .bind(vms)
    .bind(jobs)
    .bind(lines)
    .bind(levels)
    .bind(kinds)
    .bind(messages)
    .bind(ats)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The lines of a VM after (job, line) `after`, in order, at most `limit`.
pub async fn logs(
    pool: &PgPool,
    vm: VmId,
    after: (i32, i32),
    limit: i64,
) -> Result<Vec<LogRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT job_id, line, level, kind, message, recorded_at FROM vm_logs
         WHERE vm_id = $1 AND (job_id, line) > ($2, $3) ORDER BY job_id, line LIMIT $4",
    )
    .bind(vm.as_uuid())
    .bind(after.0)
    .bind(after.1)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The lines of one job of a VM after line `after`, in order, at most `limit`.
pub async fn job_logs(
    pool: &PgPool,
    vm: VmId,
    job: i32,
    after: i32,
    limit: i64,
) -> Result<Vec<LogRow>, sqlx::Error> {
    sqlx::query_as(
        "SELECT job_id, line, level, kind, message, recorded_at FROM vm_logs
         WHERE vm_id = $1 AND job_id = $2 AND line > $3 ORDER BY line LIMIT $4",
    )
    .bind(vm.as_uuid())
    .bind(job)
    .bind(after)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Empties the read models, to rebuild them from the events table.
pub async fn reset(tx: &mut Transaction<'_, Postgres>) -> Result<(), sqlx::Error> {
    sqlx::query("TRUNCATE vm_views, vm_logs, vm_holdings")
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// The view of a VM as of its event `up_to`, folded from the events table (log lines
/// skipped: they do not change the view), with the times of its first and last event.
/// Answers a command with exactly its effect, whatever happened after it.
pub async fn view_at(
    pool: &PgPool,
    vm: VmId,
    up_to: u64,
) -> Result<Option<(VmView, OffsetDateTime, OffsetDateTime)>, sqlx::Error> {
    type Row = (
        i64,
        String,
        String,
        serde_json::Value,
        OffsetDateTime,
        Option<String>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT sequence, event_type, event_version, payload::jsonb, recorded_at,
                metadata::jsonb->>'actor'
         FROM events
         WHERE aggregate_type = $1 AND aggregate_id = $2
           AND sequence <= $3 AND event_type <> 'LogLine'
         ORDER BY sequence",
    )
    .bind(Provisioning::TYPE)
    .bind(vm.to_string())
    .bind(up_to as i64)
    .fetch_all(pool)
    .await?;
    let (Some(first), Some(last)) = (rows.first().map(|r| r.4), rows.last().map(|r| r.4)) else {
        return Ok(None);
    };
    let mut view = VmView::default();
    for (sequence, event_type, version, payload, at, actor) in rows {
        let payload = crate::upcast::upcast(&event_type, &version, payload);
        let event =
            serde_json::from_value(payload).map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
        let stamp = Stamp {
            at,
            actor: actor.as_deref(),
        };
        view.update(sequence as u64, stamp, &event);
    }
    Ok(Some((view, first, last)))
}
