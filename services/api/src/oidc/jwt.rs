//! Bearer JWT access tokens of the OpenID provider: signature checked against its keys
//! (JWKS, cached, fetched again for an unknown key id at most every [`REFETCH_EVERY`]),
//! issuer, audience and expiry checked; ID tokens refused.

use std::time::{Duration, Instant};

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use tokio::sync::Mutex;

/// How often at most the keys are fetched again for a key id they lack: a flood of tokens
/// naming made-up keys cannot turn into a flood of requests to the provider.
pub const REFETCH_EVERY: Duration = Duration::from_secs(30);

/// How far a token's `exp` and `nbf` may be off, for clocks that differ a little.
pub const LEEWAY_SECS: u64 = 2;

/// The algorithms accepted: asymmetric ones only (a provider's public key is public).
const ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Why a bearer JWT is refused; said to the caller (it names no secret).
#[derive(Debug, thiserror::Error)]
pub enum JwtError {
    #[error("the bearer token is not a JWT")]
    Malformed,
    #[error("the bearer JWT's algorithm is not accepted")]
    Algorithm,
    #[error("the bearer JWT is signed with a key the provider does not have")]
    UnknownKey,
    #[error("the bearer JWT's signature is wrong")]
    Signature,
    #[error("the bearer JWT has expired")]
    Expired,
    #[error("the bearer JWT is for another audience")]
    Audience,
    #[error("the bearer JWT is from another issuer")]
    Issuer,
    #[error("the bearer JWT is an ID token: send an access token")]
    IdToken,
    #[error("the bearer JWT is not valid: {0}")]
    Invalid(String),
    #[error("the provider's keys cannot be fetched")]
    Keys,
}

/// The claims of a verified token the daemon uses.
#[derive(Debug, Clone)]
pub struct Verified {
    pub subject: String,
    pub email: Option<String>,
    /// Whether the token says its email is verified (`email_verified`).
    pub email_verified: bool,
    pub claims: Map<String, Value>,
}

pub struct Verifier {
    http: openidconnect::reqwest::Client,
    jwks_uri: url::Url,
    pub(crate) issuer: String,
    audience: String,
    keys: Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    set: Option<JwkSet>,
    fetched_at: Option<Instant>,
}

impl Verifier {
    pub fn new(
        http: openidconnect::reqwest::Client,
        jwks_uri: url::Url,
        issuer: String,
        audience: String,
    ) -> Self {
        Self {
            http,
            jwks_uri,
            issuer,
            audience,
            keys: Mutex::default(),
        }
    }

    #[tracing::instrument(skip_all, err(level = "info"))]
    pub async fn verify(&self, token: &str) -> Result<Verified, JwtError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| JwtError::Malformed)?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(JwtError::Algorithm);
        }
        let key = self.key(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECS;
        validation.validate_nbf = true;
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                match e.kind() {
                    ErrorKind::InvalidSignature => JwtError::Signature,
                    ErrorKind::ExpiredSignature => JwtError::Expired,
                    ErrorKind::InvalidAudience => JwtError::Audience,
                    ErrorKind::InvalidIssuer => JwtError::Issuer,
                    ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) => {
                        JwtError::Malformed
                    }
                    _ => JwtError::Invalid(e.to_string()),
                }
            })?;
        let claims = data.claims;
        if is_id_token(header.typ.as_deref(), &claims) {
            return Err(JwtError::IdToken);
        }
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let subject = text("sub").ok_or(JwtError::Invalid("no subject".into()))?;
        Ok(Verified {
            subject,
            email: text("email").map(|e| e.trim().to_lowercase()),
            email_verified: super::claims::email_verified(&claims),
            claims,
        })
    }

    /// The provider's key `kid` (or its only key when the token names none), fetching the
    /// keys when they are not known yet or lack it.
    async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, JwtError> {
        let mut keys = self.keys.lock().await;
        let found = keys.set.as_ref().and_then(|set| pick(set, kid));
        let jwk = match found {
            Some(jwk) => jwk,
            None => {
                let due = keys
                    .fetched_at
                    .is_none_or(|at| at.elapsed() >= REFETCH_EVERY);
                if !due {
                    return Err(JwtError::UnknownKey);
                }
                keys.fetched_at = Some(Instant::now());
                let set = self.fetch().await?;
                let jwk = pick(&set, kid);
                keys.set = Some(set);
                jwk.ok_or(JwtError::UnknownKey)?
            }
        };
        if jwk
            .common
            .key_algorithm
            .is_some_and(|k| format!("{k:?}") != format!("{alg:?}"))
        {
            return Err(JwtError::Algorithm);
        }
        DecodingKey::from_jwk(&jwk).map_err(|_| JwtError::UnknownKey)
    }

    async fn fetch(&self) -> Result<JwkSet, JwtError> {
        let answer = self
            .http
            .get(self.jwks_uri.clone())
            .send()
            .await
            .and_then(|r| r.error_for_status());
        let set = match answer {
            Ok(response) => response.json::<JwkSet>().await,
            Err(e) => Err(e),
        };
        set.map_err(|e| {
            tracing::warn!(error = %super::error_chain(&e), "could not fetch the provider's keys");
            JwtError::Keys
        })
    }
}

/// Whether a verified token is an ID token rather than an access token. An ID token says
/// who signed in to a client, for that client: taken as a bearer token (which works when
/// the audience configured is the client id), any site the user signed in to with that
/// client could act as them here. Access tokens of RFC 9068 say `typ: at+jwt`; otherwise
/// the claims only ID tokens carry (OpenID Connect Core 2: `nonce`, `at_hash`, `c_hash`;
/// Keycloak's `typ: ID`) tell them apart.
fn is_id_token(typ: Option<&str>, claims: &Map<String, Value>) -> bool {
    let access = typ.is_some_and(|t| {
        let t = t.trim_start_matches("application/");
        t.eq_ignore_ascii_case("at+jwt")
    });
    !access
        && (["nonce", "at_hash", "c_hash"]
            .iter()
            .any(|name| claims.contains_key(*name))
            || claims.get("typ").and_then(Value::as_str) == Some("ID"))
}

fn pick(set: &JwkSet, kid: Option<&str>) -> Option<jsonwebtoken::jwk::Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn id_tokens_are_told_apart_from_access_tokens() {
        let claims = |v: Value| v.as_object().unwrap().clone();
        let id_token = claims(json!({"sub": "a", "nonce": "n", "at_hash": "h"}));
        assert!(is_id_token(Some("JWT"), &id_token));
        assert!(is_id_token(None, &claims(json!({"sub": "a", "typ": "ID"}))));
        assert!(!is_id_token(Some("at+jwt"), &id_token), "RFC 9068 says so");
        let access = claims(json!({"sub": "a", "scope": "api", "typ": "Bearer"}));
        assert!(!is_id_token(Some("JWT"), &access));
        assert!(!is_id_token(None, &access));
    }
}
