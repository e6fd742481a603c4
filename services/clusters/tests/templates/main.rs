//! The shipped templates (`hcl/clusters`) against the shipped taskservs, and each load-time
//! check refusing a bad template with a message naming it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clusters::{ClusterCatalog, Count, Nodes, OnFailure};

mod refusals;
mod rendered;

fn hcl() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hcl")
}

/// The shipped taskserv catalog, loaded once: evaluating Nickel per test is slow.
fn taskservs() -> &'static taskservs::Catalog {
    static CATALOG: OnceLock<taskservs::Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| taskservs::Catalog::load(&hcl().join("taskservs")).unwrap())
}

fn shipped() -> ClusterCatalog {
    ClusterCatalog::load(&hcl().join("clusters"), taskservs()).unwrap_or_else(|e| panic!("{e}"))
}

/// Loads a catalog of the one template `text`, named `name`, from a folder of its own.
fn load_one(name: &str, text: &str) -> Result<ClusterCatalog, String> {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("registry.toml"),
        format!("[[clusters]]\nname = \"{name}\"\n"),
    )
    .unwrap();
    fs::write(dir.path().join(format!("{name}.ncl")), text).unwrap();
    ClusterCatalog::load(dir.path(), taskservs()).map_err(|e| e.to_string())
}

#[test]
fn every_shipped_template_loads_against_the_shipped_taskservs() {
    let catalog = shipped();
    let names: Vec<&str> = catalog
        .templates()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "k3s-single",
            "k3s-ha",
            "etcd-cluster",
            "postgresql-primary-replica"
        ]
    );
    for template in catalog.templates() {
        assert!(!template.description.is_empty());
        assert_eq!(template.on_failure, OnFailure::Rollback);
        assert!(template.resolve_counts(&BTreeMap::new()).is_ok());
    }
}

#[test]
fn k3s_ha_makes_three_servers_then_agents_joining_the_first() {
    let catalog = shipped();
    let ha = catalog.get("k3s-ha").unwrap();
    assert_eq!(ha.order, [vec!["seed"], vec!["server"], vec!["agent"]]);
    let counts = ha.resolve_counts(&BTreeMap::new()).unwrap();
    assert_eq!(counts["seed"] + counts["server"], 3);
    assert_eq!(counts["agent"], 2);
    let agent = ha.role("agent").unwrap();
    assert_eq!(
        agent.count,
        Count::Range {
            min: 0,
            max: 10,
            default: 2
        }
    );
    let params = &agent.taskservs[0].params;
    assert_eq!(
        params["server_url"],
        "{{ roles.seed[0].outputs.server_url }}"
    );
    // The join token travels as a file on the VM, never as a value in the params.
    assert_eq!(params["token_file"], "/var/lib/provisioning/cluster/secret");
    assert!(!params.contains_key("token"));
    let seed = ha.role("seed").unwrap();
    assert_eq!(seed.taskservs[0].params["cluster_init"], true);
    let gate = ha.health_gates.iter().find(|g| g.role == "server").unwrap();
    assert_eq!((gate.nodes, gate.within_secs), (Nodes::All, 900));
}

#[test]
fn a_template_serializes_as_an_api_lists_it() {
    let catalog = shipped();
    let json = serde_json::to_value(catalog.get("k3s-ha").unwrap()).unwrap();
    assert_eq!(json["on_failure"], "rollback");
    assert_eq!(json["roles"][0]["count"], 1);
    assert_eq!(
        json["roles"][2]["count"],
        serde_json::json!({"min": 0, "max": 10, "default": 2})
    );
    assert_eq!(json["health_gates"][0]["nodes"], "all");
    assert_eq!(json["roles"][2]["taskservs"][0]["name"], "k3s");
}

#[test]
fn counts_take_the_defaults_and_the_choices_within_range() {
    let catalog = shipped();
    let ha = catalog.get("k3s-ha").unwrap();
    let counts = ha
        .resolve_counts(&BTreeMap::from([("agent".to_owned(), 7)]))
        .unwrap();
    assert_eq!(
        counts,
        BTreeMap::from([
            ("agent".to_owned(), 7),
            ("seed".to_owned(), 1),
            ("server".to_owned(), 2)
        ])
    );
    let none = ha
        .resolve_counts(&BTreeMap::from([("agent".to_owned(), 0)]))
        .unwrap();
    assert_eq!(none["agent"], 0);
}

#[test]
fn a_count_outside_the_range_is_refused_naming_the_role() {
    let catalog = shipped();
    let ha = catalog.get("k3s-ha").unwrap();
    let err = ha
        .resolve_counts(&BTreeMap::from([("agent".to_owned(), 11)]))
        .unwrap_err();
    assert!(
        err.starts_with("role agent: ") && err.contains("0 to 10"),
        "{err}"
    );
    let err = ha
        .resolve_counts(&BTreeMap::from([("server".to_owned(), 4)]))
        .unwrap_err();
    assert!(
        err.starts_with("role server: ") && err.contains("fixed at 2"),
        "{err}"
    );
    let err = ha
        .resolve_counts(&BTreeMap::from([("worker".to_owned(), 1)]))
        .unwrap_err();
    assert!(
        err.starts_with("role worker: ") && err.contains("seed, server, agent"),
        "{err}"
    );
}
