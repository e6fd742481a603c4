//! `GET /api/v1/clusters/{id}/events`: the cluster's events as one JSON page, paged by
//! sequence as a VM's history is.

use axum::extract::{Path, Query, State};
use axum::Json;

use super::parse_id;
use crate::routes::events::EventOut;
use crate::routes::vms::sequence_after;
use crate::routes::AppCaller;
use crate::{ApiError, AppState};

/// The cluster's events in order (`ClusterRequested`, `NodeRequested`, `GatePassed`,
/// `ClusterReady`, ...). Pages by the cluster's sequence (`after`); the same events its
/// stream sends, ending with the last recorded. Another user's cluster is `404`.
#[utoipa::path(get, path = "/api/v1/clusters/{id}/events", tag = "clusters",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "Cluster id"),
        ("after" = Option<u64>, Query, maximum = 9223372036854775807_u64, description = "Only events with a higher sequence"),
        ("limit" = Option<i64>, Query, minimum = 1, maximum = 10000, description = "At most this many (default and maximum 10000)"),
    ),
    responses((status = 200, body = [EventOut]), (status = 404, body = crate::error::ErrorBody),
        (status = 422, description = "A parameter is invalid (`detail` names it)", body = crate::error::ErrorBody)))]
#[tracing::instrument(skip_all)]
pub async fn list_cluster_events(
    State(state): State<AppState>,
    AppCaller(caller): AppCaller,
    Path(id): Path<String>,
    Query(params): Query<Vec<(String, String)>>,
) -> Result<Json<Vec<EventOut>>, ApiError> {
    let id = parse_id(&id)?;
    let (after, limit) = page(&params)?;
    let events = state.app.cluster_events(&caller, id, after, limit).await?;
    Ok(Json(events.into_iter().map(EventOut::from).collect()))
}

/// `after` and `limit`, as a VM's history reads them; any other parameter is a 422.
fn page(params: &[(String, String)]) -> Result<(u64, i64), ApiError> {
    let after = sequence_after(params)?;
    let mut limit = crate::routes::events::limit(None);
    for (name, value) in params {
        match name.as_str() {
            "after" => {}
            "limit" => {
                limit = value
                    .parse::<i64>()
                    .ok()
                    .filter(|n| (1..=10_000).contains(n))
                    .ok_or_else(|| invalid("limit", "must be a number from 1 to 10000"))?;
            }
            // Read by the layer that waits for the read models.
            "min_position" => {}
            other => {
                return Err(invalid(
                    other,
                    "is not a parameter of this history (after, limit)",
                ))
            }
        }
    }
    Ok((after, limit))
}

fn invalid(field: &str, reason: &str) -> ApiError {
    ApiError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pairs: &[(&str, &str)]) -> Result<(u64, i64), String> {
        let params: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        page(&params).map_err(|e| e.to_string())
    }

    #[test]
    fn a_page_is_an_after_and_a_limit_within_bounds() {
        assert_eq!(read(&[]), Ok((0, 10_000)));
        assert_eq!(read(&[("after", "7"), ("limit", "2")]), Ok((7, 2)));
        for (pair, field) in [
            (("limit", "0"), "limit"),
            (("limit", "10001"), "limit"),
            (("after", "-1"), "after"),
            (("actor", "x"), "actor"),
        ] {
            let err = read(&[pair]).unwrap_err();
            assert!(err.starts_with(&format!("{field}: ")), "{err}");
        }
    }
}
