//! The committed Grafana dashboard (`deploy/grafana/provisioning.json`) asks only for
//! metrics a running daemon serves on `GET /metrics`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use crate::helpers::spawn_app;
use crate::metrics::scrape;

const DASHBOARD: &str = include_str!("../../../../deploy/grafana/provisioning.json");

/// The sample names a scrape can hold: each family's name, with `_total` for a counter and
/// `_bucket`, `_sum`, `_count` for a histogram.
fn served_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let Some(declared) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let mut words = declared.split_whitespace();
        let (Some(name), Some(kind)) = (words.next(), words.next()) else {
            continue;
        };
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    names
}

/// The metric names a PromQL expression reads: the identifiers starting `provisioning_`.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = vec![];
    let mut rest = expr;
    while let Some(at) = rest.find("provisioning_") {
        let before = rest[..at].chars().last();
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            names.push(tail[..end].to_owned());
        }
        rest = &tail[end..];
    }
    names
}

/// Every panel of the dashboard, those inside rows too.
fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut all = vec![];
    let mut todo: Vec<&Value> = dashboard["panels"].as_array().unwrap().iter().collect();
    while let Some(panel) = todo.pop() {
        if let Some(inner) = panel["panels"].as_array() {
            todo.extend(inner);
        }
        if panel["type"] != "row" {
            all.push(panel);
        }
    }
    all
}

#[tokio::test]
async fn every_panel_of_the_grafana_dashboard_queries_metrics_the_daemon_serves() {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    let panels = panels(&dashboard);
    let wanted: BTreeSet<String> = panels
        .iter()
        .flat_map(|p| p["targets"].as_array().into_iter().flatten())
        .flat_map(|t| metric_names(t["expr"].as_str().unwrap_or_default()))
        .collect();
    // A family appears once it has a sample: a daemon that did some work (a create, its
    // job, its events, the gauges of the next 10 s) serves them all.
    let app = spawn_app().await;
    let id = app.create_ok(json!({"name": "dashboarded"})).await;
    app.wait_for_status(&id, "provisioned").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let served = loop {
        let served = served_names(&scrape(&app).await);
        if wanted.is_subset(&served) || tokio::time::Instant::now() > deadline {
            break served;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(panels.len() >= 10, "{} panels", panels.len());
    let mut asked = BTreeSet::new();
    for panel in panels {
        let title = panel["title"].as_str().unwrap();
        let targets = panel["targets"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        assert!(!targets.is_empty(), "panel {title:?} has no query");
        for target in targets {
            let expr = target["expr"].as_str().unwrap();
            let names = metric_names(expr);
            assert!(!names.is_empty(), "panel {title:?} names no metric: {expr}");
            for name in names {
                assert!(
                    served.contains(&name),
                    "panel {title:?} asks for {name}, which /metrics does not serve"
                );
                asked.insert(name);
            }
        }
    }
    // And the dashboard shows every family the daemon serves.
    let families: BTreeSet<&str> = served
        .iter()
        .filter(|n| !n.ends_with("_sum") && !n.ends_with("_count"))
        .map(String::as_str)
        .collect();
    let shown: BTreeSet<&str> = asked
        .iter()
        .map(String::as_str)
        .filter(|n| !n.ends_with("_sum") && !n.ends_with("_count"))
        .collect();
    assert_eq!(shown, families, "metrics served but not on the dashboard");
}

#[test]
fn metric_names_are_read_from_promql() {
    assert_eq!(
        metric_names("histogram_quantile(0.99, sum by (le) (rate(provisioning_x_bucket[5m])))"),
        ["provisioning_x_bucket"]
    );
    assert_eq!(
        metric_names("time() - max(provisioning_a) / not_provisioning_b"),
        ["provisioning_a"]
    );
}
