//! What a user keeps on the platform through the CLI: SSH keys (added, generated, removed)
//! and personal API tokens (made, used, revoked); and `providers validate`.

use serde_json::Value;

use crate::daemon::Daemon;
use crate::{cli, SSH_KEY};

#[tokio::test]
async fn keys_and_tokens_are_added_listed_and_removed_and_providers_validated() {
    let daemon = Daemon::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = home.path();
    let env = [
        ("PROVISIONING_URL", daemon.url.as_str()),
        ("PROVISIONING_TOKEN", daemon.admin_token.as_str()),
    ];
    let public = home.path().join("id.pub");
    std::fs::write(&public, SSH_KEY).unwrap();

    // Keys: one added from a file, one generated (its private key in a new 0600 file).
    let added = cli(
        config,
        &env,
        &["keys", "add", "laptop", public.to_str().unwrap()],
        None,
    )
    .await
    .expect(0);
    assert!(added.stdout.contains("ssh-ed25519"), "{added:#?}");
    let private = home.path().join("generated");
    let generated = cli(
        config,
        &env,
        &[
            "keys",
            "generate",
            "ci",
            "--out",
            private.to_str().unwrap(),
            "-o",
            "json",
        ],
        None,
    )
    .await
    .expect(0);
    let generated: Value = serde_json::from_str(&generated.stdout).unwrap();
    assert!(generated.get("private_key").is_none(), "never printed");
    let written = std::fs::read_to_string(&private).unwrap();
    assert!(written.contains("PRIVATE KEY"));
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&private).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Never over an existing file.
    cli(
        config,
        &env,
        &[
            "keys",
            "generate",
            "again",
            "--out",
            private.to_str().unwrap(),
        ],
        None,
    )
    .await
    .expect(2);
    let list = cli(config, &env, &["keys", "list"], None).await.expect(0);
    assert!(list.stdout.starts_with("ID"), "{list:#?}");
    assert!(
        list.stdout.contains("laptop") && list.stdout.contains("ci"),
        "{list:#?}"
    );
    cli(config, &env, &["keys", "remove", "laptop"], None)
        .await
        .expect(0);
    let list = cli(config, &env, &["keys", "list", "-o", "json"], None)
        .await
        .expect(0);
    let list: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["name"], "ci");
    let gone = cli(config, &env, &["keys", "remove", "laptop"], None)
        .await
        .expect(1);
    assert_eq!(gone.stderr.trim(), "error: no key laptop");

    // Tokens: made (the secret shown once), working, listed, revoked (then refused).
    let made = cli(
        config,
        &env,
        &["tokens", "create", "script", "-o", "json"],
        None,
    )
    .await
    .expect(0);
    let made: Value = serde_json::from_str(&made.stdout).unwrap();
    let secret = made["token"].as_str().unwrap().to_owned();
    let with_it = [
        ("PROVISIONING_URL", daemon.url.as_str()),
        ("PROVISIONING_TOKEN", secret.as_str()),
    ];
    cli(config, &with_it, &["me"], None).await.expect(0);
    let list = cli(config, &env, &["tokens", "list"], None).await.expect(0);
    assert!(list.stdout.contains("script"), "{list:#?}");
    assert!(
        !list.stdout.contains(&secret),
        "the secret is shown once only"
    );
    cli(config, &env, &["tokens", "revoke", "script"], None)
        .await
        .expect(0);
    cli(config, &with_it, &["me"], None).await.expect(4);

    // The local provider can take requests; an unknown one is refused.
    let valid = cli(config, &env, &["providers", "validate", "local"], None)
        .await
        .expect(0);
    assert!(valid.stdout.contains("ok"), "{valid:#?}");
    let unknown = cli(config, &env, &["providers", "validate", "nosuch"], None)
        .await
        .expect(1);
    assert_eq!(unknown.stderr.trim(), "error: no provider nosuch");
}
