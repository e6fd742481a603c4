//! What the CLI says and exits with when the platform refuses, the job fails or nobody is
//! signed in; completions.

use crate::daemon::Daemon;
use crate::{cli, SSH_KEY};

#[tokio::test]
async fn refusals_failed_jobs_and_missing_credentials_exit_with_their_codes() {
    let daemon = Daemon::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    let key = home.path().join("id.pub");
    std::fs::write(&key, SSH_KEY).unwrap();
    let key = key.to_str().unwrap();
    let signed_in = [
        ("PROVISIONING_URL", daemon.url.as_str()),
        ("PROVISIONING_TOKEN", daemon.admin_token.as_str()),
    ];
    let create = |template: &'static str, wait: bool| {
        let mut args = vec![
            "vm",
            "create",
            "--provider",
            "local",
            "--template",
            template,
            "--name",
            "w",
            "--ssh-key",
            key,
            "--allow",
            "192.0.2.0/24",
        ];
        if wait {
            args.push("--wait");
        }
        args
    };

    // The platform refuses: exit 1, its detail on one line.
    let refused = cli(config, &signed_in, &create("nope", false), None)
        .await
        .expect(1);
    assert!(
        refused.stderr.starts_with("error: template"),
        "{refused:#?}"
    );
    assert_eq!(refused.stderr.lines().count(), 1, "{refused:#?}");
    let verbose = cli(
        config,
        &signed_in,
        &[&create("nope", false)[..], &["-v"]].concat(),
        None,
    )
    .await
    .expect(1);
    assert!(
        verbose.stderr.contains("(invalid_field, HTTP 422)"),
        "{verbose:#?}"
    );
    assert!(verbose.stderr.contains("x-request-id"), "{verbose:#?}");
    assert!(
        !verbose.stderr.contains(&daemon.admin_token),
        "the token never shows"
    );

    // A job that fails while --wait follows it: exit 3, with Terraform's reason.
    let failed = cli(config, &signed_in, &create("broken", true), None)
        .await
        .expect(3);
    assert!(
        failed.stderr.contains("error: the create failed"),
        "{failed:#?}"
    );

    // No VM of that name.
    let none = cli(config, &signed_in, &["vm", "show", "nosuch"], None)
        .await
        .expect(1);
    assert_eq!(none.stderr.trim(), "error: no VM named nosuch");

    // Not signed in: no credentials at all, or a token the platform refuses.
    cli(
        config,
        &[("PROVISIONING_URL", &daemon.url)],
        &["vm", "list"],
        None,
    )
    .await
    .expect(4);
    let wrong = [
        ("PROVISIONING_URL", daemon.url.as_str()),
        ("PROVISIONING_TOKEN", "pat_wrong"),
    ];
    cli(config, &wrong, &["vm", "list"], None).await.expect(4);

    // Nobody listening: the URL tried is named.
    let down = [
        ("PROVISIONING_URL", "http://127.0.0.1:9"),
        ("PROVISIONING_TOKEN", "x"),
    ];
    let unreachable = cli(config, &down, &["providers", "list"], None)
        .await
        .expect(1);
    assert!(
        unreachable
            .stderr
            .contains("could not reach http://127.0.0.1:9/api/v1/providers"),
        "{unreachable:#?}"
    );

    // Usage mistakes are clap's: exit 2.
    cli(
        config,
        &signed_in,
        &["vm", "create", "--provider", "local"],
        None,
    )
    .await
    .expect(2);

    // The catalog's commands answer tables.
    let providers = cli(config, &signed_in, &["providers", "list"], None)
        .await
        .expect(0);
    assert!(providers.stdout.starts_with("ID"), "{providers:#?}");
    let yaml = cli(
        config,
        &signed_in,
        &["providers", "list", "-o", "yaml"],
        None,
    )
    .await
    .expect(0);
    assert!(yaml.stdout.contains("id: local"), "{yaml:#?}");
    let templates = cli(
        config,
        &signed_in,
        &["templates", "list", "--provider", "local"],
        None,
    )
    .await
    .expect(0);
    assert!(templates.stdout.contains("small"), "{templates:#?}");
    let taskservs = cli(config, &signed_in, &["taskserv", "list"], None)
        .await
        .expect(0);
    assert!(taskservs.stdout.contains("docker"), "{taskservs:#?}");

    // Completions and the man page, from the same definitions.
    let bash = cli(config, &[], &["completions", "bash"], None)
        .await
        .expect(0);
    assert!(bash.stdout.contains("_provisioning()"), "{bash:#?}");
    let man = cli(config, &[], &["man"], None).await.expect(0);
    assert!(man.stdout.contains(".TH provisioning"), "{man:#?}");
}
