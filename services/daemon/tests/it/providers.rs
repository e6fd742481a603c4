use std::path::{Path, PathBuf};

use daemon::Roles;
use futures::StreamExt;
use secrecy::ExposeSecret;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, try_spawn_app, vm_request};
use crate::wire::Problem;

fn repo_hcl() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hcl")
}

/// A copy of the repository's `hcl/` to change in a test.
fn hcl_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-r")
        .arg(format!("{}/.", repo_hcl().display()))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(status.success());
    dir
}

#[test]
fn the_terraform_of_every_provider_is_formatted_and_matches_the_registry() {
    let terraform = std::env::var("TERRAFORM_BIN").unwrap_or_else(|_| "terraform".into());
    let fmt = std::process::Command::new(terraform)
        .args(["fmt", "-check", "-recursive", "-diff"])
        .arg(repo_hcl())
        .output()
        .expect("terraform runs");
    assert!(
        fmt.status.success(),
        "terraform fmt -check: {}",
        String::from_utf8_lossy(&fmt.stdout)
    );
    let registry = registry::Registry::load(&repo_hcl()).expect("the registry matches hcl/");
    let ids: Vec<&str> = registry.providers.iter().map(|p| p.id.as_str()).collect();
    for id in [
        "nrec",
        "nrec-uio",
        "nrec-uib",
        "google-cloud",
        "azure",
        "ibm-cloud",
        "nscale",
        "aws",
        "upcloud",
        "local",
    ] {
        assert!(ids.contains(&id), "{id} is in the registry");
        let provider = registry.provider(id).unwrap();
        let files = provider.files(&registry.hcl_dir).unwrap();
        let facts = registry::FolderFacts::read_files(&files).unwrap();
        if id != "local" {
            assert!(
                !facts.providers.is_empty(),
                "{id} names its Terraform provider"
            );
        }
    }
}

#[tokio::test]
async fn the_daemon_refuses_to_start_when_the_registry_does_not_match_its_folders() {
    let hcl = hcl_copy();
    let toml = std::fs::read_to_string(hcl.path().join("providers.toml")).unwrap();
    std::fs::write(
        hcl.path().join("providers.toml"),
        toml.replacen("\"common\", \"aws\"", "\"common\", \"aws-gone\"", 1),
    )
    .unwrap();
    let Err(error) = try_spawn_app(Roles::NONE, |c| c.hcl_dir = hcl.path().to_owned()).await else {
        panic!("the daemon started");
    };
    assert!(
        error.to_string().contains("aws-gone does not exist"),
        "{error}"
    );

    std::fs::remove_file(hcl.path().join("local/outputs.tf")).unwrap();
    std::fs::write(hcl.path().join("providers.toml"), &toml).unwrap();
    let Err(error) = try_spawn_app(Roles::NONE, |c| c.hcl_dir = hcl.path().to_owned()).await else {
        panic!("the daemon started");
    };
    assert!(
        error.to_string().contains("declares no output vm_ip"),
        "{error}"
    );
}

#[tokio::test]
async fn the_daemon_refuses_to_start_when_an_enabled_template_names_a_disabled_provider() {
    let hcl = hcl_copy();
    let toml = std::fs::read_to_string(hcl.path().join("providers.toml")).unwrap();
    let start = toml.find("id = \"local\"").unwrap();
    let local = toml[start..].replacen("enabled = true", "enabled = false", 1);
    std::fs::write(
        hcl.path().join("providers.toml"),
        format!("{}{local}", &toml[..start]),
    )
    .unwrap();

    let Err(error) = try_spawn_app(Roles::NONE, |c| c.hcl_dir = hcl.path().to_owned()).await else {
        panic!("the daemon started");
    };
    assert!(
        error
            .to_string()
            .contains("template local/small is enabled but provider \"local\" is disabled"),
        "{error}"
    );
}

#[tokio::test]
async fn providers_show_regions_and_whether_their_credentials_are_present() {
    let app = spawn_app().await;
    let providers: Vec<Value> = app.get_json("/api/v1/providers").await;
    let find = |id: &str| providers.iter().find(|p| p["id"] == id).cloned().unwrap();
    let local = find("local");
    assert_eq!(local["credentials_present"], true);
    assert_eq!(local["available"], true);
    let nrec = find("nrec");
    assert_eq!(nrec["credentials_present"], false);
    assert_eq!(nrec["available"], false);
    assert_eq!(nrec["regions"], json!(["bgo"]));
    let body = serde_json::to_string(&providers).unwrap();
    assert!(
        !body.contains("nrec-secret"),
        "no credential source is shown"
    );

    let templates: Vec<Value> = app.get_json("/api/v1/providers/nrec/templates").await;
    assert!(
        templates.is_empty(),
        "no templates of a provider without credentials"
    );
    let body = vm_request(json!({"provider": "nrec", "template": "standard-large"}));
    let problem: Problem = app.post_json("/api/v1/vms", &body, 422).await;
    assert!(problem.detail.contains("lacks credentials"), "{problem:?}");
}

const PLANTED: &str = "planted-credential-7f3a9c";

