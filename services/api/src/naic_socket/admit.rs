//! Who may open a socket, and for how long: the handshake must carry a live session cookie
//! (and, as every request with that cookie, name this site as its origin), and a `userId`
//! the client claims in its `auth` must be the session's user. An open socket is checked
//! again every [`RECHECK`]: once its session ended or its user is disabled, it is
//! disconnected.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use domain::identity::UserId;
use socketioxide::extract::{SocketRef, TryData};
use socketioxide::SocketIo;
use store::users::UserStatus;

use super::updates::Following;
use crate::oidc::session;
use crate::{ApiError, AppState};

pub use crate::streams::rights::RECHECK;

/// What an admitted socket holds: its user, and its session to check again.
#[derive(Clone)]
pub struct Admitted {
    pub user: UserId,
    session_hash: Vec<u8>,
}

/// Why a handshake was refused: the message of the client's `connect_error`. Never names
/// the session or the user.
#[derive(Debug)]
pub struct Refused(&'static str);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// The connect middleware of the namespace: admits the socket or refuses it.
/// An admitted socket joins its user's room here, before the client hears it is connected,
/// and the pushes follow the commit order by then: what commits after the client's
/// `connect` reaches it.
pub async fn admit(
    state: AppState,
    following: Arc<Following>,
    socket: SocketRef,
    TryData(auth): TryData<serde_json::Value>,
) -> Result<(), Refused> {
    let admitted = admitted(&state, socket.req_parts(), auth.ok().as_ref()).await?;
    socket.join(super::room(admitted.user));
    socket.extensions.insert(admitted);
    following.ensure().await;
    Ok(())
}

async fn admitted(
    state: &AppState,
    parts: &axum::http::request::Parts,
    auth: Option<&serde_json::Value>,
) -> Result<Admitted, Refused> {
    let Some(oidc) = state.oidc.as_deref() else {
        return Err(Refused("sign-in is not configured on this platform"));
    };
    let Some(id) = session::session_id(&parts.headers) else {
        return Err(Refused("no session: sign in first"));
    };
    // The handshake is a GET, but a socket is a standing read of the user's VMs: a page of
    // another site must not open one with the browser's cookie.
    session::check_origin(oidc, &parts.headers)
        .map_err(|_| Refused("a socket with the session cookie must come from this site"))?;
    let session_hash = crate::oidc::hash(&id);
    let user = match session::user_of_session(state, oidc, &session_hash).await {
        Ok(user) => user,
        Err(ApiError::Unauthorized) => return Err(Refused("the session ended: sign in again")),
        Err(error) => {
            tracing::warn!(%error, "could not admit a socket");
            return Err(Refused("the session cannot be checked now; retry"));
        }
    };
    if let Some(claimed) = claimed_user(auth) {
        if claimed != user.to_string() {
            return Err(Refused("the userId claimed is not the session's user"));
        }
    }
    if !active(state, user).await.map_err(|error| {
        tracing::warn!(%error, "could not admit a socket");
        Refused("the session cannot be checked now; retry")
    })? {
        return Err(Refused("the user is disabled"));
    }
    Ok(Admitted { user, session_hash })
}

/// The `userId` of the handshake's `auth`, as text; none when absent or null.
fn claimed_user(auth: Option<&serde_json::Value>) -> Option<String> {
    match auth?.get("userId")? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

async fn active(state: &AppState, user: UserId) -> Result<bool, ApiError> {
    let found = store::users::get(&state.pool, user)
        .await
        .map_err(crate::error::store_failed)?;
    Ok(found.is_some_and(|u| u.status == UserStatus::Active))
}

/// Every [`RECHECK`], disconnects the sockets whose session ended or whose user is no
/// longer active. One check per session and per user however many sockets share them; a
/// check that fails (the database or the provider cannot be reached) keeps the socket until
/// the next tick.
pub async fn recheck(state: AppState, io: SocketIo) {
    let mut ticks = tokio::time::interval(RECHECK);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = state.stopping.cancelled() => return,
        }
        let Some(ns) = io.of(super::NAMESPACE) else {
            continue;
        };
        let sockets = ns.sockets();
        if sockets.is_empty() {
            continue;
        }
        let mut sessions: HashMap<Vec<u8>, bool> = HashMap::new();
        let mut users: HashMap<UserId, bool> = HashMap::new();
        for socket in sockets {
            let Some(admitted) = socket.extensions.get::<Admitted>() else {
                continue;
            };
            let session_holds = match sessions.get(&admitted.session_hash) {
                Some(holds) => *holds,
                None => {
                    let holds = session_holds(&state, &admitted).await;
                    sessions.insert(admitted.session_hash.clone(), holds);
                    holds
                }
            };
            let user_holds = match users.get(&admitted.user) {
                Some(holds) => *holds,
                None => {
                    let holds = active(&state, admitted.user).await.unwrap_or_else(|error| {
                        tracing::warn!(%error, "could not check a socket's user again");
                        true
                    });
                    users.insert(admitted.user, holds);
                    holds
                }
            };
            if !(session_holds && user_holds) {
                tracing::info!(user = %admitted.user, "a socket is disconnected: its session ended or its user was disabled");
                let _ = socket.disconnect();
            }
        }
    }
}

async fn session_holds(state: &AppState, admitted: &Admitted) -> bool {
    let Some(oidc) = state.oidc.as_deref() else {
        return false;
    };
    match session::user_of_session(state, oidc, &admitted.session_hash).await {
        Ok(user) => user == admitted.user,
        Err(ApiError::Unauthorized) => false,
        Err(error) => {
            tracing::warn!(%error, "could not check a socket's session again");
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claimed_user_is_read_from_the_auth_payload() {
        assert_eq!(claimed_user(None), None);
        assert_eq!(claimed_user(Some(&json!({}))), None);
        assert_eq!(claimed_user(Some(&json!({"userId": null}))), None);
        assert_eq!(
            claimed_user(Some(&json!({"userId": "u1"}))).as_deref(),
            Some("u1")
        );
        assert_eq!(
            claimed_user(Some(&json!({"userId": 7}))).as_deref(),
            Some("7")
        );
    }
}
