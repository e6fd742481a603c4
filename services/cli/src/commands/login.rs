//! `login` and `logout`: the profile's credentials. In a browser through the platform's
//! OpenID provider (see [`crate::signin`]), or with `--token`, a personal API token read
//! from standard input (never an argument, which `ps` and shell histories show). Either is
//! checked with `GET /api/v1/me` before it is kept.

use std::io::{IsTerminal, Read};
use std::time::Duration;

use secrecy::SecretString;

use crate::args::{Cli, LoginArgs};
use crate::client::Api;
use crate::config::{self, Credentials, Profile};
use crate::error::CliError;
use crate::signin::{self, Provider, Tokens};
use crate::wire::{read, Me};

pub async fn login(cli: &Cli, args: &LoginArgs) -> Result<(), CliError> {
    let path = config::credentials_path()?;
    let mut credentials = config::load(&path)?;
    let url = args
        .url_arg
        .clone()
        .or_else(|| cli.url.clone())
        .or_else(|| {
            credentials
                .profiles
                .get(&cli.profile)
                .map(|p| p.url.clone())
        })
        .unwrap_or_else(|| config::DEFAULT_URL.to_owned());
    let url = url.trim_end_matches('/').to_owned();
    let (token, sign_in) = if args.with_token {
        (read_token()?, None)
    } else {
        let (token, tokens) = browser_sign_in(&url, args, cli.verbose).await?;
        (token, Some(tokens))
    };
    let api = Api::new(&url, SecretString::from(token.clone()), cli.verbose)?;
    let me: Me = read(&api.get("/api/v1/me", &[]).await?, "user")?;
    credentials.profiles.insert(
        cli.profile.clone(),
        Profile {
            url: api.base().to_owned(),
            token,
            sign_in,
        },
    );
    config::save(&path, &credentials)?;
    println!(
        "Signed in to {} as {} ({}); profile {} kept in {}",
        api.base(),
        me.email,
        me.role,
        cli.profile,
        path.display()
    );
    Ok(())
}

/// Signs in through the provider the platform at `url` names: the access token and what
/// refreshing it needs.
async fn browser_sign_in(
    url: &str,
    args: &LoginArgs,
    verbose: bool,
) -> Result<(String, Tokens), CliError> {
    let http = http()?;
    let config = signin::platform_config(&http, url).await?;
    let provider = Provider::discover(&http, &config.issuer).await?;
    if verbose {
        eprintln!(
            "signing in at {} as client {}",
            config.issuer, config.client_id
        );
    }
    // The device grant when asked for, or when no browser can be opened here and the
    // provider offers it; else the browser comes back to a loopback listener.
    let device = args.device
        || (!args.no_browser
            && provider.device_authorization_endpoint.is_some()
            && !can_open_browser());
    let (answer, tokens) = if device {
        signin::device::sign_in(&http, &config, &provider).await?
    } else {
        signin::loopback::sign_in(&http, &config, &provider, args.no_browser).await?
    };
    Ok((answer.access_token, tokens))
}

/// Whether a browser could be opened: `$BROWSER`, a desktop session, or macOS and Windows.
fn can_open_browser() -> bool {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    set("BROWSER")
        || set("DISPLAY")
        || set("WAYLAND_DISPLAY")
        || cfg!(target_os = "macos")
        || cfg!(windows)
}

/// The HTTP client that talks to the platform and the provider before there is a token.
fn http() -> Result<reqwest::Client, CliError> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(60))
        .user_agent(concat!("provisioning-cli/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| CliError::Local(format!("cannot make an HTTP client: {e}")))
}

/// Refreshes the access token of `profile` when it ended (or ends within a minute) and the
/// sign-in kept a refresh token; true when the credentials changed (to be saved).
pub async fn refresh_if_due(
    credentials: &mut Credentials,
    profile: &str,
    verbose: bool,
) -> Result<bool, CliError> {
    let Some(stored) = credentials.profiles.get_mut(profile) else {
        return Ok(false);
    };
    let Some(tokens) = &stored.sign_in else {
        return Ok(false);
    };
    let due = tokens
        .expires_at
        .is_some_and(|at| at <= signin::oauth_now() + 60);
    if !due {
        return Ok(false);
    }
    if verbose {
        eprintln!("the access token of profile {profile} ended: refreshing it");
    }
    let (token, tokens) = signin::refresh(&http()?, tokens, profile).await?;
    stored.token = token;
    stored.sign_in = Some(tokens);
    Ok(true)
}

fn read_token() -> Result<String, CliError> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprintln!("Paste a personal API token, then press Enter and Ctrl-D:");
    }
    let mut text = String::new();
    stdin
        .read_to_string(&mut text)
        .map_err(|e| CliError::Usage(format!("cannot read the token from standard input: {e}")))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(CliError::Usage("no token on standard input".into()));
    }
    Ok(token.to_owned())
}

pub fn logout(cli: &Cli) -> Result<(), CliError> {
    let path = config::credentials_path()?;
    let mut credentials = config::load(&path)?;
    if credentials.profiles.remove(&cli.profile).is_none() {
        println!("Not signed in (profile {}): nothing to forget", cli.profile);
        return Ok(());
    }
    config::save(&path, &credentials)?;
    println!("Signed out: profile {} forgotten", cli.profile);
    Ok(())
}
