//! The API's audit export and admin stream, served again under `/console` for the console's
//! caller (its cookie is `Path=/console`), as `/console/streams/vms` serves the VM streams:
//! the same handlers, the caller found as for a page, admins only.
//!
//! The stream's events are sent without their SSE `event:` line (but `end`): a page's
//! `EventSource` hears only the names it listens for, and the audit page cannot know every
//! event type in advance. Each event's JSON still names its `type`.

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use futures::StreamExt;

use super::super::form::forbidden;
use super::super::session::signed_in_with;
use super::audit::console_query;
use crate::routes::admin::{export_audit, stream_platform};
use crate::{ApiError, AppState};

pub(super) fn router(state: AppState) -> Router<AppState> {
    let stream = Router::new()
        .route("/streams/admin", get(stream_platform))
        .layer(axum::middleware::map_response(unnamed));
    Router::new()
        .route("/admin/audit/export", get(export_audit))
        .merge(stream)
        .route_layer(axum::middleware::from_fn_with_state(state, admins_only))
}

/// Lets the request through with the console's caller, as the API's authentication layer
/// does with a bearer token: `401` without a caller, the 403 page for a user. The query is
/// read as the audit page reads its form (empty fields left out, `type` split).
async fn admins_only(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let Some((principal, credential)) = signed_in_with(&state, &parts).await? else {
        return Ok(StatusCode::UNAUTHORIZED.into_response());
    };
    if !principal.is_admin() {
        return Ok(forbidden(&principal));
    }
    let path = parts.uri.path().to_owned();
    let query = console_query(parts.uri.query().unwrap_or_default());
    if let Ok(uri) = format!("{path}?{query}").parse() {
        parts.uri = uri;
    }
    parts.extensions.insert(principal);
    parts.extensions.insert(credential);
    Ok(next.run(Request::from_parts(parts, body)).await)
}

/// The stream's body with each event's `event:` line taken out, but `end`'s.
async fn unnamed(response: Response) -> Response {
    let events = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .is_some_and(|kind| kind.as_bytes().starts_with(b"text/event-stream"));
    if !events {
        return response;
    }
    let (parts, body) = response.into_parts();
    let mut pending = Vec::new();
    let frames = body.into_data_stream().map(move |chunk| {
        let chunk = chunk?;
        pending.extend_from_slice(&chunk);
        // Whole frames only: one ends with a blank line.
        let Some(end) = pending.windows(2).rposition(|w| w == b"\n\n") else {
            return Ok(Bytes::new());
        };
        let whole: Vec<u8> = pending.drain(..end + 2).collect();
        Ok::<_, axum::Error>(Bytes::from(without_names(&whole)))
    });
    Response::from_parts(parts, Body::from_stream(frames))
}

fn without_names(frames: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(frames.len());
    for line in frames.split_inclusive(|b| *b == b'\n') {
        let named = line.starts_with(b"event:");
        let end = matches!(line.trim_ascii_end(), b"event: end" | b"event:end");
        if !named || end {
            out.extend_from_slice(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_lose_their_names_but_end() {
        let frames = b"event: Requested\ndata: {\"type\":\"Requested\"}\nid: 7\n\n:\n\nevent: end\ndata: {}\n\n";
        assert_eq!(
            without_names(frames),
            b"data: {\"type\":\"Requested\"}\nid: 7\n\n:\n\nevent: end\ndata: {}\n\n"
        );
    }
}
