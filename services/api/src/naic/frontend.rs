//! The built frontend (`PROVISIONING_FRONTEND_DIR`), served at `/` by the API's own
//! server, so one process serves the single-page app and its API on one origin (NAIC's
//! frontend allows no other). Its files as they are; `index.html` for every other path,
//! which is a route of the app (`/dashboard`, `/vm/<id>`, `/kcauth/callback`); never for
//! `/api/...`, whose unknown paths keep the API's JSON 404.

use std::path::{Path, PathBuf};

use axum::extract::State;
use axum::http::{header, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

use crate::{ApiError, AppState};

/// What answers a path no route has.
pub async fn fallback(State(state): State<AppState>, method: Method, uri: Uri) -> Response {
    let path = uri.path();
    let api = path == "/api" || path.starts_with("/api/");
    match state.frontend.as_deref() {
        Some(dir) if !api && (method == Method::GET || method == Method::HEAD) => {
            serve(dir, path).await
        }
        // No frontend: `/` is the console's.
        None if path == "/" && (method == Method::GET || method == Method::HEAD) => (
            StatusCode::SEE_OTHER,
            [(header::LOCATION, HeaderValue::from_static("/console"))],
        )
            .into_response(),
        _ => ApiError::NotFound("no such route".into()).into_response(),
    }
}

/// The file `path` names under `dir`, or `index.html` for an app route.
async fn serve(dir: &Path, path: &str) -> Response {
    let index = dir.join("index.html");
    let Some(file) = file_of(dir, path) else {
        return not_found();
    };
    if let Ok(bytes) = read_file(&file).await {
        return answer(&file, bytes, path.starts_with("/assets/"));
    }
    // A missing file (a name with an extension) is a 404, not the app: a stale bundle's
    // script must fail as a script, not load HTML.
    let last = path.rsplit('/').next().unwrap_or_default();
    if last.contains('.') {
        return not_found();
    }
    match read_file(&index).await {
        Ok(bytes) => answer(&index, bytes, false),
        Err(e) => {
            tracing::warn!(error = %e, dir = %dir.display(), "the frontend has no index.html");
            not_found()
        }
    }
}

/// `path` under `dir`, if every segment is a plain name: no `..`, no hidden files, no
/// backslash or NUL. `/` is `index.html`.
fn file_of(dir: &Path, path: &str) -> Option<PathBuf> {
    let mut file = dir.to_path_buf();
    let mut any = false;
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        if segment.starts_with('.') || segment.contains(['\\', '\0']) {
            return None;
        }
        file.push(segment);
        any = true;
    }
    if !any {
        file.push("index.html");
    }
    Some(file)
}

async fn read_file(file: &Path) -> std::io::Result<Vec<u8>> {
    if !tokio::fs::metadata(file).await?.is_file() {
        return Err(std::io::ErrorKind::NotFound.into());
    }
    tokio::fs::read(file).await
}

fn answer(file: &Path, bytes: Vec<u8>, immutable: bool) -> Response {
    // Vite names its assets by their content: they never change under one name.
    let cache = if immutable {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(content_type(file)),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    response
}

fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "not found").into_response()
}

fn content_type(file: &Path) -> &'static str {
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match ext.as_str() {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "txt" => "text/plain; charset=utf-8",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_names_under_the_directory_are_served() {
        let dir = Path::new("/srv/app");
        assert_eq!(file_of(dir, "/"), Some(dir.join("index.html")));
        assert_eq!(
            file_of(dir, "/assets/index-abc.js"),
            Some(dir.join("assets/index-abc.js"))
        );
        for bad in ["/../etc/passwd", "/assets/../../x", "/.env", "/a\\b"] {
            assert_eq!(file_of(dir, bad), None, "{bad}");
        }
    }
}
