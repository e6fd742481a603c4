//! The Terraform state backend's connection: `PROVISIONING_TF_BACKEND_URL` split so that its
//! password never shows in an argument list.

use secrecy::SecretString;

use super::ConfigError;

/// Splits a Postgres URL into Terraform's `conn_str` without the password (the `pg`
/// backend needs `sslmode`; local servers have no TLS) and the password, which the runner
/// passes as `PGPASSWORD` so that no argument list shows it. The URL's password is
/// percent-encoded (`p%40ss` for `p@ss`); `PGPASSWORD` takes it decoded, and it is redacted
/// from the runner's reports in that form.
pub fn backend_connection(url: &str) -> Result<(String, Option<SecretString>), ConfigError> {
    let invalid = || ConfigError {
        name: "PROVISIONING_TF_BACKEND_URL",
        reason: "must be a postgres:// URL".into(),
    };
    let mut parsed = url::Url::parse(url).map_err(|_| invalid())?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(invalid());
    }
    let password = match parsed.password() {
        Some(encoded) => Some(SecretString::from(
            percent_encoding::percent_decode_str(encoded)
                .decode_utf8()
                .map_err(|_| ConfigError {
                    name: "PROVISIONING_TF_BACKEND_URL",
                    reason: "the password must be percent-encoded UTF-8".into(),
                })?
                .into_owned(),
        )),
        None => None,
    };
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

    #[test]
    fn the_backend_password_is_percent_decoded() {
        let (conn, password) = backend_connection("postgres://tf:p%40ss@db/s").unwrap();
        assert_eq!(password.unwrap().expose_secret(), "p@ss");
        assert_eq!(conn, "postgres://tf@db/s?sslmode=disable");
        let (_, password) = backend_connection("postgres://tf:a%2Fb%3Ac%25d@db/s").unwrap();
        assert_eq!(password.unwrap().expose_secret(), "a/b:c%d");
        assert!(backend_connection("postgres://tf:%FF@db/s").is_err());
    }
}
