//! `GET /api/v1/me`: the caller as the platform sees them: role, groups, the limits the
//! policies give them and what they hold now.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use domain::quota::{Limit, Usage};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::auth::Principal;
use crate::{ApiError, AppState};

pub fn router() -> Router<AppState> {
    Router::new().route("/me", get(get_me))
}

/// The caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct MeOut {
    pub id: Uuid,
    pub email: String,
    /// `user`, `admin` or `super_admin`.
    pub role: String,
    /// The groups of the last sign-in, which policies may name.
    pub groups: Vec<String>,
    pub limits: LimitsOut,
    pub usage: UsageOut,
}

/// What the caller may hold at once; each limit names the policy that gives it (`none`
/// when no limits policy applies, and the limit is 0).
#[derive(Debug, Serialize, ToSchema)]
pub struct LimitsOut {
    pub vms: LimitOut,
    pub vcpus: LimitOut,
    pub ram_mib: LimitOut,
    pub gpus: LimitOut,
    /// The longest duration a VM may be requested for, in hours.
    pub max_hours: LimitOut,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LimitOut {
    pub value: u64,
    /// The `@id` of the policy.
    pub policy: String,
}

/// What the caller's VMs that are not destroyed take.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageOut {
    pub vms: u64,
    pub vcpus: u64,
    pub ram_mib: u64,
    pub gpus: u64,
}

impl From<Limit> for LimitOut {
    fn from(limit: Limit) -> Self {
        LimitOut {
            value: limit.value,
            policy: limit.policy,
        }
    }
}

impl From<Usage> for UsageOut {
    fn from(u: Usage) -> Self {
        UsageOut {
            vms: u.vms,
            vcpus: u.vcpus,
            ram_mib: u.ram_mib,
            gpus: u.gpus,
        }
    }
}

/// Who the caller is, their limits and usage.
#[utoipa::path(get, path = "/api/v1/me", tag = "users",
    security(("bearer" = [])),
    responses((status = 200, body = MeOut), (status = 401, body = crate::error::ErrorBody)))]
pub async fn get_me(
    State(state): State<AppState>,
    Principal(principal): Principal,
) -> Result<Json<MeOut>, ApiError> {
    let (limits, usage) = state.app.limits_and_usage(&principal).await?;
    Ok(Json(MeOut {
        id: principal.user.as_uuid(),
        email: principal.email,
        role: principal.role.as_str().to_owned(),
        groups: principal.groups,
        limits: LimitsOut {
            vms: limits.vms.into(),
            vcpus: limits.vcpus.into(),
            ram_mib: limits.ram_mib.into(),
            gpus: limits.gpus.into(),
            max_hours: limits.max_hours.into(),
        },
        usage: usage.into(),
    }))
}
