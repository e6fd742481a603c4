//! The rest of a VM's verbs: `vm extend|refresh|retry|archive|ssh|history`.

use serde_json::{json, Value};

use crate::args::{Format, SshArgs};
use crate::client::Api;
use crate::error::CliError;
use crate::follow::Goal;
use crate::names;
use crate::output::{self, Table};
use crate::wire::{read, Template, Vm, VmId};

use super::vm::{details, wait};

pub async fn extend(api: &Api, format: Format, arg: &str, hours: u16) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let answer = api
        .post(
            &format!("/api/v1/vms/{id}/extend"),
            &json!({"hours": hours}),
        )
        .await?;
    output::print(format, &answer, |_| Ok(details(&read(&answer, "VM")?)))
}

pub async fn refresh(api: &Api, format: Format, arg: &str) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let answer = api.post_empty(&format!("/api/v1/vms/{id}/refresh")).await?;
    output::print(format, &answer, |_| Ok(details(&read(&answer, "VM")?)))
}

pub async fn retry(api: &Api, format: Format, arg: &str, wait_: bool) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let answer = api.post_empty(&format!("/api/v1/vms/{id}/retry")).await?;
    let vm: Vm = read(&answer, "VM")?;
    if !wait_ {
        return output::print(format, &answer, |_| Ok(details(&vm)));
    }
    // The job the retry queued: a create again, or a destroy again.
    let retried = vm
        .job
        .iter()
        .chain(&vm.queue)
        .find(|job| job.action == "create" || job.action == "destroy");
    match retried.map(|job| job.action.clone()).as_deref() {
        Some("destroy") => wait(api, format, &vm, "destroy", Goal::Destroyed).await,
        _ => wait(api, format, &vm, "create", Goal::Provisioned).await,
    }
}

pub async fn archive(api: &Api, format: Format, arg: &str) -> Result<(), CliError> {
    // A destroyed VM's name no longer counts: an id, or a name looked up among all VMs.
    let id = match VmId::parse(arg) {
        Some(id) => id,
        None => destroyed_named(api, arg).await?,
    };
    let answer = api.post_empty(&format!("/api/v1/vms/{id}/archive")).await?;
    output::print(format, &answer, |_| Ok(details(&read(&answer, "VM")?)))
}

/// The one destroyed, unarchived VM named `name`.
async fn destroyed_named(api: &Api, name: &str) -> Result<VmId, CliError> {
    let items = names::list(api, &["destroyed".to_owned()], None, "false").await?;
    let vms: Vec<Vm> = items
        .iter()
        .map(|v| read(v, "VM"))
        .collect::<Result<_, _>>()?;
    let named: Vec<&Vm> = vms.iter().filter(|vm| vm.name == name).collect();
    match named[..] {
        [vm] => Ok(vm.id.clone()),
        [] => Err(CliError::Api {
            status: 404,
            code: "not_found".into(),
            detail: format!("no destroyed VM named {name} to archive"),
        }),
        _ => Err(CliError::Api {
            status: 409,
            code: "ambiguous".into(),
            detail: format!("{} destroyed VMs are named {name}; give an id", named.len()),
        }),
    }
}

/// Runs `ssh` on the VM: its address, the template's login user (or `--user`), the key
/// file given; this process becomes ssh where the platform allows it.
pub async fn ssh(api: &Api, args: SshArgs) -> Result<(), CliError> {
    let id = names::resolve(api, &args.vm).await?;
    let vm: Vm = read(&api.get(&format!("/api/v1/vms/{id}"), &[]).await?, "VM")?;
    let Some(ip) = vm.ip.clone() else {
        return Err(CliError::Api {
            status: 409,
            code: "no_address".into(),
            detail: format!("{} has no address yet (status {})", vm.name, vm.status),
        });
    };
    let user = match args.user {
        Some(user) => user,
        None => login_user(api, &vm).await?,
    };
    let mut command = std::process::Command::new("ssh");
    if let Some(identity) = &args.identity {
        command.arg("-i").arg(identity);
    }
    command.arg(format!("{user}@{ip}")).args(&args.ssh_args);
    if api.verbose() {
        eprintln!("> ssh {user}@{ip}");
    }
    run(command)
}

#[cfg(unix)]
fn run(mut command: std::process::Command) -> Result<(), CliError> {
    use std::os::unix::process::CommandExt;
    let error = command.exec();
    Err(CliError::Local(format!("cannot run ssh: {error}")))
}

#[cfg(not(unix))]
fn run(mut command: std::process::Command) -> Result<(), CliError> {
    let status = command
        .status()
        .map_err(|e| CliError::Local(format!("cannot run ssh: {e}")))?;
    match status.code() {
        Some(0) => Ok(()),
        code => Err(CliError::Local(format!("ssh ended with {code:?}"))),
    }
}

/// The login user of the VM's template.
async fn login_user(api: &Api, vm: &Vm) -> Result<String, CliError> {
    let path = format!("/api/v1/providers/{}/templates", vm.provider);
    let templates: Vec<Template> = read(&api.get(&path, &[]).await?, "template list")?;
    templates
        .into_iter()
        .find(|t| t.id == vm.template)
        .and_then(|t| t.username)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "the template {} of {} is not offered now, so its login user is unknown: give \
                 --user",
                vm.template, vm.provider
            ))
        })
}

pub async fn history(
    api: &Api,
    format: Format,
    arg: &str,
    at: Option<&str>,
) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    if let Some(at) = at {
        let value = api
            .get(&format!("/api/v1/vms/{id}"), &[("at", at.to_owned())])
            .await?;
        return output::print(format, &value, |_| Ok(details(&read(&value, "VM")?)));
    }
    let value = api
        .get(
            &format!("/api/v1/vms/{id}/events"),
            &[("exclude_logs", "true".to_owned())],
        )
        .await?;
    output::print(format, &value, |style| {
        let mut table = Table::new(vec!["SEQ", "RECORDED", "TYPE", "ACTOR", "DETAIL"]);
        for event in value.as_array().into_iter().flatten() {
            table.row(vec![
                event["sequence"].to_string().into(),
                event["recorded_at"].as_str().unwrap_or("-").into(),
                event["type"].as_str().unwrap_or("-").into(),
                event["actor"].as_str().unwrap_or("-").into(),
                summary(&event["data"]).into(),
            ]);
        }
        Ok(table.render(style))
    })
}

/// The fields of an event's data a person looks at first, as `k=v` pairs.
pub fn summary(data: &Value) -> String {
    const FIELDS: &[&str] = &[
        "job_id",
        "action",
        "status",
        "vm_ip",
        "reason",
        "hours",
        "expires_at",
        "name",
    ];
    FIELDS
        .iter()
        .filter_map(|name| {
            let value = data.get(*name)?;
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Null => return None,
                other => other.to_string(),
            };
            Some(format!("{name}={text}"))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_events_summary_names_its_telling_fields_in_order() {
        let data = json!({"job_id": 2, "reason": "quota", "secret_hash": "x", "vm_ip": null});
        assert_eq!(summary(&data), "job_id=2 reason=quota");
    }
}
