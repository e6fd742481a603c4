use cqrs_es::test::TestFramework;

use super::*;
use crate::catalog::{
    CatalogCommand, CatalogError, CatalogEvent, ProviderSpec, TemplateChanges, TemplateSpec,
};
use crate::provisioning::{ProviderId, TemplateId, ValueError};

type Given = TestFramework<Catalog>;

fn pid(s: &str) -> ProviderId {
    ProviderId::parse(s).unwrap()
}

fn tid(s: &str) -> TemplateId {
    TemplateId::parse(s).unwrap()
}

fn provider(id: &str, sort_order: i32) -> ProviderSpec {
    ProviderSpec {
        id: pid(id),
        name: id.to_uppercase(),
        enabled: true,
        sort_order,
    }
}

fn template(provider: &str, id: &str, sort_order: i32) -> TemplateSpec {
    TemplateSpec {
        provider: pid(provider),
        id: tid(id),
        name: "Standard Medium".into(),
        description: "Two cores.".into(),
        flavor_name: "m1.medium".into(),
        image_name: "GOLD Ubuntu 24.04 LTS".into(),
        username: "ubuntu".into(),
        cpu: 2,
        ram_gb: 4,
        storage_gb: 20,
        gpu: None,
        tags: vec!["simple".into()],
        enabled: true,
        sort_order,
    }
}

/// The seed: providers `local` and `nrec`, and two templates of `nrec`.
fn seeded() -> Vec<CatalogEvent> {
    vec![CatalogEvent::SeedImported {
        providers: vec![provider("local", 100), provider("nrec", 1)],
        templates: vec![template("nrec", "medium", 1), template("nrec", "large", 2)],
    }]
}

fn invalid(field: &'static str, reason: &str) -> CatalogError {
    CatalogError::Invalid(ValueError {
        field,
        reason: reason.into(),
    })
}

/// The services: the tables' rows, here the same as the seed.
fn tables() -> Seed {
    let CatalogEvent::SeedImported {
        providers,
        templates,
    } = seeded().remove(0)
    else {
        unreachable!()
    };
    Seed {
        providers,
        templates,
    }
}

fn given() -> Given {
    Given::with(tables())
}

#[test]
fn the_first_change_records_the_seed_rows_before_it() {
    given()
        .given_no_previous_events()
        .when(CatalogCommand::CreateProvider(provider("aws", 8)))
        .then_expect_events(
            [
                seeded(),
                vec![CatalogEvent::ProviderCreated(provider("aws", 8))],
            ]
            .concat(),
        );
}

#[test]
fn the_first_change_is_decided_on_the_seed_rows() {
    given()
        .given_no_previous_events()
        .when(CatalogCommand::CreateProvider(provider("nrec", 3)))
        .then_expect_error(CatalogError::DuplicateProvider(pid("nrec")));
}

#[test]
fn a_first_command_that_changes_nothing_records_not_even_the_seed() {
    given()
        .given_no_previous_events()
        .when(CatalogCommand::SetProviderEnabled {
            id: pid("nrec"),
            enabled: true,
        })
        .then_expect_events(vec![]);
}

#[test]
fn later_changes_record_only_the_seed_rows_the_catalog_does_not_know() {
    let mut tables = tables();
    tables.providers.push(provider("aws", 8));
    tables.templates.push(template("aws", "medium", 1));
    tables.templates.push(template("nrec", "xl", 3));
    let disabled = CatalogEvent::ProviderEnabledChanged {
        id: pid("local"),
        enabled: false,
    };
    Given::with(tables)
        .given(seeded())
        .when(CatalogCommand::SetProviderEnabled {
            id: pid("local"),
            enabled: false,
        })
        .then_expect_events(vec![
            CatalogEvent::SeedImported {
                providers: vec![provider("aws", 8)],
                templates: vec![template("aws", "medium", 1), template("nrec", "xl", 3)],
            },
            disabled,
        ]);
}

#[test]
fn a_provider_is_created() {
    given()
        .given(seeded())
        .when(CatalogCommand::CreateProvider(provider("aws", 8)))
        .then_expect_events(vec![CatalogEvent::ProviderCreated(provider("aws", 8))]);
}

#[test]
fn a_provider_id_cannot_be_created_twice() {
    given()
        .given(seeded())
        .when(CatalogCommand::CreateProvider(provider("nrec", 3)))
        .then_expect_error(CatalogError::DuplicateProvider(pid("nrec")));
}

#[test]
fn a_provider_needs_a_name() {
    let mut spec = provider("aws", 8);
    spec.name = "  ".into();
    given()
        .given(seeded())
        .when(CatalogCommand::CreateProvider(spec))
        .then_expect_error(invalid(
            "name",
            "must not be blank or start or end with spaces",
        ));
}

