//! The platform gauges and the ingester's counters while jobs run: values that count, not
//! only series that exist.

use std::time::Duration;

use daemon::Roles;
use futures::StreamExt;
use serde_json::json;

use crate::helpers::{spawn_app, terraform_wrapper, try_spawn_app};
use crate::metrics::{sample, scrape};

#[tokio::test]
async fn the_platform_gauges_count_running_and_queued_jobs_while_a_runner_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    // Each apply waits a minute: the first job runs, the second waits for the only slot.
    let wrapper = terraform_wrapper(dir.path(), r#"[ "$1" = apply ] && sleep 60"#);
    let app = try_spawn_app(Roles::ALL, |c| {
        c.terraform_bin = wrapper;
        c.max_runners = 1;
    })
    .await
    .unwrap();
    let mut gauges = app
        .bus
        .client
        .subscribe(app.bus.subjects.gauges())
        .await
        .unwrap();
    app.create_ok(json!({"name": "busy"})).await;
    app.create_ok(json!({"name": "waiting"})).await;

    let jobs_stream = app.bus.subjects.stream("JOBS");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(45);
    let message = loop {
        let message = tokio::time::timeout_at(deadline, gauges.next())
            .await
            .expect("gauges showing both jobs")
            .unwrap();
        let gauges: bus::PlatformGauges = serde_json::from_slice(&message.payload).unwrap();
        if gauges.jobs.running >= 1 && gauges.jobs.queued >= 1 {
            break gauges;
        }
    };
    assert_eq!((message.jobs.running, message.jobs.queued), (1, 1));
    assert!(
        message.oldest_running_job_secs.is_some_and(|age| age > 0.0),
        "{message:?}"
    );
    let dispatcher_lag = message
        .consumers
        .iter()
        .find(|c| c.stream == jobs_stream && c.consumer == "dispatcher")
        .map(|c| c.lag);
    assert!(
        dispatcher_lag >= Some(1),
        "the queued job's message waits: {message:?}"
    );

    // `/metrics` serves them (every test's daemon sets this process's gauges: a scrape
    // may show another's, so it is read until it shows ours).
    let lag =
        format!(r#"provisioning_consumer_lag{{stream="{jobs_stream}",consumer="dispatcher"}}"#);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(25);
    loop {
        let text = scrape(&app).await;
        let running = sample(&text, r#"provisioning_jobs{state="running"}"#);
        let queued = sample(&text, r#"provisioning_jobs{state="queued"}"#);
        let oldest = sample(&text, "provisioning_oldest_running_job_seconds");
        if running >= Some(1.0)
            && queued >= Some(1.0)
            && oldest > Some(0.0)
            && sample(&text, &lag) >= Some(1.0)
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_ingester_counts_the_batches_and_messages_it_applies() {
    let app = spawn_app().await;
    let count = |text: &str, name: &str| sample(text, name).unwrap_or(0.0);
    let text = scrape(&app).await;
    let batches = count(&text, "provisioning_ingester_batches_total");
    let messages = count(&text, "provisioning_ingester_messages_total");

    let id = app.create_ok(json!({"name": "ingested"})).await;
    app.wait_for_status(&id, "provisioned").await;

    // Counted in this process, by every test's daemon: ours adds at least its own.
    let text = scrape(&app).await;
    let batches_after = count(&text, "provisioning_ingester_batches_total");
    let messages_after = count(&text, "provisioning_ingester_messages_total");
    assert!(batches_after >= batches + 1.0, "{text}");
    assert!(
        messages_after >= messages + 2.0,
        "lines and a result: {text}"
    );
    assert!(messages_after - messages >= batches_after - batches);
}
