//! Open streams follow their caller's rights: every [`RECHECK`] the credential a stream was
//! opened with and its user are read again, and the stream ends with a last `end` event
//! (see [`Lost`]) once the credential no longer lets a request in (a token revoked or
//! expired, a session logged out), the user is disabled, or their role changed (a demoted
//! admin must not keep seeing everything; a client reconnects with its new rights).

use std::time::Duration;

use axum::response::sse::Event;
use serde::Serialize;
use store::users::UserStatus;

use crate::auth::{Credential, Principal};
use crate::AppState;

/// How often an open stream checks its caller's rights again.
pub const RECHECK: Duration = Duration::from_secs(2);

/// Why a stream ended for its caller's rights: the `reason` of its `end` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lost {
    /// The credential no longer lets a request in: revoked, expired, or its session ended.
    CredentialRevoked,
    /// The user was disabled (or removed).
    UserDisabled,
    /// The user's role changed.
    RoleChanged,
}

impl Lost {
    fn detail(self) -> &'static str {
        match self {
            Lost::CredentialRevoked => "the stream's credential was revoked or expired",
            Lost::UserDisabled => "the stream's user was disabled",
            Lost::RoleChanged => "the stream's user has another role now; reconnect",
        }
    }

    /// The stream's last event: `event: end`, `data: {"reason": …, "detail": …}`.
    pub fn event(self) -> Event {
        let data = serde_json::json!({ "reason": self, "detail": self.detail() });
        Event::default().event("end").data(data.to_string())
    }
}

/// What the caller of a stream was when it opened it.
#[derive(Debug, Clone)]
pub struct Caller {
    pub principal: Principal,
    pub credential: Credential,
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Caller {
    type Rejection = crate::ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Caller {
            principal: Principal::from_request_parts(parts, state).await?,
            credential: Credential::from_request_parts(parts, state).await?,
        })
    }
}

/// Whether the caller lost the rights the stream was opened with; `None` while they hold.
pub async fn lost(state: &AppState, caller: &Caller) -> Result<Option<Lost>, crate::ApiError> {
    let user = caller.principal.user;
    if !caller.credential.still_valid(state, user).await? {
        return Ok(Some(Lost::CredentialRevoked));
    }
    let now = store::users::get(&state.app.pool, user)
        .await
        .map_err(crate::error::store_failed)?;
    Ok(match now {
        Some(now) if now.status != UserStatus::Active => Some(Lost::UserDisabled),
        None => Some(Lost::UserDisabled),
        Some(now) if now.role != caller.principal.role => Some(Lost::RoleChanged),
        Some(_) => None,
    })
}

/// Resolves when the caller loses their rights. A check that fails (the database cannot be
/// reached) is tried again at the next tick: the stream's own reads fail then anyway.
pub async fn watch(state: AppState, caller: Caller) -> Lost {
    let mut ticks = tokio::time::interval(RECHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        match lost(&state, &caller).await {
            Ok(Some(lost)) => {
                tracing::info!(user = %caller.principal.user, ?lost, "a stream ends: its caller lost their rights");
                return lost;
            }
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, "could not check a stream's caller again"),
        }
    }
}
