//! Clusters through the CLI against the real daemon on `local` (real Terraform, the
//! simulated boot): a `k3s-single` cluster created with --wait until ready, listed, shown,
//! its events read, destroyed with --wait; a refused create; the admin's catalog switches.

use serde_json::Value;

use crate::daemon::Daemon;
use crate::{cli, SSH_KEY};

/// Signs the CLI in with a personal token of the daemon's admin; the config directory and
/// the path of an SSH public key file.
pub async fn signed_in(daemon: &Daemon) -> (tempfile::TempDir, String) {
    let home = tempfile::tempdir().unwrap();
    let token = daemon.personal_token().await;
    cli(
        home.path(),
        &[],
        &["login", &daemon.url, "--token"],
        Some(&token),
    )
    .await
    .expect(0);
    let key = home.path().join("id.pub");
    std::fs::write(&key, SSH_KEY).unwrap();
    let key = key.to_str().unwrap().to_owned();
    (home, key)
}

#[tokio::test]
async fn a_cluster_is_created_with_wait_until_ready_shown_and_destroyed_with_wait() {
    let daemon = Daemon::start().await;
    let (home, key) = signed_in(&daemon).await;
    let config = home.path();

    let templates = cli(config, &[], &["cluster", "templates"], None)
        .await
        .expect(0);
    assert!(templates.stdout.contains("k3s-single"), "{templates:#?}");
    assert!(templates.stdout.contains("server×1"), "{templates:#?}");

    // The seed's name for it; --wait prints each event as it comes, then the cluster.
    let created = cli(
        config,
        &[],
        &[
            "cluster",
            "create",
            "kubernetes-single",
            "--name",
            "lab",
            "--provider",
            "local",
            "--ssh-key",
            &key,
            "--allow",
            "192.0.2.0/24",
            "--wait",
            "-o",
            "json",
        ],
        None,
    )
    .await
    .expect(0);
    let cluster: Value = serde_json::from_str(&created.stdout).unwrap();
    assert_eq!(cluster["status"], "ready", "{created:#?}");
    assert_eq!(cluster["template"], "k3s-single");
    let id = cluster["id"].as_str().unwrap().to_owned();
    for line in [
        "ClusterRequested k3s-single on local",
        "NodeRequested server[0]",
        "GatePassed server/k3s (stage 0)",
        "ClusterReady",
    ] {
        assert!(created.stderr.contains(line), "{line}: {created:#?}");
    }

    // Listed and shown by name, as the API answers.
    let list = cli(config, &[], &["cluster", "list", "-o", "json"], None)
        .await
        .expect(0);
    let list: Vec<Value> = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["id"], id.as_str());
    let shown = cli(config, &[], &["cluster", "show", "lab", "-o", "json"], None)
        .await
        .expect(0);
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown, daemon.get(&format!("/api/v1/clusters/{id}")).await);
    let nodes = shown["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 1, "{shown:#}");
    assert_eq!(nodes[0]["name"], "lab-server-0");
    let table = cli(config, &[], &["cluster", "show", "lab"], None)
        .await
        .expect(0);
    assert!(table.stdout.contains("lab-server-0"), "{table:#?}");
    assert!(table.stdout.contains("server/k3s  passed"), "{table:#?}");

    // The events so far, one a line.
    let events = cli(config, &[], &["cluster", "events", "lab"], None)
        .await
        .expect(0);
    let lines: Vec<&str> = events.stdout.lines().collect();
    assert_eq!(lines.first(), Some(&"ClusterRequested k3s-single on local"));
    assert_eq!(lines.last(), Some(&"ClusterReady"), "{events:#?}");

    // As JSON: the API's page of the cluster's events, one object a line.
    let json = cli(
        config,
        &[],
        &["cluster", "events", "lab", "-o", "json"],
        None,
    )
    .await
    .expect(0);
    let page = daemon.get(&format!("/api/v1/clusters/{id}/events")).await;
    let page = page.as_array().unwrap();
    assert_eq!(json.stdout.lines().count(), page.len(), "{json:#?}");
    let first: Value = serde_json::from_str(json.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], page[0]["type"]);
    assert_eq!(first["data"], page[0]["data"]);

    // Destroyed, followed to the end; then listed only with --all.
    let destroyed = cli(
        config,
        &[],
        &["cluster", "destroy", "lab", "--wait", "-o", "json"],
        None,
    )
    .await
    .expect(0);
    let cluster: Value = serde_json::from_str(&destroyed.stdout).unwrap();
    assert_eq!(cluster["status"], "destroyed", "{destroyed:#?}");
    assert!(
        destroyed.stderr.contains("ClusterDestroyed"),
        "{destroyed:#?}"
    );
    let live = cli(config, &[], &["cluster", "list", "-o", "json"], None)
        .await
        .expect(0);
    assert_eq!(live.stdout.trim(), "[]");
    let all = cli(config, &[], &["cluster", "list", "--all"], None)
        .await
        .expect(0);
    assert!(all.stdout.contains("destroyed"), "{all:#?}");
}

