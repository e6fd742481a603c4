//! The authorization code flow with PKCE (RFC 7636) on a loopback redirect (RFC 8252): a
//! one-shot HTTP listener on `http://127.0.0.1:<port>/callback` receives the browser with
//! the code, which is exchanged for tokens with the verifier only this process knows.

use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::oauth::{kept, token_request, Provider, TokenAnswer, Tokens};
use super::{open_browser, SignInConfig};
use crate::error::CliError;

/// How long the browser has to come back.
const PATIENCE: Duration = Duration::from_secs(300);
/// The most bytes of the browser's request read.
const REQUEST_MAX: usize = 16 * 1024;

/// Signs in through the browser: opens it (unless `no_browser`) at the provider, prints
/// the URL either way, and waits for it to come back to the loopback listener.
pub async fn sign_in(
    http: &reqwest::Client,
    config: &SignInConfig,
    provider: &Provider,
    no_browser: bool,
) -> Result<(TokenAnswer, Tokens), CliError> {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| CliError::Local(format!("cannot listen on 127.0.0.1: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| CliError::Local(format!("cannot listen on 127.0.0.1: {e}")))?
        .port();
    let redirect_uri = format!("http://127.0.0.1:{port}/callback");
    let verifier = random()?;
    let state = random()?;
    let challenge =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(&verifier));
    let mut url = url::Url::parse(&provider.authorization_endpoint).map_err(|e| {
        CliError::Local(format!(
            "the provider's authorization endpoint is no URL: {e}"
        ))
    })?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", config.client_id.as_str())
        .append_pair("redirect_uri", redirect_uri.as_str())
        .append_pair("scope", &config.scopes.join(" "))
        .append_pair("state", &state)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", config.audience.as_str());
    let opened = !no_browser && open_browser(url.as_str());
    if opened {
        eprintln!("Opened your browser to sign in; if it did not open, visit:");
    } else {
        eprintln!("Open this URL in a browser on this machine to sign in:");
    }
    eprintln!("  {url}");
    eprintln!("Waiting for the browser to come back to {redirect_uri} ...");
    let code = tokio::time::timeout(PATIENCE, receive_code(&listener, &state))
        .await
        .map_err(|_| {
            CliError::Local("no sign-in within 5 minutes: run `provisioning login` again".into())
        })??;
    let answer = token_request(
        http,
        &provider.token_endpoint,
        &[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("client_id", config.client_id.as_str()),
            ("code_verifier", verifier.as_str()),
            ("resource", config.audience.as_str()),
        ],
    )
    .await?
    .map_err(|e| {
        CliError::Local(format!(
            "the OpenID provider refused the code: {}",
            e.text()
        ))
    })?;
    let tokens = kept(&answer, provider, config, None);
    Ok((answer, tokens))
}

/// 32 random bytes, base64url: the PKCE verifier and the state.
fn random() -> Result<String, CliError> {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes)
        .map_err(|e| CliError::Local(format!("the OS gave no random bytes: {e}")))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// Answers the browser's requests until one brings the code for `state` (or the
/// provider's refusal).
async fn receive_code(listener: &TcpListener, state: &str) -> Result<String, CliError> {
    loop {
        let (mut socket, _) = listener
            .accept()
            .await
            .map_err(|e| CliError::Local(format!("the loopback listener failed: {e}")))?;
        let Some(target) = request_target(&mut socket).await else {
            continue;
        };
        let outcome = callback(&target, state);
        let (status, page) = match &outcome {
            Some(Ok(_)) => (
                "200 OK",
                "Signed in. You can close this tab and go back to the terminal.",
            ),
            Some(Err(_)) => (
                "400 Bad Request",
                "The sign-in did not succeed: see the terminal.",
            ),
            None => ("404 Not Found", "Not the sign-in's callback."),
        };
        let body = format!(
            "<!DOCTYPE html><html><head><title>provisioning</title></head><body><p>{page}</p></body></html>"
        );
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = socket.write_all(answer.as_bytes()).await;
        let _ = socket.shutdown().await;
        if let Some(outcome) = outcome {
            return outcome;
        }
    }
}

/// The request target (`/callback?...`) of a GET request read from `socket`.
async fn request_target(socket: &mut tokio::net::TcpStream) -> Option<String> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 2048];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") && buffer.len() < REQUEST_MAX {
        let n = tokio::time::timeout(Duration::from_secs(10), socket.read(&mut chunk))
            .await
            .ok()?
            .ok()?;
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&buffer);
    let mut words = text.lines().next()?.split(' ');
    match (words.next(), words.next()) {
        (Some("GET"), Some(target)) => Some(target.to_owned()),
        _ => None,
    }
}

/// What the browser's request to `target` says: `None` when it is not the callback (a
/// favicon), else the code or why there is none.
pub fn callback(target: &str, state: &str) -> Option<Result<String, CliError>> {
    let url = url::Url::parse(&format!("http://127.0.0.1{target}")).ok()?;
    if url.path() != "/callback" {
        return None;
    }
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    if param("state").as_deref() != Some(state) {
        return Some(Err(CliError::Local(
            "the browser came back from another sign-in (its state differs): run \
             `provisioning login` again"
                .into(),
        )));
    }
    if let Some(error) = param("error") {
        let detail = param("error_description").unwrap_or_default();
        return Some(Err(CliError::Local(format!(
            "the OpenID provider refused the sign-in: {error} {detail}"
        ))));
    }
    Some(param("code").ok_or_else(|| {
        CliError::Local(
            "the browser came back without a code: run `provisioning login` again".into(),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_gives_the_code_of_its_state_only() {
        assert_eq!(
            callback("/callback?code=abc&state=s1", "s1")
                .unwrap()
                .unwrap(),
            "abc"
        );
        assert!(callback("/callback?code=abc&state=other", "s1")
            .unwrap()
            .is_err());
        let refused = callback("/callback?error=access_denied&state=s1", "s1")
            .unwrap()
            .unwrap_err();
        assert!(refused.to_string().contains("access_denied"));
        assert!(callback("/favicon.ico", "s1").is_none());
    }
}
