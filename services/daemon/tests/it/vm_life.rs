//! The VM's life around its jobs, end to end with real Terraform on `local`: boot callbacks
//! and readiness, the boot timeout, extension, expiry and its warnings. No VM boots on
//! `local`, and the tests' configuration turns the simulated boot off, so the tests call the
//! callback URLs themselves, as cloud-init would, reading them from the cloud-init the
//! dispatcher rendered into the job's working directory.

use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};

use crate::helpers::{try_spawn_app, vm_request, TestApp};
use crate::wire::{kinds, Event, JobDetail, Problem, Vm, VmPage};

/// The callback URLs in the cloud-init of job 1 of `vm`, by kind.
struct Urls {
    boot_started: String,
    phone_home: String,
    app_starting: String,
    app_ready: String,
    app_failed: String,
}

fn callback_urls(app: &TestApp, vm: &str) -> Urls {
    let vars = app.work.path().join(vm).join("job-1/terraform.tfvars.json");
    let vars: Value = serde_json::from_slice(&std::fs::read(vars).unwrap()).unwrap();
    let cloud_init = vars["user_data"].as_str().unwrap();
    let after = |marker: &str| {
        let start = cloud_init
            .find(marker)
            .unwrap_or_else(|| panic!("no {marker} in {cloud_init}"))
            + marker.len();
        let rest = &cloud_init[start..];
        rest[..rest.find('"').unwrap()].to_owned()
    };
    let urls = Urls {
        boot_started: after("status=boot_started\" \""),
        phone_home: after("phone_home:\n  url: \""),
        app_starting: after("APP_STARTING_URL=\""),
        app_ready: after("APP_READY_URL=\""),
        app_failed: after("APP_FAILED_URL=\""),
    };
    let base = format!("{}/api/v1/callbacks/", app.address);
    for url in [&urls.boot_started, &urls.phone_home, &urls.app_ready] {
        assert!(url.starts_with(&base), "{url} starts with the public URL");
    }
    urls
}

/// Posts a callback as cloud-init does (a form), or as an application would (JSON).
async fn call(url: &str, body: Option<Value>) -> u16 {
    let client = reqwest::Client::new();
    let request = match body {
        Some(json) => client.post(url).json(&json),
        None => client
            .post(url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("instance_id=i-0042&hostname=web-1&fqdn=web-1.example.org"),
    };
    request.send().await.unwrap().status().as_u16()
}

async fn life_app(configure: impl FnOnce(&mut daemon::Config)) -> TestApp {
    try_spawn_app(daemon::Roles::ALL, |config| {
        config.lifecycle.sweep_every = Duration::from_millis(500);
        configure(config);
    })
    .await
    .expect("the application starts")
}

async fn create(app: &TestApp, name: &str) -> String {
    let vm: Vm = app
        .post_json("/api/v1/vms", &vm_request(json!({"name": name})), 202)
        .await;
    // Generous: several real Terraform runs share the machine with other tests.
    app.wait_for_status_within(&vm.id, "provisioned", Duration::from_secs(120))
        .await;
    vm.id
}

async fn extend<T: serde::de::DeserializeOwned>(
    app: &TestApp,
    id: &str,
    hours: i64,
    status: u16,
) -> T {
    let path = format!("/api/v1/vms/{id}/extend");
    app.post_json(&path, &json!({ "hours": hours }), status)
        .await
}

async fn set_expiry<T: serde::de::DeserializeOwned>(
    app: &TestApp,
    id: &str,
    expires_at: impl serde::Serialize,
    status: u16,
) -> T {
    let path = format!("/api/v1/vms/{id}");
    let body = json!({ "expires_at": expires_at });
    app.send_json("PATCH", &path, &body, status).await
}

/// A second from now, in RFC 3339 to the microsecond, as the platform keeps times.
fn in_a_second() -> String {
    let soon = time::OffsetDateTime::now_utc() + time::Duration::seconds(1);
    domain::provisioning::expiry::micros(soon)
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap()
}

fn time(s: &str) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).unwrap()
}

fn count(events: &[Event], kind: &str) -> usize {
    events.iter().filter(|e| e.kind == kind).count()
}

