//! The real OpenID provider of `tests/oidc/` (the oidc-provider package, run by Node) as a
//! child process on a loopback port of its own, and a browser to sign in through it.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine;
use sha2::{Digest, Sha256};

/// The daemon's client at the provider.
pub const CLIENT_ID: &str = "provisioning";
pub const CLIENT_SECRET: &str = "provisioning-test-secret";
/// The audience of the provider's JWT access tokens for the daemon.
pub const AUDIENCE: &str = "https://provisioning.test/api";
/// A resource whose tokens have the daemon's audience and expire after one second.
pub const SHORT_LIVED: &str = "https://provisioning.test/short-lived";
/// A resource of another audience.
pub const ELSEWHERE: &str = "https://elsewhere.test/api";

/// A program's client (for bearer JWTs), and the redirect URI it is never sent to.
const CLI_ID: &str = "cli";
const CLI_SECRET: &str = "cli-test-secret";
const CLI_REDIRECT: &str = "http://127.0.0.1/cli-callback";

pub struct TestProvider {
    pub issuer: String,
    child: Child,
    http: reqwest::Client,
}

fn provider_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc")
}

/// `npm ci` once per test run when `node_modules` is missing.
fn install() {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(|| npm_ci(&provider_dir(), "oidc-provider"));
}

/// `npm ci` in `dir` unless `package` is installed there already (the suite's Node.js
/// programs: the OpenID provider, the Socket.IO client).
pub fn npm_ci(dir: &Path, package: &str) {
    if dir.join("node_modules").join(package).exists() {
        return;
    }
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .expect("npm runs");
    assert!(status.success(), "npm ci failed in {}", dir.display());
}

impl TestProvider {
    pub async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts the provider with environment settings (`OIDC_ACCESS_TOKEN_TTL`, ...).
    pub async fn start_with(env: &[(&str, &str)]) -> Self {
        install();
        let mut command = Command::new("node");
        command
            .arg("provider.mjs")
            .current_dir(provider_dir())
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if std::env::var("TEST_LOG").is_ok() {
                Stdio::inherit()
            } else {
                Stdio::null()
            });
        let mut child = command.spawn().expect("node runs");
        let stdout = child.stdout.take().unwrap();
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            std::io::BufReader::new(stdout)
                .read_line(&mut line)
                .map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(30), line)
            .await
            .expect("the provider starts within 30 s")
            .unwrap()
            .unwrap();
        let ready: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|_| panic!("provider said {line:?}"));
        let provider = Self {
            issuer: ready["issuer"].as_str().unwrap().to_owned(),
            child,
            http: reqwest::Client::new(),
        };
        provider
            .register(CLI_ID, CLI_SECRET, &[CLI_REDIRECT], &[])
            .await;
        provider
    }

    /// Registers (or replaces) a confidential client.
    pub async fn register(&self, id: &str, secret: &str, redirects: &[&str], logouts: &[&str]) {
        let metadata = serde_json::json!({
            "client_secret": secret,
            "redirect_uris": redirects,
            "post_logout_redirect_uris": logouts,
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        });
        let response = self
            .http
            .put(format!("{}/test/clients/{id}", self.issuer))
            .json(&metadata)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 204, "{}", response.text().await.unwrap());
    }

    /// Registers the daemon at `address` as the client [`CLIENT_ID`].
    pub async fn register_daemon(&self, address: &str) {
        let callback = format!("{address}/api/v1/auth/callback");
        let home = format!("{address}/");
        self.register(CLIENT_ID, CLIENT_SECRET, &[&callback], &[&home])
            .await;
    }

    /// Changes the claims of the account `login` (`email`, `emailVerified`, ...), as its
    /// user may at their provider.
    pub async fn change_account(&self, login: &str, changes: serde_json::Value) {
        let response = self
            .http
            .patch(format!("{}/test/accounts/{login}", self.issuer))
            .json(&changes)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 204);
    }

    /// Makes every refresh token the provider issued invalid, as an administrator ending a
    /// user's sign-ins would.
    pub async fn revoke_refresh_tokens(&self) {
        let response = self
            .http
            .post(format!("{}/test/revoke-refresh-tokens", self.issuer))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 204);
    }

    /// An access token for `resource`, as a program gets one: the authorization code flow
    /// of the `cli` client, signed in as `login`.
    pub async fn access_token(&self, login: &str, password: &str, resource: &str) -> String {
        let verifier = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(uuid::Uuid::new_v4().as_bytes().repeat(2));
        let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        let mut url = reqwest::Url::parse(&format!("{}/auth", self.issuer)).unwrap();
        url.query_pairs_mut()
            .append_pair("client_id", CLI_ID)
            .append_pair("response_type", "code")
            .append_pair("scope", "openid api")
            .append_pair("redirect_uri", CLI_REDIRECT)
            .append_pair("code_challenge", &challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", resource)
            .append_pair("state", "program");
        let browser = Browser::new();
        let back = browser
            .authorize(url.as_str(), CLI_REDIRECT, login, password)
            .await;
        let back = reqwest::Url::parse(&back).unwrap();
        let code = back
            .query_pairs()
            .find(|(k, _)| k == "code")
            .map(|(_, v)| v.into_owned())
            .expect("a code");
        let response = self
            .http
            .post(format!("{}/token", self.issuer))
            .basic_auth(CLI_ID, Some(CLI_SECRET))
            .form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", CLI_REDIRECT),
                ("code_verifier", &verifier),
                ("resource", resource),
            ])
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = response.json().await.unwrap();
        body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {body}"))
            .to_owned()
    }
}

