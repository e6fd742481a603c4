//! How commands are answered: from their own events (never a 5xx once committed), with the
//! position of their last event; GETs that wait for that position; safe retries with a
//! client-chosen id or an `Idempotency-Key`.

use std::time::{Duration, Instant};

use daemon::Roles;
use serde_json::{json, Value};

use crate::helpers::{spawn_app_with, vm_request, TestApp};
use crate::wire::{Problem, Vm, VmPage};

/// A response's status, `Provisioning-Position` and `Retry-After` headers and body.
pub struct Reply {
    pub status: u16,
    pub position: Option<i64>,
    pub retry_after: Option<String>,
    pub body: String,
}

impl Reply {
    pub async fn of(response: reqwest::Response) -> Reply {
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap().to_owned())
        };
        let position = header("provisioning-position").map(|p| p.parse().unwrap());
        let retry_after = header("retry-after");
        Reply {
            status: response.status().as_u16(),
            position,
            retry_after,
            body: response.text().await.unwrap(),
        }
    }

    pub fn json<T: serde::de::DeserializeOwned>(&self) -> T {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

pub async fn create(app: &TestApp, body: &Value, key: Option<&str>) -> Reply {
    let mut request = app.post("/api/v1/vms").json(body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    Reply::of(request.send().await.unwrap()).await
}

pub async fn destroy(app: &TestApp, id: &str, key: Option<&str>) -> Reply {
    let mut request = app.delete(&format!("/api/v1/vms/{id}"));
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    Reply::of(request.send().await.unwrap()).await
}

/// Everything but the projector, so the read model never shows a command.
fn without_projector() -> Roles {
    Roles {
        projector: false,
        ..Roles::ALL
    }
}

async fn vm_count(app: &TestApp) -> i64 {
    store::sqlx::query_scalar(
        "SELECT count(DISTINCT aggregate_id) FROM events WHERE aggregate_type = 'Provisioning'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn commands_are_answered_from_their_events_while_the_read_model_lags() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..without_projector()
    })
    .await;
    let created = create(&app, &vm_request(json!({"name": "lagging"})), None).await;
    assert_eq!(created.status, 202, "{}", created.body);
    let vm: Vm = created.json();
    assert_eq!(
        (vm.name.as_str(), vm.status.as_str()),
        ("lagging", "requested")
    );
    let position = created.position.expect("the create's position");

    let destroyed = destroy(&app, &vm.id, None).await;
    assert_eq!(destroyed.status, 202, "{}", destroyed.body);
    let after: Vm = destroyed.json();
    assert_eq!(after.status, "destroy_requested");
    assert_eq!(after.created_at, vm.created_at);
    assert!(destroyed.position.unwrap() > position);

    // Asked to show the create, the read model cannot: a 503 the client may retry.
    let started = Instant::now();
    let read = app
        .get(&format!("/api/v1/vms/{}?min_position={position}", vm.id))
        .send()
        .await
        .unwrap();
    let read = Reply::of(read).await;
    assert_eq!(read.status, 503, "{}", read.body);
    assert_eq!(read.retry_after.as_deref(), Some("1"));
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn a_get_with_a_commands_position_shows_its_effect() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let created = create(&app, &vm_request(json!({})), None).await;
    let vm: Vm = created.json();
    let position = created.position.unwrap();
    let read: Vm = app
        .get_json(&format!("/api/v1/vms/{}?min_position={position}", vm.id))
        .await;
    assert_eq!(read, vm, "the GET shows what the create answered");

    let destroyed = destroy(&app, &vm.id, None).await;
    let by_header = app
        .get("/api/v1/vms")
        .header("provisioning-position", destroyed.position.unwrap())
        .send()
        .await
        .unwrap();
    let listed: Vec<Vm> = Reply::of(by_header).await.json::<VmPage>().items;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0], destroyed.json::<Vm>());

    let bad = app
        .get("/api/v1/vms?min_position=soon")
        .send()
        .await
        .unwrap();
    let problem: Problem = Reply::of(bad).await.json();
    assert_eq!(problem.code, "invalid_field");
}

#[tokio::test]
async fn a_create_repeated_with_the_same_id_answers_the_same_vm() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let id = uuid::Uuid::new_v4().to_string();
    let body = vm_request(json!({"id": id, "name": "again"}));
    let first = create(&app, &body, None).await;
    assert_eq!(first.status, 202, "{}", first.body);
    let second = create(&app, &body, None).await;
    assert_eq!(second.status, 202, "{}", second.body);
    assert_eq!(second.json::<Vm>(), first.json::<Vm>());
    assert_eq!(second.position, first.position);

    let other = create(&app, &vm_request(json!({"id": id, "name": "other"})), None).await;
    assert_eq!(other.status, 409, "{}", other.body);
    assert_eq!(vm_count(&app).await, 1);
}

