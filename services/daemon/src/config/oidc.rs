//! Sign-in with OpenID Connect: the provider, this client's registration at it, and what
//! is read from its tokens.

use secrecy::SecretString;

use super::ConfigError;

#[derive(Debug, Clone)]
pub struct OidcConfig {
    /// `PROVISIONING_OIDC_ISSUER`: the provider, found by discovery at start.
    pub issuer: String,
    /// `PROVISIONING_OIDC_CLIENT_ID`, `PROVISIONING_OIDC_CLIENT_SECRET`: this client, as
    /// registered at the provider with the redirect URI `<public url>/api/v1/auth/callback`.
    pub client_id: String,
    pub client_secret: SecretString,
    /// `PROVISIONING_OIDC_SCOPES`: `openid profile email` unless set (`openid` is always
    /// asked for).
    pub scopes: Vec<String>,
    /// `PROVISIONING_OIDC_AUDIENCE`: the audience bearer JWTs must name; unset, bearer JWTs
    /// are not accepted.
    pub audience: Option<String>,
    /// `PROVISIONING_OIDC_GROUPS_CLAIM`: the claim with the user's groups (`groups`).
    pub groups_claim: String,
    /// `PROVISIONING_OIDC_CLI_CLIENT_ID`: the public client (no secret) the command line
    /// signs in with, told to it by `GET /api/v1/cli/config`; unset, the command line signs
    /// in with personal API tokens only. Needs the audience: what it gets is a bearer JWT.
    pub cli_client_id: Option<String>,
}

/// The OpenID Connect settings: `None` when `PROVISIONING_OIDC_ISSUER` is unset, and then
/// none of the others may be set.
pub fn oidc(var: &dyn Fn(&str) -> Option<String>) -> Result<Option<OidcConfig>, ConfigError> {
    let Some(issuer) = var("PROVISIONING_OIDC_ISSUER") else {
        for name in [
            "PROVISIONING_OIDC_CLIENT_ID",
            "PROVISIONING_OIDC_CLIENT_SECRET",
            "PROVISIONING_OIDC_AUDIENCE",
            "PROVISIONING_OIDC_CLI_CLIENT_ID",
        ] {
            if var(name).is_some() {
                return Err(ConfigError {
                    name,
                    reason: "needs PROVISIONING_OIDC_ISSUER".into(),
                });
            }
        }
        return Ok(None);
    };
    let url = url::Url::parse(&issuer).ok();
    if !url.is_some_and(|u| {
        u.has_host()
            && (u.scheme() == "https" || (u.scheme() == "http" && loopback(&u)))
            && u.query().is_none()
            && u.fragment().is_none()
    }) {
        return Err(ConfigError {
            name: "PROVISIONING_OIDC_ISSUER",
            reason: "must be an https URL (http only on loopback), such as \
                     https://sso.example.org/realms/main"
                .into(),
        });
    }
    let required = |name: &'static str| {
        var(name).ok_or(ConfigError {
            name,
            reason: "must be set with PROVISIONING_OIDC_ISSUER".into(),
        })
    };
    let mut scopes: Vec<String> = var("PROVISIONING_OIDC_SCOPES")
        .unwrap_or_else(|| "openid profile email".into())
        .split([' ', ','])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    if scopes.iter().any(|s| {
        !s.chars()
            .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\')
    }) {
        return Err(ConfigError {
            name: "PROVISIONING_OIDC_SCOPES",
            reason: "must be scope names separated by spaces, such as `openid profile email`"
                .into(),
        });
    }
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    let audience = var("PROVISIONING_OIDC_AUDIENCE");
    let cli_client_id = var("PROVISIONING_OIDC_CLI_CLIENT_ID");
    if cli_client_id.is_some() && audience.is_none() {
        return Err(ConfigError {
            name: "PROVISIONING_OIDC_CLI_CLIENT_ID",
            reason: "needs PROVISIONING_OIDC_AUDIENCE: the command line's tokens are bearer JWTs"
                .into(),
        });
    }
    Ok(Some(OidcConfig {
        issuer: issuer.trim_end_matches('/').to_owned(),
        client_id: required("PROVISIONING_OIDC_CLIENT_ID")?,
        client_secret: required("PROVISIONING_OIDC_CLIENT_SECRET")?.into(),
        scopes,
        audience,
        groups_claim: var("PROVISIONING_OIDC_GROUPS_CLAIM").unwrap_or_else(|| "groups".into()),
        cli_client_id,
    }))
}

fn loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn without_an_issuer_there_is_no_sign_in() {
        assert!(oidc(&|_| None).unwrap().is_none());
        let err = oidc(&with(&[("PROVISIONING_OIDC_CLIENT_ID", "x")])).unwrap_err();
        assert_eq!(err.name, "PROVISIONING_OIDC_CLIENT_ID");
    }

    #[test]
    fn an_issuer_needs_its_client_and_gets_defaults() {
        let err = oidc(&with(&[(
            "PROVISIONING_OIDC_ISSUER",
            "https://sso.example",
        )]));
        assert_eq!(err.unwrap_err().name, "PROVISIONING_OIDC_CLIENT_ID");
        let config = oidc(&with(&[
            ("PROVISIONING_OIDC_ISSUER", "https://sso.example/realms/a/"),
            ("PROVISIONING_OIDC_CLIENT_ID", "vms"),
            ("PROVISIONING_OIDC_CLIENT_SECRET", "s3cret"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(config.issuer, "https://sso.example/realms/a");
        assert_eq!(config.scopes, ["openid", "profile", "email"]);
        assert_eq!(config.groups_claim, "groups");
        assert_eq!(config.audience, None);
        assert_eq!(config.cli_client_id, None);
    }

    #[test]
    fn the_command_lines_client_needs_the_audience_of_bearer_jwts() {
        let base = [
            ("PROVISIONING_OIDC_ISSUER", "https://sso.example"),
            ("PROVISIONING_OIDC_CLIENT_ID", "vms"),
            ("PROVISIONING_OIDC_CLIENT_SECRET", "s3cret"),
            ("PROVISIONING_OIDC_CLI_CLIENT_ID", "vms-cli"),
        ];
        let without: &'static [(&str, &str)] = Box::leak(Box::new(base));
        assert_eq!(
            oidc(&with(without)).unwrap_err().name,
            "PROVISIONING_OIDC_CLI_CLIENT_ID"
        );
        let mut all = base.to_vec();
        all.push(("PROVISIONING_OIDC_AUDIENCE", "https://vms.example/api"));
        let config = oidc(&with(all.leak())).unwrap().unwrap();
        assert_eq!(config.cli_client_id.as_deref(), Some("vms-cli"));
    }

    #[test]
    fn a_plain_http_issuer_must_be_on_loopback() {
        let base = |issuer: &'static str| {
            move |name: &str| match name {
                "PROVISIONING_OIDC_ISSUER" => Some(issuer.to_owned()),
                "PROVISIONING_OIDC_CLIENT_ID" | "PROVISIONING_OIDC_CLIENT_SECRET" => {
                    Some("x".to_owned())
                }
                _ => None,
            }
        };
        assert!(oidc(&base("http://127.0.0.1:9000")).unwrap().is_some());
        for wrong in [
            "http://sso.example",
            "sso.example",
            "https://sso.example/?a=b",
        ] {
            assert_eq!(
                oidc(&base(wrong)).unwrap_err().name,
                "PROVISIONING_OIDC_ISSUER"
            );
        }
    }
}
