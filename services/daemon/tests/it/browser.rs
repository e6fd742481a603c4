//! A real headless Chromium for the console's tests: Debian's `chromium` driven through
//! `chromedriver` (both installed by `deploy/local/test.sh`), which each test starts on a
//! free loopback port and stops when its [`Chromium`] is dropped; and axe-core (the pinned
//! package of `tests/axe/`), injected into a page to check it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{json, Value};

/// One browser session and the chromedriver behind it.
pub struct Chromium {
    pub client: Client,
    driver: Child,
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Whether the page runs scripts: a page read without JavaScript is checked with `Off`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scripts {
    On,
    Off,
}

impl Chromium {
    /// A headless Chromium, 1280×900 (phone width: [`Chromium::resize`]).
    pub async fn start(scripts: Scripts) -> Self {
        let port = free_port();
        let driver = Command::new(binary("CHROMEDRIVER", "chromedriver"))
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs: deploy/local/test.sh installs Debian's chromium-driver");
        let url = format!("http://127.0.0.1:{port}");
        let mut options = json!({
            "binary": binary("CHROMIUM", "chromium"),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--window-size=1280,900"],
        });
        if scripts == Scripts::Off {
            options["prefs"] = json!({"profile.managed_default_content_settings.javascript": 2});
        }
        let mut capabilities = serde_json::Map::new();
        capabilities.insert("goog:chromeOptions".into(), options);
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            let connector = hyper_util::client::legacy::connect::HttpConnector::new();
            match ClientBuilder::new(connector)
                .capabilities(capabilities.clone())
                .connect(&url)
                .await
            {
                Ok(client) => break client,
                Err(e) if Instant::now() > deadline => panic!("no session from chromedriver: {e}"),
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        };
        Chromium { client, driver }
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    /// The text of the first element matching `css`.
    pub async fn text(&self, css: &str) -> String {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Fills the field `css` with `value`.
    pub async fn fill(&self, css: &str, value: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(value).await.unwrap();
    }

    pub async fn click(&self, css: &str) {
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
    }

    /// Waits up to `seconds` for `check` on the page's text of `css` to hold; the text.
    pub async fn wait_for_text(
        &self,
        css: &str,
        seconds: u64,
        check: impl Fn(&str) -> bool,
    ) -> String {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            let text = match self.client.find(Locator::Css(css)).await {
                Ok(element) => element.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if check(&text) {
                return text;
            }
            assert!(Instant::now() < deadline, "{css} never held: last {text:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn resize(&self, width: u32, height: u32) {
        self.client.set_window_size(width, height).await.unwrap();
    }

    /// The serious and critical violations axe-core finds on the page: `impact id: help
    /// (targets)` each.
    pub async fn accessibility_violations(&self) -> Vec<String> {
        let axe = std::fs::read_to_string(axe_path()).expect("axe-core is installed by test.sh");
        self.client.execute(&axe, vec![]).await.unwrap();
        let result = self
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1];
                 axe.run(document, {resultTypes: ['violations']})
                    .then(r => done(r.violations), e => done([{id: 'axe', impact: 'critical', help: String(e), nodes: []}]));",
                vec![],
            )
            .await
            .unwrap();
        let Value::Array(violations) = result else {
            panic!("axe answered {result}");
        };
        violations
            .iter()
            .filter(|v| matches!(v["impact"].as_str(), Some("serious" | "critical")))
            .map(|v| {
                let targets: Vec<String> = v["nodes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|n| n["target"].to_string())
                    .collect();
                format!(
                    "{} {}: {} ({})",
                    v["impact"],
                    v["id"],
                    v["help"],
                    targets.join(", ")
                )
            })
            .collect()
    }

    /// A PNG of the page as it is now.
    pub async fn screenshot(&self, to: &Path) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(to, png).unwrap();
    }
}

/// The program the environment variable `var` names, else `name` found on `PATH` (the
/// driver wants a path to the browser).
fn binary(var: &str, name: &str) -> String {
    if let Ok(program) = std::env::var(var) {
        return program;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|file| file.is_file())
        .map_or_else(|| name.to_owned(), |file| file.display().to_string())
}

fn axe_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/axe/node_modules/axe-core/axe.min.js")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
