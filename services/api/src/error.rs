use std::error::Error;
use std::sync::Arc;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::catalog::CatalogError;
use serde::Serialize;
use store::CommandError;
use utoipa::ToSchema;

/// Every error of the API: client mistakes with a stable code, the rest an opaque 500
/// whose cause is logged once, by [`log_internal`].
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    #[error("missing or wrong bearer token")]
    Unauthorized,
    /// A credential that is there but refused (an expired JWT, ...); the detail says why.
    #[error("{0}")]
    BadCredential(String),
    /// The caller is known but may not do this; the detail says why (the policy, the role).
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unavailable(String),
    /// The caller holds too much at once (open streams and exports); the detail says what.
    #[error("{0}")]
    TooMany(String),
    /// A request larger than the API takes (the body, or what it would make).
    #[error("{0}")]
    TooLarge(String),
    /// The cause stays whole (with its own sources) for the log; the client sees only
    /// "internal error".
    #[error("internal error")]
    Internal(#[source] Box<dyn Error + Send + Sync>),
}

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// A stable, machine-readable code, e.g. `invalid_field`.
    pub code: String,
    /// What went wrong, for a human; names the field for validation errors.
    pub detail: String,
}

impl ApiError {
    /// An internal error from an error (kept with its sources) or a message.
    pub fn internal(cause: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        ApiError::Internal(cause.into())
    }

    pub(crate) fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Invalid { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"),
            ApiError::Unauthorized | ApiError::BadCredential(_) => {
                (StatusCode::UNAUTHORIZED, "unauthorized")
            }
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::TooMany(_) => (StatusCode::TOO_MANY_REQUESTS, "too_many_requests"),
            ApiError::TooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "too_large"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

/// The application layer's refusals and failures, answered with the same detail texts.
impl From<app::Error> for ApiError {
    fn from(e: app::Error) -> Self {
        match e {
            app::Error::Invalid { field, reason } => ApiError::Invalid { field, reason },
            app::Error::Forbidden { detail, .. } => ApiError::Forbidden(detail),
            app::Error::NotFound(detail) => ApiError::NotFound(detail),
            app::Error::Conflict(detail) => ApiError::Conflict(detail),
            app::Error::Unavailable(detail) => ApiError::Unavailable(detail),
            app::Error::TooLarge(detail) => ApiError::TooLarge(detail),
            app::Error::Internal(cause) => ApiError::Internal(cause),
        }
    }
}

/// A database that cannot be reached is a 503 with `Retry-After`; other database errors 500.
impl From<store::sqlx::Error> for ApiError {
    fn from(e: store::sqlx::Error) -> Self {
        app::Error::from(e).into()
    }
}

/// A store failure outside a command: the database's own errors as usual, the rest a 500.
pub(crate) fn store_failed(e: store::StoreError) -> ApiError {
    app::Error::from(e).into()
}

/// How long a client should wait before it retries a 503, in seconds.
const RETRY_AFTER_SECONDS: u32 = 1;

impl From<domain::provisioning::ValueError> for ApiError {
    fn from(e: domain::provisioning::ValueError) -> Self {
        app::Error::from(e).into()
    }
}

impl From<CommandError<CatalogError>> for ApiError {
    fn from(e: CommandError<CatalogError>) -> Self {
        app::Error::from(e).into()
    }
}

/// A refused catalog change: unknown ids 404, duplicates 409, invalid fields 422.
impl From<CatalogError> for ApiError {
    fn from(e: CatalogError) -> Self {
        app::Error::from(e).into()
    }
}

/// The cause of a 500, handed from the response to [`log_internal`].
#[derive(Clone)]
struct InternalCause(Arc<dyn Error + Send + Sync>);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        let body = ErrorBody {
            code: code.to_owned(),
            detail: self.to_string(),
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(RETRY_AFTER_SECONDS),
            );
        }
        if let ApiError::Internal(cause) = self {
            response
                .extensions_mut()
                .insert(InternalCause(Arc::from(cause)));
        }
        response
    }
}

/// Logs the cause of a 500, with every source, once per request. Runs inside the request's
/// span, which carries the request id, the method and the route.
pub(crate) async fn log_internal(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if let Some(InternalCause(cause)) = response.extensions().get::<InternalCause>() {
        tracing::error!(cause = %chain(cause.as_ref()), "request failed");
    }
    response
}

/// `error: its source: the source's source ...`
fn chain(error: &(dyn Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn the_application_layers_refusals_keep_their_status_code_and_detail() {
        let cases = [
            (
                app::Error::Forbidden {
                    policy: Some("gpu-group".into()),
                    detail: "denied by policy gpu-group".into(),
                },
                StatusCode::FORBIDDEN,
                "forbidden",
                "denied by policy gpu-group",
            ),
            (
                app::Error::Invalid {
                    field: "hours".into(),
                    reason: "must be between 1 and 168".into(),
                },
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_field",
                "hours: must be between 1 and 168",
            ),
            (
                app::Error::NotFound("no VM x".into()),
                StatusCode::NOT_FOUND,
                "not_found",
                "no VM x",
            ),
            (
                app::Error::Unavailable("retry".into()),
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "retry",
            ),
            (
                app::Error::TooLarge("body: too large".into()),
                StatusCode::PAYLOAD_TOO_LARGE,
                "too_large",
                "body: too large",
            ),
        ];
        for (error, status, code, detail) in cases {
            let error = ApiError::from(error);
            assert_eq!(error.status_and_code(), (status, code));
            assert_eq!(error.to_string(), detail);
        }
    }

    #[test]
    fn an_internal_error_keeps_its_sources_and_answers_opaquely() {
        let error = ApiError::internal(Outer(std::io::Error::other("disk on fire")));
        let source = error.source().expect("a source");
        assert_eq!(chain(source), "outer: disk on fire");
        let response = error.into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        assert!(response.extensions().get::<InternalCause>().is_some());
    }
}
