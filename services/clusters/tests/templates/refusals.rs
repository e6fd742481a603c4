//! Each load-time check refuses a bad template, naming the template and what is wrong.

use super::load_one;

/// A valid two-stage template; each case breaks one thing in it.
const GOOD: &str = r#"{
  name = "pair",
  description = "A server and a worker joining it.",
  roles = [
    {
      name = "server",
      count = 1,
      templates = ["medium"],
      taskservs = [{ name = "k3s", params = { cluster_init = true } }],
    },
    {
      name = "worker",
      count = { min = 1, max = 3, default = 2 },
      templates = ["medium"],
      taskservs = [
        {
          name = "k3s",
          params = {
            role = "agent",
            server_url = "{{ roles.server[0].outputs.server_url }}",
            token_file = "/var/lib/provisioning/cluster/secret",
          },
        },
      ],
    },
  ],
  order = [["server"], ["worker"]],
  health_gates = [{ role = "server", taskserv = "k3s", within_secs = 600 }],
}
"#;

/// The error loading `GOOD` with `from` replaced by `to`; it must name the template.
fn refused(from: &str, to: &str) -> String {
    assert!(GOOD.contains(from), "{from}");
    let err = load_one("pair", &GOOD.replacen(from, to, 1)).unwrap_err();
    assert!(err.contains("template pair"), "{err}");
    err
}

#[test]
fn the_good_template_loads() {
    let catalog = load_one("pair", GOOD).unwrap();
    assert_eq!(catalog.templates().len(), 1);
}

#[test]
fn a_contract_breach_is_nickels_message_with_the_file_and_line() {
    let err = refused("count = 1,", "count = \"one\",");
    assert!(err.contains("pair.ncl:7:"), "{err}");
}

#[test]
fn an_unknown_field_breaches_the_contract() {
    let err = refused(
        "templates = [\"medium\"],\n      taskservs = [{",
        "template = [\"medium\"],\n      taskservs = [{",
    );
    assert!(err.contains("pair.ncl:"), "{err}");
}

#[test]
fn a_role_unknown_to_order_or_a_gate_is_refused() {
    let err = refused(
        r#"[["server"], ["worker"]]"#,
        r#"[["server"], ["worker", "agent"]]"#,
    );
    assert!(
        err.contains("order names role agent, which is not defined"),
        "{err}"
    );
    let err = refused(
        r#"{ role = "server", taskserv"#,
        r#"{ role = "master", taskserv"#,
    );
    assert!(
        err.contains("names role master, which is not defined"),
        "{err}"
    );
}

#[test]
fn a_role_in_no_stage_or_in_two_is_refused() {
    let err = refused(r#"[["server"], ["worker"]]"#, r#"[["server"]]"#);
    assert!(err.contains("role worker is in no stage"), "{err}");
    let err = refused(
        r#"[["server"], ["worker"]]"#,
        r#"[["server"], ["worker", "server"]]"#,
    );
    assert!(err.contains("role server is in two stages"), "{err}");
}

#[test]
fn a_gate_on_a_taskserv_its_role_does_not_have_is_refused() {
    let err = refused(r#"taskserv = "k3s""#, r#"taskserv = "etcd""#);
    assert!(
        err.contains(
            "the health gate on role server waits for taskserv etcd, which the role does not have"
        ),
        "{err}"
    );
}

#[test]
fn a_bad_count_range_is_refused_naming_the_role() {
    let err = refused(
        "min = 1, max = 3, default = 2",
        "min = 4, max = 3, default = 3",
    );
    assert!(
        err.contains("role worker: its count range has min 4 above max 3"),
        "{err}"
    );
    let err = refused(
        "min = 1, max = 3, default = 2",
        "min = 1, max = 3, default = 5",
    );
    assert!(
        err.contains("role worker: its default count 5 is outside its range 1 to 3"),
        "{err}"
    );
}

#[test]
fn a_reference_to_a_role_made_later_or_not_at_all_is_refused() {
    let err = refused(r#"[["server"], ["worker"]]"#, r#"[["worker"], ["server"]]"#);
    assert!(
        err.contains("refers to role server, which is not made in a stage before role worker's"),
        "{err}"
    );
    let err = refused(r#"[["server"], ["worker"]]"#, r#"[["server", "worker"]]"#);
    assert!(err.contains("not made in a stage before"), "{err}");
    let err = refused("roles.server[0]", "roles.leader[0]");
    assert!(
        err.contains("refers to role leader, which is not defined"),
        "{err}"
    );
    let err = refused("roles.server[0]", "roles.server[1]");
    assert!(err.contains("node 1 of role server"), "{err}");
    let err = refused("roles.server[0].outputs.server_url", "vm.address");
    assert!(err.contains("is not a reference"), "{err}");
}

#[test]
fn a_reference_to_an_output_the_role_s_taskservs_do_not_declare_is_refused() {
    let err = refused(
        "roles.server[0].outputs.server_url",
        "roles.server[0].outputs.join_url",
    );
    assert!(
        err.contains(
            "role worker, taskserv k3s: param server_url: it refers to output join_url of role \
             server, which none of that role's taskservs (k3s) declares \
             (they declare: kubeconfig, server_url, token_file)"
        ),
        "{err}"
    );
}

#[test]
fn taskservs_unknown_conflicting_or_given_unknown_params_are_refused() {
    let err = refused(
        r#"[{ name = "k3s", params"#,
        r#"[{ name = "kubernetes", params"#,
    );
    assert!(
        err.contains("role server, taskserv kubernetes: there is no such taskserv"),
        "{err}"
    );
    let err = refused(
        r#"[{ name = "k3s", params = { cluster_init = true } }]"#,
        r#"[{ name = "k3s" }, { name = "nginx" }]"#,
    );
    assert!(err.contains("taskservs k3s and nginx conflict"), "{err}");
    let err = refused("cluster_init = true", "cluster_init = \"yes\"");
    assert!(
        err.contains("param cluster_init is \"yes\", not true or false"),
        "{err}"
    );
    let err = refused("cluster_init = true", "init = true");
    assert!(err.contains("it has no param init"), "{err}");
}
