//! Extractors that answer a bad request with the API's own error body.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::CONTENT_TYPE;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::ApiError;

/// The largest request body the API reads: larger ones are answered 413 `too_large`.
pub const BODY_LIMIT: usize = 256 * 1024;

/// A JSON object body. A body that is not JSON is a 400; one that is not an object, of the
/// wrong shape, or with a NUL character in a string (which Postgres cannot store as text), a
/// 422 naming the field by its path (`allow_ssh_from[2]`; `body` for the whole); one over
/// [`BODY_LIMIT`] a 413. A whole number written as a float (`175.0`) is that integer, as
/// JSON Schema (and so the OpenAPI document) counts it.
pub struct AppJson<T>(pub T);

impl<S, T> FromRequest<S> for AppJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(request.headers()) {
            return Err(ApiError::BadRequest(
                "expected a request with `Content-Type: application/json`".into(),
            ));
        }
        let bytes = Bytes::from_request(request, state)
            .await
            .map_err(|e| match e.status() {
                StatusCode::PAYLOAD_TOO_LARGE => too_large(),
                _ => ApiError::BadRequest(e.body_text()),
            })?;
        let mut value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| ApiError::BadRequest(format!("the body is not JSON: {e}")))?;
        // Every body the API takes is an object; serde would read an array as a struct.
        if !value.is_object() {
            return Err(ApiError::Invalid {
                field: "body".into(),
                reason: "must be a JSON object".into(),
            });
        }
        if let Some(field) = nul_in(&value, "") {
            return Err(ApiError::Invalid {
                field,
                reason: "must not contain a NUL character".into(),
            });
        }
        whole_floats_as_integers(&mut value);
        serde_path_to_error::deserialize(value)
            .map(AppJson)
            .map_err(|e| {
                let field = match e.path().to_string().as_str() {
                    "." => "body".to_owned(),
                    path => path.to_owned(),
                };
                ApiError::Invalid {
                    field,
                    reason: e.into_inner().to_string(),
                }
            })
    }
}

pub(crate) fn too_large() -> ApiError {
    ApiError::TooLarge(format!(
        "body: the request body is larger than the {} KiB the API takes",
        BODY_LIMIT / 1024
    ))
}

/// `application/json`, or another JSON type (`application/problem+json`).
fn json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Rewrites every finite float of `value` with no fraction that an `i64` or `u64` holds
/// (`175.0`, `-3.0`) as that integer, so that integer fields take it.
fn whole_floats_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if !f.is_finite() || f.fract() != 0.0 {
                return;
            }
            // `as` saturates, so a value out of range does not round-trip and is kept.
            if f < 0.0 && (f as i64) as f64 == f {
                *value = Value::from(f as i64);
            } else if f >= 0.0 && (f as u64) as f64 == f {
                *value = Value::from(f as u64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_floats_as_integers),
        Value::Object(fields) => fields.values_mut().for_each(whole_floats_as_integers),
        _ => {}
    }
}

/// The path of the first string (or key) of `value` holding a NUL character.
fn nul_in(value: &Value, path: &str) -> Option<String> {
    let named = |path: &str| match path {
        "" => "body".to_owned(),
        path => path.to_owned(),
    };
    match value {
        Value::String(s) => s.contains('\0').then(|| named(path)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_in(item, &format!("{path}[{i}]"))),
        Value::Object(fields) => fields.iter().find_map(|(key, item)| {
            let inner = match path {
                "" => key.clone(),
                path => format!("{path}.{key}"),
            };
            match key.contains('\0') {
                true => Some(named(path)),
                false => nul_in(item, &inner),
            }
        }),
        _ => None,
    }
}

/// Refuses a text field holding a NUL character (for bodies not read by [`AppJson`]).
pub(crate) fn no_nul(field: &str, value: Option<&str>) -> Result<(), ApiError> {
    match value.is_some_and(|v| v.contains('\0')) {
        true => Err(ApiError::Invalid {
            field: field.into(),
            reason: "must not contain a NUL character".into(),
        }),
        false => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn normalised(mut value: Value) -> Value {
        whole_floats_as_integers(&mut value);
        value
    }

    #[test]
    fn whole_floats_become_integers_and_others_stay_floats() {
        let body = json!({
            "sort_order": 175.0, "negative": -3.0, "zero": -0.0,
            "nested": [{"hours": 24.0}], "fraction": 1.5, "big": 1e300,
            "integer": 7, "text": "175.0",
        });
        let got = normalised(body);
        assert!(got["sort_order"].is_u64(), "{got}");
        assert_eq!(got["sort_order"], 175);
        assert_eq!(got["negative"], -3);
        assert!(got["negative"].is_i64());
        assert!(got["zero"].is_u64(), "{got}");
        assert_eq!(got["nested"][0]["hours"], 24);
        assert!(got["fraction"].is_f64());
        assert!(got["big"].is_f64(), "out of range: kept");
        assert_eq!(got["integer"], 7);
        assert_eq!(got["text"], "175.0");
    }

    #[test]
    fn a_whole_float_deserializes_into_an_integer_field() {
        #[derive(serde::Deserialize)]
        struct Order {
            sort_order: u32,
        }
        let order: Order = serde_json::from_value(normalised(json!({"sort_order": 175.0})))
            .expect("175.0 is the integer 175");
        assert_eq!(order.sort_order, 175);
        assert!(serde_json::from_value::<Order>(normalised(json!({"sort_order": 1.5}))).is_err());
    }
}
