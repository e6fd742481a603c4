//! Extractors that answer a bad request with the API's own error body.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::Response;
use axum::Json;

use crate::ApiError;

/// A JSON body; a body that is not JSON is a 400, one of the wrong shape a 422 naming
/// `body`, both with the usual `{code, detail}`.
pub struct AppJson<T>(pub T);

impl<S, T> FromRequest<S> for AppJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(value) = Json::<T>::from_request(request, state).await?;
        Ok(AppJson(value))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(e: JsonRejection) -> Self {
        match e {
            JsonRejection::JsonDataError(e) => ApiError::Invalid {
                field: "body".into(),
                reason: e.body_text(),
            },
            other => ApiError::BadRequest(other.body_text()),
        }
    }
}

/// The request's id: the caller's `X-Request-ID` (1 to 128 characters), or a new UUID.
/// Events of the request's commands carry it as their correlation id, and its log lines
/// as `request_id`.
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

impl RequestId {
    fn of(request: &Request) -> Self {
        let id = request
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty() && v.len() <= 128)
            .map(str::to_owned)
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        RequestId(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Gives every request its [`RequestId`], before anything else sees it.
pub(crate) async fn assign_request_id(mut request: Request, next: Next) -> Response {
    let id = RequestId::of(&request);
    request.extensions_mut().insert(id);
    next.run(request).await
}

impl<S: Send + Sync> FromRequestParts<S> for RequestId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<RequestId>().cloned().ok_or_else(|| {
            ApiError::internal("no request id: the layer that assigns it is missing")
        })
    }
}