/// A copy of `hcl/` with a provider `leaky` whose Terraform echoes its credential in an error.
fn leaky_hcl() -> tempfile::TempDir {
    let hcl = hcl_copy();
    let leaky = hcl.path().join("leaky");
    std::fs::create_dir(&leaky).unwrap();
    for file in ["variables.tf", "outputs.tf", "versions.tf", "main.tf"] {
        let from = hcl.path().join("local").join(file);
        if from.exists() {
            std::fs::copy(from, leaky.join(file)).unwrap();
        }
    }
    std::fs::write(
        leaky.join("leak.tf"),
        "variable \"leak_token\" {\n  type = string\n}\n\noutput \"token_number\" {\n  value = tonumber(var.leak_token)\n}\n",
    )
    .unwrap();
    let mut toml = std::fs::read_to_string(hcl.path().join("providers.toml")).unwrap();
    toml.push_str(
        "\n[[providers]]\nid = \"leaky\"\nname = \"Leaky\"\nfolders = [\"common\", \"leaky\"]\nenabled = true\nregions = []\n\n[[providers.credentials]]\nname = \"TF_VAR_leak_token\"\nenv = \"LEAKY_TOKEN\"\n",
    );
    std::fs::write(hcl.path().join("providers.toml"), toml).unwrap();
    hcl
}

/// An age-encrypted credentials file holding the planted credential, and its identity.
fn credentials_file(dir: &Path) -> (PathBuf, PathBuf) {
    let identity = age::x25519::Identity::generate();
    let file = dir.join("credentials.age");
    let plaintext = format!("LEAKY_TOKEN={PLANTED}\n");
    std::fs::write(
        &file,
        age::encrypt(&identity.to_public(), plaintext.as_bytes()).unwrap(),
    )
    .unwrap();
    let key = dir.join("identity.txt");
    std::fs::write(&key, identity.to_string().expose_secret()).unwrap();
    (file, key)
}

#[tokio::test]
async fn a_planted_credential_reaches_terraform_but_no_event_log_stream_or_response() {
    let hcl = leaky_hcl();
    let secrets = tempfile::tempdir().unwrap();
    let credentials = credentials_file(secrets.path());
    let app = try_spawn_app(Roles::ALL, |c| {
        c.hcl_dir = hcl.path().to_owned();
        c.credentials_file = Some(credentials);
    })
    .await
    .unwrap();
    for statement in [
        "INSERT INTO providers (id, name, enabled, sort_order) VALUES ('leaky', 'Leaky', true, 50) ON CONFLICT DO NOTHING",
        "INSERT INTO templates (provider_id, id, name, flavor_name, image_name, cpu, ram_gb, storage_gb) VALUES ('leaky', 'small', 'Small', 'local.small', 'debian-12', 1, 1, 1) ON CONFLICT DO NOTHING",
    ] {
        store::sqlx::query(statement).execute(&app.pool).await.unwrap();
    }

    // Everything runners publish, as it passes (the RUNNER stream drops acked messages).
    let mut runner_subject = app
        .bus
        .client
        .subscribe(format!("{}.runner.>", app.bus.subjects.prefix()))
        .await
        .unwrap();
    let raw = tokio::spawn(async move {
        let mut seen = vec![];
        while let Ok(Some(message)) =
            tokio::time::timeout(std::time::Duration::from_secs(5), runner_subject.next()).await
        {
            seen.push(String::from_utf8_lossy(&message.payload).into_owned());
        }
        seen
    });

    let id = app
        .create_ok(json!({"provider": "leaky", "template": "small"}))
        .await;
    let vm = app.wait_for_status(&id, "failed").await;

    // Terraform saw the credential: its error quoted it, and the runner redacted it.
    let error = vm.last_error.as_deref().unwrap();
    assert!(error.contains("[redacted]"), "{error}");
    let mut seen = vec![serde_json::to_string(&vm).unwrap()];
    for path in ["", "/events", "/logs"] {
        let body = app
            .get(&format!("/api/v1/vms/{id}{path}"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        seen.push(body);
    }
    seen.push(
        app.get("/api/v1/vms")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    seen.push(
        app.get("/api/v1/providers")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    let tables: Vec<String> = store::sqlx::query_scalar(
        "SELECT payload::text || metadata::text FROM events
         UNION ALL SELECT message FROM vm_logs
         UNION ALL SELECT state::text || coalesce(last_error, '') FROM vm_views",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    seen.extend(tables);
    for envelope in app.stream_messages().await {
        seen.push(serde_json::to_string(&envelope).unwrap());
    }
    let raw = raw.await.unwrap();
    assert!(
        raw.iter().any(|m| m.contains("[redacted]")),
        "the runner's own messages were seen"
    );
    seen.extend(raw);
    for entry in walk(app.work.path()) {
        seen.push(std::fs::read_to_string(entry).unwrap_or_default());
    }
    for (i, text) in seen.iter().enumerate() {
        assert!(
            !text.contains(PLANTED),
            "the credential leaked into item {i}: {text}"
        );
    }
    app.assert_consumers_drained().await;
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = vec![];
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == ".terraform") {
                continue;
            }
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

fn provisioningd(hcl: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_provisioningd"))
        .args(args)
        .env("PROVISIONING_HCL_DIR", hcl)
        .env("RUST_BACKTRACE", "0")
        .output()
        .unwrap()
}

#[test]
fn providers_validate_exits_non_zero_naming_the_problem_and_list_prints_the_registry() {
    let hcl = hcl_copy();
    let list = provisioningd(hcl.path(), &["providers", "list"]);
    assert!(list.status.success());
    let table = String::from_utf8_lossy(&list.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("local ") && l.ends_with("none needed")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("nrec ") && l.contains("bgo")),
        "{table}"
    );

    std::fs::remove_file(hcl.path().join("nscale/outputs.tf")).unwrap();
    let validate = provisioningd(hcl.path(), &["providers", "validate"]);
    assert!(!validate.status.success());
    let stderr = String::from_utf8_lossy(&validate.stderr);
    assert!(stderr.contains("declares no output vm_ip"), "{stderr}");
}
