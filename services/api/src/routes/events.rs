//! What every audit history answers with (a VM's, the catalog's), and how it is paged.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

/// One event of an audit history: a VM's or the catalog's.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EventOut {
    /// 1, 2, 3, ... within the VM (or the catalog), without gaps.
    pub sequence: u64,
    /// The event name: for a VM e.g. `Requested`, `JobStarted`, `LogLine`, `Applied`; for
    /// the catalog e.g. `SeedImported`, `ProviderCreated`, `TemplateUpdated`,
    /// `TemplateEnabledChanged`, `ProvidersReordered`.
    #[serde(rename = "type")]
    pub event_type: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub recorded_at: OffsetDateTime,
    /// Who caused it: `admin` for API calls, `runner` for what a runner reported.
    pub actor: Option<String>,
    /// The event's fields; catalog updates hold only the fields that changed.
    #[schema(value_type = Object)]
    pub data: serde_json::Value,
}

// The same fields from two sources, deliberately: a stored event (backlog, history pages) and
// a published one (live streams) are answered alike.
impl From<store::AuditEvent> for EventOut {
    fn from(e: store::AuditEvent) -> Self {
        Self {
            sequence: e.sequence,
            event_type: e.event_type,
            recorded_at: e.recorded_at,
            actor: e.actor,
            data: e.data,
        }
    }
}

impl From<store::audit::AuditEntry> for EventOut {
    fn from(e: store::audit::AuditEntry) -> Self {
        Self {
            sequence: u64::try_from(e.sequence).unwrap_or(0),
            event_type: e.event_type,
            recorded_at: e.recorded_at,
            actor: e.actor,
            data: e.data,
        }
    }
}

impl From<bus::EventEnvelope> for EventOut {
    fn from(e: bus::EventEnvelope) -> Self {
        Self {
            sequence: e.sequence,
            event_type: e.event_type,
            recorded_at: e.recorded_at,
            actor: e.actor,
            data: e.data,
        }
    }
}

/// One page of an audit history.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    /// Only events with a higher sequence (as the events table keeps them, a `bigint`).
    #[param(minimum = 0)]
    pub after: Option<i64>,
    /// At most this many (default and maximum 10000).
    pub limit: Option<i64>,
}

impl Page {
    /// `after`, which is 0 or more; a 422 naming it otherwise.
    pub fn after(&self) -> Result<u64, crate::ApiError> {
        u64::try_from(self.after.unwrap_or(0)).map_err(|_| crate::ApiError::Invalid {
            field: "after".into(),
            reason: "must be a sequence: 0 or more".into(),
        })
    }

    pub fn limit(&self) -> i64 {
        limit(self.limit)
    }
}

/// The page size every list takes: default and maximum 10000, at least 1.
pub fn limit(asked: Option<i64>) -> i64 {
    asked.unwrap_or(10_000).clamp(1, 10_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_starts_after_a_sequence_of_zero_or_more() {
        let page = |after| Page { after, limit: None };
        assert_eq!(page(None).after().ok(), Some(0));
        assert_eq!(page(Some(i64::MAX)).after().ok(), Some(i64::MAX as u64));
        let err = page(Some(-1)).after().unwrap_err().to_string();
        assert!(err.starts_with("after: "), "{err}");
    }
}
