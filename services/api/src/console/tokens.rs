//! The API tokens page: the caller's tokens (never their secrets), a form to make one,
//! whose secret is shown once on the answer to that post, and a revoke button per token.

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::provisioning::SshKeyName;
use time::OffsetDateTime;

use super::form::{poster, see_other, Fields, Refusal};
use super::session::{sign_in_required, signed_in, signed_in_with};
use super::{page, shown, Layout};
use crate::auth::{tokens, Principal};
use crate::routes::tokens::{expires_at_of, minted_with};
use crate::{ApiError, AppState};

struct TokenLine {
    id: String,
    name: String,
    prefix: String,
    created: String,
    expires: String,
    last_used: String,
}

#[derive(Template)]
#[template(path = "console/tokens.html")]
struct TokensPage {
    layout: Layout,
    tokens: Vec<TokenLine>,
    /// A token just made: its name and secret, shown this once.
    created: Option<(String, String)>,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
}

/// `GET /console/tokens`.
#[tracing::instrument(skip_all)]
pub(crate) async fn list_tokens(
    State(state): State<AppState>,
    parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let notice = (parts.uri.query() == Some("done=revoked")).then_some("The token was revoked.");
    answer(&state, &principal, StatusCode::OK, None, None, notice).await
}

/// `POST /console/tokens` (fields `name`, `days`: empty for no expiry).
#[tracing::instrument(skip_all)]
pub(crate) async fn create_token(
    State(state): State<AppState>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let Some((_, credential)) = signed_in_with(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let fields = Fields::parse(&body);
    let admin_token_hash = tokens::admin_token_hash(&state);
    let made = match (
        SshKeyName::parse(fields.get("name")),
        days(fields.get("days")),
    ) {
        (Ok(name), Ok(days)) => {
            let new = app::tokens::NewToken {
                name,
                expires_at: days.map(|d| OffsetDateTime::now_utc() + time::Duration::days(d)),
                minted: minted_with(&credential, admin_token_hash.as_deref()),
                credential_expires_at: expires_at_of(&credential),
            };
            state.app.create_token(&caller, new).await
        }
        (Err(e), _) => Err(e.into()),
        (_, Err(e)) => Err(e),
    };
    match made {
        Ok(made) => {
            let created = Some((made.token.name.clone(), made.secret));
            answer(&state, &principal, StatusCode::CREATED, created, None, None).await
        }
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            answer(&state, &principal, status, None, Some(refusal), None).await
        }
    }
}

/// A token's life in days: none when empty, else 1 to 366.
fn days(text: &str) -> Result<Option<i64>, app::Error> {
    if text.is_empty() {
        return Ok(None);
    }
    text.parse::<i64>()
        .ok()
        .filter(|d| (1..=366).contains(d))
        .map(Some)
        .ok_or_else(|| app::Error::Invalid {
            field: "days".into(),
            reason: "give a whole number of days from 1 to 366, or nothing".into(),
        })
}

/// `POST /console/tokens/{id}/revoke`.
#[tracing::instrument(skip_all)]
pub(crate) async fn revoke_token(
    State(state): State<AppState>,
    Path(id): Path<String>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let revoked = match uuid::Uuid::parse_str(&id) {
        Ok(id) => state.app.revoke_token(&caller, id).await,
        Err(_) => Err(app::Error::NotFound(format!("no token {id:?}"))),
    };
    match revoked {
        Ok(()) => Ok(see_other("/console/tokens?done=revoked")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            answer(&state, &principal, status, None, Some(refusal), None).await
        }
    }
}

async fn answer(
    state: &AppState,
    principal: &Principal,
    status: StatusCode,
    created: Option<(String, String)>,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
) -> Result<Response, ApiError> {
    let never = || "never".to_owned();
    let tokens = state
        .app
        .tokens(principal)
        .await?
        .into_iter()
        .map(|t| TokenLine {
            id: t.id.to_string(),
            name: t.name,
            prefix: t.prefix,
            created: shown(t.created_at),
            expires: t.expires_at.map_or_else(never, shown),
            last_used: t.last_used_at.map_or_else(never, shown),
        })
        .collect();
    Ok(page(
        status,
        &TokensPage {
            layout: Layout::of(principal),
            tokens,
            created,
            refusal,
            notice,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tokens_life_is_empty_or_1_to_366_days() {
        assert_eq!(days("").unwrap(), None);
        assert_eq!(days("30").unwrap(), Some(30));
        assert!(days("0").is_err() && days("367").is_err() && days("x").is_err());
    }
}
