//! The provider's side: its discovery document, its token endpoint, and the tokens it gives.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::SignInConfig;
use crate::error::CliError;

/// The endpoints of the provider's discovery document that sign-in uses.
#[derive(Debug, Clone, Deserialize)]
pub struct Provider {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub device_authorization_endpoint: Option<String>,
}

impl Provider {
    pub async fn discover(http: &reqwest::Client, issuer: &str) -> Result<Provider, CliError> {
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let response = http
            .get(&url)
            .send()
            .await
            .map_err(|e| CliError::network(&url, &e))?;
        if !response.status().is_success() {
            return Err(CliError::Local(format!(
                "the OpenID provider's discovery document {url} answered HTTP {}",
                response.status().as_u16()
            )));
        }
        response
            .json()
            .await
            .map_err(|e| CliError::Local(format!("the OpenID provider's {url} is unreadable: {e}")))
    }
}

/// What the token endpoint answers.
#[derive(Debug, Deserialize)]
pub struct TokenAnswer {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<i64>,
}

/// The tokens a sign-in keeps in the profile, and what refreshing them needs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tokens {
    pub refresh_token: Option<String>,
    /// When the access token ends, in seconds since the Unix epoch.
    pub expires_at: Option<i64>,
    pub token_endpoint: String,
    pub client_id: String,
    pub audience: String,
}

/// An OAuth error answer (RFC 6749 5.2).
#[derive(Debug, Deserialize)]
pub struct OAuthError {
    pub error: String,
    pub error_description: Option<String>,
}

impl OAuthError {
    pub fn text(&self) -> String {
        match &self.error_description {
            Some(d) => format!("{} ({})", d, self.error),
            None => self.error.clone(),
        }
    }
}

pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Posts `form` to the token endpoint: the tokens, or the provider's OAuth error.
pub async fn token_request(
    http: &reqwest::Client,
    endpoint: &str,
    form: &[(&str, &str)],
) -> Result<Result<TokenAnswer, OAuthError>, CliError> {
    let response = http
        .post(endpoint)
        .form(form)
        .send()
        .await
        .map_err(|e| CliError::network(endpoint, &e))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| CliError::network(endpoint, &e))?;
    if status.is_success() {
        return serde_json::from_slice(&body).map(Ok).map_err(|e| {
            CliError::Local(format!(
                "the token endpoint {endpoint} answered no tokens: {e}"
            ))
        });
    }
    serde_json::from_slice(&body).map(Err).map_err(|_| {
        CliError::Local(format!(
            "the token endpoint {endpoint} answered HTTP {}",
            status.as_u16()
        ))
    })
}

/// The profile's tokens from a token answer.
pub fn kept(
    answer: &TokenAnswer,
    provider: &Provider,
    config: &SignInConfig,
    previous_refresh: Option<String>,
) -> Tokens {
    Tokens {
        refresh_token: answer.refresh_token.clone().or(previous_refresh),
        expires_at: answer.expires_in.map(|s| now() + s),
        token_endpoint: provider.token_endpoint.clone(),
        client_id: config.client_id.clone(),
        audience: config.audience.clone(),
    }
}

/// A new access token for `tokens` (its refresh token, rotated when the provider rotates
/// it): the access token and what to keep. Not signed in when the provider refuses.
pub async fn refresh(
    http: &reqwest::Client,
    tokens: &Tokens,
    profile: &str,
) -> Result<(String, Tokens), CliError> {
    let expired = || {
        CliError::NotSignedIn(format!(
            "the sign-in of profile {profile} ended: sign in again with `provisioning login`"
        ))
    };
    let Some(refresh_token) = tokens.refresh_token.as_deref() else {
        return Err(expired());
    };
    let answer = token_request(
        http,
        &tokens.token_endpoint,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", tokens.client_id.as_str()),
            ("resource", tokens.audience.as_str()),
        ],
    )
    .await?;
    let answer = answer.map_err(|e| match e.error.as_str() {
        "invalid_grant" => expired(),
        _ => CliError::Local(format!(
            "the OpenID provider refused a refresh: {}",
            e.text()
        )),
    })?;
    let kept = Tokens {
        refresh_token: answer
            .refresh_token
            .clone()
            .or_else(|| tokens.refresh_token.clone()),
        expires_at: answer.expires_in.map(|s| now() + s),
        ..tokens.clone()
    };
    Ok((answer.access_token, kept))
}
