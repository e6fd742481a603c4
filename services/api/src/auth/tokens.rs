//! Personal API tokens: `pat_` and 64 hex digits (256 random bits). Only the SHA-256 of a
//! token is stored, so the hash is looked up directly.

use domain::identity::UserId;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use crate::{ApiError, AppState};

/// What every personal API token starts with.
pub const PREFIX: &str = "pat_";

/// How many characters of a token its lists show (`pat_` and 8 hex digits).
pub const SHOWN: usize = PREFIX.len() + 8;

/// A new token's secret.
pub fn generate() -> String {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).expect("the OS's random source works");
    format!("{PREFIX}{}", hex::encode(bytes))
}

/// What is stored of a token.
pub fn hash(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The user of a personal API token; 401 for one unknown, revoked or expired. Records its
/// use at most about once a minute.
pub async fn user_of(state: &AppState, token: &str) -> Result<Option<UserId>, ApiError> {
    let live = store::api_tokens::live_by_hash(&state.pool, &hash(token))
        .await?
        .ok_or(ApiError::Unauthorized)?;
    let recent = live
        .last_used_at
        .is_some_and(|at| OffsetDateTime::now_utc() - at < time::Duration::minutes(1));
    if !recent {
        store::api_tokens::touch(&state.pool, live.id).await?;
    }
    Ok(Some(UserId::new(live.user_id)))
}
