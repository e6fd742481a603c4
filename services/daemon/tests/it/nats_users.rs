//! The NATS users of `nats/auth.conf`, on a private server started with the repository's
//! configuration: the daemon's users work end to end, the runner user may report and ask
//! about its job and nothing else.

use std::time::Duration;

use bus::{Bus, NatsAuth, RunnerMessage, RunnerReport};
use daemon::Roles;
use domain::provisioning::{JobId, ProviderId, VmId};
use futures::StreamExt;
use serde_json::json;

use crate::helpers::{try_spawn_app, TestApp};
use crate::private_nats::PrivateNats;

/// The prefix `nats/auth.conf` is written for.
const PREFIX: &str = "provisioning";

async fn runner_bus(nats: &PrivateNats) -> Bus {
    let auth = NatsAuth::UserPassword {
        user: "runner".into(),
        password: PrivateNats::password("runner").into(),
    };
    let url = bus::without_credentials(&nats.url_as("runner"));
    Bus::connect_runner(&url, PREFIX, &auth).await.unwrap()
}

async fn messages_in(daemon: &Bus, stream: &str) -> u64 {
    stream_state(daemon, stream).await.messages
}

async fn stream_state(daemon: &Bus, stream: &str) -> bus::async_nats::jetstream::stream::State {
    let mut stream = daemon
        .jetstream
        .get_stream(daemon.subjects.stream(stream))
        .await
        .unwrap();
    stream.info().await.unwrap().state.clone()
}

/// Whether `subscriber` gets a message within half a second.
async fn hears(subscriber: &mut bus::async_nats::Subscriber) -> bool {
    tokio::time::timeout(Duration::from_millis(500), subscriber.next())
        .await
        .is_ok()
}

/// The daemon's applications on the server, every role in one as `provisioningd`, whose
/// local runners connect as `runner`.
async fn daemon_on(nats: &PrivateNats, roles: Roles) -> TestApp {
    let url = nats.url_as("provisioningd");
    try_spawn_app(roles, |config| {
        config.nats_url = url;
        config.nats_prefix = PREFIX.into();
        config.runner_bus.nats_user =
            Some(("runner".into(), PrivateNats::password("runner").into()));
    })
    .await
    .expect("the application starts")
}

#[tokio::test]
async fn the_runner_user_may_report_and_ask_about_its_job_and_read_or_publish_nothing_else() {
    let nats = PrivateNats::start_with_users().await;
    // The dispatcher answers `job_active` questions from the event store.
    let app = daemon_on(
        &nats,
        Roles {
            dispatcher: true,
            ..Roles::NONE
        },
    )
    .await;
    let daemon = &app.bus;
    let runner = runner_bus(&nats).await;
    let (vm, job) = (VmId::new(), JobId::FIRST);

    // Its reports go into the runner stream, acknowledged on its own inbox.
    let report = RunnerMessage {
        vm_id: vm,
        job_id: job,
        report: RunnerReport::Heartbeat { beat: 1 },
    };
    let key = app.job_key(vm, job).await;
    runner.publish_runner_message(&key, &report).await.unwrap();
    assert_eq!(messages_in(daemon, "RUNNER").await, 1);

    // Its question is answered (a job the store does not know is not active).
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        runner
            .client
            .request(runner.subjects.job_active(vm, job), "".into()),
    )
    .await
    .expect("an answer within 5 s")
    .unwrap();
    let answer: serde_json::Value = serde_json::from_slice(&answer.payload).unwrap();
    assert_eq!(answer, json!({"active": false, "cancel": false}));

    // It hears no event, no job, and nothing sent to the daemon's inboxes, which the daemon
    // hears on the same subjects.
    let mut runner_subs = vec![];
    let mut daemon_subs = vec![];
    for subject in ["provisioning.events.>", "provisioning.jobs.>", "_INBOX.>"] {
        runner_subs.push(runner.client.subscribe(subject).await.unwrap());
        daemon_subs.push(daemon.client.subscribe(subject).await.unwrap());
    }
    runner.client.flush().await.unwrap();
    daemon.client.flush().await.unwrap();
    let event = daemon.subjects.vm_event(
        &ProviderId::parse("local").unwrap(),
        &vm.to_string(),
        "Applied",
    );
    daemon
        .jetstream
        .publish(event, "{}".into())
        .await
        .unwrap()
        .await
        .unwrap();
    let queued = daemon.subjects.job(&ProviderId::parse("local").unwrap());
    daemon
        .jetstream
        .publish(queued, "{}".into())
        .await
        .unwrap()
        .await
        .unwrap();
    for (runner_sub, daemon_sub) in runner_subs.iter_mut().zip(&mut daemon_subs) {
        assert!(hears(daemon_sub).await, "the daemon hears it");
        assert!(!hears(runner_sub).await, "the runner heard it");
    }

    // What it publishes elsewhere reaches no stream (none stores a message more: the
    // dispatcher may take jobs meanwhile), and it changes no stream.
    let stored = || async {
        (
            stream_state(daemon, "EVENTS").await.last_sequence,
            stream_state(daemon, "JOBS").await.last_sequence,
        )
    };
    let before = stored().await;
    let forged_event = runner.subjects.vm_event(
        &ProviderId::parse("local").unwrap(),
        &vm.to_string(),
        "Destroyed",
    );
    let forged_job = runner.subjects.job(&ProviderId::parse("local").unwrap());
    for subject in [forged_event, forged_job] {
        let sent = runner.jetstream.publish(subject, "{}".into()).await;
        assert!(sent.unwrap().await.is_err(), "JetStream took it");
    }
    let stream = runner.subjects.stream("RUNNER");
    assert!(runner.jetstream.delete_stream(&stream).await.is_err());
    assert_eq!(
        messages_in(daemon, "RUNNER").await,
        1,
        "the stream is intact"
    );
    assert_eq!(stored().await, before);
}

