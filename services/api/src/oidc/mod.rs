//! Sign-in with OpenID Connect: the provider found by discovery, the browser's sessions and
//! the provider's bearer JWTs. The routes are in `routes::auth`.

mod claims;
pub mod jwt;
pub(crate) mod login_cookie;
pub mod session;
mod users;

use std::time::Duration;

use base64::Engine;
use openidconnect::core::{CoreClient, CoreGenderClaim};
use openidconnect::{
    ClientId, ClientSecret, EndpointMaybeSet, EndpointNotSet, EndpointSet, IssuerUrl,
    ProviderMetadataWithLogout, RedirectUrl,
};
use secrecy::{ExposeSecret, SecretString};
use sha2::{Digest, Sha256};

pub(crate) use claims::{merge, payload as claims_of, Profile};
pub use users::user_of_jwt;
pub(crate) use users::{active_user, sign_in};

/// How long a browser session lasts at most, whatever the provider's tokens say.
pub const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "provisioning_session";

/// How long a call to the provider may take.
const PROVIDER_TIMEOUT: Duration = Duration::from_secs(10);

pub(crate) type Client = CoreClient<
    EndpointSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointNotSet,
    EndpointMaybeSet,
    EndpointMaybeSet,
>;

pub(crate) type UserInfo = openidconnect::UserInfoClaims<claims::Extra, CoreGenderClaim>;

/// What sign-in is configured with.
pub struct OidcSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: SecretString,
    pub scopes: Vec<String>,
    pub audience: Option<String>,
    pub groups_claim: String,
    /// The command line's public client, when it signs in with the provider.
    pub cli_client_id: Option<String>,
    /// Where browsers reach the API, e.g. `https://vms.example.org`.
    pub public_url: String,
}

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("PROVISIONING_PUBLIC_URL: {0}")]
    PublicUrl(String),
    #[error("discovery of the OpenID provider {issuer} failed: {reason}")]
    Discovery { issuer: String, reason: String },
}

/// The OpenID provider, as discovered at start, and this client at it.
pub struct Oidc {
    pub(crate) client: Client,
    pub(crate) http: openidconnect::reqwest::Client,
    pub(crate) issuer: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) groups_claim: String,
    pub(crate) end_session: Option<url::Url>,
    /// `scheme://host[:port]` of the public URL: what `Origin` must be.
    pub(crate) origin: String,
    pub(crate) public_url: String,
    /// Whether the cookie is `Secure` (all but plain http on loopback).
    pub(crate) secure_cookie: bool,
    pub(crate) jwt: Option<jwt::Verifier>,
    /// The command line's public client and the audience its tokens are for.
    pub(crate) cli: Option<CliClient>,
}

/// What the command line signs in with: told by `GET /api/v1/cli/config`.
pub(crate) struct CliClient {
    pub client_id: String,
    pub audience: String,
}

/// Whether `url` is plain http on loopback: the one place a cookie may go without `Secure`
/// (a browser on the same machine, as `make run` serves it).
pub(crate) fn plain_loopback(url: &url::Url) -> bool {
    url.scheme() == "http"
        && match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d == "localhost",
            None => false,
        }
}

impl Oidc {
    /// Finds the provider by discovery, with its keys.
    pub async fn discover(settings: OidcSettings) -> Result<Self, OidcError> {
        let public = url::Url::parse(&settings.public_url)
            .map_err(|e| OidcError::PublicUrl(e.to_string()))?;
        let origin = public.origin().ascii_serialization();
        let loopback_http = plain_loopback(&public);
        let public_url = settings.public_url.trim_end_matches('/').to_owned();
        let redirect = RedirectUrl::new(format!("{public_url}/api/v1/auth/callback"))
            .map_err(|e| OidcError::PublicUrl(e.to_string()))?;
        let failed = |reason: String| OidcError::Discovery {
            issuer: settings.issuer.clone(),
            reason,
        };
        // No redirects: a provider's answer is taken from the URL asked, never elsewhere.
        let http = openidconnect::reqwest::ClientBuilder::new()
            .redirect(openidconnect::reqwest::redirect::Policy::none())
            .timeout(PROVIDER_TIMEOUT)
            .build()
            .map_err(|e| failed(e.to_string()))?;
        let issuer = IssuerUrl::new(settings.issuer.clone()).map_err(|e| failed(e.to_string()))?;
        let metadata = ProviderMetadataWithLogout::discover_async(issuer, &http)
            .await
            .map_err(|e| failed(error_chain(&e)))?;
        let end_session = metadata
            .additional_metadata()
            .end_session_endpoint
            .as_ref()
            .map(|u| u.url().clone());
        let jwks_uri = metadata.jwks_uri().url().clone();
        let client = CoreClient::from_provider_metadata(
            metadata,
            ClientId::new(settings.client_id),
            Some(ClientSecret::new(
                settings.client_secret.expose_secret().to_owned(),
            )),
        )
        .set_redirect_uri(redirect);
        let cli = match (settings.cli_client_id, &settings.audience) {
            (Some(client_id), Some(audience)) => Some(CliClient {
                client_id,
                audience: audience.clone(),
            }),
            _ => None,
        };
        let jwt = settings.audience.map(|audience| {
            jwt::Verifier::new(http.clone(), jwks_uri, settings.issuer.clone(), audience)
        });
        Ok(Self {
            client,
            http,
            issuer: settings.issuer,
            scopes: settings.scopes,
            groups_claim: settings.groups_claim,
            end_session,
            origin,
            public_url,
            secure_cookie: !loopback_http,
            jwt,
            cli,
        })
    }
}

/// A new random value of 256 bits, base64url: session ids.
pub(crate) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::getrandom(&mut bytes).expect("the OS has a random source");
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What is stored for a secret the browser holds (a session id, a state).
pub(crate) fn hash(secret: &str) -> Vec<u8> {
    Sha256::digest(secret.as_bytes()).to_vec()
}

/// An error and its sources, for the log (a provider's errors say little at the top).
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}
