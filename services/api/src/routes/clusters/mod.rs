//! Clusters: several VMs made as one from a template (`docs/clusters.md`). `POST
//! /api/v1/clusters` records the request; the cluster coordinator makes the nodes, stage
//! by stage. Reads join the cluster with its nodes' VMs.

mod history;
mod stream;
mod wire;

pub use history::*;
pub use stream::*;
pub use wire::*;

use std::collections::BTreeMap;

use app::clusters::{ClusterRequest, RoleChoice};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use domain::cluster::ClusterId;
use domain::provisioning::{DurationHours, ProviderId, TemplateId, VmName};
use serde::Deserialize;
use utoipa::IntoParams;
use uuid::Uuid;

use crate::routes::AppCaller;
use crate::{ApiError, AppJson, AppState};

pub fn router(state: AppState) -> Router<AppState> {
    Router::new()
        .route("/clusters", post(create_cluster).get(list_clusters))
        .route("/clusters/{id}", get(get_cluster).delete(destroy_cluster))
        .route("/clusters/{id}/scale", post(scale_cluster))
        .route("/clusters/{id}/stream", get(stream_cluster))
        .route("/clusters/{id}/events", get(list_cluster_events))
        .route_layer(axum::middleware::from_fn_with_state(
            state,
            crate::answers::wait_for_min_position,
        ))
}

/// Requests a cluster. Its template is resolved (each role's count and provider
/// template), the key and networks checked as for a VM, then the policies on every node's
/// template and the caller's limits against all its nodes together: a cluster that cannot
/// fit is `403` naming the policy, and nothing is recorded. Its nodes are made in the
/// background, stage by stage; follow it with `GET /api/v1/clusters/{id}` or its stream.
#[utoipa::path(post, path = "/api/v1/clusters", tag = "clusters",
    security(("bearer" = [])),
    request_body = CreateClusterIn,
    responses(
        (status = 202, description = "Requested", body = ClusterOut),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 403, description = "Denied by a policy (a template, or a limit for all the nodes together): `detail` names it; nothing was recorded", body = crate::error::ErrorBody),
        (status = 409, description = "A cluster with this id exists, requested differently", body = crate::error::ErrorBody),
        (status = 422, description = "A field is invalid (`detail` names it)", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn create_cluster(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    AppJson(input): AppJson<CreateClusterIn>,
) -> Result<(StatusCode, Json<ClusterOut>), ApiError> {
    let read = state.app.request_cluster(&caller, parse(input)?).await?;
    Ok((StatusCode::ACCEPTED, Json(read.into())))
}

fn parse(input: CreateClusterIn) -> Result<ClusterRequest, ApiError> {
    let mut roles = BTreeMap::new();
    for (name, role) in input.roles {
        let template = role
            .template
            .as_deref()
            .map(TemplateId::parse)
            .transpose()?;
        roles.insert(
            name,
            RoleChoice {
                count: role.count,
                template,
            },
        );
    }
    Ok(ClusterRequest {
        id: input.id.map(ClusterId::from),
        name: VmName::parse(&input.name)?,
        template: input.template,
        provider: ProviderId::parse(&input.provider)?,
        roles,
        ssh_key: crate::routes::vms::ssh_key_choice(input.ssh_public_key, input.ssh_key_id)?,
        allow_ssh_from: input.allow_ssh_from,
        duration: DurationHours::parse(input.duration_hours)?,
    })
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListClusters {
    /// For an admin: every user's clusters, not only their own.
    #[serde(default)]
    pub all: bool,
}

/// The caller's clusters, newest first (at most 500); every user's for an admin with
/// `?all=true`.
#[utoipa::path(get, path = "/api/v1/clusters", tag = "clusters",
    security(("bearer" = [])),
    params(ListClusters),
    responses((status = 200, body = [ClusterOut]), (status = 401, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
pub async fn list_clusters(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Query(query): Query<ListClusters>,
) -> Result<Json<Vec<ClusterOut>>, ApiError> {
    let found = state.app.clusters(&caller, query.all).await?;
    Ok(Json(found.into_iter().map(ClusterOut::from).collect()))
}

/// One cluster: roles, nodes with their VMs' status and addresses, gates, outputs.
/// Another user's cluster is `404`, as one that does not exist.
#[utoipa::path(get, path = "/api/v1/clusters/{id}", tag = "clusters",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Cluster id")),
    responses((status = 200, body = ClusterOut), (status = 404, body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
pub async fn get_cluster(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
) -> Result<Json<ClusterOut>, ApiError> {
    let read = state.app.cluster(&caller, parse_id(&id)?).await?;
    Ok(Json(read.into()))
}

/// Destroys every node of the cluster, whatever it is doing (a rollback included); it
/// ends `destroyed` once every node's VM is.
#[utoipa::path(delete, path = "/api/v1/clusters/{id}", tag = "clusters",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Cluster id")),
    responses(
        (status = 202, body = ClusterOut),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "It is destroyed already", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn destroy_cluster(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<ClusterOut>), ApiError> {
    let read = state.app.destroy_cluster(&caller, parse_id(&id)?).await?;
    Ok((StatusCode::ACCEPTED, Json(read.into())))
}

/// Gives a role of a `ready` cluster a new node count within its range: nodes are added
/// (the caller's limits checked for all of them first), or the last ones destroyed.
#[utoipa::path(post, path = "/api/v1/clusters/{id}/scale", tag = "clusters",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Cluster id")),
    request_body = ScaleIn,
    responses(
        (status = 202, body = ClusterOut),
        (status = 403, description = "The added nodes do not fit the caller's limits", body = crate::error::ErrorBody),
        (status = 404, body = crate::error::ErrorBody),
        (status = 409, description = "The cluster is not ready", body = crate::error::ErrorBody),
        (status = 422, description = "No such role, or a count outside its range", body = crate::error::ErrorBody),
    ))]
#[tracing::instrument(skip_all)]
pub async fn scale_cluster(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
    AppJson(input): AppJson<ScaleIn>,
) -> Result<(StatusCode, Json<ClusterOut>), ApiError> {
    let id = parse_id(&id)?;
    let read = state
        .app
        .scale_cluster(&caller, id, &input.role, input.count)
        .await?;
    Ok((StatusCode::ACCEPTED, Json(read.into())))
}

pub(crate) fn parse_id(id: &str) -> Result<ClusterId, ApiError> {
    Uuid::parse_str(id)
        .map(ClusterId::from)
        .map_err(|_| ApiError::NotFound(format!("no cluster {id}")))
}
