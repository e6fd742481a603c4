//! Who is calling. `authenticate` finds the request's credential (a personal API token, the
//! admin token, a JWT bearer token or a session cookie), then loads its user from Postgres
//! on every request, so a disabled user is refused at once and the role is the database's.
//! Handlers take the [`Principal`] it leaves in the request's extensions, and the
//! [`Credential`] it came with (which the streams check again while they are open).

pub mod admin_token;
pub mod jwt;
pub mod session;
pub mod tokens;

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use domain::identity::UserId;
use store::users::UserStatus;

use crate::{ApiError, AppState};

/// The authenticated caller of a request: the application layer's [`app::Principal`], which
/// this face finds in the request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal(pub app::Principal);

impl std::ops::Deref for Principal {
    type Target = app::Principal;

    fn deref(&self) -> &app::Principal {
        &self.0
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Principal>().cloned().ok_or_else(|| {
            ApiError::internal("no principal: the route is not behind the authentication layer")
        })
    }
}

/// What a request authenticated with: enough to tell later whether it still would.
#[derive(Clone)]
pub enum Credential {
    /// A personal API token: its id, its hash, its expiry, and whether it was made through
    /// the admin token.
    Token {
        id: uuid::Uuid,
        hash: [u8; 32],
        expires_at: Option<time::OffsetDateTime>,
        admin_token_hash: Option<Vec<u8>>,
    },
    /// The admin token (fixed while the process runs).
    AdminToken,
    /// A JWT bearer token, kept to be verified again (it expires).
    Jwt(Arc<str>),
    /// A browser session: the hash of its id.
    Session(Vec<u8>),
}

// Never the secrets: a JWT is a credential as it is.
impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Token { id, .. } => write!(f, "Token({id})"),
            Credential::AdminToken => f.write_str("AdminToken"),
            Credential::Jwt(_) => f.write_str("Jwt"),
            Credential::Session(_) => f.write_str("Session"),
        }
    }
}

impl Credential {
    /// Whether the credential would still let a request in as `user` (the user's own
    /// status and role aside).
    pub async fn still_valid(&self, state: &AppState, user: UserId) -> Result<bool, ApiError> {
        Ok(match self {
            Credential::Token { hash, .. } => tokens::live(state, hash).await?.is_some(),
            Credential::AdminToken => true,
            Credential::Jwt(token) => match jwt::user_of(state, token).await {
                Ok(found) => found == Some(user),
                Err(ApiError::Unauthorized | ApiError::BadCredential(_)) => false,
                Err(e) => return Err(e),
            },
            Credential::Session(id_hash) => store::sessions::find_session(&state.app.pool, id_hash)
                .await?
                .is_some_and(|s| s.user_id == user.as_uuid()),
        })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Credential {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Credential>()
            .cloned()
            .ok_or_else(|| {
                ApiError::internal(
                    "no credential: the route is not behind the authentication layer",
                )
            })
    }
}

/// Lets a request through only with a credential of an active user; 401 otherwise.
pub async fn authenticate(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let (user, credential) = match credential(&parts)? {
        Some(token) if token.starts_with(tokens::PREFIX) => {
            let live = tokens::user_of(&state, token).await?;
            let credential = Credential::Token {
                id: live.id,
                hash: tokens::hash(token),
                expires_at: live.expires_at,
                admin_token_hash: live.admin_token_hash,
            };
            (Some(UserId::new(live.user_id)), credential)
        }
        Some(token) if admin_token::matches(&state, token) => {
            (Some(UserId::BUILTIN_ADMIN), Credential::AdminToken)
        }
        Some(token) => (
            jwt::user_of(&state, token).await?,
            Credential::Jwt(token.into()),
        ),
        None => {
            let user = session::user_of(&state, &parts).await?;
            let id_hash = crate::oidc::session::session_id(&parts.headers)
                .map(|id| crate::oidc::hash(&id))
                .unwrap_or_default();
            (user, Credential::Session(id_hash))
        }
    };
    let user = user.ok_or(ApiError::Unauthorized)?;
    let principal = principal_of(&state, user).await?;
    parts.extensions.insert(principal);
    parts.extensions.insert(credential);
    Ok(next.run(Request::from_parts(parts, body)).await)
}

/// The bearer token of the `Authorization` header; `None` without the header; 401 for a
/// header of another scheme.
fn credential(parts: &Parts) -> Result<Option<&str>, ApiError> {
    let Some(header) = parts.headers.get(axum::http::header::AUTHORIZATION) else {
        return Ok(None);
    };
    header
        .to_str()
        .ok()
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(Some)
        .ok_or(ApiError::Unauthorized)
}

/// The active user `id` as a principal; 401 for a disabled or vanished user.
pub(crate) async fn principal_of(state: &AppState, id: UserId) -> Result<Principal, ApiError> {
    let user = store::users::get(&state.app.pool, id)
        .await
        .map_err(crate::error::store_failed)?
        .filter(|u| u.status == UserStatus::Active)
        .ok_or(ApiError::Unauthorized)?;
    Ok(Principal(app::Principal {
        user: user.id,
        email: user.email,
        role: user.role,
        groups: user.groups,
    }))
}

/// Lets only admins through (after `authenticate`): 403 for other users.
pub async fn require_admin(
    principal: Principal,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    if !principal.is_admin() {
        return Err(ApiError::Forbidden("only admins may use this route".into()));
    }
    Ok(next.run(request).await)
}
