//! Hostile input, refused for every route at once: a URL whose path or query holds a NUL
//! character or bytes that are not UTF-8 (which Postgres cannot store as text, and which
//! the extractors would read lossily), and the plain-text answers of axum's own extractors
//! (`Query`, `Path`, `RawPathParams`, a body too large), given the API's `{code, detail}`.

use axum::body::Body;
use axum::extract::Request;
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;

use crate::error::ErrorBody;
use crate::ApiError;

/// Refuses a request whose path has a segment, or whose query a parameter, that decodes to
/// text with a NUL or to bytes that are not UTF-8: a 400 for the path, a 422 naming the
/// parameter for the query.
pub(crate) async fn refuse_bad_text(request: Request, next: Next) -> Response {
    match check_uri(request.uri()) {
        Ok(()) => next.run(request).await,
        Err(e) => e.into_response(),
    }
}

fn check_uri(uri: &axum::http::Uri) -> Result<(), ApiError> {
    for segment in uri.path().split('/') {
        if text_of(segment.as_bytes(), false).is_none() {
            return Err(ApiError::BadRequest(
                "path: a segment decodes to bytes that are not UTF-8 or to a NUL character".into(),
            ));
        }
    }
    for pair in uri.query().unwrap_or_default().split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let Some(name) = text_of(name.as_bytes(), true) else {
            return Err(ApiError::Invalid {
                field: "query".into(),
                reason: "a parameter's name is not UTF-8 text without NUL characters".into(),
            });
        };
        if text_of(value.as_bytes(), true).is_none() {
            return Err(ApiError::Invalid {
                field: name,
                reason: "must be UTF-8 text without NUL characters".into(),
            });
        }
    }
    Ok(())
}

/// The text `raw` percent-decodes to (with `+` as a space in a query), if it is UTF-8
/// without NUL. A `%` not followed by two hex digits stays as it is, as the extractors read it.
fn text_of(raw: &[u8], query: bool) -> Option<String> {
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let byte = match raw[i] {
            b'%' => match raw.get(i + 1..i + 3).and_then(|h| hex_pair(h[0], h[1])) {
                Some(decoded) => {
                    i += 2;
                    decoded
                }
                None => b'%',
            },
            b'+' if query => b' ',
            other => other,
        };
        bytes.push(byte);
        i += 1;
    }
    let text = String::from_utf8(bytes).ok()?;
    (!text.contains('\0')).then_some(text)
}

fn hex_pair(high: u8, low: u8) -> Option<u8> {
    let digit = |c: u8| (c as char).to_digit(16);
    Some((digit(high)? * 16 + digit(low)?) as u8)
}

/// Largest plain-text error body of axum's rejections read back; theirs are short.
const REJECTION_TEXT: usize = 4096;

/// Marks a refusal whose body is meant as it is (the console's HTML pages: a sign-in
/// page, a 404 page), which [`json_errors`] leaves alone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OwnBody;

/// Gives an error answered without the API's JSON body (axum's rejections of `Query`,
/// `Path` and `RawPathParams`, its 405 and 413) that body: the same status, a code that
/// says what the status means, and axum's text (which names the parameter) as detail.
pub(crate) async fn json_errors(request: Request, next: Next) -> Response {
    let response = next.run(request).await;
    if response.extensions().get::<OwnBody>().is_some() {
        return response;
    }
    let status = response.status();
    let json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, REJECTION_TEXT).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let detail = match text.is_empty() {
        true => status
            .canonical_reason()
            .unwrap_or("refused")
            .to_lowercase(),
        false => text,
    };
    let body = ErrorBody {
        code: code_of(status).to_owned(),
        detail,
    };
    parts.headers.remove(CONTENT_TYPE);
    parts.headers.remove(axum::http::header::CONTENT_LENGTH);
    let mut answer = Json(body).into_response();
    *answer.status_mut() = status;
    for (name, value) in parts.headers.iter() {
        answer.headers_mut().insert(name, value.clone());
    }
    answer.extensions_mut().extend(parts.extensions);
    answer.map(Body::new)
}

/// The code of an error answered by the framework, from its status.
fn code_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::UNAUTHORIZED => "unauthorized",
        StatusCode::FORBIDDEN => "forbidden",
        StatusCode::NOT_FOUND => "not_found",
        StatusCode::CONFLICT => "conflict",
        StatusCode::METHOD_NOT_ALLOWED => "method_not_allowed",
        StatusCode::PAYLOAD_TOO_LARGE => "too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        StatusCode::UNPROCESSABLE_ENTITY => "invalid_field",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        s if s.is_server_error() => "internal",
        _ => "bad_request",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checked(uri: &str) -> Result<(), String> {
        check_uri(&uri.parse().unwrap()).map_err(|e| e.to_string())
    }

    #[test]
    fn nul_and_bytes_that_are_not_utf8_are_refused_naming_the_parameter() {
        assert_eq!(
            checked("/api/v1/vms?provider=a%00b").unwrap_err(),
            "provider: must be UTF-8 text without NUL characters"
        );
        assert!(checked("/api/v1/vms?actor=%FF")
            .unwrap_err()
            .starts_with("actor: "));
        assert!(checked("/api/v1/vms/%FF/events")
            .unwrap_err()
            .starts_with("path: "));
        assert!(checked("/api/v1/vms?x%00=1")
            .unwrap_err()
            .starts_with("query: "));
    }

    #[test]
    fn ordinary_text_passes() {
        for uri in [
            "/api/v1/vms?provider=local&status=failed,destroyed",
            "/api/v1/vms?name=%C3%A6%C3%B8&x=a+b&flag",
            "/api/v1/vms/%E2%9C%93",
            "/api/v1/vms?odd=100%",
        ] {
            assert_eq!(checked(uri), Ok(()), "{uri}");
        }
    }
}
