//! Personal API tokens: `pat_` and 64 hex digits (256 random bits). Only the SHA-256 of a
//! token is stored, so the hash is looked up directly.
//!
//! A token made through the admin token carries that admin token's hash and works only
//! while the same admin token is set: removing or changing `PROVISIONING_ADMIN_TOKEN` ends
//! every token its holder made (and the tokens those made).

use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use store::api_tokens::LiveToken;
use time::OffsetDateTime;

use crate::{ApiError, AppState};

pub use app::tokens::{generate, hash, PREFIX, SHOWN};

/// What tokens made through the admin token record of it: a SHA-256 with a label of its
/// own, so it is no PAT's hash. `None` when the admin token is off.
pub fn admin_token_hash(state: &AppState) -> Option<Vec<u8>> {
    let token = state.admin_token.as_ref()?;
    let mut digest = Sha256::new();
    digest.update(b"provisioning admin token\0");
    digest.update(token.expose_secret().as_bytes());
    Some(digest.finalize().to_vec())
}

/// The live token with this hash: not revoked, not expired, and, for one made through the
/// admin token, that admin token still set.
pub async fn live(state: &AppState, hash: &[u8]) -> Result<Option<LiveToken>, ApiError> {
    let Some(live) = store::api_tokens::live_by_hash(&state.app.pool, hash).await? else {
        return Ok(None);
    };
    if let Some(minted_with) = &live.admin_token_hash {
        if admin_token_hash(state).as_ref() != Some(minted_with) {
            return Ok(None);
        }
    }
    Ok(Some(live))
}

/// The live token `token`; 401 for one unknown, revoked or expired. Records its use at
/// most about once a minute.
pub async fn user_of(state: &AppState, token: &str) -> Result<LiveToken, ApiError> {
    let live = live(state, &hash(token))
        .await?
        .ok_or(ApiError::Unauthorized)?;
    let recent = live
        .last_used_at
        .is_some_and(|at| OffsetDateTime::now_utc() - at < time::Duration::minutes(1));
    if !recent {
        store::api_tokens::touch(&state.app.pool, live.id).await?;
    }
    Ok(live)
}
