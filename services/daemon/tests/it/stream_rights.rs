//! Open streams follow their caller's rights: a user disabled or demoted, a token revoked,
//! a session logged out end every stream they hold within a few seconds, with a last `end`
//! event saying why; nothing comes after it.

use std::time::Duration;

use daemon::Roles;
use domain::identity::Role;
use futures::StreamExt;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp};
use crate::oidc_provider::{spawn_signed_in_app, Browser, TestProvider};
use crate::sse;
use crate::users::Caller;

/// How soon a stream must end after its caller lost their rights.
const WITHIN: Duration = Duration::from_secs(5);

async fn app() -> TestApp {
    spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await
}

/// What a caller loses, and the reason their streams' `end` event must give.
#[derive(Debug, Clone, Copy)]
enum Loss {
    Disabled,
    Demoted,
    TokenRevoked,
}

impl Loss {
    const ALL: [Loss; 3] = [Loss::Disabled, Loss::Demoted, Loss::TokenRevoked];

    fn reason(self) -> &'static str {
        match self {
            Loss::Disabled => "user_disabled",
            Loss::Demoted => "role_changed",
            Loss::TokenRevoked => "credential_revoked",
        }
    }

    /// Takes the loss away from `caller` (an admin), as a super admin or they themselves do.
    async fn inflict(self, root: &Caller, caller: &Caller) {
        let user = format!("/api/v1/admin/users/{}", caller.id);
        match self {
            Loss::Disabled => {
                let body = json!({"status": "disabled"});
                let _: Value = root.json("PATCH", &user, Some(&body), 200).await;
            }
            Loss::Demoted => {
                let body = json!({"role": "user"});
                let _: Value = root.json("PATCH", &user, Some(&body), 200).await;
            }
            Loss::TokenRevoked => {
                let tokens: Vec<Value> = caller.json("GET", "/api/v1/tokens", None, 200).await;
                let id = tokens
                    .iter()
                    .find(|t| t["name"] == "tests")
                    .expect("the caller's token")["id"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                let path = format!("/api/v1/tokens/{id}");
                assert_eq!(caller.status("DELETE", &path, None).await, 204);
            }
        }
    }
}

/// Reads `response` (an open stream) until it ends; its events, the last one the `end`.
/// Fails if it has not ended `within` of now.
pub async fn events_until_end(response: reqwest::Response, within: Duration) -> Vec<sse::SseEvent> {
    assert_eq!(response.status(), 200);
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    let mut events = vec![];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, body.next()).await {
            Err(_) => panic!("the stream was still open after {within:?}: {events:?}"),
            Ok(None) => return events,
            Ok(Some(chunk)) => {
                buffer.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
                events.extend(sse::parse(&mut buffer));
            }
        }
    }
}

/// Opens `path` as `caller`, takes their rights away by `loss`, and checks the stream ends
/// in time with an `end` event of the right reason, and sends nothing after it.
async fn ends_on(root: &Caller, caller: &Caller, path: &str, loss: Loss) {
    let stream = caller.request("GET", path).send().await.unwrap();
    assert_eq!(stream.status(), 200, "{path}");
    // The stream is running before the change.
    tokio::time::sleep(Duration::from_millis(300)).await;
    loss.inflict(root, caller).await;
    let events = events_until_end(stream, WITHIN).await;
    let last = events
        .last()
        .unwrap_or_else(|| panic!("{path} {loss:?}: no events"));
    assert_eq!(last.event, "end", "{path} {loss:?}: {events:?}");
    assert_eq!(
        last.data["reason"],
        loss.reason(),
        "{path} {loss:?}: {last:?}"
    );
    assert!(last.data["detail"].is_string(), "{last:?}");
}

#[tokio::test]
async fn the_admin_stream_ends_when_its_admin_is_disabled_demoted_or_loses_their_token() {
    let app = app().await;
    let root = app.user("root@example.org", Role::SuperAdmin).await;
    for (n, loss) in Loss::ALL.into_iter().enumerate() {
        let admin = app
            .user(&format!("admin{n}@example.org"), Role::Admin)
            .await;
        ends_on(
            &root,
            &admin,
            "/api/v1/admin/stream?exclude_logs=true",
            loss,
        )
        .await;
    }
}

#[tokio::test]
async fn the_list_stream_ends_when_its_user_is_disabled_demoted_or_loses_their_token() {
    let app = app().await;
    let root = app.user("root@example.org", Role::SuperAdmin).await;
    for (n, loss) in Loss::ALL.into_iter().enumerate() {
        let admin = app
            .user(&format!("admin{n}@example.org"), Role::Admin)
            .await;
        ends_on(&root, &admin, "/api/v1/vms/stream", loss).await;
    }
}

#[tokio::test]
async fn a_vms_stream_ends_when_its_owner_is_disabled_demoted_or_loses_their_token() {
    let app = app().await;
    let root = app.user("root@example.org", Role::SuperAdmin).await;
    for (n, loss) in Loss::ALL.into_iter().enumerate() {
        let owner = app
            .user(&format!("owner{n}@example.org"), Role::Admin)
            .await;
        let name = format!("vm-{n}");
        let vm: Value = owner
            .json(
                "POST",
                "/api/v1/vms",
                Some(&vm_request(json!({"name": name}))),
                202,
            )
            .await;
        let path = format!("/api/v1/vms/{}/stream", vm["id"].as_str().unwrap());
        ends_on(&root, &owner, &path, loss).await;
    }
}

#[tokio::test]
async fn a_stream_of_a_caller_whose_rights_hold_stays_open() {
    let app = app().await;
    let ada = app.user("ada@example.org", Role::User).await;
    let stream = ada
        .request("GET", "/api/v1/vms/stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let mut body = stream.bytes_stream();
    // Several checks of her rights pass: the stream neither ends nor sends an `end`.
    let quiet = tokio::time::timeout(Duration::from_secs(5), body.next()).await;
    assert!(quiet.is_err(), "the stream sent or ended: {quiet:?}");
}

#[tokio::test]
async fn a_stream_opened_with_a_session_ends_when_the_session_logs_out() {
    let provider = TestProvider::start().await;
    let app = spawn_signed_in_app(&provider, |_| {}).await;
    let browser = Browser::new();
    assert_eq!(
        browser
            .sign_in(&app, "alice", "alice-password")
            .await
            .status(),
        303
    );
    let stream = browser
        .request(&app, reqwest::Method::GET, "/api/v1/vms/stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let logout = browser
        .request(&app, reqwest::Method::POST, "/api/v1/auth/logout")
        .send()
        .await
        .unwrap();
    assert_eq!(logout.status(), 200);
    let events = events_until_end(stream, WITHIN).await;
    let last = events.last().expect("an end event");
    assert_eq!(last.event, "end", "{events:?}");
    assert_eq!(last.data["reason"], "credential_revoked", "{last:?}");
}
