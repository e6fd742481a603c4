//! Who is calling. `authenticate` finds the request's credential (a personal API token, the
//! admin token, a JWT bearer token or a session cookie), then loads its user from Postgres
//! on every request, so a disabled user is refused at once and the role is the database's.
//! Handlers take the [`Principal`] it leaves in the request's extensions.

pub mod admin_token;
pub mod jwt;
pub mod session;
pub mod tokens;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use domain::identity::{Role, UserId};
use domain::Actor;
use store::users::UserStatus;

use crate::{ApiError, AppState};

/// The authenticated caller of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub user: UserId,
    pub email: String,
    pub role: Role,
    pub groups: Vec<String>,
}

impl Principal {
    pub fn is_admin(&self) -> bool {
        self.role.is_admin()
    }

    /// Whether the caller may see (and act on) what `owner` owns: their own, or anything
    /// for an admin. What the caller may not see is answered as if it did not exist.
    pub fn may_see(&self, owner: &UserId) -> bool {
        self.is_admin() || self.user == *owner
    }

    /// Who the caller's commands name in their events: `admin` for the admin token's
    /// holder (as before users existed), `user:<uuid>` for every user.
    pub fn actor(&self) -> Actor {
        match self.user {
            UserId::BUILTIN_ADMIN => Actor::Admin,
            user => Actor::User(user),
        }
    }

    /// What owns the SSH keys the caller registers: the user's id.
    pub fn owner_key(&self) -> String {
        self.user.to_string()
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

/// Lets a request through only with a credential of an active user; 401 otherwise.
pub async fn authenticate(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let (mut parts, body) = request.into_parts();
    let user = match credential(&parts)? {
        Some(token) if token.starts_with(tokens::PREFIX) => tokens::user_of(&state, token).await?,
        Some(token) if admin_token::matches(&state, token) => Some(UserId::BUILTIN_ADMIN),
        Some(token) => jwt::user_of(&state, token).await?,
        None => session::user_of(&state, &parts).await?,
    };
    let user = user.ok_or(ApiError::Unauthorized)?;
    let principal = principal_of(&state, user).await?;
    parts.extensions.insert(principal);
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
async fn principal_of(state: &AppState, id: UserId) -> Result<Principal, ApiError> {
    let user = store::users::get(&state.pool, id)
        .await
        .map_err(crate::error::store_failed)?
        .filter(|u| u.status == UserStatus::Active)
        .ok_or(ApiError::Unauthorized)?;
    Ok(Principal {
        user: user.id,
        email: user.email,
        role: user.role,
        groups: user.groups,
    })
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
