//! Where this face finds the caller's address, which `me` in `allow_ssh_from` stands for.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::HeaderName;

use crate::AppState;

/// Where this face reads the caller's address from (the widest network `allow_ssh_from`
/// may name is the application layer's rule, `app::App::widest_prefix`).
#[derive(Debug, Clone, Default)]
pub struct NetworkRules {
    /// Behind a proxy: the header in which it names the caller (`X-Forwarded-For`). Unset,
    /// `me` is the connection's peer and no header is believed: any client can write one.
    pub trusted_client_ip_header: Option<HeaderName>,
}

/// The caller's address, as far as the server can tell; why not, if it cannot. Only `me`
/// needs it, so a request without one fails only when it says `me`.
#[derive(Debug, Clone)]
pub struct ClientAddr(pub app::ClientAddr);

impl FromRequestParts<AppState> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Some(header) = &state.network.trusted_client_ip_header else {
            let peer = parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(peer)| peer.ip())
                .ok_or_else(|| "the server does not know the connection's address".to_owned());
            return Ok(ClientAddr(app::ClientAddr(peer)));
        };
        // The proxy in front adds the address it saw last (after what the client sent, which
        // anyone can forge): the last value of the last header line.
        let named = parts
            .headers
            .get_all(header)
            .iter()
            .next_back()
            .ok_or_else(|| format!("the {header} header that names the caller is missing"))
            .and_then(|value| {
                value
                    .to_str()
                    .ok()
                    .and_then(|v| v.rsplit(',').next())
                    .and_then(|v| v.trim().parse::<IpAddr>().ok())
                    .ok_or_else(|| format!("the {header} header does not end with an address"))
            });
        Ok(ClientAddr(app::ClientAddr(named)))
    }
}
