//! How long a VM lives: `expires_at` from `duration_hours`, extended by its owner within
//! the longest duration, set by an admin, warned about before it comes, and the destroy the
//! expiry sweep queues when it has come.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::error::ProvisioningError;
use super::events::ProvisioningEvent;
use super::lifecycle::{Lifecycle, VmStatus};

/// The longest a VM may have left to live after an extension: a week, as at request time.
pub const LONGEST: Duration = Duration::from_secs(168 * 3600);

/// The furthest an admin may set an expiry, so a typo does not keep a VM for ever.
pub const FURTHEST_SET: Duration = Duration::from_secs(366 * 24 * 3600);

/// The latest an extension may take a VM to: the longest life the caller's policies allow,
/// counted from the VM's request, and the policy that sets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtendLimit {
    #[serde(with = "time::serde::rfc3339")]
    pub until: OffsetDateTime,
    pub hours: u64,
    pub policy: String,
}

/// When the VM expires, and the warnings sent for that time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expiry {
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// The shortest warning sent for this expiry, in seconds before it: a warning at
    /// least as long is not sent again. Cleared when the expiry moves.
    pub warned_within: Option<u64>,
}

impl Expiry {
    pub fn new(expires_at: OffsetDateTime) -> Self {
        Self {
            expires_at,
            warned_within: None,
        }
    }

    /// The warning due at `now`, of those configured (each a time before the expiry): the
    /// shortest whose time has come, unless it or a shorter one was sent. A VM created
    /// with less time left than several warnings gets only the shortest.
    pub fn due_warning(&self, warnings: &[Duration], now: OffsetDateTime) -> Option<Duration> {
        if now >= self.expires_at {
            return None; // the expiry itself is due
        }
        let left = self.expires_at - now;
        let due = warnings.iter().filter(|w| left <= **w).min().copied()?;
        match self.warned_within {
            Some(sent) if sent <= due.as_secs() => None,
            _ => Some(due),
        }
    }
}

/// `t` to the microsecond, as Postgres keeps times: an expiry shows the same in a
/// command's answer and in the read model.
pub fn micros(t: OffsetDateTime) -> OffsetDateTime {
    t.replace_nanosecond(t.nanosecond() / 1000 * 1000)
        .expect("a whole number of microseconds is a valid nanosecond")
}

/// Written as `24h`, `90m` or `30s`, as in `PROVISIONING_EXPIRY_WARNINGS`.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs();
    match secs {
        s if s % 3600 == 0 && s > 0 => format!("{}h", s / 3600),
        s if s % 60 == 0 && s > 0 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

/// Whether the VM's expiry can still move: not once its destroy is to come or done.
fn movable(lifecycle: &Lifecycle) -> Result<(), ProvisioningError> {
    if lifecycle.destroy_to_come() || lifecycle.status == VmStatus::Destroyed {
        return Err(ProvisioningError::CannotExtend(lifecycle.status));
    }
    Ok(())
}

/// `hours` more, counted from the expiry (or from `at`, when it has passed or is unknown),
/// so that no more than [`LONGEST`] is left, and not past `limit`.
pub(super) fn extend(
    lifecycle: &Lifecycle,
    hours: u16,
    at: OffsetDateTime,
    limit: Option<&ExtendLimit>,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    movable(lifecycle)?;
    let longest = (LONGEST.as_secs() / 3600) as u16;
    if !(1..=longest).contains(&hours) {
        return Err(ProvisioningError::ExtendHours { longest });
    }
    let from = micros(lifecycle.expiry.map_or(at, |e| e.expires_at.max(at)));
    let expires_at = from + time::Duration::hours(hours.into());
    if expires_at - at > LONGEST {
        return Err(ProvisioningError::ExtendTooFar {
            longest,
            left: (from - at).whole_hours(),
        });
    }
    if let Some(limit) = limit.filter(|l| expires_at > l.until) {
        return Err(ProvisioningError::ExtendPastPolicy {
            policy: limit.policy.clone(),
            hours: limit.hours,
        });
    }
    Ok(vec![ProvisioningEvent::ExpiryExtended {
        hours,
        expires_at,
    }])
}

/// An admin's expiry, earlier or later: after `at`, within [`FURTHEST_SET`].
pub(super) fn set(
    lifecycle: &Lifecycle,
    expires_at: OffsetDateTime,
    at: OffsetDateTime,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    movable(lifecycle)?;
    if expires_at <= at {
        return Err(ProvisioningError::ExpiryPassed);
    }
    if expires_at - at > FURTHEST_SET {
        return Err(ProvisioningError::ExpiryTooFar {
            days: FURTHEST_SET.as_secs() / 86400,
        });
    }
    if lifecycle
        .expiry
        .is_some_and(|e| e.expires_at == micros(expires_at))
    {
        return Ok(vec![]); // set so already
    }
    Ok(vec![ProvisioningEvent::ExpirySet {
        expires_at: micros(expires_at),
    }])
}

/// The warning that the VM expires within `before`, once per expiry, when its time came.
pub(super) fn warn(
    lifecycle: &Lifecycle,
    before: Duration,
    at: OffsetDateTime,
) -> Result<Vec<ProvisioningEvent>, ProvisioningError> {
    let Some(expiry) = lifecycle.expiry else {
        return Ok(vec![]);
    };
    if movable(lifecycle).is_err() || expiry.due_warning(&[before], at).is_none() {
        return Ok(vec![]);
    }
    Ok(vec![ProvisioningEvent::ExpiryWarning {
        before_secs: before.as_secs(),
        expires_at: expiry.expires_at,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const H: u64 = 3600;

    fn expiry(warned_within: Option<u64>) -> Expiry {
        Expiry {
            expires_at: datetime!(2026-12-03 12:00 UTC),
            warned_within,
        }
    }

    #[test]
    fn the_shortest_warning_whose_time_came_is_due_once() {
        let warnings = [Duration::from_secs(24 * H), Duration::from_secs(H)];
        let day_before = datetime!(2026-12-02 13:00 UTC);
        let early = expiry(None).due_warning(&warnings, datetime!(2026-12-01 12:00 UTC));
        assert_eq!(early, None, "two days before: nothing yet");
        assert_eq!(
            expiry(None).due_warning(&warnings, day_before),
            Some(Duration::from_secs(24 * H))
        );
        assert_eq!(
            expiry(Some(24 * H)).due_warning(&warnings, day_before),
            None,
            "sent already"
        );
        let hour_before = datetime!(2026-12-03 11:30 UTC);
        assert_eq!(
            expiry(Some(24 * H)).due_warning(&warnings, hour_before),
            Some(Duration::from_secs(H))
        );
        assert_eq!(
            expiry(None).due_warning(&warnings, hour_before),
            Some(Duration::from_secs(H)),
            "a VM with less than an hour left gets only the last warning"
        );
        assert_eq!(expiry(Some(H)).due_warning(&warnings, hour_before), None);
        let after = datetime!(2026-12-03 12:00 UTC);
        assert_eq!(expiry(None).due_warning(&warnings, after), None);
    }

    #[test]
    fn durations_print_in_their_largest_whole_unit() {
        assert_eq!(format_duration(Duration::from_secs(24 * H)), "24h");
        assert_eq!(format_duration(Duration::from_secs(90 * 60)), "90m");
        assert_eq!(format_duration(Duration::from_secs(45)), "45s");
    }
}
