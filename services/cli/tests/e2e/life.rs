//! A VM's whole life through the CLI: token login, create --wait, logs, logs -f across a
//! dropped connection, list as JSON, destroy --wait, logout.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::daemon::Daemon;
use crate::proxy::CuttingProxy;
use crate::{cli, SSH_KEY};

/// The messages of the VM's stored log lines, as the API answers them.
async fn api_lines(daemon: &Daemon, id: &str) -> Vec<String> {
    let lines = daemon.get(&format!("/api/v1/vms/{id}/logs")).await;
    lines
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["message"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_user_signs_in_with_a_token_and_creates_follows_and_destroys_a_vm() {
    let daemon = Daemon::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    let key = home.path().join("id.pub");
    std::fs::write(&key, SSH_KEY).unwrap();
    let key = key.to_str().unwrap();

    // Sign in: the token from stdin, checked, kept in a file only its owner may read.
    let token = daemon.personal_token().await;
    let login = cli(
        config,
        &[],
        &["login", &daemon.url, "--token"],
        Some(&token),
    )
    .await
    .expect(0);
    assert!(login.stdout.contains("admin@localhost"), "{login:#?}");
    let file = config.join("provisioning/credentials.toml");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let me = cli(config, &[], &["me", "-o", "json"], None)
        .await
        .expect(0);
    let me: Value = serde_json::from_str(&me.stdout).unwrap();
    assert_eq!(me["email"], "admin@localhost");

    // Create and wait, from the stream: the status changes on stderr, the VM as JSON.
    let created = cli(
        config,
        &[],
        &[
            "vm",
            "create",
            "--provider",
            "local",
            "--template",
            "small",
            "--name",
            "web-1",
            "--ssh-key",
            key,
            "--allow",
            "192.0.2.0/24",
            "--hours",
            "1",
            "--wait",
            "-o",
            "json",
        ],
        None,
    )
    .await
    .expect(0);
    assert!(created.stderr.contains("provisioning"), "{created:#?}");
    assert!(created.stderr.contains("provisioned (ip "), "{created:#?}");
    let vm: Value = serde_json::from_str(&created.stdout).unwrap();
    let id = vm["id"].as_str().unwrap().to_owned();
    assert!(
        ["provisioned", "initializing", "running"].contains(&vm["status"].as_str().unwrap()),
        "{vm}"
    );

    // Logs by name: Terraform's lines, exactly the stored ones.
    let logs = cli(config, &[], &["vm", "logs", "web-1"], None)
        .await
        .expect(0);
    assert!(logs.stdout.contains("Apply complete!"), "{logs:#?}");
    let stored = api_lines(&daemon, &id).await;
    assert_eq!(logs.stdout.lines().collect::<Vec<_>>(), stored);

    // The list, as JSON: the API's objects.
    let list = cli(config, &[], &["vm", "list", "-o", "json"], None)
        .await
        .expect(0);
    let list: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["name"], "web-1");
    let table = cli(config, &[], &["vm", "list"], None).await.expect(0);
    assert!(
        table.stdout.contains(&id[..8]) && !table.stdout.contains(&id),
        "{table:#?}"
    );

    // Follow a second VM's create through a proxy that cuts the stream once, after 3000
    // bytes (mid-message, most likely): every line once, in order. Live if the job still
    // runs when `-f` starts; if it ended already, `-f` reads the same events from the
    // stream's history, so the cut and the resume are tested either way.
    let proxy = CuttingProxy::start(&daemon.url, 3000).await;
    let via_proxy = [("PROVISIONING_URL", proxy.url.as_str())];
    let second = cli(
        config,
        &via_proxy,
        &[
            "vm",
            "create",
            "--provider",
            "local",
            "--template",
            "small",
            "--name",
            "web-2",
            "--ssh-key",
            key,
            "--allow",
            "192.0.2.0/24",
            "--hours",
            "1",
            "-o",
            "json",
        ],
        None,
    )
    .await
    .expect(0);
    let second: Value = serde_json::from_str(&second.stdout).unwrap();
    let second = second["id"].as_str().unwrap().to_owned();
    let followed = cli(
        config,
        &via_proxy,
        &["vm", "logs", "web-2", "-f", "-v"],
        None,
    )
    .await
    .expect(0);
    assert_eq!(proxy.cuts.load(Ordering::SeqCst), 1, "{followed:#?}");
    assert!(followed.stderr.contains("resuming after"), "{followed:#?}");
    let stored = api_lines(&daemon, &second).await;
    assert!(stored.iter().any(|l| l.starts_with("Apply complete!")));
    assert_eq!(followed.stdout.lines().collect::<Vec<_>>(), stored);

    // Destroy by name and wait until it is destroyed.
    let destroyed = cli(config, &[], &["vm", "destroy", "web-1", "--wait"], None)
        .await
        .expect(0);
    assert!(destroyed.stderr.contains("destroyed"), "{destroyed:#?}");
    assert!(destroyed.stdout.contains("destroyed"), "{destroyed:#?}");

    // Sign out: the profile is gone, and with it the credentials.
    cli(config, &[], &["logout"], None).await.expect(0);
    cli(config, &[], &["vm", "list"], None).await.expect(4);
}
