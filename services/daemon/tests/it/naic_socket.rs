//! The NAIC frontend's live updates (`/socket.io/`, namespace `/vm`) through a real Socket.IO
//! client: `socket.io-client` from `tests/socketio/`, run by Node. Sockets are admitted by the
//! session cookie of a sign-in through the suite's real OpenID provider.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use reqwest::Method;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::helpers::{expect_json, vm_request, TestApp};
use crate::oidc_provider::{
    npm_ci, spawn_signed_in_app, Browser, TestProvider, CLIENT_ID, CLIENT_SECRET,
};

/// How long a test waits for one thing from the client.
const WITHIN: Duration = Duration::from_secs(60);

fn client_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/socketio")
}

/// `npm ci` once per test run when `node_modules` is missing.
fn install() {
    static INSTALLED: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    INSTALLED.get_or_init(|| npm_ci(&client_dir(), "socket.io-client"));
}

/// How a client's handshake names the page it comes from.
#[derive(Clone, Copy)]
enum Page<'a> {
    Origin(&'a str),
    Referer(&'a str),
}

/// A Socket.IO client connected (or refused) by Node, and what it reported.
struct Client {
    _child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Client {
    /// Connects to namespace `/vm` of `app` with `cookie` (and `app`'s own `Origin`) and
    /// the `userId` claimed in its `auth`.
    async fn connect(app: &TestApp, cookie: Option<&str>, user_id: Option<&str>) -> Self {
        Self::connect_from(app, &app.address, cookie, user_id).await
    }

    /// Connected with WebSocket only: a browser's WebSocket handshake, which always names
    /// its page's `Origin`.
    async fn connected_by_websocket(app: &TestApp, cookie: &str) -> Self {
        let page = Page::Origin(&app.address);
        let mut client = Self::spawn(app, page, Some(cookie), None, Some("websocket"));
        let first = client.next().await;
        assert_eq!(first["event"], "connect", "{first}");
        client
    }

    /// Connected with long-polling only, naming its page in `Referer` alone: what a
    /// browser's same-origin `GET` sends.
    async fn connected_by_polling_with_referer(app: &TestApp, cookie: &str) -> Self {
        let page = format!("{}/dashboard", app.address);
        let page = Page::Referer(&page);
        let mut client = Self::spawn(app, page, Some(cookie), None, Some("polling"));
        let first = client.next().await;
        assert_eq!(first["event"], "connect", "{first}");
        client
    }

    /// Connects as a page of `origin` would.
    async fn connect_from(
        app: &TestApp,
        origin: &str,
        cookie: Option<&str>,
        user_id: Option<&str>,
    ) -> Self {
        Self::spawn(app, Page::Origin(origin), cookie, user_id, None)
    }

    /// Starts the client; `transports` as Socket.IO's option, comma-separated (long-polling
    /// upgraded to WebSocket unless given).
    fn spawn(
        app: &TestApp,
        page: Page<'_>,
        cookie: Option<&str>,
        user_id: Option<&str>,
        transports: Option<&str>,
    ) -> Self {
        install();
        let mut command = Command::new("node");
        command
            .arg(client_dir().join("client.mjs"))
            .env("SOCKET_URL", format!("{}/vm", app.address))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        match page {
            Page::Origin(origin) => command.env("SOCKET_ORIGIN", origin),
            Page::Referer(referer) => command.env("SOCKET_REFERER", referer),
        };
        let optional = [
            ("SOCKET_COOKIE", cookie),
            ("SOCKET_USER_ID", user_id),
            ("SOCKET_TRANSPORTS", transports),
        ];
        for (name, value) in optional {
            if let Some(value) = value {
                command.env(name, value);
            }
        }
        let mut child = command.spawn().expect("node runs");
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            _child: child,
            lines,
        }
    }

    /// The next thing the client reports; `None` if nothing comes within `limit`.
    async fn next_within(&mut self, limit: Duration) -> Option<Value> {
        match tokio::time::timeout(limit, self.lines.next_line()).await {
            Ok(line) => {
                let line = line.unwrap().expect("the client reports before it exits");
                Some(serde_json::from_str(&line).unwrap())
            }
            Err(_) => None,
        }
    }

    async fn next(&mut self) -> Value {
        self.next_within(WITHIN)
            .await
            .expect("the client reports something")
    }

    /// Connected; fails with what the client said otherwise.
    async fn connected(app: &TestApp, cookie: Option<&str>, user_id: Option<&str>) -> Self {
        let mut client = Self::connect(app, cookie, user_id).await;
        let first = client.next().await;
        assert_eq!(first["event"], "connect", "{first}");
        client
    }

    /// The updates of VM `vm` until it shows `last`, in order: each status and address.
    async fn updates_until(&mut self, vm: &str, last: &str) -> Vec<(String, Option<String>)> {
        let mut seen = Vec::new();
        loop {
            let line = self.next().await;
            assert_eq!(line["event"], "update", "{line} after {seen:?}");
            let data = &line["data"];
            assert_eq!(data["vmId"], vm, "an update of another VM: {data}");
            let status = data["status"].as_str().unwrap().to_owned();
            let ip = match &data["ipv4Address"] {
                Value::Null => None,
                Value::String(ip) => Some(ip.clone()),
                other => panic!("ipv4Address is {other}"),
            };
            seen.push((status.clone(), ip));
            if status == last {
                return seen;
            }
        }
    }
}

/// The `name=value` of the session cookie a sign-in set.
fn session_cookie(response: &reqwest::Response) -> String {
    response
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|c| c.starts_with("provisioning_session="))
        .and_then(|c| c.split(';').next())
        .expect("a session cookie")
        .to_owned()
}

