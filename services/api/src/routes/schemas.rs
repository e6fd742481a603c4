//! Schemas the document shares between routes for values that are not a Rust type of their
//! own on the wire (they are read from strings): what a valid one looks like.

use std::borrow::Cow;

use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{Ref, RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// An RFC 3339 time wherever a route takes one (query or body). Its year is 0000 to 9998,
/// so that, whatever its offset, it stays within what Postgres stores (4713 BC to 9999 in
/// UTC); a time outside that is `422` naming the field.
pub struct Time;

impl PartialSchema for Time {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .pattern(Some(
                r"^([0-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-8])-",
            ))
            .description(Some(
                "An RFC 3339 time, e.g. `2026-01-31T12:00:00Z`, from year 0000 to 9998",
            ))
            .into()
    }
}

impl ToSchema for Time {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Time")
    }
}

/// The name of an SSH key or a token: 1 to 64 characters on one line (no control
/// characters), not only spaces.
pub struct OneLineName;

impl PartialSchema for OneLineName {
    fn schema() -> RefOr<Schema> {
        const LINE: &str = r"[^\u0000-\u001f\u007f-\u009f]*";
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(64))
            .pattern(Some(format!(
                r"^{LINE}[^\s\u0000-\u001f\u007f-\u009f]{LINE}$"
            )))
            .description(Some("1 to 64 characters on one line, e.g. `laptop`"))
            .into()
    }
}

impl ToSchema for OneLineName {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("OneLineName")
    }
}

/// The id of a provider, a template or a tag: 1 to 64 characters of `[a-z0-9._-]`.
pub struct CatalogId;

impl PartialSchema for CatalogId {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(64))
            .pattern(Some(r"^[a-z0-9._-]+$"))
            .description(Some("1 to 64 characters of `[a-z0-9._-]`"))
            .into()
    }
}

impl ToSchema for CatalogId {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CatalogId")
    }
}

/// A text of the catalog (a name, a flavor, an image, a user name): one line of at most
/// 200 characters, not blank, without spaces at either end.
pub struct CatalogText;

impl PartialSchema for CatalogText {
    fn schema() -> RefOr<Schema> {
        const INNER: &str = r"[^\u0000-\u001f\u007f-\u009f]";
        const EDGE: &str = r"[^\s\u0000-\u001f\u007f-\u009f]";
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(200))
            .pattern(Some(format!("^{EDGE}({INNER}*{EDGE})?$")))
            .description(Some(
                "One line of at most 200 characters, without spaces at either end",
            ))
            .into()
    }
}

impl ToSchema for CatalogText {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CatalogText")
    }
}

/// A list of catalog ids, each once: a new order of providers or templates.
pub struct CatalogIds;

impl PartialSchema for CatalogIds {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Ref::from_schema_name("CatalogId"))
            .unique_items(true)
            .description(Some("Catalog ids, each once"))
            .into()
    }
}

impl ToSchema for CatalogIds {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CatalogIds")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((CatalogId::name().into(), CatalogId::schema()));
    }
}

/// A template's tags: lowercase words such as `simple`, `gpu`, `jupyter-notebook`, each once.
pub struct Tags;

impl PartialSchema for Tags {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .items(Ref::from_schema_name("CatalogId"))
            .unique_items(true)
            .description(Some("Lowercase words (`[a-z0-9._-]`, 1 to 64), each once"))
            .into()
    }
}

impl ToSchema for Tags {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("Tags")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((CatalogId::name().into(), CatalogId::schema()));
    }
}

/// An event type as the history filters take it (`type=Failed`): letters and digits,
/// starting with a capital, at most 64.
pub struct EventType;

impl PartialSchema for EventType {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .min_length(Some(1))
            .max_length(Some(64))
            .pattern(Some(r"^[A-Z][A-Za-z0-9]*$"))
            .description(Some("An event type, e.g. `Failed`"))
            .into()
    }
}

impl ToSchema for EventType {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("EventType")
    }
}

/// A point in the past a read goes back to: a position in the events table, or a [`Time`].
pub struct At;

impl PartialSchema for At {
    fn schema() -> RefOr<Schema> {
        utoipa::openapi::schema::OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
                    .minimum(Some(0)),
            )
            .item(Ref::from_schema_name("Time"))
            .description(Some("A position (a number) or an RFC 3339 time"))
            .into()
    }
}

impl ToSchema for At {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("At")
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((Time::name().into(), Time::schema()));
    }
}
