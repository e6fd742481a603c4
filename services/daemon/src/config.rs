//! Configuration, read from the environment in this one place, with defaults that run
//! the platform on one machine.

use std::net::SocketAddr;
use std::path::PathBuf;

use secrecy::SecretString;

#[derive(Debug, Clone)]
pub struct Config {
    pub http_addr: SocketAddr,
    /// May hold a password: never logged.
    pub database_url: SecretString,
    pub nats_url: String,
    pub nats_prefix: String,
    /// The bearer token of the API; generated at start when not configured.
    pub admin_token: Option<SecretString>,
    pub hcl_dir: PathBuf,
    pub work_dir: PathBuf,
    pub terraform_bin: PathBuf,
    pub runner_bin: PathBuf,
    /// Where Terraform keeps state (its `pg` backend); may hold a password.
    pub tf_backend_url: SecretString,
    pub json_logs: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("{name}: {reason}")]
pub struct ConfigError {
    pub name: &'static str,
    pub reason: String,
}

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/provisioning";
pub const DEFAULT_NATS_URL: &str = "nats://127.0.0.1:4222";

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let http_addr = var("PROVISIONING_HTTP_ADDR")
            .unwrap_or_else(|| "127.0.0.1:8080".into())
            .parse()
            .map_err(|_| ConfigError {
                name: "PROVISIONING_HTTP_ADDR",
                reason: "must be an address such as 127.0.0.1:8080".into(),
            })?;
        let database_url = var("DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.into());
        let tf_backend_url =
            var("PROVISIONING_TF_BACKEND_URL").unwrap_or_else(|| database_url.clone());
        let prefix = var("PROVISIONING_NATS_PREFIX").unwrap_or_else(|| "provisioning".into());
        if !prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(ConfigError {
                name: "PROVISIONING_NATS_PREFIX",
                reason: "may contain only letters, digits, '_' and '-'".into(),
            });
        }
        let runner_bin = match var("PROVISIONING_RUNNER_BIN") {
            Some(path) => path.into(),
            None => std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(|dir| dir.join("provisioning-runner")))
                .unwrap_or_else(|| "provisioning-runner".into()),
        };
        Ok(Self {
            http_addr,
            database_url: database_url.into(),
            nats_url: var("NATS_URL").unwrap_or_else(|| DEFAULT_NATS_URL.into()),
            nats_prefix: prefix,
            admin_token: var("PROVISIONING_ADMIN_TOKEN").map(SecretString::from),
            hcl_dir: var("PROVISIONING_HCL_DIR")
                .unwrap_or_else(|| "hcl".into())
                .into(),
            work_dir: var("PROVISIONING_WORK_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| std::env::temp_dir().join("provisioning-jobs")),
            terraform_bin: var("TERRAFORM_BIN")
                .unwrap_or_else(|| "terraform".into())
                .into(),
            runner_bin,
            tf_backend_url: tf_backend_url.into(),
            json_logs: var("PROVISIONING_LOG_FORMAT").as_deref() == Some("json"),
        })
    }
}

/// Splits a Postgres URL into Terraform's `conn_str` without the password (the `pg`
/// backend needs `sslmode`; local servers have no TLS) and the password, which the runner
/// passes as `PGPASSWORD` so that no argument list shows it.
pub fn backend_connection(url: &str) -> Result<(String, Option<SecretString>), ConfigError> {
    let invalid = || ConfigError {
        name: "PROVISIONING_TF_BACKEND_URL",
        reason: "must be a postgres:// URL".into(),
    };
    let mut parsed = url::Url::parse(url).map_err(|_| invalid())?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(invalid());
    }
    let password = parsed.password().map(|p| SecretString::from(p.to_owned()));
    parsed.set_password(None).map_err(|_| invalid())?;
    if !parsed.query_pairs().any(|(k, _)| k == "sslmode") {
        parsed.query_pairs_mut().append_pair("sslmode", "disable");
    }
    Ok((parsed.to_string(), password))
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn the_backend_connection_keeps_the_password_out_of_the_conn_str() {
        let (conn, password) =
            backend_connection("postgres://tf:s3cret@db.example:5432/state").unwrap();
        assert_eq!(conn, "postgres://tf@db.example:5432/state?sslmode=disable");
        assert_eq!(password.unwrap().expose_secret(), "s3cret");
        let (conn, password) =
            backend_connection("postgres://tf@db/state?sslmode=require").unwrap();
        assert_eq!(conn, "postgres://tf@db/state?sslmode=require");
        assert!(password.is_none());
        assert!(backend_connection("mysql://x/y").is_err());
    }
}