/// Signs `login` in to `app`: the session cookie, and the user's id.
async fn signed_in(app: &TestApp, login: &str, password: &str) -> (Browser, String, String) {
    let browser = Browser::new();
    let response = browser.sign_in(app, login, password).await;
    assert_eq!(response.status(), 303);
    let cookie = session_cookie(&response);
    let status: Value = expect_json(
        browser
            .request(app, Method::GET, "/api/v1/auth/status")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let user = status["user"]["id"].as_str().expect("a user id").to_owned();
    (browser, cookie, user)
}

/// Daemon A (the API only, with sign-in) and daemon B (every role, sign-in too) on one
/// database: B runs the jobs of the VMs created through A.
async fn two_daemons(provider: &TestProvider) -> (TestApp, TestApp) {
    let a = spawn_signed_in_app(provider, |_| {}).await;
    let b = a
        .spawn_replica_as(daemon::Roles::ALL, |config| {
            config.oidc = Some(daemon::OidcConfig {
                issuer: provider.issuer.clone(),
                client_id: CLIENT_ID.into(),
                client_secret: CLIENT_SECRET.to_owned().into(),
                scopes: vec!["openid".into(), "profile".into(), "email".into()],
                audience: None,
                groups_claim: "groups".into(),
                cli_client_id: None,
            });
        })
        .await;
    (a, b)
}

async fn create_as(browser: &Browser, app: &TestApp, name: &str) -> String {
    let response = browser
        .request(app, Method::POST, "/api/v1/vms")
        .json(&vm_request(json!({ "name": name })))
        .send()
        .await
        .unwrap();
    let vm: Value = expect_json(response, 202).await;
    vm["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_signed_in_browser_sees_its_own_vm_reach_provisioned_and_nothing_of_others() {
    let provider = TestProvider::start().await;
    let (a, _b) = two_daemons(&provider).await;
    let (browser, cookie, user) = signed_in(&a, "alice", "alice-password").await;
    let mut client = Client::connected(&a, Some(&cookie), Some(&user)).await;

    // Another user's VM (the built-in admin's) first: none of its changes reach alice.
    let others = a.create_ok(json!({"name": "not-alices"})).await;
    a.wait_for_status(&others, "provisioned").await;
    let vm = create_as(&browser, &a, "alices").await;
    let seen = client.updates_until(&vm, "PROVISIONING_COMPLETED").await;
    let statuses: Vec<&str> = seen.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        statuses,
        [
            "TO_BE_PROVISIONED",
            "PROVISIONING",
            "PROVISIONING_COMPLETED"
        ]
    );
    // The last push names the address the VM got, as its read model shows once it caught up.
    let shown = a.wait_for_status(&vm, "provisioned").await;
    assert!(shown.ip.is_some(), "{shown:?}");
    assert_eq!(seen.last().unwrap().1, shown.ip);
    assert_eq!(seen[0].1, None);
    // Nothing else came: not a word of the other VM.
    assert_eq!(client.next_within(Duration::from_secs(1)).await, None);
}

#[tokio::test]
async fn a_vm_created_through_one_daemon_is_pushed_to_a_socket_on_another() {
    let provider = TestProvider::start().await;
    let (a, b) = two_daemons(&provider).await;
    let (browser, cookie, _) = signed_in(&a, "alice", "alice-password").await;
    // Without a claimed userId: the session alone names the user. One socket starts with
    // long-polling, one with WebSocket only, one keeps long-polling and names its page in
    // `Referer` only.
    let mut polling = Client::connected(&b, Some(&cookie), None).await;
    let mut websocket = Client::connected_by_websocket(&b, &cookie).await;
    let mut referred = Client::connected_by_polling_with_referer(&b, &cookie).await;
    let vm = create_as(&browser, &a, "through-a").await;
    for client in [&mut polling, &mut websocket, &mut referred] {
        let first = client.next().await;
        assert_eq!(first["event"], "update", "{first}");
        assert_eq!(first["data"]["vmId"], vm.as_str());
        assert_eq!(first["data"]["status"], "TO_BE_PROVISIONED");
        assert_eq!(first["data"]["ipv4Address"], Value::Null);
    }
}

#[tokio::test]
async fn a_socket_without_a_session_or_claiming_another_user_is_refused() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let mut anonymous = Client::connect(&app, None, None).await;
    let refused = anonymous.next().await;
    assert_eq!(refused["event"], "connect_error", "{refused}");
    assert_eq!(refused["message"], "no session: sign in first");

    let mut unknown = Client::connect(&app, Some("provisioning_session=made-up"), None).await;
    let refused = unknown.next().await;
    assert_eq!(refused["event"], "connect_error", "{refused}");
    assert_eq!(refused["message"], "the session ended: sign in again");

    let (_browser, cookie, user) = signed_in(&app, "alice", "alice-password").await;
    let other = uuid::Uuid::new_v4().to_string();
    let mut claiming = Client::connect(&app, Some(&cookie), Some(&other)).await;
    let refused = claiming.next().await;
    assert_eq!(refused["event"], "connect_error", "{refused}");
    assert_eq!(
        refused["message"],
        "the userId claimed is not the session's user"
    );
    // Her own id is fine.
    Client::connected(&app, Some(&cookie), Some(&user)).await;
}

