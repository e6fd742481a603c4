//! What every request passes through, outermost first: it gets its id, then it is counted
//! (`/metrics`), then a span (method,
//! matched route, request id; status and latency when answered), then the refusal of NUL
//! and non-UTF-8 text in its URL, then the JSON body of the framework's own errors, then
//! the log of a 500's cause, then the timeout, then the shorter bound of commands, then
//! the catching of a handler's panic (a 500). Bodies are read up to [`BODY_LIMIT`].

use std::time::Duration;

use axum::error_handling::HandleErrorLayer;
use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{BoxError, Router};
use tower::ServiceBuilder;
use tower_http::trace::TraceLayer;
use tracing::Span;

use crate::error::log_internal;
use crate::extract::{assign_request_id, RequestId, BODY_LIMIT};
use crate::input::{json_errors, refuse_bad_text};
use crate::ApiError;

/// How long a handler may take to answer. The slowest waits up to 5 s for a read model.
/// It bounds the time to the response's head only: an SSE stream, once answered, runs on.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a command (any request but a GET or HEAD) may take to answer. Its database work
/// is bounded on its own (3 s to get a connection, 3 s of retries while other writers win),
/// but a connection that stalls mid-statement (a network dropping packets) is noticed by
/// neither: the server's `statement_timeout` never hears of it. This bound answers 503 with
/// `Retry-After` instead, well before the request timeout.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(4);

/// The time bounds of [`around`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bounds {
    pub request: Duration,
    pub command: Duration,
}

pub(crate) const BOUNDS: Bounds = Bounds {
    request: REQUEST_TIMEOUT,
    command: COMMAND_TIMEOUT,
};

/// Wraps every route (and the fallback) of `router`; add it after them.
pub(crate) fn around<S>(router: Router<S>, bounds: Bounds) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    router.layer(
        ServiceBuilder::new()
            .layer(axum::middleware::from_fn(assign_request_id))
            .layer(axum::middleware::from_fn(count_request))
            .layer(
                TraceLayer::new_for_http()
                    .make_span_with(span)
                    .on_response(answered)
                    // A 500's cause is logged by `log_internal`; once is enough.
                    .on_failure(()),
            )
            .layer(axum::middleware::from_fn(refuse_bad_text))
            .layer(axum::middleware::from_fn(json_errors))
            .layer(axum::middleware::from_fn(log_internal))
            .layer(HandleErrorLayer::new(move |e| timed_out(e, bounds.request)))
            .timeout(bounds.request)
            .layer(axum::middleware::from_fn(move |request, next| {
                bound_command(request, next, bounds.command)
            }))
            .layer(axum::middleware::from_fn(catch_panic))
            .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT)),
    )
}

/// Answers a handler that panicked with an opaque 500, whose cause (the panic's message)
/// `log_internal` logs once, instead of dropping the connection with no answer.
async fn catch_panic(request: Request, next: Next) -> Response {
    use futures::FutureExt;
    match std::panic::AssertUnwindSafe(next.run(request))
        .catch_unwind()
        .await
    {
        Ok(response) => response,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            ApiError::internal(format!("the handler panicked: {message}")).into_response()
        }
    }
}

/// The methods `/metrics` counts by name; any other is counted as `other`, so that
/// made-up methods cannot add series without bound.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// Answers a command that took longer than `bound` with a 503. Dropping the handler's
/// future drops its transaction too: Postgres rolls back what was not committed.
async fn bound_command(request: Request, next: Next, bound: Duration) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    match tokio::time::timeout(bound, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(?bound, "a command got no answer from the database in time");
            ApiError::Unavailable(format!(
                "no answer within {bound:?}: the database is slow or out of reach; the \
                 command may have been recorded, retry it with the same id or Idempotency-Key"
            ))
            .into_response()
        }
    }
}

/// Counts the request and its latency (to the response's head) in the process's metrics, by
/// route template, method and status; `unmatched` for a path no route has. Every label
/// comes from a closed set: the routes' templates, the standard methods and `other`, the
/// statuses the server answers.
async fn count_request(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_owned();
    let method = method_label(request.method()).to_owned();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let labels = telemetry::metrics::HttpLabels {
        route,
        method,
        status: response.status().as_u16(),
    };
    let metrics = telemetry::metrics();
    metrics.http_requests.get_or_create(&labels).inc();
    metrics
        .http_duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    response
}

fn span(request: &Request) -> Span {
    // The route, not the path: `/api/v1/vms/{id}`, so the field stays low in cardinality.
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map(RequestId::as_str);
    tracing::info_span!(
        "request",
        method = %request.method(),
        route,
        request_id,
        status = tracing::field::Empty,
    )
}

fn answered(response: &Response, latency: Duration, span: &Span) {
    let status = response.status().as_u16();
    span.record("status", status);
    tracing::info!(status, ?latency, "answered");
}

