//! The cookie that binds a sign-in under way to the browser that started it (login CSRF):
//! `/auth/login` sets a random value, whose SHA-256 is stored with the pending login, and
//! `/auth/callback` takes the login only with it. A callback URL captured from one browser
//! and opened in another finds no such cookie there, and signs nobody in.

use axum::http::HeaderMap;
use store::sessions::LOGIN_TTL;

use super::{random_token, session, Oidc};

/// The cookie's name on plain http (loopback).
const PLAIN: &str = "provisioning_login";
/// Its name when the public URL is https: the `__Host-` prefix makes browsers refuse it
/// unless it is `Secure`, for `Path=/` and for this host only, so a neighbouring subdomain
/// cannot plant one.
const HOST_ONLY: &str = "__Host-provisioning_login";

fn name(oidc: &Oidc) -> &'static str {
    name_for(&oidc.public_url)
}

fn name_for(public_url: &str) -> &'static str {
    match public_url.starts_with("https://") {
        true => HOST_ONLY,
        false => PLAIN,
    }
}

/// The cookie's `Set-Cookie` text for a public URL; `secure` as the session cookie is.
fn text(public_url: &str, secure: bool, value: &str, max_age: u64) -> String {
    let name = name_for(public_url);
    let secure = if secure || name == HOST_ONLY {
        "; Secure"
    } else {
        ""
    };
    format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}")
}

/// The browser's login value: the one it holds already (so that sign-ins started in two
/// tabs both complete), else a new random one.
pub(crate) fn value(oidc: &Oidc, headers: &HeaderMap) -> String {
    reuse(held(oidc, headers)).unwrap_or_else(random_token)
}

/// `held` if it has the shape of a value [`random_token`] makes (256 bits, base64url).
fn reuse(held: Option<String>) -> Option<String> {
    held.filter(|v| {
        v.len() == 43
            && v.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    })
}

/// The login value the request's cookie holds, if any.
pub(crate) fn held(oidc: &Oidc, headers: &HeaderMap) -> Option<String> {
    held_in(headers, name(oidc))
}

fn held_in(headers: &HeaderMap, name: &str) -> Option<String> {
    session::cookie(headers, name)
}

/// The `Set-Cookie` value that gives the browser `value`, for as long as a login may take.
pub(crate) fn set(oidc: &Oidc, value: &str) -> String {
    text(
        &oidc.public_url,
        oidc.secure_cookie,
        value,
        LOGIN_TTL.as_secs(),
    )
}

/// The `Set-Cookie` value that removes it (the sign-in is over).
pub(crate) fn clear(oidc: &Oidc) -> String {
    text(&oidc.public_url, oidc.secure_cookie, "", 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_https_the_cookie_is_host_only_and_secure() {
        assert_eq!(
            text("https://vms.example.org", true, "v", 600),
            "__Host-provisioning_login=v; Path=/; HttpOnly; SameSite=Lax; Max-Age=600; Secure"
        );
        assert_eq!(
            text("http://127.0.0.1:8080", false, "", 0),
            "provisioning_login=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0"
        );
    }

    #[test]
    fn a_held_value_is_kept_only_when_it_looks_like_one_this_site_made() {
        let mut headers = HeaderMap::new();
        let good = random_token();
        headers.append(
            "cookie",
            format!("provisioning_login={good}").parse().unwrap(),
        );
        assert_eq!(reuse(held_in(&headers, PLAIN)), Some(good));
        let mut headers = HeaderMap::new();
        headers.append("cookie", "provisioning_login=short".parse().unwrap());
        assert_eq!(reuse(held_in(&headers, PLAIN)), None);
    }
}
