//! `nats/subjects.md` is the contract of the subjects: this test reads its `toml contract`
//! blocks, follows `<prefix>.>` with a plain NATS client while a VM is created, one fails
//! and one is destroyed (real Terraform on `local`) and the catalog changes, and checks
//! every message against the block of its subject, and that every block was seen.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::database::nats_url;
use crate::helpers::spawn_app;
use crate::wire::Vm;

const SUBJECTS_MD: &str = include_str!("../../../../nats/subjects.md");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Contract {
    subject: String,
    stream: String,
    kept: String,
    published_by: String,
    headers: Vec<String>,
    message_id: Option<String>,
    #[serde(default)]
    internal: bool,
    #[serde(default)]
    fields: BTreeMap<String, String>,
    example: Option<toml::Table>,
}

/// Every `toml contract` block of the document.
fn contracts() -> Vec<Contract> {
    let mut blocks = vec![];
    let mut lines = SUBJECTS_MD.lines();
    while let Some(line) = lines.next() {
        if line.trim() == "```toml contract" {
            let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
            let contract: Contract = toml::from_str(&block.join("\n"))
                .unwrap_or_else(|e| panic!("a contract block of subjects.md: {e}"));
            blocks.push(contract);
        }
    }
    blocks
}

/// The placeholders of `pattern` and the tokens they stand for, if `subject` matches it.
fn matches(pattern: &str, prefix: &str, subject: &str) -> Option<BTreeMap<String, String>> {
    let pattern = pattern.replace("<prefix>", prefix);
    let (pattern, subject): (Vec<&str>, Vec<&str>) =
        (pattern.split('.').collect(), subject.split('.').collect());
    if pattern.len() != subject.len() {
        return None;
    }
    let mut captures = BTreeMap::new();
    for (want, got) in pattern.iter().zip(&subject) {
        match want.strip_prefix('<').and_then(|w| w.strip_suffix('>')) {
            Some(name) => {
                captures.insert(name.to_owned(), (*got).to_owned());
            }
            None if want == got => {}
            None => return None,
        }
    }
    Some(captures)
}

/// Why `value` is not of the documented type, if it is not.
fn type_error(value: &Value, documented: &str) -> Option<String> {
    let (kind, nullable) = match documented.strip_suffix('?') {
        Some(kind) => (kind, true),
        None => (documented, false),
    };
    let fits = match kind {
        _ if value.is_null() => nullable,
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        other => panic!("subjects.md names an unknown type {other:?}"),
    };
    (!fits).then(|| format!("{value} is not {documented}"))
}

/// Checks a payload against the documented fields: exactly those, each of its type.
fn check_fields(contract: &Contract, payload: &Value) -> Result<(), String> {
    let object = payload
        .as_object()
        .ok_or_else(|| format!("{payload} is not an object"))?;
    let keys: Vec<&String> = object.keys().collect();
    let documented: Vec<&String> = contract.fields.keys().collect();
    let (mut keys, mut documented) = (keys, documented);
    keys.sort();
    documented.sort();
    if keys != documented {
        return Err(format!("fields {keys:?}, documented {documented:?}"));
    }
    for (name, kind) in &contract.fields {
        if let Some(error) = type_error(&object[name], kind) {
            return Err(format!("{name}: {error}"));
        }
    }
    Ok(())
}

/// Checks the subject's tokens against the payload they name.
fn check_tokens(captures: &BTreeMap<String, String>, payload: &Value) -> Result<(), String> {
    for (name, token) in captures {
        let expected = match name.as_str() {
            "EventType" => payload["type"].as_str().map(str::to_owned),
            "vm_id" | "cluster_id" if payload.get("aggregate_id").is_some() => {
                payload["aggregate_id"].as_str().map(str::to_owned)
            }
            "provider" if payload.get("version").is_some() => Some(
                payload["provider"]
                    .as_str()
                    .map_or(bus::ALL_PROVIDERS.to_owned(), |p| p.replace('.', "~")),
            ),
            _ => continue,
        };
        if expected.as_deref() != Some(token.as_str()) {
            return Err(format!(
                "token <{name}> is {token:?}, the payload says {expected:?}"
            ));
        }
    }
    Ok(())
}

