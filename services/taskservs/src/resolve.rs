//! Resolving a request into a plan: the closure of `requires`, in an order where every
//! taskserv comes after what it requires and what it prefers before it (when that is in the
//! plan too); taskservs that do not depend on one another keep registry order.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use domain::taskservs::{Params, PlannedTaskserv, TaskservName, TaskservRequest};

use crate::catalog::Catalog;
use crate::checks::{conflict, ordering_deps, requires_closure};
use crate::definition::{Definition, DependencyKind};
use crate::target::Target;

/// Why a request cannot be planned, naming the taskserv at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub taskserv: TaskservName,
    /// A sentence the user understands: what is wrong and, where it helps, what to do.
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.taskserv, self.reason)
    }
}

impl std::error::Error for Refusal {}

fn refuse<T>(taskserv: &TaskservName, reason: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        taskserv: taskserv.clone(),
        reason: reason.into(),
    })
}

impl Catalog {
    /// The plan for `requests` on `target`, or why there is none. `enabled` is the
    /// deployment's policy: whether a taskserv may be installed on a provider.
    ///
    /// Resources are checked per taskserv, then for the sum of the plan's needs, since the
    /// taskservs share the VM.
    pub fn resolve(
        &self,
        requests: &[TaskservRequest],
        target: &Target,
        enabled: &dyn Fn(&TaskservName, &str) -> bool,
    ) -> Result<Vec<PlannedTaskserv>, Refusal> {
        let mut requested: BTreeMap<&TaskservName, &TaskservRequest> = BTreeMap::new();
        for request in requests {
            if self.get(&request.name).is_none() {
                return refuse(
                    &request.name,
                    "there is no such taskserv in this deployment",
                );
            }
            if requested.insert(&request.name, request).is_some() {
                return refuse(
                    &request.name,
                    "it is named twice in the request; name it once",
                );
            }
        }
        let members = requires_closure(self, requested.keys().copied());
        let order = self.order(&members);
        let mut plan = Vec::new();
        for name in order {
            let def = self.get(name).expect("the closure holds catalog names");
            let request = requested.get(name).copied();
            check_target(def, target, enabled)?;
            let params = params(def, request, &members, self)?;
            plan.push(PlannedTaskserv {
                name: name.clone(),
                version: def.version.clone(),
                params,
                on_error: def.on_error,
                max_retries: def.max_retries,
                requested: request.is_some(),
            });
        }
        for (i, a) in plan.iter().enumerate() {
            if let Some(b) = plan[i + 1..]
                .iter()
                .find(|b| conflict(self, &a.name, &b.name))
            {
                return refuse(
                    &a.name,
                    format!("it conflicts with {}; they cannot be on one VM", b.name),
                );
            }
        }
        self.check_sum(&plan, target)?;
        Ok(plan)
    }

    /// Kahn's algorithm, taking the first ready taskserv in registry order each time.
    fn order<'a>(&'a self, members: &BTreeSet<&'a TaskservName>) -> Vec<&'a TaskservName> {
        let before = |name: &TaskservName| -> Vec<&'a TaskservName> {
            ordering_deps(self, name)
                .filter(|d| members.contains(d))
                .collect()
        };
        let mut by_position: Vec<&TaskservName> = members.iter().copied().collect();
        by_position.sort_by_key(|n| self.position(n));
        let mut done: BTreeSet<&TaskservName> = BTreeSet::new();
        let mut order = Vec::new();
        while order.len() < by_position.len() {
            let next = by_position
                .iter()
                .find(|n| !done.contains(*n) && before(n).iter().all(|d| done.contains(d)))
                .copied()
                .expect("a checked catalog has no cycle");
            done.insert(next);
            order.push(next);
        }
        order
    }

    fn check_sum(&self, plan: &[PlannedTaskserv], target: &Target) -> Result<(), Refusal> {
        let (mut cpu, mut ram, mut disk) = (0u32, 0u32, 0u32);
        for (i, step) in plan.iter().enumerate() {
            let needs = &self
                .get(&step.name)
                .expect("planned from the catalog")
                .requires;
            cpu += needs.cpu;
            ram += needs.ram_gb;
            disk += needs.disk_gb;
            let over = [
                (cpu, target.cpu, "CPUs"),
                (ram, target.ram_gb, "GB of RAM"),
                (disk, target.disk_gb, "GB of disk"),
            ]
            .into_iter()
            .find(|(need, have, _)| need > have);
            if let Some((need, have, what)) = over {
                let others: Vec<&str> = plan[..i].iter().map(|s| s.name.as_str()).collect();
                return refuse(
                    &step.name,
                    format!(
                        "together with {} it needs {need} {what} and the VM's template has \
                         {have}; choose a larger template or fewer taskservs",
                        others.join(", ")
                    ),
                );
            }
        }
        Ok(())
    }
}

