//! The REST API, as the commands use it: JSON in and out, the bearer token on each request,
//! a fresh `X-Request-ID` each time (the correlation id of the events it causes), and the
//! API's `{code, detail}` turned into a [`CliError`].

use std::time::Duration;

use reqwest::{Method, RequestBuilder, Response};
use secrecy::{ExposeSecret, SecretString};
use serde_json::Value;

use crate::error::CliError;

/// How long a plain request may take; streams have no such limit, only one on silence.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// The platform sends a keep-alive every 15 s: a stream silent this long is dead.
const STREAM_SILENCE: Duration = Duration::from_secs(45);

pub struct Api {
    base: String,
    token: SecretString,
    verbose: bool,
    http: reqwest::Client,
    /// Its own pool: a stream holds its connection for as long as it is followed.
    streams: reqwest::Client,
}

impl Api {
    pub fn new(base: &str, token: SecretString, verbose: bool) -> Result<Api, CliError> {
        let build = |builder: reqwest::ClientBuilder| {
            builder
                .connect_timeout(Duration::from_secs(10))
                .user_agent(concat!("provisioning-cli/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| CliError::Local(format!("cannot make an HTTP client: {e}")))
        };
        Ok(Api {
            base: base.trim_end_matches('/').to_owned(),
            token,
            verbose,
            http: build(reqwest::Client::builder().timeout(REQUEST_TIMEOUT))?,
            streams: build(reqwest::Client::builder().read_timeout(STREAM_SILENCE))?,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn verbose(&self) -> bool {
        self.verbose
    }

    pub async fn get(&self, path: &str, query: &[(&str, String)]) -> Result<Value, CliError> {
        let request = self.http.get(self.url(path)).query(query);
        json(self.send(Method::GET, request).await?).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        let request = self.http.post(self.url(path)).json(body);
        json(self.send(Method::POST, request).await?).await
    }

    /// A POST without a body: the verbs of a resource (`.../retry`, `.../cancel`).
    pub async fn post_empty(&self, path: &str) -> Result<Value, CliError> {
        let request = self.http.post(self.url(path));
        json(self.send(Method::POST, request).await?).await
    }

    pub async fn put(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        let request = self.http.put(self.url(path)).json(body);
        json(self.send(Method::PUT, request).await?).await
    }

    pub async fn patch(&self, path: &str, body: &Value) -> Result<Value, CliError> {
        let request = self.http.patch(self.url(path)).json(body);
        json(self.send(Method::PATCH, request).await?).await
    }

    /// A GET whose answer is read as it comes (an export): no time limit but one on
    /// silence.
    pub async fn get_streamed(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Response, CliError> {
        let request = self
            .streams
            .get(self.url(path))
            .header("accept", "application/x-ndjson")
            .query(query);
        self.send(Method::GET, request).await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, CliError> {
        let request = self.http.delete(self.url(path));
        json(self.send(Method::DELETE, request).await?).await
    }

    /// Opens a Server-Sent Events stream, resumed after `last_event_id` when given, else
    /// from its first event.
    pub async fn stream(
        &self,
        path: &str,
        last_event_id: Option<u64>,
    ) -> Result<Response, CliError> {
        let since = match last_event_id {
            Some(_) => vec![],
            None => vec![("since", "0".to_owned())],
        };
        self.stream_with(path, &since, last_event_id).await
    }

    /// Opens a Server-Sent Events stream with `query`, resumed after `last_event_id`.
    pub async fn stream_with(
        &self,
        path: &str,
        query: &[(&str, String)],
        last_event_id: Option<u64>,
    ) -> Result<Response, CliError> {
        let mut request = self
            .streams
            .get(self.url(path))
            .header("accept", "text/event-stream")
            .query(query);
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        self.send(Method::GET, request).await
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends `request` with the token and a request id; an answer other than 2xx is the
    /// error it stands for.
    async fn send(&self, method: Method, request: RequestBuilder) -> Result<Response, CliError> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let request = request
            .bearer_auth(self.token.expose_secret())
            .header("x-request-id", &request_id)
            .build()
            .map_err(|e| CliError::Usage(format!("not a usable URL: {}: {e}", self.base)))?;
        let url = request.url().to_string();
        if self.verbose {
            eprintln!("> {method} {url} (x-request-id: {request_id})");
        }
        let response = match self.client_for(&request).execute(request).await {
            Ok(response) => response,
            Err(e) => return Err(CliError::network(&url, &e)),
        };
        if self.verbose {
            let answered_id = response
                .headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or(&request_id);
            eprintln!(
                "< {} {url} (x-request-id: {answered_id})",
                response.status()
            );
        }
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| CliError::network(&url, &e))?;
        Err(error_of(status, &body))
    }

    fn client_for(&self, request: &reqwest::Request) -> &reqwest::Client {
        let streamed = request.headers().get("accept").is_some_and(|v| {
            v.as_bytes() == b"text/event-stream" || v.as_bytes() == b"application/x-ndjson"
        });
        if streamed {
            &self.streams
        } else {
            &self.http
        }
    }
}

/// The body of a 2xx answer as JSON (`null` for an empty one, e.g. `204`).
async fn json(response: Response) -> Result<Value, CliError> {
    let url = response.url().to_string();
    let body = response
        .bytes()
        .await
        .map_err(|e| CliError::network(&url, &e))?;
    if body.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&body)
        .map_err(|e| CliError::Local(format!("{url} answered something that is not JSON: {e}")))
}

/// The error an answer of `status` with `body` stands for: the API's `{code, detail}`, or
/// the status alone when the body is not one (a proxy's page, say).
pub fn error_of(status: u16, body: &[u8]) -> CliError {
    #[derive(serde::Deserialize)]
    struct ErrorBody {
        code: String,
        detail: String,
    }
    let parsed: Option<ErrorBody> = serde_json::from_slice(body).ok();
    let (code, detail) = match parsed {
        Some(e) => (e.code, e.detail),
        None => (
            "http".to_owned(),
            format!("the platform answered HTTP {status}"),
        ),
    };
    if status == 401 {
        return CliError::NotSignedIn(format!(
            "not signed in: {detail} (sign in with `provisioning login`)"
        ));
    }
    CliError::Api {
        status,
        code,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_keeps_the_apis_code_and_detail() {
        let error = error_of(
            409,
            br#"{"code":"conflict","detail":"the VM is already being destroyed"}"#,
        );
        assert_eq!(
            error.line(false),
            "error: the VM is already being destroyed"
        );
        assert_eq!(error.exit_code(), 1);
    }

    #[test]
    fn a_401_means_not_signed_in() {
        let error = error_of(401, br#"{"code":"unauthorized","detail":"bad token"}"#);
        assert_eq!(error.exit_code(), 4);
        assert!(error.line(false).contains("bad token"));
    }

    #[test]
    fn an_answer_without_the_error_body_names_its_status() {
        let error = error_of(502, b"<html>Bad Gateway</html>");
        assert_eq!(error.line(false), "error: the platform answered HTTP 502");
    }
}
