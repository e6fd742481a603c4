//! `allow_ssh_from`: networks within the platform's limit, written as networks, and `me`
//! for the caller's own address (the connection's peer, or a trusted proxy's header).

use daemon::Roles;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, try_spawn_app, vm_request, TestApp};
use crate::wire::{Problem, Vm};

fn no_terraform() -> Roles {
    Roles {
        dispatcher: false,
        ..Roles::ALL
    }
}

/// What the VM's request recorded as its SSH networks.
async fn allowed(app: &TestApp, vm: &Vm) -> Value {
    let events = app.events(&vm.id).await;
    assert_eq!(events[0].kind, "Requested");
    events[0].data["spec"]["allow_ssh_from"].clone()
}

async fn create_from(
    app: &TestApp,
    networks: Value,
    forwarded_for: Option<&str>,
) -> reqwest::Response {
    let mut request = app
        .post("/api/v1/vms")
        .json(&vm_request(json!({"allow_ssh_from": networks})));
    if let Some(value) = forwarded_for {
        request = request.header("x-forwarded-for", value);
    }
    request.send().await.unwrap()
}

#[tokio::test]
async fn the_whole_internet_wide_networks_and_host_addresses_are_refused_with_the_reason() {
    let app = spawn_app_with(no_terraform()).await;
    for (network, reason) in [
        ("0.0.0.0/0", "would let the whole Internet reach SSH"),
        ("10.0.0.0/8", "is wider than /16"),
        (
            "192.0.2.1/24",
            "has host bits set: the network is 192.0.2.0/24",
        ),
    ] {
        let body = vm_request(json!({"allow_ssh_from": ["198.51.100.0/24", network]}));
        let problem: Problem = app.post_json("/api/v1/vms", &body, 422).await;
        assert_eq!(problem.code, "invalid_field");
        assert!(
            problem.detail.starts_with("allow_ssh_from: "),
            "{problem:?}"
        );
        assert!(problem.detail.contains(reason), "{network}: {problem:?}");
    }
    assert_eq!(app.count_events().await, 0, "nothing was recorded");

    let body = vm_request(json!({"allow_ssh_from": ["10.1.0.0/16"]}));
    let vm: Vm = app.post_json("/api/v1/vms", &body, 202).await;
    assert_eq!(allowed(&app, &vm).await, json!(["10.1.0.0/16"]));
}

#[tokio::test]
async fn the_widest_network_is_a_setting() {
    let app = try_spawn_app(no_terraform(), |c| c.ssh_widest_prefix = 24)
        .await
        .unwrap();
    let body = vm_request(json!({"allow_ssh_from": ["10.1.0.0/16"]}));
    let problem: Problem = app.post_json("/api/v1/vms", &body, 422).await;
    assert!(problem.detail.contains("is wider than /24"), "{problem:?}");
    let body = vm_request(json!({"allow_ssh_from": ["10.1.2.0/24"]}));
    app.post_json::<Vm>("/api/v1/vms", &body, 202).await;
}

#[tokio::test]
async fn me_is_the_callers_address_and_a_forwarded_header_is_ignored_by_default() {
    let app = spawn_app_with(no_terraform()).await;
    let response = create_from(&app, json!(["me", "192.0.2.0/24"]), Some("203.0.113.9")).await;
    assert_eq!(response.status(), 202);
    let vm: Vm = response.json().await.unwrap();
    // The test connects over loopback; the header anyone can write is not believed.
    assert_eq!(
        allowed(&app, &vm).await,
        json!(["127.0.0.1/32", "192.0.2.0/24"])
    );
}

#[tokio::test]
async fn behind_a_proxy_me_is_the_address_its_trusted_header_names() {
    let app = try_spawn_app(no_terraform(), |c| {
        c.trusted_client_ip_header = Some("X-Forwarded-For".into())
    })
    .await
    .unwrap();
    // What the client wrote comes first; the proxy appends the peer it saw.
    let response = create_from(&app, json!(["me"]), Some("203.0.113.9, 198.51.100.4")).await;
    assert_eq!(response.status(), 202);
    let vm: Vm = response.json().await.unwrap();
    assert_eq!(allowed(&app, &vm).await, json!(["198.51.100.4/32"]));

    let events = app.count_events().await;
    let missing = create_from(&app, json!(["me"]), None).await;
    assert_eq!(missing.status(), 422);
    let problem: Problem = missing.json().await.unwrap();
    assert!(
        problem.detail.starts_with("allow_ssh_from: "),
        "{problem:?}"
    );
    assert!(problem.detail.contains("x-forwarded-for"), "{problem:?}");

    let v6 = create_from(&app, json!(["me"]), Some("2001:db8::7")).await;
    assert_eq!(v6.status(), 422);
    let problem: Problem = v6.json().await.unwrap();
    assert!(
        problem.detail.starts_with("allow_ssh_from: "),
        "{problem:?}"
    );
    assert!(
        problem.detail.contains("2001:db8::7, an IPv6 address"),
        "{problem:?}"
    );
    assert_eq!(app.count_events().await, events, "nothing was recorded");
}