#[tokio::test]
async fn a_vm_boots_runs_is_extended_and_is_destroyed_by_the_sweep_when_it_expires() {
    // No expiry warning: the default one a day ahead would come for this 8-hour VM at any
    // sweep, among the events this test counts (warnings have a test of their own).
    let app = life_app(|config| config.lifecycle.expiry_warnings = vec![]).await;
    let requested: Vm = app
        .post_json(
            "/api/v1/vms",
            &vm_request(json!({"duration_hours": 8})),
            202,
        )
        .await;
    let id = requested.id.clone();
    let created = time(&requested.created_at);
    let expires = time(requested.expires_at.as_deref().unwrap());
    assert!(
        (expires - created - time::Duration::hours(8)).abs() < time::Duration::seconds(2),
        "expires 8 hours after the request"
    );
    app.wait_for_status(&id, "provisioned").await;
    let urls = callback_urls(&app, &id);

    assert_eq!(call(&urls.boot_started, None).await, 204);
    app.wait_for_status(&id, "initializing").await;
    assert_eq!(call(&urls.phone_home, None).await, 204);
    let vm = app.wait_for_status(&id, "running").await;
    assert_eq!(vm.hostname.as_deref(), Some("web-1"));

    let before = app.events(&id).await.len();
    assert_eq!(call(&urls.phone_home, None).await, 404, "a URL works once");
    assert_eq!(call(&urls.boot_started, None).await, 404);

    assert_eq!(call(&urls.app_starting, Some(json!({}))).await, 204);
    let bad_url = json!({"url": "javascript:alert(1)"});
    assert_eq!(call(&urls.app_ready, Some(bad_url)).await, 422);
    let ready = json!({"url": "https://10.77.0.9:8888/lab"});
    assert_eq!(call(&urls.app_ready, Some(ready)).await, 204);
    let events = app.events(&id).await;
    assert_eq!(
        events.len(),
        before + 2,
        "the refused callbacks changed nothing: {:?}",
        kinds(&events[before.min(events.len())..])
    );
    assert_eq!(
        kinds(&events[before..]),
        ["AppStarting", "AppReady"],
        "{events:?}"
    );
    assert!(events[before..]
        .iter()
        .all(|e| e.actor.as_deref() == Some("vm")));
    // A callback answers no position: the read model shows it a moment later.
    let ready = Some(json!({"state": "ready", "url": "https://10.77.0.9:8888/lab"}));
    let mut app_state = None;
    for _ in 0..100 {
        app_state = app.vm(&id).await.app;
        if app_state == ready {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app_state, ready);

    let extended: Vm = extend(&app, &id, 2, 202).await;
    assert_eq!(
        time(extended.expires_at.as_deref().unwrap()),
        expires + time::Duration::hours(2)
    );
    let too_far: Problem = extend(&app, &id, 160, 422).await;
    assert!(too_far.detail.contains("hours"), "{too_far:?}");
    let past: Problem = set_expiry(&app, &id, "2020-01-01T00:00:00Z", 422).await;
    assert!(past.detail.contains("expires_at"), "{past:?}");

    // The admin sets the expiry a second ahead: the sweep destroys the VM.
    let soon = in_a_second();
    let set: Vm = set_expiry(&app, &id, &soon, 202).await;
    assert_eq!(set.expires_at.map(|t| time(&t)), Some(time(&soon)));
    app.wait_for_status_within(&id, "destroyed", Duration::from_secs(60))
        .await;
    let events = app.events(&id).await;
    let expired = events.iter().find(|e| e.kind == "Expired").unwrap();
    assert_eq!(expired.actor.as_deref(), Some("system"));
    assert_eq!(count(&events, "Expired"), 1);
    let jobs: Vec<JobDetail> = app.get_json(&format!("/api/v1/vms/{id}/jobs")).await;
    let destroy = jobs.iter().find(|j| j.action == "destroy").unwrap();
    assert_eq!(destroy.requested_by.as_deref(), Some("system"));
    assert_eq!(destroy.state, "succeeded");

    let gone: Problem = extend(&app, &id, 1, 409).await;
    assert!(gone.detail.contains("destroyed"), "{gone:?}");
    let failed = json!({"reason": "late"});
    assert_eq!(call(&urls.app_failed, Some(failed)).await, 404);
    assert!(
        expired.data["reason"].as_str().unwrap().contains("expired"),
        "{expired:?}"
    );

    // Archived: out of the default list, its history kept.
    let archived: Vm = app
        .post_json(&format!("/api/v1/vms/{id}/archive"), &json!({}), 200)
        .await;
    assert!(archived.archived);
    let list: VmPage = app.get_json("/api/v1/vms").await;
    assert!(list.items.iter().all(|vm| vm.id != id), "hidden by default");
    let list: VmPage = app.get_json("/api/v1/vms?archived=true").await;
    assert!(list.items.iter().any(|vm| vm.id == id));
    assert_eq!(app.events(&id).await.len(), events.len() + 1);
}

#[tokio::test]
async fn an_expired_altered_or_foreign_callback_url_is_refused_and_changes_nothing() {
    let app = life_app(|config| config.lifecycle.callback_ttl = Duration::from_secs(1)).await;
    let id = create(&app, "web-ttl").await;
    let urls = callback_urls(&app, &id);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let before = app.events(&id).await;
    assert_eq!(call(&urls.phone_home, None).await, 404, "expired");

    let token = urls.phone_home.rsplit('/').next().unwrap();
    let mut altered = token.to_owned().into_bytes();
    altered[3] = if altered[3] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let base = format!("{}/api/v1/callbacks", app.address);
    assert_eq!(call(&format!("{base}/{altered}"), None).await, 404);
    assert_eq!(call(&format!("{base}/not-a-token"), None).await, 404);
    // Signed with another deployment's key.
    let other = domain::callbacks::CallbackSigner::new(vec![9; 32]).unwrap();
    let foreign = other.sign(&domain::callbacks::CallbackClaims {
        vm: id.parse().unwrap(),
        job: domain::provisioning::JobId::FIRST,
        kind: domain::provisioning::CallbackKind::PhoneHome,
        expires: time::OffsetDateTime::now_utc().unix_timestamp() + 600,
        step: 0,
    });
    assert_eq!(call(&format!("{base}/{foreign}"), None).await, 404);

    assert_eq!(app.events(&id).await, before, "nothing recorded");
    assert_eq!(app.vm(&id).await.status, "provisioned");
}

#[tokio::test]
async fn a_vm_that_never_phones_home_is_unreachable_until_a_late_phone_home() {
    let app = life_app(|config| config.lifecycle.boot_timeout = Duration::from_secs(1)).await;
    let id = create(&app, "web-silent").await;
    let urls = callback_urls(&app, &id);
    app.wait_for_status_within(&id, "unreachable", Duration::from_secs(30))
        .await;
    let events = app.events(&id).await;
    let unreachable = events.iter().find(|e| e.kind == "Unreachable").unwrap();
    assert_eq!(unreachable.actor.as_deref(), Some("system"));
    assert!(
        unreachable.data["reason"]
            .as_str()
            .unwrap()
            .contains("did not phone home"),
        "{unreachable:?}"
    );
    assert_eq!(call(&urls.phone_home, None).await, 204);
    app.wait_for_status(&id, "running").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = app.events(&id).await;
    assert_eq!(count(&events, "Unreachable"), 1, "not marked again");
    assert_eq!(app.vm(&id).await.status, "running");
}

#[tokio::test]
async fn owners_are_warned_once_before_expiry_on_the_events_subject() {
    let app = life_app(|config| {
        config.lifecycle.expiry_warnings =
            vec![Duration::from_secs(7200), Duration::from_secs(1800)]
    })
    .await;
    let subject = format!(
        "{}.events.vm.local.*.ExpiryWarning",
        app.bus.subjects.prefix()
    );
    let mut warnings = app.bus.client.subscribe(subject).await.unwrap();
    // An hour to live: within the 2 h warning, not yet the 30 min one.
    let vm: Vm = app
        .post_json(
            "/api/v1/vms",
            &vm_request(json!({"name": "web-warned", "duration_hours": 1})),
            202,
        )
        .await;
    let id = vm.id;
    let message = tokio::time::timeout(Duration::from_secs(30), warnings.next())
        .await
        .expect("a warning is published")
        .unwrap();
    assert!(
        message.subject.as_str().contains(&id),
        "{}",
        message.subject
    );
    let envelope: bus::EventEnvelope = serde_json::from_slice(&message.payload).unwrap();
    assert_eq!(envelope.event_type, "ExpiryWarning");
    assert_eq!(envelope.actor.as_deref(), Some("system"));
    assert_eq!(envelope.data["before_secs"], 7200, "{envelope:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let events = app.events(&id).await;
    assert_eq!(count(&events, "ExpiryWarning"), 1, "sent once");
}

#[tokio::test]
async fn with_two_daemons_the_sweep_destroys_each_expired_vm_once() {
    let app = life_app(|_| {}).await;
    let replica = app
        .spawn_replica_with(|config| config.lifecycle.sweep_every = Duration::from_millis(500))
        .await;
    let mut ids = vec![];
    for n in 0..4 {
        ids.push(create(&app, &format!("web-{n}")).await);
    }
    let soon = in_a_second();
    for (n, id) in ids.iter().enumerate() {
        let via = if n % 2 == 0 { &app } else { &replica };
        let _: Vm = set_expiry(via, id, &soon, 202).await;
    }
    for id in &ids {
        app.wait_for_status_within(id, "destroyed", Duration::from_secs(90))
            .await;
    }
    for id in &ids {
        let events = app.events(id).await;
        assert_eq!(count(&events, "Expired"), 1, "{id}");
        assert_eq!(count(&events, "DestroyRequested"), 1, "{id}");
        assert_eq!(count(&events, "Destroyed"), 1, "{id}");
    }
}
