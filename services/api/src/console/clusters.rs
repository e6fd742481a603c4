//! The caller's clusters (every user's for an admin), and one cluster's page: its roles
//! (with a count form, once it is `ready`, for each role whose count may change), nodes (each a link to its VM's
//! page), gates, outputs and the destroy form.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;

use domain::cluster::ClusterId;

use super::form::{caller_of, Refusal};
use super::session::{sign_in_required, signed_in};
use super::{not_found, page, shown, Layout};
use crate::auth::Principal;
use crate::routes::clusters::ClusterOut;
use crate::{ApiError, AppState};

/// A cluster as the pages show it.
struct ClusterLine {
    out: ClusterOut,
    requested: String,
}

#[derive(Template)]
#[template(path = "console/clusters.html")]
struct ClustersPage {
    layout: Layout,
    clusters: Vec<ClusterLine>,
}

#[derive(Template)]
#[template(path = "console/cluster.html")]
struct ClusterPage {
    layout: Layout,
    cluster: ClusterLine,
    /// What a form just did (`?done=`).
    notice: Option<&'static str>,
    refusal: Option<Refusal>,
}

impl ClusterPage {
    /// Whether it may still be destroyed (a `ready` one may also be scaled).
    fn alive(&self) -> bool {
        !matches!(self.cluster.out.status.as_str(), "destroying" | "destroyed")
    }
}

fn line(read: app::clusters::ClusterRead) -> ClusterLine {
    let out = ClusterOut::from(read);
    ClusterLine {
        requested: shown(out.requested_at),
        out,
    }
}

/// `GET /console/clusters`.
#[tracing::instrument(skip_all)]
pub(crate) async fn list_clusters(
    State(state): State<AppState>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let caller = caller_of(&state, &mut parts, &principal).await;
    let found = state.app.clusters(&caller, true).await?;
    Ok(page(
        StatusCode::OK,
        &ClustersPage {
            layout: Layout::of(&principal),
            clusters: found.into_iter().map(line).collect(),
        },
    ))
}

/// `GET /console/clusters/{id}`: another user's cluster is the 404 page.
#[tracing::instrument(skip_all)]
pub(crate) async fn show_cluster(
    State(state): State<AppState>,
    Path(id): Path<String>,
    mut parts: Parts,
) -> Result<Response, ApiError> {
    let Some(principal) = signed_in(&state, &parts).await? else {
        return Ok(sign_in_required(&state, &parts));
    };
    let Ok(cluster) = crate::routes::clusters::parse_id(&id) else {
        return Ok(missing(&principal, &id));
    };
    let caller = caller_of(&state, &mut parts, &principal).await;
    let notice = parts.uri.query().and_then(super::cluster_actions::notice);
    let answer = Answer {
        status: StatusCode::OK,
        notice,
        refusal: None,
    };
    cluster_answer(&state, &principal, &caller, cluster, answer).await
}

/// How a cluster's page is answered: after a form, with its notice or its refusal.
pub(super) struct Answer {
    pub status: StatusCode,
    pub notice: Option<&'static str>,
    pub refusal: Option<Refusal>,
}

/// The cluster's page as `caller` may see it; the 404 page when they may not.
pub(super) async fn cluster_answer(
    state: &AppState,
    principal: &Principal,
    caller: &app::Caller,
    cluster: ClusterId,
    answer: Answer,
) -> Result<Response, ApiError> {
    match state.app.cluster(caller, cluster).await {
        Ok(read) => Ok(page(
            answer.status,
            &ClusterPage {
                layout: Layout::of(principal),
                cluster: line(read),
                notice: answer.notice,
                refusal: answer.refusal,
            },
        )),
        Err(app::Error::NotFound(_)) => Ok(missing(principal, &cluster.to_string())),
        Err(e) => Err(e.into()),
    }
}

pub(super) fn missing(principal: &Principal, id: &str) -> Response {
    not_found(principal, format!("No cluster {id}."))
}
