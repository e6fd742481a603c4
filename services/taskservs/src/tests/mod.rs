//! Resolving, on catalogs built in memory (`Catalog::from_definitions`).

mod dag;
mod props;
mod refusals;

use std::collections::BTreeMap;

use domain::taskservs::{OnError, TaskservName, TaskservRequest};

use crate::{Catalog, Definition, Dependency, DependencyKind, Health, Resources, Target};

pub(crate) fn name(s: &str) -> TaskservName {
    TaskservName::parse(s).unwrap()
}

/// A definition with no params or needs, installing on debian and ubuntu.
pub(crate) fn def(n: &str, deps: &[(&str, DependencyKind)]) -> Definition {
    Definition {
        name: name(n),
        version: "1.0.0".into(),
        description: format!("{n} for tests"),
        category: "test".into(),
        providers: None,
        os: vec!["debian".into(), "ubuntu".into()],
        depends_on: deps
            .iter()
            .map(|(d, kind)| Dependency {
                name: name(d),
                kind: *kind,
            })
            .collect(),
        params: BTreeMap::new(),
        requires: Resources::default(),
        on_error: OnError::Stop,
        max_retries: 0,
        health: Health::default(),
        outputs: BTreeMap::new(),
    }
}

pub(crate) fn request(n: &str) -> TaskservRequest {
    TaskservRequest {
        name: name(n),
        params: Default::default(),
    }
}

pub(crate) fn target() -> Target {
    Target {
        provider: "openstack".into(),
        os: Some("ubuntu".into()),
        cpu: 4,
        ram_gb: 8,
        disk_gb: 40,
    }
}

pub(crate) fn all_enabled(_: &TaskservName, _: &str) -> bool {
    true
}

/// The plan's names in order.
pub(crate) fn plan_of(catalog: &Catalog, names: &[&str]) -> Vec<String> {
    let requests: Vec<_> = names.iter().map(|n| request(n)).collect();
    catalog
        .resolve(&requests, &target(), &all_enabled)
        .unwrap()
        .into_iter()
        .map(|s| s.name.to_string())
        .collect()
}

pub(crate) use DependencyKind::{ConflictsWith, PrefersBefore, Requires};
