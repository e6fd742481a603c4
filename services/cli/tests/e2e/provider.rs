//! The suite's real OpenID provider (`services/daemon/tests/oidc/provider.mjs`, the
//! oidc-provider package run by Node) as a child process, a daemon signing in through it,
//! and a browser that goes through its pages as a person would: forms read and submitted,
//! redirects followed one by one, cookies kept.

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::daemon::Daemon;

/// The command line's public client, as provider.mjs registers it.
pub const CLI_CLIENT: &str = "provisioning-cli";
/// The audience of the provider's JWT access tokens for the platform.
pub const AUDIENCE: &str = "https://provisioning.test/api";

pub struct Provider {
    pub issuer: String,
    child: Child,
}

fn provider_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../daemon/tests/oidc"))
}

impl Provider {
    /// Starts the provider with `env` (`OIDC_API_TOKEN_TTL`, ...).
    pub async fn start(env: &[(&str, &str)]) -> Provider {
        let dir = provider_dir();
        if !dir.join("node_modules/oidc-provider").exists() {
            let status = Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&dir)
                .stdout(Stdio::null())
                .status()
                .expect("npm runs");
            assert!(status.success(), "npm ci failed in {}", dir.display());
        }
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if std::env::var("TEST_LOG").is_ok() {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .spawn()
            .expect("node runs");
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
        Provider {
            issuer: ready["issuer"].as_str().unwrap().to_owned(),
            child,
        }
    }

    /// A daemon whose users sign in through this provider, the command line with its
    /// public client.
    pub async fn daemon(&self) -> Daemon {
        let issuer = self.issuer.clone();
        Daemon::start_with(move |config| {
            config.oidc = Some(daemon::OidcConfig {
                issuer,
                client_id: "provisioning".into(),
                client_secret: "provisioning-test-secret".to_owned().into(),
                scopes: vec!["openid".into(), "profile".into(), "email".into()],
                audience: Some(AUDIENCE.into()),
                groups_claim: "groups".into(),
                cli_client_id: Some(CLI_CLIENT.into()),
            });
        })
        .await
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A browser: a cookie jar, redirects followed one at a time, forms filled in and sent.
pub struct Browser {
    client: reqwest::Client,
}

/// Where a browser ends up.
#[derive(Debug)]
pub enum Landing {
    /// Sent to a URL under the one it was told to stop at (not visited).
    Redirected(String),
    /// A page without a form.
    Page(String),
}

impl Browser {
    pub fn new() -> Browser {
        Browser {
            client: reqwest::Client::builder()
                .cookie_store(true)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    /// Opens `start` and goes on through every form as a person signing in as `login`
    /// would (the code prefilled, login and password typed in, consent given), until a
    /// page without a form or a redirect to a URL starting with `stop_at`.
    pub async fn sign_in(
        &self,
        start: &str,
        stop_at: &str,
        login: &str,
        password: &str,
    ) -> Landing {
        let mut url = reqwest::Url::parse(start).unwrap();
        let mut response = self.client.get(url.clone()).send().await.unwrap();
        for _ in 0..30 {
            let status = response.status();
            if status.is_redirection() {
                let location = response.headers()["location"].to_str().unwrap().to_owned();
                url = url.join(&location).unwrap();
                if url.as_str().starts_with(stop_at) {
                    return Landing::Redirected(url.to_string());
                }
                response = self.client.get(url.clone()).send().await.unwrap();
                continue;
            }
            let page = response.text().await.unwrap();
            assert_eq!(status, 200, "{url}: {page}");
            let Some(form) = Form::first(&page) else {
                return Landing::Page(page);
            };
            let fields: Vec<(String, String)> = form
                .inputs
                .into_iter()
                .map(|(name, value)| {
                    let typed = match name.as_str() {
                        "login" => login.to_owned(),
                        "password" => password.to_owned(),
                        _ => value,
                    };
                    (name, typed)
                })
                .collect();
            url = url.join(&form.action).unwrap();
            response = self
                .client
                .post(url.clone())
                .form(&fields)
                .send()
                .await
                .unwrap();
        }
        panic!("the provider's pages never ended (last at {url})");
    }
}

/// The first form of a page: where it goes and its inputs' names and values.
struct Form {
    action: String,
    inputs: Vec<(String, String)>,
}

impl Form {
    fn first(page: &str) -> Option<Form> {
        let start = page.find("<form")?;
        let end = page[start..]
            .find("</form>")
            .map_or(page.len(), |e| start + e);
        let form = &page[start..end];
        let tag_end = form.find('>')?;
        let action = attribute(&form[..tag_end], "action")?.replace("&amp;", "&");
        let mut inputs = vec![];
        let mut rest = form;
        while let Some(at) = rest.find("<input") {
            let tag = &rest[at..];
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            if let Some(name) = attribute(tag, "name") {
                inputs.push((name, attribute(tag, "value").unwrap_or_default()));
            }
            rest = &rest[at + 6..];
        }
        Some(Form { action, inputs })
    }
}

fn attribute(tag: &str, name: &str) -> Option<String> {
    let key = format!(" {name}=\"");
    let normal = tag.replace(['\n', '\t'], " ");
    let start = normal.find(&key)? + key.len();
    let end = normal[start..].find('"')?;
    Some(normal[start..start + end].to_owned())
}
