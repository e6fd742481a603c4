use domain::identity::{Role, UserId};
use domain::quota::Size;

use super::*;
use crate::Principal;

fn who(role: Role, groups: &[&str]) -> Principal {
    Principal {
        user: UserId::random(),
        email: "ada@example.org".into(),
        role,
        groups: groups.iter().map(|g| g.to_string()).collect(),
    }
}

fn template(gpus: u64) -> TemplateFacts<'static> {
    TemplateFacts {
        provider: "nrec-uio",
        template: "gpu-xl",
        size: Size {
            vcpus: 8,
            ram_mib: 65536,
            gpus,
        },
        tags: &[],
    }
}

fn defaults() -> PolicyBook {
    read(None).expect("the built-in policies are valid")
}

#[test]
fn given_the_defaults_a_user_outside_gpu_users_is_refused_a_gpu_template_by_name() {
    let book = defaults();
    let denied = book
        .may_create(&who(Role::User, &[]), &template(1), 8)
        .unwrap_err();
    assert_eq!(denied.policy, "gpu-templates-need-group");
    assert_eq!(
        denied.to_string(),
        "denied by policy \"gpu-templates-need-group\": GPU templates are for members of the gpu-users group"
    );
    assert_eq!(
        book.may_create(&who(Role::User, &[]), &template(0), 8),
        Ok(())
    );
    let member = who(Role::User, &["gpu-users"]);
    assert_eq!(book.may_create(&member, &template(1), 8), Ok(()));
    assert_eq!(
        book.may_create(&who(Role::Admin, &[]), &template(1), 8),
        Ok(())
    );
}

#[test]
fn given_the_defaults_each_limit_is_the_highest_an_applying_policy_gives() {
    let book = defaults();
    let user = book.limits(&who(Role::User, &[]));
    assert_eq!((user.vms.value, user.gpus.value), (5, 0));
    assert_eq!(user.vcpus.policy, "default-limits");
    let member = book.limits(&who(Role::User, &["gpu-users"]));
    assert_eq!((member.vcpus.value, member.gpus.value), (64, 4));
    assert_eq!(member.gpus.policy, "gpu-user-limits");
    // Equal values stay with the first policy, in id order.
    assert_eq!(member.vms.policy, "default-limits");
    let admin = book.limits(&who(Role::SuperAdmin, &[]));
    assert_eq!(admin.vms.value, 100_000);
}

const SCHEMA: &str = include_str!("../../../../deploy/policies/schema.cedarschema");

fn parse(policies: &str) -> Result<PolicyBook, PolicyError> {
    PolicyBook::parse(SCHEMA, &[("test.cedar".into(), policies.into())])
}

#[test]
fn a_policy_that_does_not_match_the_schema_is_refused_with_the_reason() {
    let error = parse(
        r#"@id("typo") permit (principal, action == Action::"create_vm", resource) when { resource.gpu > 0 };"#,
    )
    .err()
    .unwrap();
    assert!(error.0.contains("do not match the schema"), "{error}");
    assert!(error.0.contains("typo"), "{error}");

    let error = parse("permit (principal, action, resource) when {")
        .err()
        .unwrap();
    assert!(error.0.starts_with("test.cedar: "), "{error}");

    let error = parse(
        r#"@id("limits") @vms("many") permit (principal, action == Action::"limits", resource);"#,
    )
    .err()
    .unwrap();
    assert_eq!(
        error.0,
        "test.cedar: policy \"limits\": @vms(\"many\") is not a number"
    );
}

#[test]
fn without_a_permit_a_request_is_refused_by_default_and_no_limits_apply() {
    let book = parse(
        r#"@id("only-admins") permit (principal, action == Action::"create_vm", resource) when { principal.role == "admin" };"#,
    )
    .unwrap();
    let denied = book
        .may_create(&who(Role::User, &[]), &template(0), 1)
        .unwrap_err();
    assert_eq!(denied.policy, "default-deny");
    assert_eq!(book.limits(&who(Role::User, &[])).vms.value, 0);
}

#[test]
fn providers_and_durations_can_be_decided_by_policy() {
    let book = parse(
        r#"
        @id("anyone") permit (principal, action == Action::"create_vm", resource);
        @id("nrec-for-staff") @reason("nrec-uio is for staff")
        forbid (principal, action == Action::"create_vm", resource in Provider::"nrec-uio")
        unless { principal in Group::"staff" };
        @id("short-only") @reason("at most 24 hours")
        forbid (principal, action == Action::"create_vm", resource)
        when { context.duration_hours > 24 };
        "#,
    )
    .unwrap();
    let user = who(Role::User, &[]);
    let staff = who(Role::User, &["staff"]);
    assert_eq!(
        book.may_create(&user, &template(0), 1).unwrap_err().policy,
        "nrec-for-staff"
    );
    assert_eq!(book.may_create(&staff, &template(0), 24), Ok(()));
    assert_eq!(
        book.may_create(&staff, &template(0), 25)
            .unwrap_err()
            .policy,
        "short-only"
    );
}

#[test]
fn a_policy_keeps_a_taskserv_to_a_group_and_the_defaults_allow_every_taskserv() {
    let book = defaults();
    assert_eq!(
        book.may_install(&who(Role::User, &[]), "k3s", "kubernetes", "nrec"),
        Ok(())
    );
    let schema = DEFAULT_SCHEMA;
    let files = [
        ("default.cedar".to_owned(), DEFAULT_POLICIES.to_owned()),
        (
            "k3s.cedar".to_owned(),
            r#"@id("k3s-for-k8s-users")
@reason("k3s is for members of the k8s-users group")
forbid (principal, action == Action::"install_taskserv", resource == Taskserv::"k3s")
unless { principal in Group::"k8s-users" };"#
                .to_owned(),
        ),
    ];
    let book = PolicyBook::parse(schema, &files).unwrap();
    let denied = book
        .may_install(&who(Role::User, &[]), "k3s", "kubernetes", "nrec")
        .unwrap_err();
    assert_eq!(denied.policy, "k3s-for-k8s-users");
    assert_eq!(denied.reason, "k3s is for members of the k8s-users group");
    assert_eq!(
        book.may_install(
            &who(Role::User, &["k8s-users"]),
            "k3s",
            "kubernetes",
            "nrec"
        ),
        Ok(())
    );
    assert_eq!(
        book.may_install(&who(Role::User, &[]), "redis", "databases", "nrec"),
        Ok(())
    );
}
