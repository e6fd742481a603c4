//! The caller's clusters (every user's for an admin), and one cluster's page: its roles,
//! nodes (each a link to its VM's page), gates and outputs. Read-only: a cluster is made,
//! scaled and destroyed through the API and the command line.

use askama::Template;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;

use super::form::caller_of;
use super::session::{sign_in_required, signed_in};
use super::{not_found, page, shown, Layout};
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
    let missing = || not_found(&principal, format!("No cluster {id}."));
    let Ok(cluster) = crate::routes::clusters::parse_id(&id) else {
        return Ok(missing());
    };
    let caller = caller_of(&state, &mut parts, &principal).await;
    match state.app.cluster(&caller, cluster).await {
        Ok(read) => Ok(page(
            StatusCode::OK,
            &ClusterPage {
                layout: Layout::of(&principal),
                cluster: line(read),
            },
        )),
        Err(app::Error::NotFound(_)) => Ok(missing()),
        Err(e) => Err(e.into()),
    }
}
