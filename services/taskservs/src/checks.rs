//! Checks across definitions, run when a catalog is built: a plan resolved from a checked
//! catalog never meets a missing taskserv, a cycle, or a requirement it conflicts with.

use std::collections::BTreeSet;

use domain::taskservs::TaskservName;

use crate::catalog::Catalog;
use crate::definition::DependencyKind;

pub(crate) fn check(catalog: &Catalog) -> Result<(), String> {
    output_keys_are_words(catalog)?;
    dependencies_exist(catalog)?;
    no_cycle(catalog)?;
    no_conflict_with_requirements(catalog)
}

/// An output key is written `key=value` by the script and named in references
/// (`{{ roles.<role>[0].outputs.<key> }}`): letters, digits, `_` and `-`.
fn output_keys_are_words(catalog: &Catalog) -> Result<(), String> {
    for def in catalog.definitions() {
        for key in def.outputs.keys() {
            let word = !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !word {
                return Err(format!(
                    "{} declares the output {key:?}: an output key is letters, digits, _ and -",
                    def.name
                ));
            }
        }
    }
    Ok(())
}

fn dependencies_exist(catalog: &Catalog) -> Result<(), String> {
    for def in catalog.definitions() {
        for dep in &def.depends_on {
            if catalog.get(&dep.name).is_none() {
                return Err(format!(
                    "{} depends on {}, which is not in the catalog",
                    def.name, dep.name
                ));
            }
        }
    }
    Ok(())
}

/// Edges that order a plan: `requires` and `prefers_before`, each from a dependant to the
/// taskserv it wants before it.
pub(crate) fn ordering_deps<'a>(
    catalog: &'a Catalog,
    name: &TaskservName,
) -> impl Iterator<Item = &'a TaskservName> {
    catalog
        .get(name)
        .into_iter()
        .flat_map(|def| def.depends_on.iter())
        .filter(|d| d.kind != DependencyKind::ConflictsWith)
        .map(|d| &d.name)
}

/// A depth-first walk in registry order; the first cycle found is named from where it
/// closes: "a -> b -> a".
fn no_cycle(catalog: &Catalog) -> Result<(), String> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit<'a>(
        catalog: &'a Catalog,
        name: &'a TaskservName,
        marks: &mut Vec<Mark>,
        path: &mut Vec<&'a TaskservName>,
    ) -> Result<(), String> {
        let i = catalog.position(name).expect("dependencies were checked");
        match marks[i] {
            Mark::Done => return Ok(()),
            Mark::OnPath => {
                let start = path.iter().position(|n| *n == name).unwrap_or(0);
                let mut names: Vec<&str> = path[start..].iter().map(|n| n.as_str()).collect();
                names.push(name.as_str());
                return Err(format!(
                    "a cycle among requires and prefers_before: {}",
                    names.join(" -> ")
                ));
            }
            Mark::New => {}
        }
        marks[i] = Mark::OnPath;
        path.push(name);
        for dep in ordering_deps(catalog, name) {
            visit(catalog, dep, marks, path)?;
        }
        path.pop();
        marks[i] = Mark::Done;
        Ok(())
    }
    let mut marks = vec![Mark::New; catalog.entries.len()];
    for def in catalog.definitions() {
        visit(catalog, &def.name, &mut marks, &mut Vec::new())?;
    }
    Ok(())
}

/// The taskservs `name` pulls into a plan: itself and what it requires, transitively.
pub(crate) fn requires_closure<'a>(
    catalog: &'a Catalog,
    roots: impl IntoIterator<Item = &'a TaskservName>,
) -> BTreeSet<&'a TaskservName> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&TaskservName> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if !seen.insert(name) {
            continue;
        }
        if let Some(def) = catalog.get(name) {
            todo.extend(def.deps_of(DependencyKind::Requires));
        }
    }
    seen
}

/// Whether `a` and `b` cannot be in one plan (either one says it).
pub(crate) fn conflict(catalog: &Catalog, a: &TaskservName, b: &TaskservName) -> bool {
    let says = |x: &TaskservName, y: &TaskservName| {
        catalog
            .get(x)
            .is_some_and(|d| d.deps_of(DependencyKind::ConflictsWith).any(|n| n == y))
    };
    says(a, b) || says(b, a)
}

/// A taskserv whose requirements (transitively) include two that conflict, or one it
/// conflicts with itself, could never be installed.
fn no_conflict_with_requirements(catalog: &Catalog) -> Result<(), String> {
    for def in catalog.definitions() {
        let closure: Vec<_> = requires_closure(catalog, [&def.name]).into_iter().collect();
        for (i, a) in closure.iter().enumerate() {
            for b in &closure[i + 1..] {
                if !conflict(catalog, a, b) {
                    continue;
                }
                let me = &def.name;
                return Err(if *a == me || *b == me {
                    let other = if *a == me { b } else { a };
                    format!("{me} requires {other} (directly or through others), which it conflicts with")
                } else {
                    format!("{me} requires both {a} and {b} (directly or through others), which conflict")
                });
            }
        }
    }
    Ok(())
}
