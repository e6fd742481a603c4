//! The device authorization grant (RFC 8628): the provider gives a code to type in at a
//! page, in any browser, on any device; this process asks the token endpoint until the
//! person has approved (or refused, or the code expired).

use std::time::Duration;

use serde::Deserialize;

use super::oauth::{kept, token_request, Provider, TokenAnswer, Tokens};
use super::SignInConfig;
use crate::error::CliError;

const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

#[derive(Debug, Deserialize)]
struct DeviceAnswer {
    device_code: String,
    user_code: String,
    verification_uri: String,
    verification_uri_complete: Option<String>,
    expires_in: u64,
    /// Seconds between polls; 5 when the provider says nothing (RFC 8628 3.2).
    interval: Option<u64>,
}

pub async fn sign_in(
    http: &reqwest::Client,
    config: &SignInConfig,
    provider: &Provider,
) -> Result<(TokenAnswer, Tokens), CliError> {
    let endpoint = provider
        .device_authorization_endpoint
        .as_deref()
        .ok_or_else(|| {
            CliError::Usage(
                "the OpenID provider offers no device sign-in: run `provisioning login` without \
             --device"
                    .into(),
            )
        })?;
    let scope = config.scopes.join(" ");
    let response = http
        .post(endpoint)
        .form(&[
            ("client_id", config.client_id.as_str()),
            ("scope", scope.as_str()),
            ("resource", config.audience.as_str()),
        ])
        .send()
        .await
        .map_err(|e| CliError::network(endpoint, &e))?;
    if !response.status().is_success() {
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        return Err(CliError::Local(format!(
            "the OpenID provider refused a device sign-in (HTTP {status}): {}",
            text.chars().take(200).collect::<String>()
        )));
    }
    let device: DeviceAnswer = response
        .json()
        .await
        .map_err(|e| CliError::Local(format!("the provider's device answer is unreadable: {e}")))?;
    eprintln!(
        "To sign in, open {} in a browser and enter the code {}",
        device.verification_uri, device.user_code
    );
    if let Some(complete) = &device.verification_uri_complete {
        eprintln!("  (or open {complete})");
    }
    eprintln!("Waiting for you to approve ...");
    let mut interval = Duration::from_secs(device.interval.unwrap_or(5).max(1));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(device.expires_in);
    loop {
        tokio::time::sleep(interval).await;
        if tokio::time::Instant::now() >= deadline {
            return Err(CliError::Local(
                "the code expired before it was approved: run `provisioning login --device` \
                 again"
                    .into(),
            ));
        }
        let answer = token_request(
            http,
            &provider.token_endpoint,
            &[
                ("grant_type", DEVICE_GRANT),
                ("device_code", device.device_code.as_str()),
                ("client_id", config.client_id.as_str()),
                ("resource", config.audience.as_str()),
            ],
        )
        .await?;
        match answer {
            Ok(answer) => {
                let tokens = kept(&answer, provider, config, None);
                return Ok((answer, tokens));
            }
            Err(e) if e.error == "authorization_pending" => {}
            Err(e) if e.error == "slow_down" => interval += Duration::from_secs(5),
            Err(e) => {
                return Err(CliError::Local(format!(
                    "the device sign-in did not succeed: {}",
                    e.text()
                )))
            }
        }
    }
}
