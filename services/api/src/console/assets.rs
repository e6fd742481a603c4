//! The console's style sheet and script, embedded in the binary and served under names
//! holding a hash of their content: a browser may keep them for a year, and a changed file
//! is a new URL.

use std::sync::LazyLock;

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

static CSS_PATH: LazyLock<String> =
    LazyLock::new(|| format!("/console/assets/console.{}.css", content_hash(CSS)));
static JS_PATH: LazyLock<String> =
    LazyLock::new(|| format!("/console/assets/console.{}.js", content_hash(JS)));

/// The style sheet's URL path, as the pages link it.
pub(crate) fn css_path() -> &'static str {
    &CSS_PATH
}

/// The script's URL path, as the pages load it.
pub(crate) fn js_path() -> &'static str {
    &JS_PATH
}

/// The first 8 bytes of the content's SHA-256, in hex: enough to tell versions apart.
fn content_hash(content: &str) -> String {
    Sha256::digest(content.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `GET /console/assets/{file}`: the style sheet or the script under its current name; 404
/// for any other (an old hash included, so a stale page never gets a file it was not made
/// with).
pub(crate) async fn get_asset(Path(file): Path<String>) -> Response {
    let asked = format!("/console/assets/{file}");
    let (kind, body) = if asked == *CSS_PATH {
        ("text/css; charset=utf-8", CSS)
    } else if asked == *JS_PATH {
        ("text/javascript; charset=utf-8", JS)
    } else {
        return StatusCode::NOT_FOUND.into_response();
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, max-age=31536000, immutable"),
            ),
        ],
        body,
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
        assert!(js_path().ends_with(&format!("{}.js", content_hash(JS))));
    }
}
