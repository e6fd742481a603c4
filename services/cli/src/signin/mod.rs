//! Sign-in in a browser through the platform's OpenID provider, as `gh` and `az` do it: the
//! platform says which provider and public client to use (`GET /api/v1/cli/config`), then
//! either the authorization code flow with PKCE on a loopback redirect ([`loopback`]) or the
//! device authorization grant ([`device`]). What it gets is an access token the platform
//! takes as a bearer JWT, and a refresh token to get the next one with ([`refresh`]).

pub mod device;
pub mod loopback;
mod oauth;

pub use oauth::{now as oauth_now, refresh, Provider, Tokens};

use serde::Deserialize;

use crate::error::CliError;

/// The platform's answer to `GET /api/v1/cli/config`.
#[derive(Debug, Deserialize)]
pub struct CliConfig {
    pub sign_in: Option<SignInConfig>,
}

/// The provider and public client the platform names.
#[derive(Debug, Clone, Deserialize)]
pub struct SignInConfig {
    pub issuer: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    pub audience: String,
}

/// How the platform at `base` lets the command line sign in; an error that says what to do
/// instead when it offers no browser sign-in.
pub async fn platform_config(http: &reqwest::Client, base: &str) -> Result<SignInConfig, CliError> {
    let url = format!("{base}/api/v1/cli/config");
    let response = http
        .get(&url)
        .send()
        .await
        .map_err(|e| CliError::network(&url, &e))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| CliError::network(&url, &e))?;
    if !status.is_success() {
        return Err(crate::client::error_of(status.as_u16(), &body));
    }
    let config: CliConfig = serde_json::from_slice(&body)
        .map_err(|e| CliError::Local(format!("{url} answered an unexpected document: {e}")))?;
    config.sign_in.ok_or_else(|| {
        CliError::Usage(format!(
            "the platform at {base} offers no browser sign-in to the command line: pipe a \
             personal API token into `provisioning login {base} --token`"
        ))
    })
}

/// Opens `url` in the user's browser: `$BROWSER` when set, else the desktop's opener.
/// False when there is none to open (a server over SSH, say).
pub fn open_browser(url: &str) -> bool {
    use std::process::{Command, Stdio};
    let spawn = |program: &str, args: &[&str]| {
        Command::new(program)
            .args(args)
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .is_ok()
    };
    if let Some(browser) = std::env::var("BROWSER").ok().filter(|b| !b.is_empty()) {
        return spawn(&browser, &[]);
    }
    if cfg!(target_os = "macos") {
        return spawn("open", &[]);
    }
    if cfg!(windows) {
        return spawn("rundll32", &["url.dll,FileProtocolHandler"]);
    }
    let desktop = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    desktop && spawn("xdg-open", &[])
}
