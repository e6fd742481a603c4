//! `/api/v1/tokens`: personal API tokens, for scripts and the CLI. A token acts as its
//! user (same role, same VMs); its secret is answered once, when it is made, and only its
//! SHA-256 is stored. Revoked or expired tokens are refused with a 401.
//!
//! A token cannot outlive or outrank what made it: one made with a token (or a bearer JWT)
//! expires no later than that token (a later expiry, or none, is capped to it), and one made through the
//! admin token works only while that admin token is set (see `auth::tokens`).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use store::api_tokens::Minted;

use crate::auth::{jwt, tokens, Credential, Principal};
use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/tokens", get(list_tokens).post(create_token))
        .route("/tokens/{id}", delete(delete_token))
}

/// A token to make.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenIn {
    /// 1 to 64 characters on one line, e.g. `ci`.
    #[schema(value_type = crate::routes::schemas::OneLineName)]
    pub name: String,
    /// When it stops working (RFC 3339, in the future); never, when left out. A token made
    /// with a token (or a JWT) that expires expires no later than it: a later time, or
    /// none, is capped to that expiry (the answer shows the expiry it got).
    #[serde(default, deserialize_with = "crate::timestamps::optional")]
    #[schema(value_type = Option<crate::routes::schemas::Time>)]
    pub expires_at: Option<OffsetDateTime>,
}

/// A personal API token, without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenOut {
    pub id: Uuid,
    pub name: String,
    /// The secret's first characters (`pat_` and 8 hex digits), to tell tokens apart.
    pub prefix: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<OffsetDateTime>,
    /// When it was last used, to the minute; `null` if never.
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub last_used_at: Option<OffsetDateTime>,
}

/// A token just made: its secret, shown this once.
#[derive(Serialize, ToSchema)]
pub struct CreatedTokenOut {
    /// `pat_` and 64 hex digits: send it as `Authorization: Bearer <token>`. Save it now:
    /// the server keeps only its hash.
    pub token: String,
    #[serde(flatten)]
    pub info: TokenOut,
}

impl From<store::api_tokens::ApiTokenRow> for TokenOut {
    fn from(row: store::api_tokens::ApiTokenRow) -> Self {
        TokenOut {
            id: row.id,
            name: row.name,
            prefix: row.prefix,
            created_at: row.created_at,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// Makes a personal API token for the caller.
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens",
    security(("bearer" = [])),
    request_body = TokenIn,
    responses(
        (status = 201, description = "Made; the secret is in `token`, shown this once", body = CreatedTokenOut),
        (status = 401, body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid (`detail` names it)", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn create_token(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    credential: Credential,
    AppJson(input): AppJson<TokenIn>,
) -> Result<(StatusCode, Json<CreatedTokenOut>), ApiError> {
    // The same rule as an SSH key's name.
    let name = domain::provisioning::SshKeyName::parse(&input.name)?;
    let admin_token_hash = tokens::admin_token_hash(&state);
    let new = app::tokens::NewToken {
        name,
        expires_at: input.expires_at,
        minted: minted_with(&credential, admin_token_hash.as_deref()),
        credential_expires_at: expires_at_of(&credential),
    };
    let created = state.app.create_token(&caller, new).await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedTokenOut {
            token: created.secret,
            info: created.token.into(),
        }),
    ))
}

/// What a new token made with `credential` records of it: the token that made it, and the
/// admin token it comes from (`admin_token_hash`: the one set now), passed down the chain.
pub(crate) fn minted_with<'a>(
    credential: &'a Credential,
    admin_token_hash: Option<&'a [u8]>,
) -> Minted<'a> {
    match credential {
        Credential::Token {
            id,
            admin_token_hash,
            ..
        } => Minted {
            by: Some(*id),
            admin_token_hash: admin_token_hash.as_deref(),
        },
        Credential::AdminToken => Minted {
            by: None,
            admin_token_hash,
        },
        Credential::Jwt(_) | Credential::Session(_) => Minted::default(),
    }
}

/// When `credential` stops working by itself: a token's expiry, a JWT's `exp`. Sessions
/// are not counted: signing in is how a user makes a long-lived token on purpose.
pub(crate) fn expires_at_of(credential: &Credential) -> Option<OffsetDateTime> {
    match credential {
        Credential::Token { expires_at, .. } => *expires_at,
        Credential::Jwt(token) => jwt::expires_at(token),
        Credential::AdminToken | Credential::Session(_) => None,
    }
}

/// The caller's tokens (not revoked; expired ones included), oldest first.
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens",
    security(("bearer" = [])),
    responses((status = 200, body = [TokenOut]), (status = 401, body = crate::error::ErrorBody)))]
pub async fn list_tokens(
    State(state): State<AppState>,
    principal: Principal,
) -> Result<Json<Vec<TokenOut>>, ApiError> {
    let rows = state.app.tokens(&principal).await?;
    Ok(Json(rows.into_iter().map(TokenOut::from).collect()))
}

/// Revokes one of the caller's tokens: it is refused from now on.
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "token id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 401, body = crate::error::ErrorBody),
        (status = 404, description = "The caller has no such token", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all, fields(token = %id))]
pub async fn delete_token(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    // Not a token id: no such token either.
    let id = Uuid::parse_str(&id).map_err(|_| ApiError::NotFound(format!("no token {id}")))?;
    state.app.revoke_token(&caller, id).await?;
    Ok(StatusCode::NO_CONTENT)
}
