//! JWT bearer tokens issued by the OpenID provider (verified in `crate::oidc::jwt`).

use base64::Engine;
use domain::identity::UserId;
use time::OffsetDateTime;

use crate::{ApiError, AppState};

/// The user of a JWT bearer token; `None` when JWTs are not accepted here or the token is
/// no JWT; an error for a JWT that is refused.
pub async fn user_of(state: &AppState, token: &str) -> Result<Option<UserId>, ApiError> {
    crate::oidc::user_of_jwt(state, token).await
}

/// When a JWT expires (its `exp` claim), read from a token already verified by
/// [`user_of`]; `None` for one that names no expiry.
pub fn expires_at(token: &str) -> Option<OffsetDateTime> {
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let exp = claims.get("exp")?.as_i64()?;
    OffsetDateTime::from_unix_timestamp(exp).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jwts_expiry_is_its_exp_claim() {
        let encode = |json: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json);
        let token = format!("{}.{}.sig", encode("{}"), encode(r#"{"exp":1700000000}"#));
        assert_eq!(
            expires_at(&token).map(|t| t.unix_timestamp()),
            Some(1_700_000_000)
        );
        let token = format!("{}.{}.sig", encode("{}"), encode(r#"{"sub":"a"}"#));
        assert_eq!(expires_at(&token), None);
        assert_eq!(expires_at("not a jwt"), None);
    }
}
