//! `taskserv create` on a running VM of `local`: the install job is queued and followed
//! with `--wait`, and ends as the platform ends it. A simulated `local` VM posts no SSH host
//! key when it phones home, so the platform refuses to install over SSH to it (it trusts
//! only pinned keys): the CLI exits 3 with that reason. Installs that succeed over a real
//! SSH server are `it/taskserv_ssh.rs`'s.

use serde_json::Value;

use crate::daemon::Daemon;
use crate::verbs::{create, wait_status};
use crate::{cli, SSH_KEY};

#[tokio::test]
async fn an_install_on_a_running_vm_is_queued_followed_and_its_refusal_shown() {
    let daemon = Daemon::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    let key = home.path().join("id.pub");
    std::fs::write(&key, SSH_KEY).unwrap();
    let env = [
        ("PROVISIONING_URL", daemon.url.as_str()),
        ("PROVISIONING_TOKEN", daemon.admin_token.as_str()),
    ];
    let mut create = create("tsv", "small", key.to_str().unwrap());
    create.extend(["--wait", "-o", "json"]);
    let created = cli(config, &env, &create, None).await.expect(0);
    let vm: Value = serde_json::from_str(&created.stdout).unwrap();
    let id = vm["id"].as_str().unwrap().to_owned();
    wait_status(&daemon, "tsv", "running").await;

    // A param of the wrong type is the caller's mistake: exit 2, nothing sent.
    let typed = cli(
        config,
        &env,
        &["taskserv", "create", "grafana:port=high", "--vm", "tsv"],
        None,
    )
    .await
    .expect(2);
    assert!(typed.stderr.contains("port must be a number"), "{typed:#?}");
    let jobs = daemon.get(&format!("/api/v1/vms/{id}/jobs")).await;
    assert_eq!(jobs.as_array().unwrap().len(), 1, "{jobs:#}");

    // Queued and followed, under the seed's `--infra`: the job ends with the platform's
    // reason, exit 3; the VM stays running.
    let installed = cli(
        config,
        &env,
        &["taskserv", "create", "redis", "--infra", "tsv", "--wait"],
        None,
    )
    .await
    .expect(3);
    assert!(
        installed.stderr.contains("following its install job"),
        "{installed:#?}"
    );
    assert!(
        installed.stderr.contains("error: the install failed")
            && installed.stderr.contains("no SSH host key"),
        "{installed:#?}"
    );
    assert!(installed.stdout.contains("running"), "{installed:#?}");
    // The jobs read model follows the events the CLI saw.
    let mut jobs = Value::Null;
    for _ in 0..150 {
        jobs = daemon.get(&format!("/api/v1/vms/{id}/jobs")).await;
        let failed = jobs
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["action"] == "install" && j["state"] == "failed");
        if failed {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let install = jobs
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["action"] == "install");
    assert_eq!(
        install.map(|j| &j["state"]),
        Some(&Value::from("failed")),
        "{jobs:#}"
    );

    // A VM that is not running is refused: one line, exit 1.
    cli(config, &env, &["vm", "destroy", "tsv", "--wait"], None)
        .await
        .expect(0);
    let refused = cli(
        config,
        &env,
        &["taskserv", "create", "redis", "--vm", &id],
        None,
    )
    .await
    .expect(1);
    assert!(refused.stderr.starts_with("error: "), "{refused:#?}");
    assert!(
        refused
            .stderr
            .contains("the VM is destroyed: taskservs install on a running VM"),
        "{refused:#?}"
    );
    assert_eq!(refused.stderr.trim().lines().count(), 1, "{refused:#?}");
}
