//! A cluster scaled through the CLI with --wait against the real daemon on `local`: up and
//! down, each followed until the cluster records `ScaleCompleted`; and its events read as
//! a page and followed across a dropped stream.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::cli;
use crate::clusters::{clusters_dir, signed_in};
use crate::daemon::Daemon;
use crate::proxy::CuttingProxy;

/// A clusters directory with one template, `pair`: a k3s server, then one or two workers
/// (no gate of their own: a worker is through once it runs).
fn pair_template() -> tempfile::TempDir {
    clusters_dir(
        "pair",
        r#"{
  name = "pair",
  description = "A k3s server and one or two workers.",
  roles = [
    { name = "server", count = 1, templates = ["medium"], taskservs = [{ name = "k3s", params = { role = "server", token_file = "/var/lib/provisioning/cluster/secret" } }] },
    { name = "worker", count = { min = 1, max = 2, default = 1 }, templates = ["medium"], taskservs = [] },
  ],
  order = [["server"], ["worker"]],
  health_gates = [
    { role = "server", taskserv = "k3s", nodes = "all", within_secs = 600 },
  ],
  on_failure = 'rollback,
}
"#,
    )
}

#[tokio::test]
async fn a_scale_with_wait_ends_when_the_cluster_records_it_completed() {
    let templates = pair_template();
    let daemon = Daemon::start_with(|config| {
        config.clusters_dir = Some(templates.path().to_owned());
    })
    .await;
    let (home, key) = signed_in(&daemon).await;
    let config = home.path();
    cli(
        config,
        &[],
        &[
            "cluster",
            "create",
            "pair",
            "--name",
            "duo",
            "--provider",
            "local",
            "--ssh-key",
            &key,
            "--allow",
            "192.0.2.0/24",
            "--wait",
        ],
        None,
    )
    .await
    .expect(0);

    // Up: the added worker runs when the command ends.
    let up = cli(
        config,
        &[],
        &[
            "cluster", "scale", "duo", "worker", "2", "--wait", "-o", "json",
        ],
        None,
    )
    .await
    .expect(0);
    assert!(up.stderr.contains("ScaleRequested worker to 2"), "{up:#?}");
    assert!(up.stderr.contains("NodeRequested worker[1]"), "{up:#?}");
    assert!(up.stderr.contains("ScaleCompleted worker to 2"), "{up:#?}");
    assert!(
        !up.stderr.contains("ClusterRequested"),
        "only the events after the command's own request: {up:#?}"
    );
    let cluster: Value = serde_json::from_str(&up.stdout).unwrap();
    assert_eq!(cluster["status"], "ready");
    let id = cluster["id"].as_str().unwrap().to_owned();
    let workers: Vec<&Value> = cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["role"] == "worker")
        .collect();
    assert_eq!(workers.len(), 2, "{cluster:#}");
    let events = daemon.get(&format!("/api/v1/clusters/{id}/events")).await;
    let completed = events
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["type"] == "ScaleCompleted" && e["data"]["count"] == 2);
    assert!(completed, "{events:#}");

    // Down: the dropped worker is destroyed when the command ends.
    let down = cli(
        config,
        &[],
        &["cluster", "scale", "duo", "worker", "1", "--wait"],
        None,
    )
    .await
    .expect(0);
    assert!(down.stderr.contains("NodeRemoved worker[1]"), "{down:#?}");
    assert!(
        down.stderr.contains("ScaleCompleted worker to 1"),
        "{down:#?}"
    );
    let dropped = workers[1]["vm_id"].as_str().unwrap();
    let vm = daemon.get(&format!("/api/v1/vms/{dropped}")).await;
    assert_eq!(vm["status"], "destroyed", "{vm:#}");

    // The same count again records nothing: nothing to wait for.
    let same = cli(
        config,
        &[],
        &["cluster", "scale", "duo", "worker", "1", "--wait"],
        None,
    )
    .await
    .expect(0);
    assert!(same.stderr.contains("nothing to wait for"), "{same:#?}");

    // Every event as a page, ending at once; each once, in the API's order.
    let listed = cli(
        config,
        &[],
        &["cluster", "events", "duo", "-o", "json"],
        None,
    )
    .await
    .expect(0);
    let kinds: Vec<String> = listed
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let events = daemon.get(&format!("/api/v1/clusters/{id}/events")).await;
    let expected: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, expected);
    assert_eq!(kinds.last().map(String::as_str), Some("ScaleCompleted"));

    // --wait through a proxy that cuts the stream once: resumed after the last event seen,
    // each printed once.
    let proxy = CuttingProxy::start(&daemon.url, 900).await;
    let via_proxy = [("PROVISIONING_URL", proxy.url.as_str())];
    let destroyed = cli(
        config,
        &via_proxy,
        &["cluster", "destroy", "duo", "--wait", "-v"],
        None,
    )
    .await
    .expect(0);
    assert_eq!(proxy.cuts.load(Ordering::SeqCst), 1, "{destroyed:#?}");
    assert!(
        destroyed.stderr.contains("resuming after"),
        "{destroyed:#?}"
    );
    let requested = destroyed
        .stderr
        .lines()
        .filter(|l| l.trim_start().starts_with("ClusterRequested"))
        .count();
    assert_eq!(requested, 1, "{destroyed:#?}");
    assert!(
        destroyed.stderr.contains("ClusterDestroyed"),
        "{destroyed:#?}"
    );
}
