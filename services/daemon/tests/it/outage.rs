//! The database out of reach: commands answer 503 with `Retry-After` within seconds and
//! write nothing; once it is back, they work again. Postgres is reached through a proxy of
//! this test (`proxy.rs`), never stopped.

use std::time::{Duration, Instant};

use daemon::Roles;
use serde_json::json;

use crate::answers::{create, destroy, Reply};
use crate::database::server_url;
use crate::helpers::{try_spawn_app, vm_request, TestApp};
use crate::proxy::{target_of, Mode, Proxy};
use crate::wire::Vm;

/// The API alone (the other roles would only log the outage), its database behind `proxy`.
async fn api_behind(proxy: &Proxy) -> TestApp {
    let roles = Roles {
        api: true,
        ..Roles::NONE
    };
    try_spawn_app(roles, |config| {
        let url = proxy.url(&server_url(config_db(config)));
        config.database_url = url.into();
    })
    .await
    .expect("the application starts")
}

/// The database name of the configuration the harness made.
fn config_db(config: &daemon::Config) -> &str {
    use secrecy::ExposeSecret;
    let url = config.tf_backend_url.expose_secret();
    url.rsplit('/').next().unwrap().split('?').next().unwrap()
}

async fn events_of(app: &TestApp, id: &str) -> i64 {
    store::sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_id = $1")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

async fn assert_unavailable_soon(reply: Reply, started: Instant) {
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert!(reply.retry_after.is_some(), "a 503 says when to retry");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "answered after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn commands_answer_503_soon_and_write_nothing_while_the_database_is_unreachable() {
    let proxy = Proxy::start(target_of(&server_url("postgres"))).await;
    let app = api_behind(&proxy).await;
    let vm: Vm = create(&app, &vm_request(json!({"name": "before"})), None)
        .await
        .json();

    for mode in [Mode::Refuse, Mode::Stall] {
        proxy.set(mode);
        let id = uuid::Uuid::new_v4().to_string();
        let started = Instant::now();
        let body = vm_request(json!({"id": id, "name": "during"}));
        assert_unavailable_soon(create(&app, &body, None).await, started).await;
        let started = Instant::now();
        assert_unavailable_soon(destroy(&app, &vm.id, None).await, started).await;
        assert_eq!(
            events_of(&app, &id).await,
            0,
            "{mode:?}: nothing of the create"
        );
        assert_eq!(
            events_of(&app, &vm.id).await,
            2,
            "{mode:?}: nothing of the destroy"
        );

        proxy.set(Mode::Open);
        // The pool opens new connections: the same create goes through now.
        let deadline = Instant::now() + Duration::from_secs(10);
        let created = loop {
            let reply = create(&app, &body, None).await;
            if reply.status != 503 || Instant::now() > deadline {
                break reply;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        };
        assert_eq!(created.status, 202, "{mode:?}: {}", created.body);
    }
}

/// A statement that does not come back (here: blocked by a lock; a connection that stalls
/// mid-statement looks the same to the command) is cut by the command bound: 503 with
/// `Retry-After` within 5 s, not the 30 s of the request or statement timeout; the command's
/// transaction is rolled back.
#[tokio::test]
async fn a_command_whose_statement_hangs_answers_503_within_seconds_and_writes_nothing() {
    let proxy = Proxy::start(target_of(&server_url("postgres"))).await;
    let app = api_behind(&proxy).await;
    let mut lock = app.pool.begin().await.unwrap();
    store::sqlx::query("LOCK TABLE events IN EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();

    let id = uuid::Uuid::new_v4().to_string();
    let body = vm_request(json!({"id": id, "name": "stuck"}));
    let started = Instant::now();
    let reply = create(&app, &body, None).await;
    let waited = started.elapsed();
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert!(reply.retry_after.is_some(), "a 503 says when to retry");
    assert!(waited < Duration::from_secs(5), "answered after {waited:?}");
    lock.rollback().await.unwrap();

    assert_eq!(
        events_of(&app, &id).await,
        0,
        "the cut command wrote nothing"
    );
    // The same create, retried, goes through.
    assert_eq!(create(&app, &body, None).await.status, 202);
}
