//! The admin token: one shared bearer token whose holder is the built-in admin
//! (`admin@localhost`, super admin). Opt-in: see `PROVISIONING_ADMIN_TOKEN` in the
//! operations guide.

use secrecy::ExposeSecret;
use subtle::ConstantTimeEq;

use crate::AppState;

/// Whether `given` is the admin token, compared in constant time; false when the admin
/// token is not enabled.
pub fn matches(state: &AppState, given: &str) -> bool {
    let Some(expected) = &state.admin_token else {
        return false;
    };
    let expected = expected.expose_secret().as_bytes();
    !expected.is_empty() && bool::from(given.as_bytes().ct_eq(expected))
}
