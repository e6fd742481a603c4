//! The repository's own `hcl/`: what its providers resolve to.

use std::collections::BTreeSet;
use std::path::PathBuf;

use hcl::{Body, Expression};

use super::*;

fn repo() -> Registry {
    let hcl = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../hcl");
    Registry::load(&hcl).expect("the repository's registry matches hcl/")
}

fn strings(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

/// The `project.tf` of an NREC project: its region default and tcp ports.
fn project(registry: &Registry, id: &str) -> (String, Expression) {
    let provider = registry.provider(id).unwrap();
    let files = provider.files(&registry.hcl_dir).unwrap();
    let file = files.iter().find(|f| f.name == "project.tf").unwrap();
    let body: Body = hcl::from_str(&std::fs::read_to_string(&file.path).unwrap()).unwrap();
    let block = |kind: &str| body.blocks().find(|b| b.identifier() == kind).unwrap();
    let attr = |block: &hcl::Block, key: &str| {
        let found = block.body().attributes().find(|a| a.key() == key);
        found.unwrap().expr().clone()
    };
    let Expression::String(region) = attr(block("variable"), "default") else {
        panic!("{id}: the region default is a string")
    };
    (region, attr(block("locals"), "tcp_ports"))
}

#[test]
fn the_nrec_providers_share_the_openstack_files_and_differ_only_in_their_project() {
    let registry = repo();
    // What each of the three folders declared when they were copies of one another.
    let mut variables = strings(COMMON_VARIABLES);
    variables.extend(strings(&[
        "region",
        "auth_url",
        "domain_name",
        "network_name",
    ]));
    let mut shared = None;
    for id in ["nrec", "nrec-uio", "nrec-uib"] {
        let provider = registry.provider(id).unwrap();
        let files = provider.files(&registry.hcl_dir).unwrap();
        let facts = FolderFacts::read_files(&files).unwrap();
        assert_eq!(facts.variables, variables, "{id}");
        assert_eq!(facts.outputs, strings(COMMON_OUTPUTS), "{id}");
        assert_eq!(
            facts.providers.into_iter().collect::<Vec<_>>(),
            [("openstack".to_owned(), Some("~> 3.0".to_owned()))],
            "{id}"
        );
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "common_variables.tf",
                "main.tf",
                "outputs.tf",
                "variables.tf",
                "versions.tf",
                "project.tf"
            ],
            "{id}"
        );
        let (project, others): (Vec<_>, Vec<_>) =
            files.into_iter().partition(|f| f.name == "project.tf");
        assert!(project[0].path.ends_with(format!("{id}/project.tf")));
        let others: Vec<PathBuf> = others.into_iter().map(|f| f.path).collect();
        assert_eq!(
            shared.get_or_insert_with(|| others.clone()),
            &others,
            "{id}"
        );
    }

    let ports = |ports: &[u64]| Expression::Array(ports.iter().map(|&p| p.into()).collect());
    assert_eq!(project(&registry, "nrec"), ("bgo".into(), ports(&[22])));
    assert_eq!(
        project(&registry, "nrec-uio"),
        ("osl".into(), ports(&[22, 8008]))
    );
    assert_eq!(
        project(&registry, "nrec-uib"),
        ("bgo".into(), ports(&[22, 8008]))
    );
}

#[test]
fn every_provider_takes_the_common_variables_from_the_common_folder() {
    for provider in &repo().providers {
        assert_eq!(provider.folders[0], "common", "{}", provider.id);
    }
}