#[tokio::test]
async fn every_message_of_a_create_a_failure_and_a_destroy_is_as_subjects_md_documents() {
    let contracts = contracts();
    assert!(contracts.len() >= 6, "{contracts:?}");
    for contract in &contracts {
        assert!(!contract.stream.is_empty() && !contract.kept.is_empty());
        assert!(!contract.published_by.is_empty());
        if let Some(example) = &contract.example {
            let example = serde_json::to_value(example).unwrap();
            check_fields(contract, &example)
                .unwrap_or_else(|e| panic!("the example of {}: {e}", contract.subject));
        }
        assert!(
            contract.internal || !contract.fields.is_empty(),
            "{} is public and documents no fields",
            contract.subject
        );
    }

    let app = spawn_app().await;
    let prefix = app.bus.subjects.prefix().to_owned();
    let client = bus::async_nats::connect(nats_url()).await.unwrap();
    let mut everything = client.subscribe(format!("{prefix}.>")).await.unwrap();
    let mut failures = client
        .subscribe(format!("{prefix}.events.vm.local.*.Failed"))
        .await
        .unwrap();
    client.flush().await.unwrap();

    // A catalog change, a create, a failure, a destroy.
    let disabled = app
        .client
        .patch(format!(
            "{}/api/v1/admin/templates/local/medium",
            app.address
        ))
        .bearer_auth(&app.token)
        .json(&json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(disabled.status(), 200);
    let ok = app.create_ok(json!({"name": "contract-ok"})).await;
    let broken = app
        .create_ok(json!({"name": "contract-broken", "template": "broken"}))
        .await;
    // A cluster of one node: the coordinator records its request and the node's.
    let cluster: Value = app
        .post_json(
            "/api/v1/clusters",
            // `large`: `medium`, the role's first, was just disabled above.
            &crate::cluster_support::cluster_request(
                json!({"template": "k3s-single", "roles": {"server": {"template": "large"}}}),
            ),
            202,
        )
        .await;
    app.wait_for_status(&ok, "provisioned").await;
    app.wait_for_status(&broken, "failed").await;
    app.wait_for_cluster(
        cluster["id"].as_str().unwrap(),
        "creating",
        Duration::from_secs(60),
    )
    .await;
    let _: Vm = app.delete_json(&format!("/api/v1/vms/{ok}"), 202).await;
    app.wait_for_status(&ok, "destroyed").await;

    let failed = tokio::time::timeout(Duration::from_secs(10), failures.next())
        .await
        .expect("the failure on local is published")
        .unwrap();
    let failed: Value = serde_json::from_slice(&failed.payload).unwrap();
    assert_eq!(failed["aggregate_id"], json!(broken));
    assert_eq!(failed["provider"], "local");

    // Everything published until a gauges message came after the destroy.
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut event_types = std::collections::BTreeSet::new();
    let gauges = format!("{prefix}.gauges.platform");
    let mut destroyed = false;
    loop {
        let message = tokio::time::timeout(Duration::from_secs(25), everything.next())
            .await
            .expect("messages until the next gauges")
            .unwrap();
        let subject = message.subject.as_str();
        let found: Vec<_> = contracts
            .iter()
            .filter_map(|c| matches(&c.subject, &prefix, subject).map(|m| (c, m)))
            .collect();
        let [(contract, captures)] = found.as_slice() else {
            panic!("{subject} matches {} documented subjects", found.len());
        };
        *seen.entry(contract.subject.as_str()).or_default() += 1;
        for header in &contract.headers {
            let headers = message.headers.as_ref();
            assert!(
                headers.and_then(|h| h.get(header.as_str())).is_some(),
                "{subject} has no header {header}"
            );
        }
        if contract.internal {
            continue;
        }
        let payload: Value = serde_json::from_slice(&message.payload).unwrap();
        check_fields(contract, &payload).unwrap_or_else(|e| panic!("{subject}: {e}"));
        check_tokens(captures, &payload).unwrap_or_else(|e| panic!("{subject}: {e}"));
        if let Some(pattern) = &contract.message_id {
            let mut expected = pattern.replace("<sequence>", &payload["sequence"].to_string());
            if let Some(vm) = captures.get("vm_id") {
                expected = expected.replace("<vm_id>", vm);
            }
            if let Some(cluster) = captures.get("cluster_id") {
                expected = expected.replace("<cluster_id>", cluster);
            }
            let id = message
                .headers
                .as_ref()
                .unwrap()
                .get("Nats-Msg-Id")
                .unwrap();
            assert_eq!(id.as_str(), expected, "{subject}");
        }
        if let Some(kind) = payload["type"].as_str() {
            event_types.insert(kind.to_owned());
            destroyed |= kind == "Destroyed";
        }
        if subject == gauges && destroyed {
            break;
        }
    }
    for contract in &contracts {
        assert!(
            seen.contains_key(contract.subject.as_str()),
            "nothing arrived on {}: {seen:?}",
            contract.subject
        );
    }
    for kind in [
        "SeedImported",
        "TemplateEnabledChanged",
        "Requested",
        "JobQueued",
        "JobStarted",
        "LogLine",
        "Applied",
        "Failed",
        "DestroyRequested",
        "Destroyed",
        "ClusterRequested",
        "NodeRequested",
    ] {
        assert!(event_types.contains(kind), "no {kind}: {event_types:?}");
    }
}
