use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

/// Every error of the API: client mistakes with a stable code, the rest an opaque 500
/// whose cause is logged here, once.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
    #[error("missing or wrong bearer token")]
    Unauthorized,
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Unavailable(String),
    #[error("internal error")]
    Internal(String),
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
    pub fn internal(e: impl std::fmt::Display) -> Self {
        ApiError::Internal(e.to_string())
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Invalid { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl From<store::sqlx::Error> for ApiError {
    fn from(e: store::sqlx::Error) -> Self {
        ApiError::internal(e)
    }
}

impl From<domain::provisioning::ValueError> for ApiError {
    fn from(e: domain::provisioning::ValueError) -> Self {
        ApiError::Invalid {
            field: e.field.to_owned(),
            reason: e.reason,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        if let ApiError::Internal(cause) = &self {
            tracing::error!(%cause, "request failed");
        }
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
        response
    }
}
