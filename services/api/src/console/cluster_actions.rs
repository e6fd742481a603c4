//! The cluster page's forms: a role's node count, and destroy. Each asks its use case and
//! goes back to the cluster's page (`303`) with a notice of what was done; a refusal is
//! shown on the cluster's page itself, with the status the API would answer.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::request::Parts;
use axum::response::Response;

use super::clusters::{cluster_answer, missing, Answer};
use super::form::{done_notice, poster, see_other, Fields, Refusal};
use crate::{ApiError, AppState};

/// What a cluster form did, as `?done=` names it: a fixed list, so a link cannot make the
/// page say anything else.
const NOTICES: [(&str, &str); 3] = [
    (
        "created",
        "The cluster was requested; its nodes are made in the background, stage by stage.",
    ),
    (
        "scaled",
        "The role's new count was asked; nodes are added or removed in the background.",
    ),
    (
        "destroy",
        "The cluster is to be destroyed, with every node.",
    ),
];

/// The notice of a page's query (`done=<what>`), if it names one.
pub(crate) fn notice(query: &str) -> Option<&'static str> {
    done_notice(query, &NOTICES)
}

enum Action {
    Scale,
    Destroy,
}

/// `POST /console/clusters/{id}/scale` (fields `role` and `count`).
pub(crate) async fn scale_cluster(
    state: State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::Scale).await
}

/// `POST /console/clusters/{id}/destroy`.
pub(crate) async fn destroy_cluster(
    state: State<AppState>,
    Path(id): Path<String>,
    parts: Parts,
    body: Bytes,
) -> Result<Response, ApiError> {
    act(state, id, parts, body, Action::Destroy).await
}

#[tracing::instrument(skip_all, fields(cluster = %id))]
async fn act(
    State(state): State<AppState>,
    id: String,
    mut parts: Parts,
    body: Bytes,
    action: Action,
) -> Result<Response, ApiError> {
    let (principal, caller) = match poster(&state, &mut parts).await? {
        Ok(gate) => gate,
        Err(answer) => return Ok(answer),
    };
    let Ok(cluster) = crate::routes::clusters::parse_id(&id) else {
        return Ok(missing(&principal, &id));
    };
    let fields = Fields::parse(&body);
    let app = &state.app;
    let (done, result) = match action {
        Action::Scale => match count(fields.get("count")) {
            Ok(count) => (
                "scaled",
                app.scale_cluster(&caller, cluster, fields.get("role"), count)
                    .await,
            ),
            Err(e) => ("scaled", Err(e)),
        },
        Action::Destroy => ("destroy", app.destroy_cluster(&caller, cluster).await),
    };
    match result {
        Ok(_) => Ok(see_other(&format!(
            "/console/clusters/{cluster}?done={done}"
        ))),
        Err(app::Error::NotFound(_)) => Ok(missing(&principal, &id)),
        Err(e) => {
            let refusal = Refusal::of(e)?;
            let answer = Answer {
                status: refusal.status,
                notice: None,
                refusal: Some(refusal),
            };
            cluster_answer(&state, &principal, &caller, cluster, answer).await
        }
    }
}

/// A role's node count as typed: a whole number, its range checked by the use case.
fn count(text: &str) -> Result<u32, app::Error> {
    text.parse::<u32>()
        .map_err(|_| app::Error::invalid("count", "give a whole number of nodes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_a_whole_number() {
        assert_eq!(count("3").unwrap(), 3);
        for bad in ["-1", "x", "", "1.5"] {
            assert!(count(bad).is_err(), "{bad}");
        }
    }
}