#[tokio::test]
async fn an_idempotency_key_makes_retried_creates_and_destroys_safe() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let body = vm_request(json!({"name": "keyed"}));
    let first = create(&app, &body, Some("create-1")).await;
    assert_eq!(first.status, 202, "{}", first.body);
    let again = create(&app, &body, Some("create-1")).await;
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(again.json::<Vm>(), first.json::<Vm>());
    assert_eq!(again.position, first.position);
    assert_eq!(
        vm_count(&app).await,
        1,
        "one VM for two sends of one request"
    );

    let other = create(
        &app,
        &vm_request(json!({"name": "other"})),
        Some("create-1"),
    )
    .await;
    assert_eq!(other.status, 422, "{}", other.body);
    assert!(other.body.contains("Idempotency-Key"), "{}", other.body);

    let id = first.json::<Vm>().id;
    let destroyed = destroy(&app, &id, Some("destroy-1")).await;
    assert_eq!(destroyed.status, 202, "{}", destroyed.body);
    let retried = destroy(&app, &id, Some("destroy-1")).await;
    assert_eq!(retried.status, 202, "{}", retried.body);
    assert_eq!(retried.body, destroyed.body);
    assert_eq!(retried.position, destroyed.position);
    // Without the key, the second destroy is a new request: answered with the destroy that
    // waits (202), or refused once that one runs (409); never a second destroy.
    let again = destroy(&app, &id, None).await.status;
    assert!([202, 409].contains(&again), "{again}");
    let kinds: Vec<String> = app.events(&id).await.into_iter().map(|e| e.kind).collect();
    assert_eq!(kinds.iter().filter(|k| *k == "DestroyRequested").count(), 1);
}

#[tokio::test]
async fn concurrent_sends_of_one_keyed_create_make_one_vm() {
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let body = vm_request(json!({"name": "raced"}));
    let sends = (0..10).map(|_| create(&app, &body, Some("raced-key")));
    let replies = futures::future::join_all(sends).await;
    let ids: std::collections::BTreeSet<String> = replies
        .iter()
        .map(|r| {
            assert_eq!(r.status, 202, "{}", r.body);
            r.json::<Vm>().id
        })
        .collect();
    assert_eq!(ids.len(), 1, "every send answered with one VM");
    assert_eq!(vm_count(&app).await, 1);
}

#[tokio::test]
async fn a_destroy_racing_a_flood_of_log_lines_is_never_answered_500() {
    use domain::provisioning::{JobId, LogLineIn, Provisioning, ProvisioningCommand};
    let app = spawn_app_with(Roles {
        dispatcher: false,
        ..Roles::ALL
    })
    .await;
    let vm: Vm = create(&app, &vm_request(json!({})), None).await.json();
    let metadata = store::Metadata::new(store::Actor::Runner, "test");
    let job = JobId::FIRST;
    let start = ProvisioningCommand::StartJob {
        job_id: job,
        runner: "test".into(),
    };
    store::execute::<Provisioning>(&app.pool, &vm.id, start, &metadata)
        .await
        .unwrap();
    let stop = tokio_util::sync::CancellationToken::new();
    let flood = {
        let (pool, id, stop) = (app.pool.clone(), vm.id.clone(), stop.clone());
        tokio::spawn(async move {
            for line in 1.. {
                if stop.is_cancelled() {
                    break;
                }
                let lines = vec![LogLineIn {
                    line,
                    level: "info".into(),
                    kind: "plain".into(),
                    message: format!("line {line}"),
                }];
                let command = ProvisioningCommand::RecordLogs { job_id: job, lines };
                let _ = store::execute::<Provisioning>(&pool, &id, command, &metadata).await;
            }
        })
    };
    let sends = (0..20).map(|_| destroy(&app, &vm.id, None));
    let replies = futures::future::join_all(sends).await;
    stop.cancel();
    flood.await.unwrap();
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    // The first destroy committed queues the job; the others are the same request while it
    // waits (202) or refused once it runs (409); some may find the VM too busy (503).
    assert!(
        statuses.iter().all(|s| [202, 409, 503].contains(s)),
        "{statuses:?}"
    );
    assert!(statuses.contains(&202), "{statuses:?}");
    let kinds: Vec<String> = app
        .events(&vm.id)
        .await
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "DestroyRequested").count(),
        1,
        "{statuses:?}"
    );
    for reply in replies.iter().filter(|r| r.status == 503) {
        assert!(reply.retry_after.is_some());
    }
}
