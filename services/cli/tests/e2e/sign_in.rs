//! Sign-in in a browser through the suite's real OpenID provider: the device flow and the
//! loopback flow (the test is the browser, going through the provider's pages), then the
//! platform takes the kept access token; an ended access token is refreshed before a call.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::cli;
use crate::provider::{Browser, Landing, Provider};

/// `provisioning args` running, its stderr's lines sent as they come.
pub fn start(config: &std::path::Path, args: &[&str]) -> (Child, mpsc::UnboundedReceiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_provisioning"))
        .args(args)
        .env_remove("PROVISIONING_URL")
        .env_remove("PROVISIONING_TOKEN")
        .env_remove("BROWSER")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .env("XDG_CONFIG_HOME", config)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the CLI starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// The first line of `lines` that `pick` finds something in, within 30 s.
pub async fn wait_for(
    lines: &mut mpsc::UnboundedReceiver<String>,
    pick: impl Fn(&str) -> Option<String>,
) -> String {
    let mut seen = vec![];
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.recv().await {
            if let Some(found) = pick(&line) {
                return Some(found);
            }
            seen.push(line);
        }
        None
    })
    .await;
    match found {
        Ok(Some(found)) => found,
        _ => panic!("the CLI never printed what was awaited; it printed {seen:#?}"),
    }
}

/// The CLI's end: its exit code and stdout.
async fn finish(child: Child) -> (i32, String) {
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the CLI ends within a minute")
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn credentials(config: &std::path::Path) -> toml::Value {
    let path = config.join("provisioning/credentials.toml");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the credentials are private");
    }
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Signs in through the loopback flow as `login`: the CLI prints the provider's URL, the
/// test's browser goes through the pages and comes back to the CLI's listener.
async fn loopback_sign_in(config: &std::path::Path, url: &str, login: &str, password: &str) {
    let (child, mut lines) = start(config, &["login", url, "--no-browser"]);
    let start_url = wait_for(&mut lines, |line| {
        let line = line.trim();
        line.starts_with("http").then(|| line.to_owned())
    })
    .await;
    let redirect = reqwest::Url::parse(&start_url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .expect("the sign-in URL names the loopback redirect");
    assert!(redirect.starts_with("http://127.0.0.1:"), "{redirect}");
    let browser = Browser::new();
    let Landing::Redirected(back) = browser
        .sign_in(&start_url, &redirect, login, password)
        .await
    else {
        panic!("the provider never sent the browser back to {redirect}");
    };
    // The browser comes back to the CLI with the code.
    let page = reqwest::get(&back).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Signed in"));
    let (code, stdout) = finish(child).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("Signed in to"), "{stdout}");
}

#[tokio::test]
async fn device_sign_in_through_the_providers_pages_then_me_shows_the_user() {
    let provider = Provider::start(&[]).await;
    let daemon = provider.daemon().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();

    // The platform tells the CLI its provider and client, without a credential.
    let told: serde_json::Value = reqwest::get(format!("{}/api/v1/cli/config", daemon.url))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(told["sign_in"]["issuer"], provider.issuer.as_str());
    assert_eq!(told["sign_in"]["client_id"], "provisioning-cli");

    let (child, mut lines) = start(config, &["login", &daemon.url, "--device"]);
    let page = wait_for(&mut lines, |line| {
        line.trim()
            .strip_prefix("(or open ")
            .map(|rest| rest.trim_end_matches(')').to_owned())
    })
    .await;
    // A person opens the page, finds the code there, signs in and consents.
    let landing = Browser::new()
        .sign_in(&page, "http://unused.invalid", "alice", "alice-password")
        .await;
    let Landing::Page(done) = landing else {
        panic!("the device flow redirected: {landing:?}");
    };
    assert!(done.contains("Signed in"), "{done}");
    let (code, stdout) = finish(child).await;
    assert_eq!(code, 0, "{stdout}");
    assert!(stdout.contains("as alice@example.org"), "{stdout}");

    let kept = credentials(config);
    assert!(
        kept["default"]["sign_in"]["refresh_token"].is_str(),
        "{kept}"
    );
    let me = cli(config, &[], &["me"], None).await.expect(0);
    assert!(me.stdout.contains("alice@example.org"), "{me:#?}");
    let json = cli(config, &[], &["me", "-o", "json"], None)
        .await
        .expect(0);
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(json["email"], "alice@example.org");
}

#[tokio::test]
async fn loopback_sign_in_with_the_test_as_the_browser_then_the_platform_takes_the_token() {
    let provider = Provider::start(&[]).await;
    let daemon = provider.daemon().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();

    loopback_sign_in(config, &daemon.url, "carol", "carol-password").await;
    let list = cli(config, &[], &["vm", "list", "-o", "json"], None)
        .await
        .expect(0);
    assert_eq!(list.stdout.trim(), "[]", "{list:#?}");
    let me = cli(config, &[], &["me"], None).await.expect(0);
    assert!(me.stdout.contains("carol@example.org"), "{me:#?}");

    // Signed out: nothing kept, and the platform is not called as anyone.
    cli(config, &[], &["logout"], None).await.expect(0);
    cli(config, &[], &["me"], None).await.expect(4);
}

#[tokio::test]
async fn an_ended_access_token_is_refreshed_before_the_call() {
    // Access tokens for the platform live 3 seconds.
    let provider = Provider::start(&[("OIDC_API_TOKEN_TTL", "3")]).await;
    let daemon = provider.daemon().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    loopback_sign_in(config, &daemon.url, "bob", "bob-password").await;
    let first = credentials(config);
    let old_token = first["default"]["token"].as_str().unwrap().to_owned();
    let old_refresh = first["default"]["sign_in"]["refresh_token"].clone();

    // Past its end (and the platform's 2 s leeway) the old token is refused...
    tokio::time::sleep(Duration::from_secs(6)).await;
    let refused = reqwest::Client::new()
        .get(format!("{}/api/v1/me", daemon.url))
        .bearer_auth(&old_token)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    // ... and the CLI refreshes it first, keeping the new tokens.
    let me = cli(config, &[], &["me", "-v"], None).await.expect(0);
    assert!(me.stdout.contains("bob@example.org"), "{me:#?}");
    assert!(me.stderr.contains("refreshing it"), "{me:#?}");
    let second = credentials(config);
    assert_ne!(second["default"]["token"].as_str().unwrap(), old_token);
    assert_ne!(
        second["default"]["sign_in"]["refresh_token"], old_refresh,
        "the provider rotates refresh tokens"
    );
}
