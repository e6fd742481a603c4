//! Given / when / then for the commands on templates.

use super::*;

#[test]
fn a_template_is_created() {
    given()
        .given(seeded())
        .when(CatalogCommand::CreateTemplate(template("nrec", "xl", 3)))
        .then_expect_events(vec![CatalogEvent::TemplateCreated(template(
            "nrec", "xl", 3,
        ))]);
}

#[test]
fn a_template_of_an_unknown_provider_is_refused() {
    given()
        .given(seeded())
        .when(CatalogCommand::CreateTemplate(template("aws", "xl", 1)))
        .then_expect_error(CatalogError::UnknownProvider(pid("aws")));
}

#[test]
fn a_template_id_cannot_be_created_twice_in_one_provider() {
    given()
        .given(seeded())
        .when(CatalogCommand::CreateTemplate(template(
            "nrec", "medium", 3,
        )))
        .then_expect_error(CatalogError::DuplicateTemplate(pid("nrec"), tid("medium")));
}

#[test]
fn the_same_template_id_may_exist_in_two_providers() {
    given()
        .given(seeded())
        .when(CatalogCommand::CreateTemplate(template(
            "local", "medium", 1,
        )))
        .then_expect_events(vec![CatalogEvent::TemplateCreated(template(
            "local", "medium", 1,
        ))]);
}

#[test]
fn a_template_needs_a_positive_size_and_valid_texts() {
    type Change = fn(&mut TemplateSpec);
    let cases: [(Change, &str, &str); 8] = [
        (|t| t.cpu = 0, "cpu", "must be greater than 0"),
        (|t| t.ram_gb = -1, "ram_gb", "must be greater than 0"),
        (|t| t.storage_gb = 0, "storage_gb", "must be greater than 0"),
        (
            |t| t.flavor_name = String::new(),
            "flavor_name",
            "must not be blank or start or end with spaces",
        ),
        (
            |t| t.username = " ubuntu".into(),
            "username",
            "must not be blank or start or end with spaces",
        ),
        (
            |t| t.tags = vec!["GPU".into()],
            "tags",
            "\"GPU\" is not 1 to 64 characters of [a-z0-9._-]",
        ),
        (
            |t| t.tags = vec!["gpu".into(), "gpu".into()],
            "tags",
            "\"gpu\" is listed twice",
        ),
        (
            |t| t.tags = (0..33).map(|i| format!("t{i}")).collect(),
            "tags",
            "must be at most 32 tags, not 33",
        ),
    ];
    for (change, field, reason) in cases {
        let mut spec = template("nrec", "xl", 3);
        change(&mut spec);
        given()
            .given(seeded())
            .when(CatalogCommand::CreateTemplate(spec))
            .then_expect_error(invalid(field, reason));
    }
}

#[test]
fn a_template_update_records_only_the_fields_that_change() {
    let changes = TemplateChanges {
        cpu: Some(4),
        ram_gb: Some(4),
        gpu: Some(Some("1 x NVIDIA L40S".into())),
        ..Default::default()
    };
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateTemplate {
            provider: pid("nrec"),
            id: tid("medium"),
            changes,
        })
        .then_expect_events(vec![CatalogEvent::TemplateUpdated {
            provider: pid("nrec"),
            id: tid("medium"),
            changes: TemplateChanges {
                cpu: Some(4),
                gpu: Some(Some("1 x NVIDIA L40S".into())),
                ..Default::default()
            },
        }]);
}

#[test]
fn a_template_update_that_changes_nothing_records_nothing() {
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateTemplate {
            provider: pid("nrec"),
            id: tid("medium"),
            changes: TemplateChanges {
                gpu: Some(None),
                cpu: Some(2),
                ..Default::default()
            },
        })
        .then_expect_events(vec![]);
}

#[test]
fn an_unknown_template_cannot_be_updated() {
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateTemplate {
            provider: pid("nrec"),
            id: tid("xl"),
            changes: TemplateChanges::default(),
        })
        .then_expect_error(CatalogError::UnknownTemplate(pid("nrec"), tid("xl")));
}

#[test]
fn a_template_update_with_zero_ram_is_refused() {
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateTemplate {
            provider: pid("nrec"),
            id: tid("medium"),
            changes: TemplateChanges {
                ram_gb: Some(0),
                ..Default::default()
            },
        })
        .then_expect_error(invalid("ram_gb", "must be greater than 0"));
}

#[test]
fn a_template_is_disabled_once() {
    let disable = || CatalogCommand::SetTemplateEnabled {
        provider: pid("nrec"),
        id: tid("large"),
        enabled: false,
    };
    let disabled = CatalogEvent::TemplateEnabledChanged {
        provider: pid("nrec"),
        id: tid("large"),
        enabled: false,
    };
    given()
        .given(seeded())
        .when(disable())
        .then_expect_events(vec![disabled.clone()]);
    given()
        .given([seeded(), vec![disabled]].concat())
        .when(disable())
        .then_expect_events(vec![]);
}

#[test]
fn an_unknown_template_cannot_be_disabled() {
    given()
        .given(seeded())
        .when(CatalogCommand::SetTemplateEnabled {
            provider: pid("local"),
            id: tid("large"),
            enabled: false,
        })
        .then_expect_error(CatalogError::UnknownTemplate(pid("local"), tid("large")));
}

#[test]
fn templates_are_reordered_and_the_same_order_again_records_nothing() {
    let reordered = CatalogEvent::TemplatesReordered {
        provider: pid("nrec"),
        ids: vec![tid("large"), tid("medium")],
    };
    let reorder = || CatalogCommand::ReorderTemplates {
        provider: pid("nrec"),
        ids: vec![tid("large"), tid("medium")],
    };
    given()
        .given(seeded())
        .when(reorder())
        .then_expect_events(vec![reordered.clone()]);
    given()
        .given([seeded(), vec![reordered]].concat())
        .when(reorder())
        .then_expect_events(vec![]);
}

#[test]
fn a_template_order_must_name_every_template_of_the_provider_once() {
    given()
        .given(seeded())
        .when(CatalogCommand::ReorderTemplates {
            provider: pid("nrec"),
            ids: vec![tid("large")],
        })
        .then_expect_error(invalid("ids", "must list all 2 ids, not 1"));
    given()
        .given(seeded())
        .when(CatalogCommand::ReorderTemplates {
            provider: pid("aws"),
            ids: vec![],
        })
        .then_expect_error(CatalogError::UnknownProvider(pid("aws")));
}