fn check_target(
    def: &Definition,
    target: &Target,
    enabled: &dyn Fn(&TaskservName, &str) -> bool,
) -> Result<(), Refusal> {
    let provider = &target.provider;
    if !def.offered_on(provider) || !enabled(&def.name, provider) {
        return refuse(
            &def.name,
            format!("it is not offered on provider {provider}"),
        );
    }
    let supported = def.os.join(", ");
    match &target.os {
        None => {
            return refuse(
                &def.name,
                format!("the VM's image is of an OS it does not know; it installs on {supported}"),
            )
        }
        Some(os) if !def.os.contains(os) => {
            return refuse(
                &def.name,
                format!("it does not install on {os}; it installs on {supported}"),
            )
        }
        Some(_) => {}
    }
    let needs = &def.requires;
    let short = [
        (needs.cpu, target.cpu, "CPUs"),
        (needs.ram_gb, target.ram_gb, "GB of RAM"),
        (needs.disk_gb, target.disk_gb, "GB of disk"),
    ]
    .into_iter()
    .find(|(need, have, _)| need > have);
    if let Some((need, have, what)) = short {
        return refuse(
            &def.name,
            format!(
                "it needs {need} {what} and the VM's template has {have}; choose a larger template"
            ),
        );
    }
    Ok(())
}

/// The request's params over the definition's defaults, each checked against its spec.
fn params(
    def: &Definition,
    request: Option<&TaskservRequest>,
    members: &BTreeSet<&TaskservName>,
    catalog: &Catalog,
) -> Result<Params, Refusal> {
    let given = request.map(|r| r.params.clone()).unwrap_or_default();
    for (name, value) in &given {
        let Some(spec) = def.params.get(name) else {
            let known: Vec<&str> = def.params.keys().map(String::as_str).collect();
            let known = match known.is_empty() {
                true => "it takes no params".to_owned(),
                false => format!("it takes {}", known.join(", ")),
            };
            return refuse(&def.name, format!("it has no param {name:?}; {known}"));
        };
        if !spec.kind.accepts(value) {
            return refuse(
                &def.name,
                format!("param {name} must be {}, not {value}", spec.kind.article()),
            );
        }
    }
    let mut params = Params::new();
    for (name, spec) in &def.params {
        match given.get(name).or(spec.default.as_ref()) {
            Some(value) => {
                params.insert(name.clone(), value.clone());
            }
            None if request.is_some() => {
                return refuse(
                    &def.name,
                    format!("param {name} ({}) must be given", spec.description),
                )
            }
            None => {
                let by = members
                    .iter()
                    .find(|m| {
                        catalog.get(m).is_some_and(|d| {
                            d.deps_of(DependencyKind::Requires).any(|n| n == &def.name)
                        })
                    })
                    .map(|m| m.as_str())
                    .unwrap_or("another taskserv");
                return refuse(
                    &def.name,
                    format!(
                        "{by} requires it, and its param {name} ({}) must be given: \
                         request it by name with that param",
                        spec.description
                    ),
                );
            }
        }
    }
    Ok(params)
}