impl Drop for TestProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser: a cookie jar, redirects followed one by one, the provider's forms filled in.
pub struct Browser {
    pub client: reqwest::Client,
}

impl Browser {
    pub fn new() -> Self {
        Self {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    /// Follows `start` through the provider's login and consent pages, signing in as
    /// `login`, until the provider sends the browser to a URL under `back_to`; that URL.
    pub async fn authorize(
        &self,
        start: &str,
        back_to: &str,
        login: &str,
        password: &str,
    ) -> String {
        let mut url = reqwest::Url::parse(start).unwrap();
        for _ in 0..20 {
            let response = self.client.get(url.clone()).send().await.unwrap();
            let status = response.status();
            if status.is_redirection() {
                let location = response.headers()["location"].to_str().unwrap();
                url = url.join(location).unwrap();
                if url.as_str().starts_with(back_to) {
                    return url.to_string();
                }
                continue;
            }
            let page = response.text().await.unwrap();
            assert_eq!(status, 200, "{url}: {page}");
            let action = form_action(&page).unwrap_or_else(|| panic!("no form at {url}: {page}"));
            let action = url.join(&action).unwrap();
            let fields: Vec<(&str, &str)> = if action.path().ends_with("/login") {
                vec![("login", login), ("password", password)]
            } else {
                vec![]
            };
            let submitted = self
                .client
                .post(action.clone())
                .form(&fields)
                .send()
                .await
                .unwrap();
            let status = submitted.status();
            assert!(
                status.is_redirection(),
                "{action} answered {status}: {}",
                submitted.text().await.unwrap()
            );
            let location = submitted.headers()["location"].to_str().unwrap();
            url = action.join(location).unwrap();
        }
        panic!("the provider never sent the browser back to {back_to}");
    }
}

fn form_action(page: &str) -> Option<String> {
    let start = page.find("action=\"")? + "action=\"".len();
    let end = page[start..].find('"')?;
    Some(page[start..start + end].replace("&amp;", "&"))
}

/// The daemon's API with sign-in through `provider`, registered there as its client;
/// `configure` changes the configuration after that.
pub async fn spawn_signed_in_app(
    provider: &TestProvider,
    configure: impl FnOnce(&mut daemon::Config),
) -> crate::helpers::TestApp {
    let roles = daemon::Roles {
        api: true,
        ..daemon::Roles::NONE
    };
    spawn_signed_in_app_with(provider, roles, configure).await
}

/// [`spawn_signed_in_app`] running `roles`.
pub async fn spawn_signed_in_app_with(
    provider: &TestProvider,
    roles: daemon::Roles,
    configure: impl FnOnce(&mut daemon::Config),
) -> crate::helpers::TestApp {
    let oidc = daemon::OidcConfig {
        issuer: provider.issuer.clone(),
        client_id: CLIENT_ID.into(),
        client_secret: CLIENT_SECRET.to_owned().into(),
        scopes: vec!["openid".into(), "profile".into(), "email".into()],
        audience: Some(AUDIENCE.into()),
        groups_claim: "groups".into(),
        cli_client_id: None,
    };
    let app = crate::helpers::try_spawn_app(roles, |config| {
        config.oidc = Some(oidc);
        configure(config);
    })
    .await
    .expect("the application starts");
    provider.register_daemon(&app.address).await;
    app
}

impl Browser {
    /// Signs in to `app` as `login` through the whole flow; the callback's answer (a
    /// redirect to `return_to`, with the session cookie).
    pub async fn sign_in(
        &self,
        app: &crate::helpers::TestApp,
        login: &str,
        password: &str,
    ) -> reqwest::Response {
        let callback = self.callback_url(app, login, password, "/").await;
        self.client.get(callback).send().await.unwrap()
    }

    /// Starts a sign-in to `app` and goes through the provider: the callback URL the
    /// provider sends the browser back to (not visited yet).
    pub async fn callback_url(
        &self,
        app: &crate::helpers::TestApp,
        login: &str,
        password: &str,
        return_to: &str,
    ) -> String {
        let start = format!("{}/api/v1/auth/login?return_to={return_to}", app.address);
        let back_to = format!("{}/api/v1/auth/callback", app.address);
        self.authorize(&start, &back_to, login, password).await
    }

    /// A request to `app` as this browser (its cookies, no bearer token), from `app`'s own
    /// pages (`Origin`).
    pub fn request(
        &self,
        app: &crate::helpers::TestApp,
        method: reqwest::Method,
        path: &str,
    ) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", app.address))
            .header("origin", &app.address)
    }
}
