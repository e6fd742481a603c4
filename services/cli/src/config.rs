//! The credentials file: `{url, token}` per profile (and a browser sign-in's refresh
//! token), in
//! `$XDG_CONFIG_HOME/provisioning/credentials.toml` (`~/.config/...` without it). It holds
//! tokens, so it is created readable by its owner only (0600, in a 0700 directory): written
//! to a new file made with that mode and renamed over the old one, never chmod'ed after, so
//! no other user can open it even for a moment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use crate::error::CliError;

/// Where the platform is when nothing says: what `make run` starts.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8080";

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Credentials {
    #[serde(flatten)]
    pub profiles: BTreeMap<String, Profile>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    pub url: String,
    /// A personal API token, or the access token of a browser sign-in.
    pub token: String,
    /// A browser sign-in's refresh token and when its access token ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign_in: Option<crate::signin::Tokens>,
}

/// The platform and the token a command uses.
pub struct Target {
    pub url: String,
    pub token: SecretString,
}

/// The credentials file of this user: `$XDG_CONFIG_HOME`, else `~/.config` (as `gh` and
/// `kubectl`-style tools keep theirs on every Unix), else `%APPDATA%`.
pub fn credentials_path() -> Result<PathBuf, CliError> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    let dir = absolute("XDG_CONFIG_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".config")))
        .or_else(|| absolute("APPDATA"))
        .ok_or_else(|| {
            CliError::Local("no config directory: set XDG_CONFIG_HOME or HOME".into())
        })?;
    Ok(dir.join("provisioning").join("credentials.toml"))
}

pub fn load(path: &Path) -> Result<Credentials, CliError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Credentials::default()),
        Err(e) => {
            return Err(CliError::Local(format!(
                "cannot read {}: {e}",
                path.display()
            )))
        }
    };
    toml::from_str(&text).map_err(|e| CliError::Local(format!("{}: {e}", path.display())))
}

pub fn save(path: &Path, credentials: &Credentials) -> Result<(), CliError> {
    let failed =
        |e: std::io::Error| CliError::Local(format!("cannot write {}: {e}", path.display()));
    let text = toml::to_string(credentials).map_err(|e| CliError::Local(e.to_string()))?;
    let dir = path
        .parent()
        .ok_or_else(|| CliError::Local(format!("{} has no directory", path.display())))?;
    private_dir(dir).map_err(failed)?;
    let staged = dir.join(format!(".credentials.toml.{}", std::process::id()));
    let _ = std::fs::remove_file(&staged);
    let written =
        write_private(&staged, text.as_bytes()).and_then(|()| std::fs::rename(&staged, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&staged);
    }
    written.map_err(failed)
}

#[cfg(unix)]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(not(unix))]
fn private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

/// Writes a new file that only its owner may read, from its creation on.
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// The platform and token to use: `--token`/`PROVISIONING_TOKEN` over the profile's,
/// `--url`/`PROVISIONING_URL` over the profile's URL.
pub fn resolve(
    url: Option<&str>,
    token: Option<&str>,
    profile: &str,
    credentials: &Credentials,
) -> Result<Target, CliError> {
    let stored = credentials.profiles.get(profile);
    let token = match (token, stored) {
        (Some(token), _) => token.to_owned(),
        (None, Some(stored)) => stored.token.clone(),
        (None, None) => {
            return Err(CliError::NotSignedIn(format!(
                "not signed in (profile {profile}): run `provisioning login URL`, \
                 or set PROVISIONING_TOKEN"
            )))
        }
    };
    let url = url
        .map(str::to_owned)
        .or_else(|| stored.map(|s| s.url.clone()))
        .unwrap_or_else(|| DEFAULT_URL.to_owned());
    Ok(Target {
        url,
        token: SecretString::from(token),
    })
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    fn stored() -> Credentials {
        let mut credentials = Credentials::default();
        credentials.profiles.insert(
            "default".into(),
            Profile {
                url: "http://platform".into(),
                token: "pat_stored".into(),
                sign_in: None,
            },
        );
        credentials
    }

    #[test]
    fn the_environment_wins_over_the_profile() {
        let target = resolve(Some("http://other"), Some("pat_env"), "default", &stored()).unwrap();
        assert_eq!(target.url, "http://other");
        assert_eq!(target.token.expose_secret(), "pat_env");
    }

    #[test]
    fn without_a_token_anywhere_the_caller_is_not_signed_in() {
        let error = resolve(None, None, "work", &stored()).err().unwrap();
        assert_eq!(error.exit_code(), 4);
    }

    #[cfg(unix)]
    #[test]
    fn the_credentials_file_is_private_and_round_trips() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("provisioning").join("credentials.toml");
        save(&path, &stored()).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(load(&path).unwrap().profiles["default"].token, "pat_stored");
    }

    #[test]
    fn a_browser_sign_in_keeps_its_refresh_token_beside_the_access_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        let mut credentials = stored();
        credentials.profiles.get_mut("default").unwrap().sign_in = Some(crate::signin::Tokens {
            refresh_token: Some("rt".into()),
            expires_at: Some(42),
            token_endpoint: "http://sso/token".into(),
            client_id: "cli".into(),
            audience: "http://platform/api".into(),
        });
        save(&path, &credentials).unwrap();
        let back = load(&path).unwrap().profiles.remove("default").unwrap();
        let tokens = back.sign_in.unwrap();
        assert_eq!(tokens.refresh_token.as_deref(), Some("rt"));
        assert_eq!(tokens.expires_at, Some(42));
    }
}
