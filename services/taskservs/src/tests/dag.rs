use super::*;

fn catalog(defs: Vec<Definition>) -> Catalog {
    Catalog::from_definitions(defs).unwrap()
}

#[test]
fn the_closure_pulls_in_requirements_transitively() {
    let c = catalog(vec![
        def("a", &[("b", Requires)]),
        def("b", &[("c", Requires)]),
        def("c", &[]),
        def("d", &[]),
    ]);
    let plan = c.resolve(&[request("a")], &target(), &all_enabled).unwrap();
    let names: Vec<_> = plan
        .iter()
        .map(|s| (s.name.as_str(), s.requested))
        .collect();
    assert_eq!(names, [("c", false), ("b", false), ("a", true)]);
}

#[test]
fn a_taskserv_comes_after_what_it_requires() {
    // Registry order puts the dependant first; the edge wins.
    let c = catalog(vec![def("app", &[("db", Requires)]), def("db", &[])]);
    assert_eq!(plan_of(&c, &["app"]), ["db", "app"]);
}

#[test]
fn prefers_before_orders_two_taskservs_when_both_are_planned() {
    let c = catalog(vec![
        def("web", &[("cache", PrefersBefore)]),
        def("cache", &[]),
    ]);
    assert_eq!(plan_of(&c, &["web", "cache"]), ["cache", "web"]);
}

#[test]
fn prefers_before_pulls_nothing_in_when_only_one_is_planned() {
    let c = catalog(vec![
        def("web", &[("cache", PrefersBefore)]),
        def("cache", &[]),
    ]);
    assert_eq!(plan_of(&c, &["web"]), ["web"]);
}

#[test]
fn independent_taskservs_keep_registry_order_whatever_the_request_order() {
    let c = catalog(vec![def("zeta", &[]), def("alpha", &[]), def("mid", &[])]);
    assert_eq!(
        plan_of(&c, &["mid", "alpha", "zeta"]),
        ["zeta", "alpha", "mid"]
    );
}

#[test]
fn two_conflicting_taskservs_in_one_plan_are_refused_naming_both() {
    let c = catalog(vec![
        def("nginx", &[("k3s", ConflictsWith)]),
        def("k3s", &[]),
    ]);
    let refusal = c
        .resolve(&[request("k3s"), request("nginx")], &target(), &all_enabled)
        .unwrap_err();
    assert_eq!(refusal.taskserv.as_str(), "nginx");
    assert!(refusal.reason.contains("k3s"), "{refusal}");
    assert!(refusal.to_string().starts_with("nginx: "), "{refusal}");
}

#[test]
fn a_cycle_is_refused_at_load_and_named() {
    let err = Catalog::from_definitions(vec![
        def("a", &[("b", Requires)]),
        def("b", &[("c", PrefersBefore)]),
        def("c", &[("a", Requires)]),
    ])
    .unwrap_err();
    assert!(err.to_string().contains("a -> b -> c -> a"), "{err}");
}

#[test]
fn a_dependency_missing_from_the_catalog_is_refused_at_load() {
    let err = Catalog::from_definitions(vec![def("a", &[("ghost", Requires)])]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a depends on ghost, which is not in the catalog"
    );
}

#[test]
fn a_taskserv_requiring_one_it_conflicts_with_is_refused_at_load() {
    let err = Catalog::from_definitions(vec![
        def("a", &[("b", Requires), ("c", ConflictsWith)]),
        def("b", &[("c", Requires)]),
        def("c", &[]),
    ])
    .unwrap_err();
    assert!(err.to_string().starts_with("a requires c"), "{err}");
    assert!(err.to_string().contains("conflicts"), "{err}");
}

#[test]
fn a_taskserv_listed_twice_is_refused_at_load() {
    let err = Catalog::from_definitions(vec![def("a", &[]), def("a", &[])]).unwrap_err();
    assert!(err.to_string().contains("a is listed twice"), "{err}");
}
