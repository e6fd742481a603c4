use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;

/// A random acyclic catalog of up to 10 taskservs: each may depend only on ones of lower
/// index (requires or prefers_before), then registry order is shuffled by the rotation.
fn acyclic_catalog() -> impl Strategy<Value = (Vec<Definition>, Vec<usize>)> {
    (2usize..10)
        .prop_flat_map(|n| {
            let edges = proptest::collection::vec((0..n, 0..n, any::<bool>()), 0..(n * 2));
            let requested = proptest::collection::btree_set(0..n, 1..=n);
            (Just(n), edges, requested, 0..n)
        })
        .prop_map(|(n, edges, requested, rotation)| {
            let names: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
            let mut defs: Vec<Definition> = names.iter().map(|n| def(n, &[])).collect();
            let mut seen = BTreeSet::new();
            for (a, b, requires) in edges {
                let (low, high) = (a.min(b), a.max(b));
                if low == high || !seen.insert((low, high)) {
                    continue;
                }
                defs[high].depends_on.push(Dependency {
                    name: name(&names[low]),
                    kind: if requires { Requires } else { PrefersBefore },
                });
            }
            defs.rotate_left(rotation);
            (defs, requested.into_iter().collect())
        })
}

proptest! {
    #[test]
    fn every_plan_holds_the_closure_and_respects_every_edge((defs, requested) in acyclic_catalog()) {
        let catalog = Catalog::from_definitions(defs.clone()).unwrap();
        let requests: Vec<_> = requested.iter().map(|i| request(&format!("t{i}"))).collect();
        let plan = catalog.resolve(&requests, &target(), &all_enabled).unwrap();
        let at = |n: &TaskservName| plan.iter().position(|s| &s.name == n);

        // The closure: every requested one, and everything a planned one requires.
        for r in &requests {
            prop_assert!(at(&r.name).is_some());
        }
        for step in &plan {
            let def = catalog.get(&step.name).unwrap();
            for dep in &def.depends_on {
                match (dep.kind, at(&dep.name)) {
                    (Requires, None) => prop_assert!(false, "{} lacks {}", step.name, dep.name),
                    (_, Some(i)) => prop_assert!(i < at(&step.name).unwrap()),
                    (_, None) => {}
                }
            }
        }
        // Nothing beyond the closure, each once.
        let unique: BTreeSet<_> = plan.iter().map(|s| &s.name).collect();
        prop_assert_eq!(unique.len(), plan.len());
        for step in &plan {
            let wanted = requests.iter().any(|r| r.name == step.name)
                || plan.iter().any(|s| catalog.get(&s.name).unwrap()
                    .deps_of(Requires).any(|d| d == &step.name));
            prop_assert!(wanted, "{} is in the plan for no reason", step.name);
            prop_assert_eq!(step.requested, requests.iter().any(|r| r.name == step.name));
        }
    }
}
