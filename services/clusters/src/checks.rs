//! The checks across a template's fields, run after the contract: every role named in
//! `order`, in gates and in references exists; each role is in one stage; gates name a
//! taskserv of their role; counts are sensible; references point at earlier stages and at
//! an output one of that role's taskservs declares; the taskservs exist in the deployment's
//! catalog, take the params given and do not conflict.

use std::collections::{BTreeSet, HashSet};

use domain::taskservs::TaskservName;
use taskservs::{Catalog, DependencyKind};

use crate::references::{is_whole_reference, references_in};
use crate::template::{ClusterTemplate, Count, Nodes, Role};

/// The first problem found, as a sentence naming the role, gate or taskserv at fault.
pub(crate) fn check(t: &ClusterTemplate, taskservs: &Catalog) -> Result<(), String> {
    names(t)?;
    stages(t)?;
    for role in &t.roles {
        count(role)?;
        role_taskservs(t, role, taskservs)?;
    }
    gates(t)
}

/// Names of templates and roles are subject and URL friendly: lowercase letters, digits, `-`.
fn plain_name(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn names(t: &ClusterTemplate) -> Result<(), String> {
    if !plain_name(&t.name) {
        return Err(format!(
            "its name {:?} must be 1 to 63 lowercase letters, digits and -",
            t.name
        ));
    }
    if t.roles.is_empty() {
        return Err("it has no roles".into());
    }
    let mut seen = HashSet::new();
    for role in &t.roles {
        if !plain_name(&role.name) {
            return Err(format!(
                "role {:?}: a role's name is 1 to 63 lowercase letters, digits and -",
                role.name
            ));
        }
        if !seen.insert(role.name.as_str()) {
            return Err(format!("role {} is defined twice", role.name));
        }
        if role.templates.is_empty() {
            return Err(format!(
                "role {}: it lists no provider templates",
                role.name
            ));
        }
    }
    Ok(())
}

fn stages(t: &ClusterTemplate) -> Result<(), String> {
    let mut placed = HashSet::new();
    for (i, stage) in t.order.iter().enumerate() {
        if stage.is_empty() {
            return Err(format!("stage {} of order is empty", i + 1));
        }
        for name in stage {
            if t.role(name).is_none() {
                return Err(format!("order names role {name}, which is not defined"));
            }
            if !placed.insert(name.as_str()) {
                return Err(format!(
                    "role {name} is in two stages of order (or twice in one)"
                ));
            }
        }
    }
    match t.roles.iter().find(|r| !placed.contains(r.name.as_str())) {
        Some(role) => Err(format!("role {} is in no stage of order", role.name)),
        None => Ok(()),
    }
}

fn count(role: &Role) -> Result<(), String> {
    match role.count {
        Count::Fixed(0) => Err(format!(
            "role {}: a fixed count of 0 makes no node",
            role.name
        )),
        Count::Range { min, max, .. } if min > max => Err(format!(
            "role {}: its count range has min {min} above max {max}",
            role.name
        )),
        Count::Range { min, max, default } if default < min || default > max => Err(format!(
            "role {}: its default count {default} is outside its range {min} to {max}",
            role.name
        )),
        Count::Range { max: 0, .. } => Err(format!(
            "role {}: a count range up to 0 makes no node",
            role.name
        )),
        _ => Ok(()),
    }
}

fn role_taskservs(t: &ClusterTemplate, role: &Role, catalog: &Catalog) -> Result<(), String> {
    let mut listed = BTreeSet::new();
    for used in &role.taskservs {
        let at = |reason: String| format!("role {}, taskserv {}: {reason}", role.name, used.name);
        let def = catalog
            .get(&used.name)
            .ok_or_else(|| at("there is no such taskserv in the taskserv catalog".into()))?;
        if !listed.insert(&used.name) {
            return Err(at("it is listed twice".into()));
        }
        for (param, value) in &used.params {
            let spec = def.params.get(param).ok_or_else(|| {
                let known: Vec<&str> = def.params.keys().map(String::as_str).collect();
                at(format!(
                    "it has no param {param} (its params: {})",
                    known.join(", ")
                ))
            })?;
            let text = value.as_str().unwrap_or_default();
            for reference in references_in(text).map_err(|e| at(format!("param {param}: {e}")))? {
                refers_to_earlier(t, role, &reference.role, reference.index)
                    .and_then(|()| declared_output(t, catalog, &reference.role, &reference.key))
                    .map_err(|e| at(format!("param {param}: {e}")))?;
            }
            if !spec.kind.accepts(value) && !is_whole_reference(text) {
                return Err(at(format!(
                    "param {param} is {value}, not {}",
                    spec.kind.article()
                )));
            }
        }
    }
    no_conflict(role, catalog)
}

/// A reference is to a node that exists whatever counts the user picks, of a role made in
/// an earlier stage (its outputs are known when this role's nodes are requested).
fn refers_to_earlier(t: &ClusterTemplate, role: &Role, to: &str, index: u32) -> Result<(), String> {
    let target = t
        .role(to)
        .ok_or_else(|| format!("it refers to role {to}, which is not defined"))?;
    let (mine, theirs) = (t.stage_of(&role.name), t.stage_of(to));
    if theirs >= mine {
        return Err(format!(
            "it refers to role {to}, which is not made in a stage before role {}'s",
            role.name
        ));
    }
    if index >= target.count.min() {
        return Err(format!(
            "it refers to node {index} of role {to}, which may have only {} nodes",
            target.count.min()
        ));
    }
    Ok(())
}

/// The output `key` of role `to` is declared by one of the taskservs its nodes install
/// (those it lists and what they require): no other output is ever reported.
fn declared_output(
    t: &ClusterTemplate,
    catalog: &Catalog,
    to: &str,
    key: &str,
) -> Result<(), String> {
    let Some(target) = t.role(to) else {
        return Ok(());
    };
    let installed = closure(target, catalog);
    let declared: BTreeSet<&str> = installed
        .iter()
        .filter_map(|name| catalog.get(name))
        .flat_map(|def| def.outputs.keys().map(String::as_str))
        .collect();
    if declared.contains(key) {
        return Ok(());
    }
    let names: Vec<&str> = installed.iter().map(|n| n.as_str()).collect();
    let known: Vec<&str> = declared.into_iter().collect();
    Err(format!(
        "it refers to output {key} of role {to}, which none of that role's taskservs ({}) \
         declares (they declare: {})",
        names.join(", "),
        if known.is_empty() {
            "none".to_owned()
        } else {
            known.join(", ")
        }
    ))
}

/// The role's taskservs and, transitively, what they require: what each of its nodes has.
fn closure<'a>(role: &'a Role, catalog: &'a Catalog) -> BTreeSet<&'a TaskservName> {
    let mut closure: BTreeSet<&TaskservName> = BTreeSet::new();
    let mut todo: Vec<&TaskservName> = role.taskservs.iter().map(|u| &u.name).collect();
    while let Some(name) = todo.pop() {
        if closure.insert(name) {
            if let Some(def) = catalog.get(name) {
                todo.extend(def.deps_of(DependencyKind::Requires));
            }
        }
    }
    closure
}

/// No two of the role's taskservs (with what they require) conflict: they share each node.
fn no_conflict(role: &Role, catalog: &Catalog) -> Result<(), String> {
    let closure = closure(role, catalog);
    let says = |a: &TaskservName, b: &TaskservName| {
        catalog
            .get(a)
            .is_some_and(|d| d.deps_of(DependencyKind::ConflictsWith).any(|n| n == b))
    };
    let members: Vec<&TaskservName> = closure.into_iter().collect();
    for (i, a) in members.iter().enumerate() {
        if let Some(b) = members[i + 1..].iter().find(|b| says(a, b) || says(b, a)) {
            return Err(format!(
                "role {}: taskservs {a} and {b} conflict; they cannot be on one node",
                role.name
            ));
        }
    }
    Ok(())
}

fn gates(t: &ClusterTemplate) -> Result<(), String> {
    for gate in &t.health_gates {
        let role = t.role(&gate.role).ok_or_else(|| {
            format!(
                "a health gate names role {}, which is not defined",
                gate.role
            )
        })?;
        if !role.taskservs.iter().any(|u| u.name == gate.taskserv) {
            return Err(format!(
                "the health gate on role {} waits for taskserv {}, which the role does not have",
                role.name, gate.taskserv
            ));
        }
        if let Nodes::Count(n) = gate.nodes {
            if n > role.count.min() {
                return Err(format!(
                    "the health gate on role {} waits for {n} nodes; the role may have only {}",
                    role.name,
                    role.count.min()
                ));
            }
        }
        if gate.within_secs == 0 {
            return Err(format!(
                "the health gate on role {} has within_secs 0: give the nodes time",
                role.name
            ));
        }
    }
    Ok(())
}
