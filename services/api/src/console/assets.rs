//! The console's style sheet, embedded in the binary and served under a name holding a
//! hash of its content: a browser may keep it for a year, and a changed sheet is a new URL.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

const CSS: &str = include_str!("assets/console.css");

static CSS_PATH: LazyLock<String> =
    LazyLock::new(|| format!("/console/assets/console.{}.css", content_hash(CSS)));

/// The style sheet's URL path, as the pages link it.
pub(crate) fn css_path() -> &'static str {
    &CSS_PATH
}

/// The first 8 bytes of the content's SHA-256, in hex: enough to tell versions apart.
fn content_hash(content: &str) -> String {
    Sha256::digest(content.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `GET /console/assets/{file}`: the style sheet under its current name; 404 for any other
/// (an old hash included, so a stale page never gets a sheet it was not made with).
pub(crate) async fn get_asset(Path(file): Path<String>) -> Response {
    if format!("/console/assets/{file}") != *CSS_PATH {
        return StatusCode::NOT_FOUND.into_response();
    }
    (
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/css; charset=utf-8"),
            ),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
        ],
        CSS,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sheet_is_named_by_a_hash_of_its_content() {
        assert_eq!(content_hash(CSS).len(), 16);
        assert_ne!(content_hash(CSS), content_hash("body {}"));
        assert!(css_path().starts_with("/console/assets/console."));
        assert!(css_path().ends_with(&format!("{}.css", content_hash(CSS))));
    }
}