#[tokio::test]
async fn a_socket_from_another_site_is_refused() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let (_browser, cookie, _) = signed_in(&app, "alice", "alice-password").await;
    let mut elsewhere =
        Client::connect_from(&app, "https://elsewhere.example", Some(&cookie), None).await;
    let refused = elsewhere.next().await;
    assert_eq!(refused["event"], "connect_error", "{refused}");
    assert_eq!(
        refused["message"],
        "a socket with the session cookie must come from this site"
    );
}

#[tokio::test]
async fn a_socket_whose_user_is_disabled_is_disconnected() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let (_browser, cookie, user) = signed_in(&app, "alice", "alice-password").await;
    let mut client = Client::connected(&app, Some(&cookie), None).await;
    let _: Value = app
        .send_json(
            "PATCH",
            &format!("/api/v1/admin/users/{user}"),
            &json!({"status": "disabled"}),
            200,
        )
        .await;
    let gone = client
        .next_within(Duration::from_secs(10))
        .await
        .expect("a disconnect within a few seconds");
    assert_eq!(gone["event"], "disconnect", "{gone}");
    assert_eq!(gone["reason"], "io server disconnect");
}

#[tokio::test]
async fn a_socket_whose_session_logs_out_is_disconnected() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let (browser, cookie, _) = signed_in(&app, "alice", "alice-password").await;
    let mut client = Client::connected(&app, Some(&cookie), None).await;
    let logout = browser
        .request(&app, Method::POST, "/api/v1/auth/logout")
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), 200);
    let gone = client
        .next_within(Duration::from_secs(10))
        .await
        .expect("a disconnect within a few seconds");
    assert_eq!(gone["event"], "disconnect", "{gone}");
    assert_eq!(gone["reason"], "io server disconnect");
}
