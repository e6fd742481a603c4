//! Users, for admins: every user with role, status and last sign-in, and a form per user
//! to change their role or status (the application layer's `change_user`, with its rules:
//! no one changes themselves, only a super admin touches super admin).

use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use domain::identity::{Role, UserId};
use store::users::UserStatus;

use super::super::form::{see_other, Fields, Refusal};
use super::super::{page, shown, Layout};
use super::{admin_poster, admin_reader};
use crate::auth::Principal;
use crate::{ApiError, AppState};

struct UserLine {
    id: String,
    email: String,
    role: &'static str,
    status: &'static str,
    created: String,
    last_sign_in: String,
    /// The caller themselves: no form.
    me: bool,
}

#[derive(Template)]
#[template(path = "console/admin/users.html")]
struct UsersPage {
    layout: Layout,
    users: Vec<UserLine>,
    roles: [&'static str; 3],
    statuses: [&'static str; 2],
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
}

/// `GET /console/admin/users`.
#[tracing::instrument(skip_all)]
pub(crate) async fn list_users(
    State(state): State<AppState>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let principal = match admin_reader(&state, &parts).await? {
        Ok(principal) => principal,
        Err(answer) => return Ok(answer),
    };
    let notice = (parts.uri.query() == Some("done=changed")).then_some("The user was changed.");
    let caller = super::super::form::caller_of(&state, &mut parts, &principal).await;
    answer(&state, &principal, &caller, StatusCode::OK, None, notice).await
}

/// `POST /console/admin/users/{id}` (fields `role`, `status`).
#[tracing::instrument(skip_all)]
pub(crate) async fn change_user(
    State(state): State<AppState>,
    Path(id): Path<String>,
    mut parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, caller) = match admin_poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let fields = Fields::parse(&body);
    let changed = match changes(&id, &fields) {
        Ok((user, changes)) => state
            .app
            .change_user(&caller, user, changes)
            .await
            .map(|_| ()),
        Err(e) => Err(e),
    };
    match changed {
        Ok(()) => Ok(see_other("/console/admin/users?done=changed")),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let status = refusal.status;
            answer(&state, &principal, &caller, status, Some(refusal), None).await
        }
    }
}

/// The user and what to change of them; an unchanged field is left out.
fn changes(id: &str, fields: &Fields) -> Result<(UserId, app::users::UserChanges), app::Error> {
    let user = uuid::Uuid::parse_str(id)
        .map(UserId::new)
        .map_err(|_| app::Error::NotFound(format!("no user {id:?}")))?;
    let invalid = |field: &str, value: &str| app::Error::Invalid {
        field: field.into(),
        reason: format!("{value:?} is not one of the choices"),
    };
    let role = match fields.get("role") {
        "" => None,
        r => Some(r.parse::<Role>().map_err(|_| invalid("role", r))?),
    };
    let status = match fields.get("status") {
        "" => None,
        s => Some(s.parse::<UserStatus>().map_err(|_| invalid("status", s))?),
    };
    Ok((user, app::users::UserChanges { role, status }))
}

async fn answer(
    state: &AppState,
    principal: &Principal,
    caller: &app::Caller,
    status: StatusCode,
    refusal: Option<Refusal>,
    notice: Option<&'static str>,
) -> Result<Response, ApiError> {
    let users = state
        .app
        .users(caller)
        .await?
        .into_iter()
        .map(|r| UserLine {
            id: r.user.id.to_string(),
            email: r.user.email,
            role: r.user.role.as_str(),
            status: r.user.status.as_str(),
            created: shown(r.created_at),
            last_sign_in: r.last_sign_in_at.map_or_else(|| "never".into(), shown),
            me: r.user.id == principal.user,
        })
        .collect();
    Ok(page(
        status,
        &UsersPage {
            layout: Layout::of(principal),
            users,
            roles: ["user", "admin", "super_admin"],
            statuses: ["active", "disabled"],
            refusal,
            notice,
        },
    ))
}