async fn timed_out(error: BoxError, timeout: Duration) -> ApiError {
    if error.is::<tower::timeout::error::Elapsed>() {
        ApiError::Unavailable(format!(
            "no answer within {timeout:?}; a change may have been recorded, check with a GET"
        ))
    } else {
        ApiError::internal(error)
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::get;
    use futures::StreamExt;
    use tower::ServiceExt;

    use super::*;

    const TIMEOUT: Duration = Duration::from_millis(300);
    const COMMAND: Duration = Duration::from_millis(100);

    fn app() -> Router {
        let router = Router::new()
            .route(
                "/slow",
                get(|| async { tokio::time::sleep(TIMEOUT * 3).await }),
            )
            .route(
                "/command",
                axum::routing::post(|| async { tokio::time::sleep(COMMAND * 2).await }),
            )
            .route(
                "/broken",
                get(|| async {
                    let cause = std::io::Error::other("disk on fire");
                    Err::<(), _>(ApiError::internal(Outer(cause)))
                }),
            )
            .route(
                "/panic",
                get(|| async {
                    let parsed: u8 = "not a number".parse().expect("a number");
                    parsed.to_string()
                }),
            )
            .route(
                "/stream",
                get(|| async {
                    // Answers at once, then sends for longer than the timeout, like SSE.
                    let chunks = futures::stream::iter(0..3).then(|i| async move {
                        tokio::time::sleep(TIMEOUT).await;
                        Ok::<_, std::convert::Infallible>(format!("{i}\n"))
                    });
                    Body::from_stream(chunks)
                }),
            );
        let bounds = Bounds {
            request: TIMEOUT,
            command: COMMAND,
        };
        around(router, bounds)
    }

    #[derive(Debug, thiserror::Error)]
    #[error("could not read")]
    struct Outer(#[source] std::io::Error);

    pub(super) async fn call(path: &str) -> (StatusCode, String) {
        call_with(Method::GET, path).await
    }

    async fn call_with(method: Method, path: &str) -> (StatusCode, String) {
        let request = Request::builder()
            .method(method)
            .uri(path)
            .header("x-request-id", "req-42")
            .body(Body::empty())
            .unwrap();
        let response = app().oneshot(request).await.unwrap();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_slow_handler_is_answered_503_with_the_error_body() {
        let (status, body) = call("/slow").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains(r#""code":"unavailable""#), "{body}");
    }

    #[tokio::test]
    async fn a_slow_command_is_answered_503_within_the_command_bound() {
        let started = std::time::Instant::now();
        let (status, body) = call_with(Method::POST, "/command").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("may have been recorded"), "{body}");
        assert!(started.elapsed() < TIMEOUT, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_get_is_not_cut_by_the_command_bound() {
        // Answered by the request timeout (300 ms), not the command bound (100 ms).
        let started = std::time::Instant::now();
        let (status, body) = call_with(Method::GET, "/slow").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("no answer within 300ms"), "{body}");
        assert!(started.elapsed() >= TIMEOUT, "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_handler_that_panics_is_answered_500_with_the_error_body() {
        let (status, body) = call("/panic").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body, r#"{"code":"internal","detail":"internal error"}"#);
    }

    #[tokio::test]
    async fn made_up_methods_are_counted_as_other() {
        let method = Method::from_bytes(b"XYZ123LAYERS").unwrap();
        let (status, _) = call_with(method, "/command").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        let text = telemetry::metrics().encode();
        assert!(!text.contains("XYZ123LAYERS"), "{text}");
        assert!(
            text.contains(r#"route="/command",method="other",status="405""#),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_framework_s_own_refusals_get_the_error_body() {
        let (status, body) = call_with(Method::DELETE, "/slow").await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(
            body,
            r#"{"code":"method_not_allowed","detail":"method not allowed"}"#
        );
    }

    #[tokio::test]
    async fn a_stream_runs_on_past_the_timeout() {
        let (status, body) = call("/stream").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, "0\n1\n2\n");
    }
}

#[cfg(test)]
mod logging_tests {
    use super::tests::call;

    /// Log lines written by the code under test, as text.
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn a_500_is_opaque_and_its_cause_chain_is_logged_once_with_the_request_id() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        // Global, not per thread: a thread's own subscriber misses spans whose callsites tests
        // on other threads registered first as unwanted. Only this test calls `/broken`, so
        // other tests' lines in the capture do not matter.
        tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber");

        let (status, body) = call("/broken").await;

        assert_eq!(status, axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        assert_eq!(body, r#"{"code":"internal","detail":"internal error"}"#);
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        let failures: Vec<_> = log.lines().filter(|l| l.contains("disk on fire")).collect();
        assert_eq!(failures.len(), 1, "{log}");
        assert!(
            failures[0].contains("could not read: disk on fire"),
            "{log}"
        );
        assert!(failures[0].contains("req-42"), "{log}");
        assert!(failures[0].contains("/broken"), "{log}");
    }
}
