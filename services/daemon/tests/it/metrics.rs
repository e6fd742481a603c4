//! `GET /metrics` and the platform gauges on `<prefix>.gauges.platform`.

use std::time::Duration;

use futures::StreamExt;
use serde_json::json;

use daemon::Roles;

use crate::helpers::{spawn_app, spawn_app_with, TestApp};

/// The text of `GET /metrics`, asked without a token.
pub async fn scrape(app: &TestApp) -> String {
    let response = app
        .client
        .get(format!("{}/metrics", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    response.text().await.unwrap()
}

/// The value of the sample `name{labels}` in a scrape, if it is there.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

#[tokio::test]
async fn metrics_count_requests_by_route_template_and_are_served_without_a_token() {
    let app = spawn_app().await;
    let id = "0b6f8a4e-1111-4222-8333-444455556666";
    let missing = app.get(&format!("/api/v1/vms/{id}")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let text = scrape(&app).await;
    let series =
        r#"provisioning_http_requests_total{route="/api/v1/vms/{id}",method="GET",status="404"}"#;
    assert!(sample(&text, series).unwrap_or(0.0) >= 1.0, "{text}");
    assert!(!text.contains(id), "a raw path with an id is never a label");
    let latency = r#"provisioning_http_request_duration_seconds_count{route="/api/v1/vms/{id}",method="GET",status="404"}"#;
    assert!(sample(&text, latency).unwrap_or(0.0) >= 1.0, "{text}");

    // A create commits events, the relay publishes them.
    app.create_ok(json!({"name": "counted"})).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let text = scrape(&app).await;
        let committed = sample(
            &text,
            r#"provisioning_events_committed_total{type="Requested"}"#,
        );
        let relayed = sample(
            &text,
            r#"provisioning_events_relayed_total{type="Requested"}"#,
        );
        if committed >= Some(1.0) && relayed >= Some(1.0) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn the_platform_gauges_are_published_every_ten_seconds_and_served_on_metrics() {
    let app = spawn_app().await;
    let mut gauges = app
        .bus
        .client
        .subscribe(app.bus.subjects.gauges())
        .await
        .unwrap();
    let id = app.create_ok(json!({"name": "gauged"})).await;
    app.wait_for_status(&id, "provisioned").await;
    // The first message after the VM is provisioned counts it.
    let message = loop {
        let message = tokio::time::timeout(Duration::from_secs(25), gauges.next())
            .await
            .expect("gauges every 10 s")
            .unwrap();
        let parsed: bus::PlatformGauges = serde_json::from_slice(&message.payload).unwrap();
        if parsed.vms.iter().any(|vm| vm.status == "provisioned") {
            break parsed;
        }
    };
    assert_eq!(message.version, 1);
    let local: i64 = message
        .vms
        .iter()
        .filter(|vm| vm.provider == "local" && vm.status == "provisioned")
        .map(|vm| vm.count)
        .sum();
    assert_eq!(local, 1, "{message:?}");
    assert_eq!(message.jobs.running, 0, "{message:?}");
    assert_eq!(message.oldest_running_job_secs, None);
    let mut consumers: Vec<(String, String)> = message
        .consumers
        .iter()
        .map(|c| (c.stream.clone(), c.consumer.clone()))
        .collect();
    consumers.sort();
    let stream = |name: &str| app.bus.subjects.stream(name);
    assert_eq!(
        consumers,
        [
            (stream("JOBS"), "dispatcher".to_owned()),
            (stream("RUNNER"), "ingester".to_owned())
        ]
    );

    // The replica serving the API sets its gauges from the message (as it gets it, maybe
    // just after this test).
    let lag = format!(
        r#"provisioning_consumer_lag{{stream="{}",consumer="ingester"}}"#,
        stream("RUNNER")
    );
    let vms = r#"provisioning_vms{status="provisioned",provider="local"}"#;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let text = scrape(&app).await;
        if sample(&text, &lag).is_some() && sample(&text, vms) >= Some(1.0) {
            assert!(text.contains("provisioning_jobs{state=\"running\"}"));
            assert!(text.contains("provisioning_oldest_running_job_seconds "));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{text}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn a_process_without_the_api_serves_only_its_metrics_and_liveness() {
    let app = spawn_app_with(Roles {
        relay: true,
        ..Roles::NONE
    })
    .await;
    let text = scrape(&app).await;
    assert!(
        text.contains("# TYPE provisioning_ingester_batches counter"),
        "{text}"
    );
    let health = app
        .client
        .get(format!("{}/healthz", app.address))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let api = app.get("/api/v1/vms").send().await.unwrap();
    assert_eq!(api.status(), 404, "the API is not served here");
}
