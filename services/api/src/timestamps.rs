//! The one reader of the times a request carries (query parameters and body fields): an
//! RFC 3339 time that Postgres can store, or a 422 naming the field.
//!
//! `time` parses `9999-12-31T23:59:59-00:01` although it is in year 10000 in UTC, which
//! neither `time` (without `large-dates`) nor Postgres can hold: sqlx's encoder panics on it,
//! and Postgres refuses times before its first day. Every time read here is checked against
//! both, and given in UTC.

use serde::{Deserialize, Deserializer};
use time::format_description::well_known::Rfc3339;
use time::macros::datetime;
use time::{OffsetDateTime, UtcOffset};

use crate::ApiError;

/// The earliest time Postgres stores: 24 November 4714 BC (proleptic Gregorian), 00:00 UTC.
pub const EARLIEST: OffsetDateTime = datetime!(-4713-11-24 00:00:00 UTC);
/// The latest time accepted: the end of year 9999, UTC.
pub const LATEST: OffsetDateTime = datetime!(9999-12-31 23:59:59.999_999_999 UTC);

/// Why a time is refused, for the `detail` after the field's name.
const SHAPE: &str = "must be an RFC 3339 time, e.g. 2026-01-31T12:00:00Z";
const RANGE: &str = "must be between 4714-11-24 BC and the end of year 9999 (UTC)";

/// `value`, the parameter or field `field`, as a time in UTC; a 422 naming `field` if it is
/// not an RFC 3339 time or out of the range Postgres stores.
pub(crate) fn parse(field: &str, value: &str) -> Result<OffsetDateTime, ApiError> {
    let parsed = OffsetDateTime::parse(value, &Rfc3339).map_err(|_| invalid(field, SHAPE))?;
    in_range(parsed).ok_or_else(|| out_of_range(field))
}

/// The refusal of a time Postgres cannot store, naming `field`.
pub(crate) fn out_of_range(field: &str) -> ApiError {
    invalid(field, RANGE)
}

/// `t` in UTC, if Postgres can store it.
pub(crate) fn in_range(t: OffsetDateTime) -> Option<OffsetDateTime> {
    let utc = t.checked_to_offset(UtcOffset::UTC)?;
    (EARLIEST..=LATEST).contains(&utc).then_some(utc)
}

fn invalid(field: &str, reason: &str) -> ApiError {
    ApiError::Invalid {
        field: field.into(),
        reason: reason.into(),
    }
}

/// For `#[serde(deserialize_with = "...")]` on a required time of a request body. The
/// error is the field's (the body's reader names the field by its path).
pub(crate) fn required<'de, D: Deserializer<'de>>(d: D) -> Result<OffsetDateTime, D::Error> {
    let text = String::deserialize(d)?;
    let parsed =
        OffsetDateTime::parse(&text, &Rfc3339).map_err(|_| serde::de::Error::custom(SHAPE))?;
    in_range(parsed).ok_or_else(|| serde::de::Error::custom(RANGE))
}

/// For `#[serde(default, deserialize_with = "...")]` on an optional time of a request body.
pub(crate) fn optional<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<OffsetDateTime>, D::Error> {
    #[derive(Deserialize)]
    struct Time(#[serde(deserialize_with = "required")] OffsetDateTime);
    Ok(Option::<Time>::deserialize(d)?.map(|Time(t)| t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_is_read_in_utc() {
        let t = parse("from", "2026-01-31T13:00:00+01:00").unwrap();
        assert_eq!(t, datetime!(2026-01-31 12:00:00 UTC));
        assert_eq!(t.offset(), UtcOffset::UTC);
    }

    #[test]
    fn times_postgres_cannot_store_are_refused_naming_the_field() {
        for (value, reason) in [
            ("9999-12-31T23:59:59-00:01", RANGE),
            ("+10000-01-01T00:00:00Z", SHAPE),
            ("yesterday", SHAPE),
        ] {
            let error = parse("expires_at", value).unwrap_err();
            assert_eq!(
                error.to_string(),
                format!("expires_at: {reason}"),
                "{value}"
            );
        }
    }

    #[test]
    fn the_first_and_last_times_postgres_stores_are_accepted() {
        assert_eq!(in_range(EARLIEST), Some(EARLIEST));
        assert_eq!(in_range(EARLIEST - time::Duration::SECOND), None);
        assert_eq!(parse("at", "0000-01-01T00:00:00+23:59").unwrap().year(), -1);
        assert!(parse("at", "9999-12-31T23:59:59.999999Z").is_ok());
        assert!(parse("at", "9999-12-31T23:59:59+01:00").is_ok());
    }
}
