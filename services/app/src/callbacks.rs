//! What a VM reports as it boots (cloud-init) and what its application reports, through the
//! signed callback URLs it was given. The token names the VM, its create job and the kind,
//! and expires; one that does not check, has expired or was used already is not found and
//! changes nothing.

use domain::callbacks::CallbackClaims;
use domain::provisioning::{
    BootReport, CallbackKind, Provisioning, ProvisioningCommand, TaskservReport,
};
use time::OffsetDateTime;

use crate::{App, Error};

/// What a callback may carry; fields other kinds do not use are ignored.
#[derive(Debug, Default, Clone)]
pub struct CallbackReport {
    /// `phone_home`: the VM's host name.
    pub hostname: Option<String>,
    /// `app_ready`: where to reach the application (http or https).
    pub url: Option<String>,
    /// `app_failed`: why it could not start.
    pub reason: Option<String>,
    /// `phone_home`: the VM's SSH host keys (OpenSSH public key lines).
    pub host_keys: Vec<String>,
    /// `taskserv_installed`: what the taskserv reported, `key=value` lines.
    pub outputs: Option<String>,
    /// `taskserv_failed`: its exit code.
    pub exit_code: Option<String>,
    /// `taskserv_failed`: the last lines of its output.
    pub last_lines: Option<String>,
}

impl App {
    /// Records the callback of the URL whose token is `token`, as the VM (actor `vm`) in
    /// request `request_id`.
    #[tracing::instrument(skip_all, fields(vm_id))]
    pub async fn record_callback(
        &self,
        token: &str,
        input: CallbackReport,
        request_id: &str,
    ) -> Result<(), Error> {
        let claims = self
            .callbacks
            .verify(token, OffsetDateTime::now_utc())
            .ok_or_else(|| Error::NotFound("no such callback".into()))?;
        tracing::Span::current().record("vm_id", tracing::field::display(claims.vm));
        let command = ProvisioningCommand::Callback {
            job_id: claims.job,
            report: report(&claims, input)?,
        };
        let metadata = store::Metadata::new(store::Actor::Vm, request_id.to_owned());
        store::execute::<Provisioning>(&self.pool, claims.vm, command, &metadata)
            .await
            .map_err(|e| crate::vm_command_failed(claims.vm, e))?;
        Ok(())
    }
}

/// The report of a callback of `claims.kind`, its fields checked.
fn report(claims: &CallbackClaims, input: CallbackReport) -> Result<BootReport, Error> {
    Ok(match claims.kind {
        CallbackKind::BootStarted => BootReport::BootStarted,
        CallbackKind::PhoneHome => {
            let hostname = input.hostname.unwrap_or_default();
            if !valid_hostname(&hostname) {
                return Err(Error::invalid(
                    "hostname",
                    "must be a host name: 1 to 253 characters of letters, digits, '-' and '.'",
                ));
            }
            BootReport::PhoneHome {
                hostname,
                host_keys: input.host_keys,
            }
        }
        CallbackKind::AppStarting => BootReport::AppStarting,
        CallbackKind::AppReady => {
            let url = input.url.unwrap_or_default();
            let parsed = url::Url::parse(&url).ok();
            if !parsed.is_some_and(|u| matches!(u.scheme(), "http" | "https") && u.has_host()) {
                return Err(Error::invalid("url", "must be an http or https URL"));
            }
            BootReport::AppReady { url }
        }
        CallbackKind::AppFailed => BootReport::AppFailed {
            reason: input
                .reason
                .filter(|r| !r.trim().is_empty())
                .unwrap_or_else(|| "the application reported a failure".into()),
        },
        kind => BootReport::Taskserv {
            step: claims.step,
            report: taskserv_report(kind, input)?,
        },
    })
}

/// A taskserv's report: its outputs as `key=value` lines (others ignored), or its exit
/// code and last lines.
fn taskserv_report(kind: CallbackKind, input: CallbackReport) -> Result<TaskservReport, Error> {
    Ok(match kind {
        CallbackKind::TaskservInstalled => TaskservReport::Installed {
            outputs: input
                .outputs
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.split_once('='))
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
                .collect(),
        },
        CallbackKind::TaskservFailed => TaskservReport::Failed {
            exit_code: match input.exit_code.as_deref().map(str::trim) {
                None | Some("") => None,
                Some(code) => Some(
                    code.parse()
                        .map_err(|_| Error::invalid("exit_code", "must be a whole number"))?,
                ),
            },
            last_lines: input
                .last_lines
                .unwrap_or_default()
                .lines()
                .map(str::to_owned)
                .collect(),
        },
        _ => TaskservReport::Started,
    })
}

fn valid_hostname(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.')
}
