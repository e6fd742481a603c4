//! Every manifest of deploy/kubernetes, and the Job this executor builds, checked without a
//! cluster: each YAML document deserialises into its typed object (k8s-openapi's, or a small
//! struct for a CloudNativePG resource) and serialises back to the same document, so a
//! misspelt or misplaced field (which the typed object does not know, and would drop) fails.

use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::tests::{good_credentials, launch};
use super::{manifest, KubernetesConfig};

/// The subset of a CloudNativePG resource's fields this repository uses; any other field is
/// refused, so a typo cannot pass unnoticed.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Cnpg<Spec> {
    api_version: String,
    kind: String,
    metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    spec: Spec,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClusterSpec {
    instances: u32,
    image_name: String,
    storage: Storage,
    bootstrap: Bootstrap,
    managed: Managed,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Storage {
    size: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Bootstrap {
    initdb: InitDb,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InitDb {
    database: String,
    owner: String,
    secret: NameRef,
    #[serde(rename = "postInitApplicationSQL")]
    post_init_application_sql: Vec<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NameRef {
    name: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Managed {
    roles: Vec<ManagedRole>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ManagedRole {
    name: String,
    ensure: String,
    login: bool,
    password_secret: NameRef,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DatabaseSpec {
    cluster: NameRef,
    name: String,
    owner: String,
}

/// Deserialises `document` into `T` and serialises it back; the two must be equal.
fn round_trip<T: Serialize + DeserializeOwned>(document: &Value) -> Result<(), String> {
    let typed: T = serde_json::from_value(document.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    if &back == document {
        Ok(())
    } else {
        Err(format!(
            "not the same after a round trip (a field the schema does not know?):\n{}\nbecame\n{}",
            serde_json::to_string_pretty(document).unwrap(),
            serde_json::to_string_pretty(&back).unwrap()
        ))
    }
}

/// Checks one document by its `apiVersion` and `kind`.
fn check(document: &Value) -> Result<&'static str, String> {
    let api_version = document["apiVersion"].as_str().unwrap_or_default();
    let kind = document["kind"].as_str().unwrap_or_default();
    let checked = match (api_version, kind) {
        ("v1", "Namespace") => round_trip::<Namespace>(document),
        ("v1", "Service") => round_trip::<Service>(document),
        ("v1", "ServiceAccount") => round_trip::<ServiceAccount>(document),
        ("v1", "Secret") => round_trip::<Secret>(document),
        ("v1", "ConfigMap") => round_trip::<ConfigMap>(document),
        ("apps/v1", "Deployment") => round_trip::<Deployment>(document),
        ("apps/v1", "StatefulSet") => round_trip::<StatefulSet>(document),
        ("batch/v1", "Job") => round_trip::<Job>(document),
        ("rbac.authorization.k8s.io/v1", "Role") => round_trip::<Role>(document),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => round_trip::<RoleBinding>(document),
        ("postgresql.cnpg.io/v1", "Cluster") => round_trip::<Cnpg<ClusterSpec>>(document),
        ("postgresql.cnpg.io/v1", "Database") => round_trip::<Cnpg<DatabaseSpec>>(document),
        _ => Err(format!("no check for {api_version} {kind}")),
    };
    checked.map(|()| "checked")
}

/// Every document of a YAML text, as JSON values.
fn documents(text: &str) -> Vec<Value> {
    serde_saphyr::from_multiple::<Value>(text).expect("valid YAML")
}

fn yaml_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            yaml_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            found.push(path);
        }
    }
}

#[test]
fn every_deploy_manifest_round_trips_through_its_typed_object() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes");
    let mut files = vec![];
    yaml_files(&root, &mut files);
    assert!(files.len() >= 7, "{files:?}");
    let mut kinds = std::collections::BTreeMap::<String, usize>::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for document in documents(&text) {
            if let Err(e) = check(&document) {
                panic!("{}: {e}", file.display());
            }
            let kind = document["kind"].as_str().unwrap().to_owned();
            *kinds.entry(kind).or_default() += 1;
        }
    }
    // The distributed setup is all there: NATS, Postgres and two replicas of each role.
    for kind in [
        "StatefulSet",
        "Cluster",
        "Database",
        "Deployment",
        "ConfigMap",
    ] {
        assert!(kinds.contains_key(kind), "no {kind}: {kinds:?}");
    }
}

#[test]
fn the_distributed_roles_run_twice_and_the_runner_may_publish_only_on_runner_subjects() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes/distributed");
    let text = std::fs::read_to_string(dir.join("provisioningd.yaml")).unwrap();
    let roles: Vec<Deployment> = documents(&text)
        .into_iter()
        .filter(|d| d["kind"] == "Deployment")
        .map(|d| serde_json::from_value(d).unwrap())
        .collect();
    let mut names: Vec<_> = roles
        .iter()
        .map(|d| {
            let spec = d.spec.as_ref().unwrap();
            assert_eq!(spec.replicas, Some(2));
            spec.template.spec.as_ref().unwrap().containers[0]
                .args
                .clone()
                .unwrap()
                .join(" ")
        })
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["api", "dispatcher", "ingester", "projector", "relay"]
    );

    let text = std::fs::read_to_string(dir.join("nats.yaml")).unwrap();
    let config: ConfigMap = documents(&text)
        .into_iter()
        .find(|d| d["kind"] == "ConfigMap")
        .map(|d| serde_json::from_value(d).unwrap())
        .unwrap();
    let conf = &config.data.unwrap()["nats.conf"];
    let runner = conf.split("user: runner").nth(1).expect("a runner user");
    let publish = runner
        .lines()
        .find(|l| l.trim_start().starts_with("publish:"))
        .unwrap();
    assert_eq!(
        publish.trim(),
        r#"publish: ["provisioning.runner.>", "provisioning.control.job_active.>"]"#
    );
    let subscribe = runner
        .lines()
        .find(|l| l.trim_start().starts_with("subscribe:"))
        .unwrap();
    assert_eq!(subscribe.trim(), r#"subscribe: ["_INBOX_runner.>"]"#);
    // The users of the repository's configuration, which the tests start nats-server with.
    let auth = std::fs::read_to_string(dir.join("../../../nats/auth.conf")).unwrap();
    let users = &auth[auth.find("authorization {").unwrap()..];
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        squash(conf).contains(&squash(users)),
        "nats.yaml's users are not those of nats/auth.conf"
    );

    // Runner Jobs connect as that user, with the password NATS reads for it.
    let dispatcher = roles
        .iter()
        .map(|d| {
            &d.spec
                .as_ref()
                .unwrap()
                .template
                .spec
                .as_ref()
                .unwrap()
                .containers[0]
        })
        .find(|c| c.args.as_deref() == Some(&["dispatcher".to_owned()][..]))
        .unwrap();
    let value = |name: &str| {
        dispatcher
            .env
            .iter()
            .flatten()
            .find(|v| v.name == name)
            .and_then(|v| v.value.clone())
    };
    assert_eq!(
        value("PROVISIONING_K8S_RUNNER_NATS_USER").as_deref(),
        Some("runner")
    );
    let secret = value("PROVISIONING_K8S_RUNNER_NATS_SECRET").unwrap();
    assert!(
        text_of(&dir, "nats.yaml")
            .contains("secretKeyRef: { name: nats-users, key: runner-password }"),
        "nats.yaml reads another runner password"
    );
    assert_eq!(secret, "nats-users/runner-password");
    let secrets = text_of(&dir, "secrets.example.yaml");
    let nats_users = secrets.split("name: nats-users").nth(1).unwrap();
    assert!(nats_users.contains("runner-password:"), "{nats_users}");
}

fn text_of(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file)).unwrap()
}

#[test]
fn the_runner_job_and_its_config_map_round_trip_through_their_typed_objects() {
    let dir = tempfile::tempdir().unwrap();
    let launch = launch(dir.path(), good_credentials());
    let config = KubernetesConfig {
        namespace: "provisioning".into(),
        ..KubernetesConfig::new("registry.example/provisioning-runner:1")
    };
    let job = manifest::job(&launch, &config).unwrap();
    let yaml = serde_saphyr::to_string(&job).unwrap();
    for document in documents(&yaml) {
        check(&document).unwrap();
    }
    let files = [("main.tf".to_owned(), b"# a file\n".to_vec())].into();
    let config_map = manifest::config_map(&launch, &config, files, "5f1d0c9e-1111");
    let yaml = serde_saphyr::to_string(&config_map).unwrap();
    for document in documents(&yaml) {
        check(&document).unwrap();
    }
}
