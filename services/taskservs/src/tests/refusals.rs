use serde_json::json;

use super::*;
use crate::{ParamSpec, ParamType, Refusal};

/// `db` takes a required `name` and a `port` defaulting to 5432, needs 2 CPUs and 4 GB;
/// `app` requires it.
fn catalog() -> Catalog {
    let mut db = def("db", &[]);
    db.params.insert(
        "name".into(),
        ParamSpec {
            kind: ParamType::String,
            default: None,
            description: "the database to create".into(),
        },
    );
    db.params.insert(
        "port".into(),
        ParamSpec {
            kind: ParamType::Number,
            default: Some(json!(5432)),
            description: "its port".into(),
        },
    );
    db.requires = Resources {
        cpu: 2,
        ram_gb: 4,
        disk_gb: 10,
        ports: vec![5432],
    };
    db.os = vec!["debian".into()];
    let mut cache = def("cache", &[]);
    cache.requires.ram_gb = 4;
    cache.providers = Some(vec!["openstack".into()]);
    let app = def("app", &[("db", Requires)]);
    Catalog::from_definitions(vec![db, cache, app]).unwrap()
}

fn debian() -> Target {
    Target {
        os: Some("debian".into()),
        ..target()
    }
}

fn db_with(params: serde_json::Value) -> TaskservRequest {
    TaskservRequest {
        name: name("db"),
        params: serde_json::from_value(params).unwrap(),
    }
}

fn refused(requests: &[TaskservRequest], target: &Target) -> Refusal {
    catalog()
        .resolve(requests, target, &all_enabled)
        .unwrap_err()
}

#[test]
fn params_are_the_requests_over_the_defaults() {
    let plan = catalog()
        .resolve(&[db_with(json!({"name": "shop"}))], &debian(), &all_enabled)
        .unwrap();
    assert_eq!(plan[0].params["name"], json!("shop"));
    assert_eq!(plan[0].params["port"], json!(5432));
    assert_eq!(plan[0].version, "1.0.0");
}

#[test]
fn a_missing_required_param_is_refused_naming_it() {
    let r = refused(&[db_with(json!({}))], &debian());
    assert_eq!(r.taskserv.as_str(), "db");
    assert_eq!(
        r.reason,
        "param name (the database to create) must be given"
    );
}

#[test]
fn a_required_param_of_a_taskserv_pulled_in_says_to_request_it() {
    let r = refused(&[request("app")], &debian());
    assert_eq!(r.taskserv.as_str(), "db");
    assert!(r.reason.starts_with("app requires it"), "{r}");
}

#[test]
fn a_param_of_the_wrong_type_is_refused() {
    let r = refused(
        &[db_with(json!({"name": "shop", "port": "5432"}))],
        &debian(),
    );
    assert_eq!(r.taskserv.as_str(), "db");
    assert_eq!(r.reason, "param port must be a number, not \"5432\"");
}

#[test]
fn an_unknown_param_is_refused_listing_the_known_ones() {
    let r = refused(&[db_with(json!({"name": "shop", "size": 3}))], &debian());
    assert_eq!(r.reason, "it has no param \"size\"; it takes name, port");
}

#[test]
fn an_unsupported_os_is_refused() {
    let r = refused(&[db_with(json!({"name": "shop"}))], &target());
    assert_eq!(r.taskserv.as_str(), "db");
    assert_eq!(
        r.reason,
        "it does not install on ubuntu; it installs on debian"
    );
}

#[test]
fn an_image_of_unknown_os_is_refused() {
    let unknown = Target {
        os: None,
        ..target()
    };
    let r = refused(&[request("cache")], &unknown);
    assert!(r.reason.contains("does not know"), "{r}");
}

#[test]
fn a_template_too_small_for_one_taskserv_is_refused() {
    let small = Target { cpu: 1, ..debian() };
    let r = refused(&[db_with(json!({"name": "shop"}))], &small);
    assert_eq!(r.taskserv.as_str(), "db");
    assert!(
        r.reason
            .starts_with("it needs 2 CPUs and the VM's template has 1"),
        "{r}"
    );
}

#[test]
fn a_template_too_small_for_the_sum_of_the_plan_is_refused() {
    let six_gb = Target {
        ram_gb: 6,
        ..debian()
    };
    let r = refused(
        &[db_with(json!({"name": "shop"})), request("cache")],
        &six_gb,
    );
    assert_eq!(r.taskserv.as_str(), "cache");
    assert!(
        r.reason
            .starts_with("together with db it needs 8 GB of RAM and the VM's template has 6"),
        "{r}"
    );
}

#[test]
fn a_taskserv_disabled_for_the_provider_is_refused() {
    let no_db = |n: &TaskservName, _: &str| n.as_str() != "db";
    let r = catalog()
        .resolve(&[request("app")], &debian(), &no_db)
        .unwrap_err();
    assert_eq!(r.taskserv.as_str(), "db");
    assert_eq!(r.reason, "it is not offered on provider openstack");
}

#[test]
fn a_taskserv_not_offered_on_the_provider_is_refused() {
    let aws = Target {
        provider: "aws".into(),
        ..target()
    };
    let r = refused(&[request("cache")], &aws);
    assert_eq!(r.to_string(), "cache: it is not offered on provider aws");
}

#[test]
fn an_unknown_taskserv_or_one_named_twice_is_refused() {
    let r = refused(&[request("ghost")], &debian());
    assert_eq!(
        r.to_string(),
        "ghost: there is no such taskserv in this deployment"
    );
    let r = refused(&[request("cache"), request("cache")], &debian());
    assert_eq!(r.taskserv.as_str(), "cache");
    assert!(r.reason.contains("named twice"), "{r}");
}
