//! What the relay publishes for one event: its envelope on its subject, and the job message
//! of a `JobQueued`.

use std::collections::HashMap;

use bus::{EventEnvelope, JobMessage, Subjects, ENVELOPE_VERSION};
use domain::catalog::CatalogEvent;
use domain::cluster::ClusterEvent;
use domain::provisioning::{ProviderId, ProvisioningEvent};
use domain::AggregateKind;
use store::feed::{self, FeedEvent};
use store::{sqlx, PgPool};

/// A message to publish: subject, message id, payload.
pub(crate) type Outgoing = (String, String, Vec<u8>);

/// The provider of each VM among `events`, by VM id: one query per batch, on the primary
/// key (a VM's `Requested` event is its first).
pub(crate) async fn providers(
    pool: &PgPool,
    events: &[FeedEvent],
) -> Result<HashMap<String, String>, sqlx::Error> {
    let mut vms: Vec<&str> = events
        .iter()
        .filter(|e| e.is_vm())
        .map(|e| e.aggregate_id.as_str())
        .collect();
    vms.sort_unstable();
    vms.dedup();
    if vms.is_empty() {
        return Ok(HashMap::new());
    }
    feed::providers_of(pool, &vms).await
}

/// The envelope of an event, and its job message if it queues a job; or why it cannot be
/// published.
pub(crate) fn messages(
    subjects: &Subjects,
    event: &FeedEvent,
    providers: &HashMap<String, String>,
) -> Result<(Outgoing, Option<Outgoing>), String> {
    let decoded = event.provisioning().map_err(|e| e.to_string())?;
    if event.payload.is_null() {
        return Err(format!(
            "event {}/{}/{} has a payload that is not JSON",
            event.aggregate_type, event.aggregate_id, event.sequence
        ));
    }
    // `decoded` is `Some` exactly for a VM's event.
    let (subject, event_type, provider) = match (event.kind(), &decoded) {
        // Named as this version names the event: one stored by an earlier version under an
        // older name (`AddressChanged`) is published under its current one (`IpChanged`).
        (Some(AggregateKind::Vm), Some((vm, e))) => {
            let provider = providers
                .get(&event.aggregate_id)
                .and_then(|p| ProviderId::parse(p).ok())
                .ok_or_else(|| format!("VM {vm} has no Requested event naming its provider"))?;
            let subject = subjects.vm_event(&provider, &event.aggregate_id, e.name());
            (subject, e.name().to_owned(), Some(provider))
        }
        (Some(AggregateKind::Catalog), _) => {
            let change: CatalogEvent = serde_json::from_value(event.payload.clone())
                .map_err(|e| format!("catalog event {}: {e}", event.sequence))?;
            let provider = concerned_provider(&change).cloned();
            let subject = subjects.catalog_event(provider.as_ref(), change.name());
            (subject, change.name().to_owned(), provider)
        }
        (Some(AggregateKind::Cluster), _) => {
            let change: ClusterEvent = serde_json::from_value(event.payload.clone())
                .map_err(|e| format!("cluster event {}: {e}", event.sequence))?;
            let subject = subjects.cluster_event(&event.aggregate_id, change.name());
            (subject, change.name().to_owned(), None)
        }
        (Some(AggregateKind::Vm), None) | (None, _) => {
            return Err(format!("unknown aggregate type {}", event.aggregate_type))
        }
    };
    let envelope = EventEnvelope {
        version: ENVELOPE_VERSION,
        aggregate_type: event.aggregate_type.clone(),
        aggregate_id: event.aggregate_id.clone(),
        provider: provider.map(|p| p.as_str().to_owned()),
        position: event.cursor.position,
        sequence: event.sequence,
        event_type,
        recorded_at: event.recorded_at,
        actor: event.actor(),
        correlation_id: event.correlation_id(),
        data: event
            .payload
            .get("data")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({})),
    };
    let message_id = format!(
        "{}:{}:{}",
        event.aggregate_type, event.aggregate_id, event.sequence
    );
    let encode = |e: serde_json::Error| e.to_string();
    let envelope = (
        subject,
        message_id,
        serde_json::to_vec(&envelope).map_err(encode)?,
    );
    let job = match decoded {
        Some((
            vm_id,
            ProvisioningEvent::JobQueued {
                job_id,
                action,
                spec,
            },
        )) => {
            let job = JobMessage {
                vm_id,
                job_id,
                action,
                spec,
            };
            let subject = subjects.job(&job.spec.provider);
            let payload = serde_json::to_vec(&job).map_err(encode)?;
            Some((subject, job.message_id(event.sequence), payload))
        }
        _ => None,
    };
    Ok((envelope, job))
}

/// The one provider a catalog change concerns; `None` for one about every provider.
fn concerned_provider(change: &CatalogEvent) -> Option<&ProviderId> {
    match change {
        CatalogEvent::SeedImported { .. } | CatalogEvent::ProvidersReordered { .. } => None,
        CatalogEvent::ProviderCreated(spec) => Some(&spec.id),
        CatalogEvent::ProviderUpdated { id, .. }
        | CatalogEvent::ProviderEnabledChanged { id, .. } => Some(id),
        CatalogEvent::TemplateCreated(spec) => Some(&spec.provider),
        CatalogEvent::TemplateUpdated { provider, .. }
        | CatalogEvent::TemplateEnabledChanged { provider, .. }
        | CatalogEvent::TemplatesReordered { provider, .. }
        | CatalogEvent::TaskservEnabledChanged { provider, .. } => Some(provider),
    }
}
