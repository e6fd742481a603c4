//! `login --token` and `logout`: the profile's credentials. The token is read from standard
//! input (never an argument, which `ps` and shell histories show) and checked with
//! `GET /api/v1/me` before it is kept.

use std::io::{IsTerminal, Read};

use secrecy::SecretString;

use crate::args::{Cli, LoginArgs};
use crate::client::Api;
use crate::config::{self, Profile};
use crate::error::CliError;
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
        .ok_or_else(|| {
            CliError::Usage("give the platform's URL: provisioning login URL --token".into())
        })?;
    if !args.with_token {
        return Err(CliError::Usage(
            "sign-in in the browser is not available yet: pipe a personal API token into \
             `provisioning login URL --token`"
                .into(),
        ));
    }
    let token = read_token()?;
    let api = Api::new(&url, SecretString::from(token.clone()), cli.verbose)?;
    let me: Me = read(&api.get("/api/v1/me", &[]).await?, "user")?;
    credentials.profiles.insert(
        cli.profile.clone(),
        Profile {
            url: api.base().to_owned(),
            token,
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
