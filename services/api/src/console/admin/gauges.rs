//! The platform gauges, for admins: VMs by status and by provider, jobs running and queued,
//! the oldest running job and each durable consumer's lag, as the application layer
//! measures them now (`platform_gauges`). The page reads without JavaScript; its script
//! follows `/console/admin/gauges/stream`, which sends the same figures every few seconds
//! when they changed.

use std::collections::BTreeMap;
use std::time::Duration;

use askama::Template;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use super::super::session::signed_in_with;
use super::super::{page, shown, Layout};
use super::admin_reader;
use crate::auth::Principal;
use crate::streams::{self, Outbox};
use crate::{ApiError, AppState};

/// How often the stream measures the gauges again.
const EVERY: Duration = Duration::from_secs(2);

/// The gauges as the page shows them, and as the stream sends them (`gauges` events).
#[derive(Debug, PartialEq, Serialize)]
pub(crate) struct Shown {
    /// When they were measured, to the minute.
    at: String,
    /// `[status, count]`, by status.
    by_status: Vec<(String, i64)>,
    /// `[provider, count]`, by provider.
    by_provider: Vec<(String, i64)>,
    running: i64,
    queued: i64,
    /// The oldest running job's age (`none` when none runs).
    oldest: String,
    /// `[stream, consumer, lag]`.
    consumers: Vec<(String, String, u64)>,
}

impl Shown {
    fn of(gauges: &bus::PlatformGauges) -> Self {
        let mut by_status = BTreeMap::new();
        let mut by_provider = BTreeMap::new();
        for vm in &gauges.vms {
            *by_status.entry(vm.status.clone()).or_insert(0) += vm.count;
            *by_provider.entry(vm.provider.clone()).or_insert(0) += vm.count;
        }
        Shown {
            at: shown(gauges.at),
            by_status: by_status.into_iter().collect(),
            by_provider: by_provider.into_iter().collect(),
            running: gauges.jobs.running,
            queued: gauges.jobs.queued,
            oldest: gauges
                .oldest_running_job_secs
                .map_or_else(|| "none".to_owned(), age),
            consumers: gauges
                .consumers
                .iter()
                .map(|c| (c.stream.clone(), c.consumer.clone(), c.lag))
                .collect(),
        }
    }
}

/// An age in seconds as a person reads it: `42 s`, `3 min 5 s`, `2 h 10 min`.
fn age(secs: f64) -> String {
    let secs = secs.max(0.0) as u64;
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {} min", secs / 3600, secs % 3600 / 60),
    }
}

#[derive(Template)]
#[template(path = "console/admin/gauges.html")]
struct GaugesPage {
    layout: Layout,
    gauges: Shown,
}

/// `GET /console/admin/gauges`.
#[tracing::instrument(skip_all)]
pub(crate) async fn show_gauges(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let gauges = state.app.platform_gauges(&principal).await?;
    Ok(page(
        StatusCode::OK,
        &GaugesPage {
            layout: Layout::of(&principal),
            gauges: Shown::of(&gauges),
        },
    ))
}

/// `GET /console/admin/gauges/stream`: a `gauges` event with [`Shown`] at once, then
/// whenever the figures measured every [`EVERY`] differ from the last sent. `401` without
/// a caller, `403` for a user; it ends as the API's streams do (rights lost, a client that
/// stops reading, the daemon stopping).
#[tracing::instrument(skip_all)]
pub(crate) async fn stream_gauges(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some((principal, credential)) = signed_in_with(&state, &parts).await? else {
        return Ok(StatusCode::UNAUTHORIZED.into_response());
    };
    if !principal.is_admin() {
        return Ok(StatusCode::FORBIDDEN.into_response());
    }
    let slot = state.slots.take(principal.user)?;
    let caller = streams::Caller {
        principal: principal.clone(),
        credential,
    };
    let (outbox, events) = streams::open(&state, caller, None, slot);
    // It runs until the client goes or stops reading, or the daemon stops.
    tokio::spawn(forward(state, principal, outbox));
    Ok(Sse::new(events)
        .keep_alive(KeepAlive::new().interval(streams::KEEP_ALIVE))
        .into_response())
}

async fn forward(state: AppState, principal: Principal, mut outbox: Outbox) {
    let mut last = None;
    let mut sent = 0u64;
    loop {
        match state.app.platform_gauges(&principal).await {
            Ok(gauges) => {
                let now = Shown::of(&gauges);
                if last.as_ref() != Some(&now) {
                    let data = serde_json::to_string(&now).expect("the gauges are plain data");
                    sent += 1;
                    let event = Event::default().event("gauges").data(data);
                    if outbox.send(sent.to_string(), event).await.is_err() {
                        return;
                    }
                    last = Some(now);
                }
            }
            // A consumer that cannot be read now may be read at the next turn.
            Err(error) => tracing::warn!(%error, "could not measure the gauges"),
        }
        tokio::select! {
            _ = outbox.closed() => return,
            _ = tokio::time::sleep(EVERY) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_in_seconds_minutes_or_hours() {
        assert_eq!(age(42.7), "42 s");
        assert_eq!(age(185.0), "3 min 5 s");
        assert_eq!(age(7800.0), "2 h 10 min");
    }

    #[test]
    fn vms_are_summed_by_status_and_by_provider() {
        let count = |status: &str, provider: &str, count| bus::VmCount {
            status: status.into(),
            provider: provider.into(),
            count,
        };
        let gauges = bus::PlatformGauges::now(vec![], (1, 2, None), vec![]);
        let gauges = bus::PlatformGauges {
            vms: vec![
                count("failed", "aws", 1),
                count("running", "aws", 2),
                count("running", "local", 3),
            ],
            ..gauges
        };
        let shown = Shown::of(&gauges);
        assert_eq!(
            shown.by_status,
            [("failed".into(), 1), ("running".into(), 5)]
        );
        assert_eq!(shown.by_provider, [("aws".into(), 3), ("local".into(), 3)]);
        assert_eq!(
            (shown.running, shown.queued, shown.oldest.as_str()),
            (1, 2, "none")
        );
    }
}