#[tokio::test]
async fn a_vm_is_created_with_terraform_through_a_server_with_users() {
    let nats = PrivateNats::start_with_users().await;
    let app = daemon_on(&nats, Roles::ALL).await;
    let id = app.create_ok(json!({"name": "with-users"})).await;
    // Generous: real Terraform shares the machine with other tests.
    let vm = app
        .wait_for_status_within(&id, "provisioned", Duration::from_secs(120))
        .await;
    assert!(vm.last_error.is_none(), "{vm:?}");
    let events = app.events(&id).await;
    let started = events
        .iter()
        .find(|e| e.kind == "JobStarted")
        .expect("the runner reported its start");
    // A local runner, which connected as the runner user.
    assert!(started.data["runner"]
        .as_str()
        .unwrap()
        .starts_with("local:"));
    assert!(events.iter().any(|e| e.kind == "LogLine"));
    app.assert_consumers_drained().await;
}

#[tokio::test]
async fn each_role_as_its_own_nats_user_creates_a_vm_end_to_end() {
    let nats = PrivateNats::start_with_users().await;
    let one = |role: &str| {
        let mut roles = Roles::NONE;
        match role {
            "api" => roles.api = true,
            "relay" => roles.relay = true,
            "projector" => roles.projector = true,
            "dispatcher" => roles.dispatcher = true,
            _ => roles.ingester = true,
        }
        roles
    };
    let runner_user = || Some(("runner".to_owned(), PrivateNats::password("runner").into()));
    let api_url = nats.url_as("api");
    let api = try_spawn_app(one("api"), |config| {
        config.nats_url = api_url;
        config.nats_prefix = PREFIX.into();
    })
    .await
    .expect("the api starts as its user");
    let mut others = vec![];
    for role in ["relay", "projector", "dispatcher", "ingester"] {
        let url = nats.url_as(role);
        let app = api
            .spawn_replica_as(one(role), |config| {
                config.nats_url = url;
                config.runner_bus.nats_user = runner_user();
            })
            .await;
        others.push(app);
    }
    let id = api.create_ok(json!({"name": "each-role"})).await;
    let vm = api
        .wait_for_status_within(&id, "provisioned", Duration::from_secs(120))
        .await;
    assert!(vm.last_error.is_none(), "{vm:?}");
}