#[test]
fn a_provider_update_records_only_the_fields_that_change() {
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateProvider {
            id: pid("nrec"),
            name: Some("NREC (Bergen)".into()),
            sort_order: Some(1),
        })
        .then_expect_events(vec![CatalogEvent::ProviderUpdated {
            id: pid("nrec"),
            name: Some("NREC (Bergen)".into()),
            sort_order: None,
        }]);
}

#[test]
fn a_provider_update_that_changes_nothing_records_nothing() {
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateProvider {
            id: pid("nrec"),
            name: Some("NREC".into()),
            sort_order: None,
        })
        .then_expect_events(vec![]);
}

#[test]
fn an_unknown_provider_cannot_be_updated() {
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateProvider {
            id: pid("aws"),
            name: Some("AWS".into()),
            sort_order: None,
        })
        .then_expect_error(CatalogError::UnknownProvider(pid("aws")));
}

#[test]
fn a_provider_update_with_a_blank_name_is_refused() {
    given()
        .given(seeded())
        .when(CatalogCommand::UpdateProvider {
            id: pid("nrec"),
            name: Some(String::new()),
            sort_order: None,
        })
        .then_expect_error(invalid(
            "name",
            "must not be blank or start or end with spaces",
        ));
}

#[test]
fn a_provider_is_disabled_once() {
    let disable = || CatalogCommand::SetProviderEnabled {
        id: pid("nrec"),
        enabled: false,
    };
    let disabled = CatalogEvent::ProviderEnabledChanged {
        id: pid("nrec"),
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
fn an_unknown_provider_cannot_be_disabled() {
    given()
        .given(seeded())
        .when(CatalogCommand::SetProviderEnabled {
            id: pid("aws"),
            enabled: false,
        })
        .then_expect_error(CatalogError::UnknownProvider(pid("aws")));
}

#[test]
fn providers_are_reordered_by_position() {
    given()
        .given(seeded())
        .when(CatalogCommand::ReorderProviders {
            ids: vec![pid("local"), pid("nrec")],
        })
        .then_expect_events(vec![CatalogEvent::ProvidersReordered {
            ids: vec![pid("local"), pid("nrec")],
        }]);
}

#[test]
fn a_provider_order_must_name_every_provider_once() {
    let cases = [
        (vec![pid("nrec")], "must list all 2 ids, not 1"),
        (
            vec![pid("nrec"), pid("nrec"), pid("local")],
            "\"nrec\" is listed twice",
        ),
        (vec![pid("nrec"), pid("aws")], "\"aws\" does not exist"),
        (
            (0..1001).map(|i| pid(&format!("p{i}"))).collect(),
            "must list at most 1000 ids, not 1001",
        ),
    ];
    for (ids, reason) in cases {
        given()
            .given(seeded())
            .when(CatalogCommand::ReorderProviders { ids })
            .then_expect_error(invalid("ids", reason));
    }
}

#[test]
fn catalog_events_are_stored_as_type_and_data() {
    let event = CatalogEvent::TemplateUpdated {
        provider: pid("nrec"),
        id: tid("medium"),
        changes: TemplateChanges {
            gpu: Some(None),
            ..Default::default()
        },
    };
    let json = serde_json::to_value(&event).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"type": "TemplateUpdated",
            "data": {"provider": "nrec", "id": "medium", "changes": {"gpu": null}}})
    );
    assert_eq!(serde_json::from_value::<CatalogEvent>(json).unwrap(), event);
}

#[path = "aggregate_template_tests.rs"]
mod templates;

#[test]
fn a_taskserv_is_disabled_and_enabled_again_per_provider_each_change_once() {
    let k3s = crate::taskservs::TaskservName::parse("k3s").unwrap();
    let set = |enabled| CatalogCommand::SetTaskservEnabled {
        provider: pid("nrec"),
        taskserv: k3s.clone(),
        enabled,
    };
    let changed = |enabled| CatalogEvent::TaskservEnabledChanged {
        provider: pid("nrec"),
        taskserv: k3s.clone(),
        enabled,
    };
    // Enabled until disabled: enabling changes nothing.
    given()
        .given(seeded())
        .when(set(true))
        .then_expect_events(vec![]);
    given()
        .given(seeded())
        .when(set(false))
        .then_expect_events(vec![changed(false)]);
    let disabled = [seeded(), vec![changed(false)]].concat();
    given()
        .given(disabled.clone())
        .when(set(false))
        .then_expect_events(vec![]);
    given()
        .given(disabled)
        .when(set(true))
        .then_expect_events(vec![changed(true)]);
    given()
        .given(seeded())
        .when(CatalogCommand::SetTaskservEnabled {
            provider: pid("nowhere"),
            taskserv: k3s.clone(),
            enabled: false,
        })
        .then_expect_error(CatalogError::UnknownProvider(pid("nowhere")));
}