#[tokio::test]
async fn a_cluster_of_an_unknown_template_is_refused_in_the_apis_one_line() {
    let daemon = Daemon::start().await;
    let (home, key) = signed_in(&daemon).await;
    let refused = cli(
        home.path(),
        &[],
        &[
            "cluster",
            "create",
            "no-such-template",
            "--name",
            "lab",
            "--provider",
            "local",
            "--ssh-key",
            &key,
            "--allow",
            "192.0.2.0/24",
        ],
        None,
    )
    .await
    .expect(1);
    // The API's own detail for the same request.
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/api/v1/clusters", daemon.url))
        .bearer_auth(&daemon.admin_token)
        .json(&serde_json::json!({
            "name": "lab", "template": "no-such-template", "provider": "local",
            "ssh_public_key": SSH_KEY, "allow_ssh_from": ["192.0.2.0/24"],
            "duration_hours": 8,
        }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let detail = answer["detail"].as_str().unwrap();
    assert_eq!(refused.stderr.trim(), format!("error: {detail}"));
    assert_eq!(refused.stderr.lines().count(), 1);
    let none = cli(home.path(), &[], &["cluster", "list", "-o", "json"], None)
        .await
        .expect(0);
    assert_eq!(none.stdout.trim(), "[]");
}

#[tokio::test]
async fn an_admin_disables_and_enables_a_template_a_provider_and_a_taskserv() {
    let daemon = Daemon::start().await;
    let (home, _key) = signed_in(&daemon).await;
    let config = home.path();
    let switch = |what: &'static [&'static str], on: bool| {
        let mut args = vec!["admin", "catalog", what[0]];
        args.push(if on { "enable" } else { "disable" });
        args.extend_from_slice(&what[1..]);
        args.extend(["-o", "json"]);
        args
    };
    let enabled_of = |run: crate::Run| -> Value {
        let answer: Value = serde_json::from_str(&run.stdout).unwrap();
        answer["enabled"].clone()
    };
    let offered = |answer: Value, id: &str| -> bool {
        answer
            .as_array()
            .unwrap()
            .iter()
            .any(|entry| entry["id"] == id)
    };

    // A template: gone from what users are offered, then back.
    let small: &[&str] = &["templates", "local", "small"];
    let off = cli(config, &[], &switch(small, false), None)
        .await
        .expect(0);
    assert_eq!(enabled_of(off), false);
    let templates = daemon.get("/api/v1/providers/local/templates").await;
    assert!(!offered(templates, "small"));
    let on = cli(config, &[], &switch(small, true), None).await.expect(0);
    assert_eq!(enabled_of(on), true);
    let templates = daemon.get("/api/v1/providers/local/templates").await;
    assert!(offered(templates, "small"));

    // A provider.
    let local: &[&str] = &["providers", "local"];
    let off = cli(config, &[], &switch(local, false), None)
        .await
        .expect(0);
    assert_eq!(enabled_of(off), false);
    // Still listed, as disabled.
    let providers = daemon.get("/api/v1/providers").await;
    let entry = providers
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "local");
    assert_eq!(entry.unwrap()["enabled"], false, "{providers:#}");
    let on = cli(config, &[], &switch(local, true), None).await.expect(0);
    assert_eq!(enabled_of(on), true);
    let providers = daemon.get("/api/v1/providers").await;
    let entry = providers
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == "local");
    assert_eq!(entry.unwrap()["enabled"], true, "{providers:#}");

    // A taskserv on a provider.
    let docker: &[&str] = &["taskserv", "local", "docker"];
    let off = cli(config, &[], &switch(docker, false), None)
        .await
        .expect(0);
    assert_eq!(enabled_of(off), false);
    let on = cli(config, &[], &switch(docker, true), None)
        .await
        .expect(0);
    assert_eq!(enabled_of(on), true);

    // An unknown one is the API's refusal, exit 1.
    let unknown: &[&str] = &["templates", "local", "no-such-template"];
    let refused = cli(config, &[], &switch(unknown, false), None)
        .await
        .expect(1);
    assert!(refused.stderr.starts_with("error: "), "{refused:#?}");
}

/// A clusters directory with one template, `name`, of the Nickel text `template`.
pub fn clusters_dir(name: &str, template: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let registry = format!("[[clusters]]\nname = \"{name}\"\n");
    std::fs::write(dir.path().join("registry.toml"), registry).unwrap();
    std::fs::write(dir.path().join(format!("{name}.ncl")), template).unwrap();
    dir
}

/// A clusters directory with one template, `stuck`: one k3s server whose gate gives it 3 s.
fn stuck_template() -> tempfile::TempDir {
    clusters_dir(
        "stuck",
        r#"{
  name = "stuck",
  description = "One k3s server with 3 s to come up.",
  roles = [
    { name = "server", count = 1, templates = ["medium", "large"], taskservs = [{ name = "k3s" }] },
  ],
  order = [["server"]],
  health_gates = [
    { role = "server", taskserv = "k3s", nodes = "all", within_secs = 3 },
  ],
  on_failure = 'rollback,
}
"#,
    )
}

#[tokio::test]
async fn a_cluster_that_fails_while_wait_follows_it_exits_3_with_its_reason() {
    // Nothing boots: the server's k3s never reports, and its gate times out.
    let templates = stuck_template();
    let daemon = Daemon::start_with(|config| {
        config.local_boot = dispatcher::LocalBoot::Off;
        config.clusters_dir = Some(templates.path().to_owned());
    })
    .await;
    let (home, key) = signed_in(&daemon).await;
    let failed = cli(
        home.path(),
        &[],
        &[
            "cluster",
            "create",
            "stuck",
            "--name",
            "stuck",
            "--provider",
            "local",
            "--ssh-key",
            &key,
            "--allow",
            "192.0.2.0/24",
            "--wait",
            "-o",
            "json",
        ],
        None,
    )
    .await
    .expect(3);
    let cluster: Value = serde_json::from_str(&failed.stdout).unwrap();
    assert_eq!(cluster["status"], "failed", "{failed:#?}");
    assert!(
        failed.stderr.contains("GateFailed server/k3s (stage 0)"),
        "{failed:#?}"
    );
    assert!(failed.stderr.contains("RollbackStarted"), "{failed:#?}");
    let last = failed.stderr.lines().last().unwrap();
    assert!(
        last.starts_with("error: the cluster failed: ") && last.contains("k3s"),
        "{failed:#?}"
    );
}
