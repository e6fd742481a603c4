//! Catalog edits through the CLI against the real daemon: an admin adds a template, changes
//! it and puts it first, and `templates list` shows it so; the same for a provider; a user
//! who is not an admin is refused with the platform's message, exit 1.

use serde_json::Value;

use crate::cli;
use crate::clusters::signed_in;
use crate::daemon::Daemon;

fn json(run: &crate::Run) -> Value {
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {run:#?}"))
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn an_admin_creates_updates_and_reorders_templates_and_a_user_is_refused() {
    let daemon = Daemon::start().await;
    let (home, _key) = signed_in(&daemon).await;
    let config = home.path();
    let run = |args: &'static [&'static str]| cli(config, &[], args, None);

    let created = run(&[
        "admin",
        "catalog",
        "templates",
        "create",
        "local",
        "tiny",
        "--name",
        "Tiny",
        "--flavor-name",
        "f1",
        "--image-name",
        "img",
        "--cpu",
        "1",
        "--ram-gb",
        "1",
        "--storage-gb",
        "5",
        "--tag",
        "simple",
        "-o",
        "json",
    ])
    .await
    .expect(0);
    let tiny = json(&created);
    assert_eq!(tiny["id"], "tiny", "{created:#?}");
    assert_eq!(tiny["enabled"], true, "{created:#?}");

    // Only the fields given change.
    let updated = run(&[
        "admin",
        "catalog",
        "templates",
        "update",
        "local",
        "tiny",
        "--name",
        "Tiny one",
        "--cpu",
        "2",
        "--description",
        "for tests",
        "-o",
        "json",
    ])
    .await
    .expect(0);
    let tiny = json(&updated);
    assert_eq!(tiny["name"], "Tiny one");
    assert_eq!(tiny["cpu"], 2);
    assert_eq!(tiny["ram_gb"], 1);
    assert_eq!(tiny["image_name"], "img");
    let nothing = run(&["admin", "catalog", "templates", "update", "local", "tiny"])
        .await
        .expect(2);
    assert!(nothing.stderr.contains("nothing to change"), "{nothing:#?}");

    // First, then the others in their order: the table lists them so.
    let before = run(&["templates", "list", "--provider", "local", "-o", "json"])
        .await
        .expect(0);
    let before = ids(&json(&before));
    assert_eq!(
        before.last().map(String::as_str),
        Some("tiny"),
        "{before:?}"
    );
    let mut order: Vec<&str> = vec!["admin", "catalog", "templates", "reorder", "local", "tiny"];
    order.extend(before.iter().filter(|id| *id != "tiny").map(String::as_str));
    let reordered = cli(config, &[], &order, None).await.expect(0);
    let first = reordered.stdout.lines().nth(1).unwrap_or_default();
    assert!(first.starts_with("tiny "), "{reordered:#?}");
    let after = run(&["templates", "list", "--provider", "local", "-o", "json"])
        .await
        .expect(0);
    let after = json(&after);
    let mut expected = vec!["tiny".to_owned()];
    expected.extend(before.iter().filter(|id| *id != "tiny").cloned());
    assert_eq!(ids(&after), expected);
    assert_eq!(after[0]["cpu"], 2);
    let table = run(&["templates", "list", "--provider", "local"])
        .await
        .expect(0);
    let first = table.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        first.starts_with("local ") && first.contains(" tiny "),
        "{table:#?}"
    );
    assert!(first.contains("for tests"), "{table:#?}");

    // A provider: added unoffered, renamed, put first.
    let made = run(&[
        "admin",
        "catalog",
        "providers",
        "create",
        "spare",
        "--name",
        "Spare",
        "--disabled",
        "-o",
        "json",
    ])
    .await
    .expect(0);
    assert_eq!(json(&made)["enabled"], false, "{made:#?}");
    let renamed = run(&[
        "admin",
        "catalog",
        "providers",
        "update",
        "spare",
        "--name",
        "Spare two",
        "-o",
        "json",
    ])
    .await
    .expect(0);
    assert_eq!(json(&renamed)["name"], "Spare two");
    let providers = ids(&daemon.get("/api/v1/admin/providers").await);
    let mut order: Vec<&str> = vec!["admin", "catalog", "providers", "reorder", "spare"];
    order.extend(
        providers
            .iter()
            .filter(|id| *id != "spare")
            .map(String::as_str),
    );
    let reordered = cli(config, &[], &order, None).await.expect(0);
    assert!(reordered.stdout.contains("Spare two"), "{reordered:#?}");
    let now = ids(&daemon.get("/api/v1/admin/providers").await);
    assert_eq!(now.first().map(String::as_str), Some("spare"), "{now:?}");

    // Not an admin: the platform's refusal, one line, exit 1; nothing changed.
    let token = daemon.user_token("ann@example.test").await;
    let user = [
        ("PROVISIONING_URL", daemon.url.as_str()),
        ("PROVISIONING_TOKEN", token.as_str()),
    ];
    let refused = cli(
        config,
        &user,
        &[
            "admin",
            "catalog",
            "templates",
            "update",
            "local",
            "tiny",
            "--cpu",
            "4",
        ],
        None,
    )
    .await
    .expect(1);
    let answer: Value = reqwest::Client::new()
        .patch(format!("{}/api/v1/admin/templates/local/tiny", daemon.url))
        .bearer_auth(&token)
        .json(&serde_json::json!({"cpu": 4}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let detail = answer["detail"].as_str().unwrap();
    assert_eq!(refused.stderr.trim(), format!("error: {detail}"));
    let still = run(&["templates", "list", "--provider", "local", "-o", "json"])
        .await
        .expect(0);
    assert_eq!(json(&still)[0]["cpu"], 2);
}
