//! How commands are answered and read back: the position header, `Idempotency-Key`, and
//! waiting for the read models on request (`min_position`).
//!
//! A command is answered from its own events, never from a read model, so a committed
//! command never gets a 5xx for a read model that lags. Its answer carries the position of
//! its last event; a GET that sends it back (as `?min_position=` or the same header) waits
//! briefly until the read models show that event.

use std::time::Duration;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

use crate::{ApiError, AppState};

/// The position of a command's last event, in its answer; a GET accepts it back.
pub const POSITION_HEADER: &str = "provisioning-position";

/// How long a GET with a `min_position` waits for the read models before answering 503.
pub const READ_YOUR_WRITES_WAIT: Duration = Duration::from_secs(5);

/// The answer to a command: status, body and the position of its last event.
#[derive(Debug)]
pub struct Answered {
    pub status: StatusCode,
    pub body: serde_json::Value,
    pub position: Option<i64>,
}

impl Answered {
    pub fn new(status: StatusCode, body: &impl Serialize, position: Option<i64>) -> Self {
        Answered {
            status,
            body: serde_json::to_value(body).expect("answers are plain data"),
            position,
        }
    }

    /// An answer as the application layer keeps it (under an `Idempotency-Key`).
    pub fn kept(kept: app::Kept) -> Self {
        Answered {
            status: StatusCode::from_u16(kept.status).unwrap_or(StatusCode::OK),
            body: kept.body,
            position: kept.position,
        }
    }
}

/// `value` with the keys of every object sorted.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

impl IntoResponse for Answered {
    fn into_response(self) -> Response {
        // Keys in one order (sorted), whether the body is fresh or read back from Postgres
        // (whose jsonb keeps its own order): a replayed answer is the same bytes.
        let mut response = (self.status, Json(sorted(self.body))).into_response();
        if let Some(position) = self.position {
            response
                .headers_mut()
                .insert(POSITION_HEADER, HeaderValue::from(position));
        }
        response
    }
}

/// The request's `Idempotency-Key` header, if it sent one: 1 to 255 visible ASCII
/// characters, chosen by the client (a UUID, say).
#[derive(Debug, Clone)]
pub struct IdempotencyKey(pub Option<String>);

impl<S: Send + Sync> FromRequestParts<S> for IdempotencyKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(IdempotencyKey(None));
        };
        // `to_str` also lets a tab through, which the document's pattern does not.
        let key = value
            .to_str()
            .ok()
            .filter(|k| !k.is_empty() && k.len() <= 255)
            .filter(|k| k.bytes().all(|b| (b' '..=b'~').contains(&b)))
            .ok_or_else(|| ApiError::Invalid {
                field: "Idempotency-Key".into(),
                reason: "must be 1 to 255 visible ASCII characters".into(),
            })?;
        Ok(IdempotencyKey(Some(key.to_owned())))
    }
}

/// For a GET: waits until the read models show the event at the position the client sent
/// (`?min_position=` or the `Provisioning-Position` header), then answers as usual; a 503
/// with `Retry-After` if they do not within [`READ_YOUR_WRITES_WAIT`]. Without one, it
/// waits (as long, at most) for the caller's own last write, which the application layer
/// recorded for every daemon to see; past that it answers with what the read models show.
pub(crate) async fn wait_for_min_position(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::GET {
        return next.run(request).await;
    }
    let wanted = match min_position(request.uri().query(), request.headers()) {
        Ok(wanted) => wanted,
        Err(e) => return e.into_response(),
    };
    let caller = request
        .extensions()
        .get::<crate::auth::Principal>()
        .map(|p| p.user);
    let waited = match (wanted, caller) {
        (Some(position), _) => wait_until_projected(&state, position).await,
        (None, Some(user)) => own_writes(&state, user).await,
        (None, None) => Ok(()),
    };
    if let Err(e) = waited {
        return e.into_response();
    }
    next.run(request).await
}

/// Waits for the read models to show `user`'s last write; answers anyway when they lag.
pub(crate) async fn own_writes(
    state: &AppState,
    user: domain::identity::UserId,
) -> Result<(), ApiError> {
    let shown = state
        .app
        .wait_for_writes_of(user, READ_YOUR_WRITES_WAIT)
        .await?;
    if !shown {
        tracing::warn!(%user, "the read models lag behind the caller's last write; answered without it");
    }
    Ok(())
}

/// The position a GET asks for, from its query or its header (the query wins).
fn min_position(query: Option<&str>, headers: &HeaderMap) -> Result<Option<i64>, ApiError> {
    let from_query = query
        .unwrap_or_default()
        .split('&')
        .find_map(|pair| pair.strip_prefix("min_position="));
    let from_header = headers
        .get(POSITION_HEADER)
        .map(|v| v.to_str().unwrap_or("?"));
    let Some(text) = from_query.or(from_header) else {
        return Ok(None);
    };
    text.trim()
        .parse::<i64>()
        .map(Some)
        .map_err(|_| ApiError::Invalid {
            field: "min_position".into(),
            reason: format!("{text:?} is not a position (an integer)"),
        })
}

pub(crate) async fn wait_until_projected(state: &AppState, position: i64) -> Result<(), ApiError> {
    match state
        .app
        .wait_until_projected(position, READ_YOUR_WRITES_WAIT)
        .await?
    {
        true => Ok(()),
        false => Err(ApiError::Unavailable(format!(
            "the read models do not show position {position} yet; retry the GET"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_position_comes_from_the_query_or_the_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(min_position(None, &headers).unwrap(), None);
        assert_eq!(
            min_position(Some("after=3&min_position=42"), &headers).unwrap(),
            Some(42)
        );
        headers.insert(POSITION_HEADER, HeaderValue::from(7));
        assert_eq!(min_position(None, &headers).unwrap(), Some(7));
        assert_eq!(
            min_position(Some("min_position=9"), &headers).unwrap(),
            Some(9)
        );
        assert!(min_position(Some("min_position=x"), &HeaderMap::new()).is_err());
    }
}
