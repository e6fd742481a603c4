//! `vm create|list|show|destroy`, and `--wait`: following the VM's stream until the job the
//! command asked for ends.

use serde_json::{json, Map, Value};

use crate::args::{CreateArgs, Format, ListArgs};
use crate::client::Api;
use crate::error::CliError;
use crate::follow::{Goal, Watch};
use crate::names;
use crate::output::{self, fields, short_id, Cell, Colour, Style, Table};
use crate::waiting::{follow_until, show_settled, Following};
use crate::wire::{read, Taskserv, Vm, VmId};

pub async fn create(api: &Api, format: Format, args: CreateArgs) -> Result<(), CliError> {
    let mut body = json!({
        "name": args.name,
        "provider": args.provider,
        "template": args.template,
        "allow_ssh_from": args.allow,
        "duration_hours": args.hours,
    });
    match (&args.key, &args.ssh_key) {
        (Some(id), _) => body["ssh_key_id"] = json!(id),
        (None, Some(file)) => {
            let key = std::fs::read_to_string(file).map_err(|e| {
                CliError::Usage(format!("cannot read the SSH key {}: {e}", file.display()))
            })?;
            body["ssh_public_key"] = json!(key.trim());
        }
        (None, None) => unreachable!("clap requires --key or --ssh-key"),
    }
    if !args.taskservs.is_empty() {
        body["taskservs"] = taskservs(api, &args.taskservs).await?;
    }
    let answer = api.post("/api/v1/vms", &body).await?;
    if !args.wait {
        return output::print(format, &answer, |_| Ok(details(&read(&answer, "VM")?)));
    }
    let vm: Vm = read(&answer, "VM")?;
    wait(api, format, &vm, "create", Goal::Provisioned).await
}

pub async fn list(api: &Api, format: Format, args: ListArgs) -> Result<(), CliError> {
    let (statuses, archived) = match (args.status.is_empty(), args.all) {
        (false, all) => (args.status, if all { "all" } else { "false" }),
        (true, true) => (vec![], "all"),
        (true, false) => (names::LIVE.iter().map(|s| s.to_string()).collect(), "false"),
    };
    let items = names::list(api, &statuses, args.provider.as_deref(), archived).await?;
    let value = Value::Array(items);
    output::print(format, &value, |style| {
        let vms: Vec<Vm> = read(&value, "VM list")?;
        Ok(table(&vms, style))
    })
}

/// The table of `vm list`.
fn table(vms: &[Vm], style: Style) -> String {
    let mut table = Table::new(vec![
        "ID", "NAME", "PROVIDER", "TEMPLATE", "STATUS", "IP", "EXPIRES",
    ]);
    for vm in vms {
        table.row(vec![
            short_id(vm.id.as_str()).into(),
            vm.name.as_str().into(),
            vm.provider.as_str().into(),
            vm.template.as_str().into(),
            Cell::coloured(vm.status.as_str(), Colour::of_status(&vm.status)),
            vm.ip.as_deref().unwrap_or("-").into(),
            vm.expires_at.as_deref().unwrap_or("-").into(),
        ]);
    }
    table.render(style)
}

pub async fn show(api: &Api, format: Format, arg: &str) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let value = api.get(&format!("/api/v1/vms/{id}"), &[]).await?;
    output::print(format, &value, |_| Ok(details(&read(&value, "VM")?)))
}

pub async fn destroy(api: &Api, format: Format, arg: &str, wait_: bool) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    let answer = api.delete(&format!("/api/v1/vms/{id}")).await?;
    if !wait_ {
        return output::print(format, &answer, |_| Ok(details(&read(&answer, "VM")?)));
    }
    let vm: Vm = read(&answer, "VM")?;
    wait(api, format, &vm, "destroy", Goal::Destroyed).await
}

/// One VM, every field a person needs, the id whole.
pub(super) fn details(vm: &Vm) -> String {
    let job = vm.job.as_ref().map_or("-".to_owned(), |job| {
        format!("{} {} ({})", job.action, job.id, job.state)
    });
    let mut pairs = vec![
        ("id", vm.id.to_string()),
        ("name", vm.name.clone()),
        ("provider", vm.provider.clone()),
        ("template", vm.template.clone()),
        ("status", vm.status.clone()),
        ("ip", vm.ip.clone().unwrap_or_else(|| "-".into())),
        ("job", job),
        ("created", vm.created_at.clone()),
        (
            "expires",
            vm.expires_at.clone().unwrap_or_else(|| "-".into()),
        ),
    ];
    if let Some(error) = &vm.last_error {
        pairs.push(("last error", error.clone()));
    }
    fields(&pairs)
}

/// Follows `vm`'s stream until its `action` job ends, printing the status changes on
/// stderr, then prints the VM as it is; exit 3 if the job failed.
pub(super) async fn wait(
    api: &Api,
    format: Format,
    vm: &Vm,
    action: &str,
    goal: Goal,
) -> Result<(), CliError> {
    // The newest: the one this command queued, behind any earlier of the same action.
    let job = vm
        .job
        .iter()
        .chain(&vm.queue)
        .filter(|job| job.action == action)
        .map(|job| job.id)
        .max();
    let Some(job) = job else {
        // Nothing to wait for: the VM already is where the command leads (a destroy asked
        // twice answers the VM as it is).
        return show_id(api, format, &vm.id).await;
    };
    eprintln!(
        "{} {} ({}): following its {action} job",
        vm.name,
        short_id(vm.id.as_str()),
        vm.id
    );
    let mut watch = Watch::new(job, goal);
    let on_interrupt = format!(
        "Stopped waiting; the {action} goes on (nothing was cancelled). Follow it again \
         with `provisioning vm logs {} -f`, or see it with `provisioning vm show {}`",
        vm.id, vm.id
    );
    let following = Following {
        path: format!("/api/v1/vms/{}/stream", vm.id),
        after: None,
        status: format!("waiting for the {action} job {job}"),
        on_interrupt: &on_interrupt,
    };
    let failure = follow_until(api, following, |event, progress| {
        let (line, verdict) = watch.see(event);
        if let Some(line) = line {
            progress.say(&format!("  {line}"));
            progress.status(&line);
        }
        if event.kind == "LogLine" && event.job_id() == Some(job) {
            progress.detail(event.text("message").unwrap_or_default());
        }
        verdict
    })
    .await?;
    let settled: &[&str] = match (&failure, goal) {
        // An install leaves the VM running, whether its taskservs installed or not.
        (_, Goal::Installed) => &["running", "unreachable", "failed"],
        (Some(_), _) => &["failed"],
        (None, Goal::Provisioned) => &["provisioned", "initializing", "running", "unreachable"],
        (None, Goal::Destroyed) => &["destroyed"],
    };
    let path = format!("/api/v1/vms/{}", vm.id);
    let status = |vm: &Vm| vm.status.clone();
    show_settled(api, format, &path, "VM", settled, status, details).await?;
    match failure {
        Some(reason) => Err(CliError::JobFailed(format!(
            "the {action} failed: {reason}"
        ))),
        None => Ok(()),
    }
}

async fn show_id(api: &Api, format: Format, id: &VmId) -> Result<(), CliError> {
    let value = api.get(&format!("/api/v1/vms/{id}"), &[]).await?;
    output::print(format, &value, |_| Ok(details(&read(&value, "VM")?)))
}

/// The `taskservs` of a create from `NAME[:k=v,...]` arguments, each param typed as the
/// catalog declares it (the platform takes `3001` for a number, never `"3001"`).
pub(super) async fn taskservs(api: &Api, specs: &[String]) -> Result<Value, CliError> {
    let parsed: Vec<(String, Vec<(String, String)>)> = specs
        .iter()
        .map(|s| parse_taskserv(s))
        .collect::<Result<_, _>>()?;
    let catalog: Vec<Taskserv> = if parsed.iter().any(|(_, params)| !params.is_empty()) {
        read(
            &api.get("/api/v1/extensions/taskservs", &[]).await?,
            "taskserv list",
        )?
    } else {
        vec![]
    };
    let mut out = vec![];
    for (name, params) in parsed {
        let mut entry = json!({"name": name});
        if !params.is_empty() {
            entry["params"] = Value::Object(typed_params(&name, &params, &catalog)?);
        }
        out.push(entry);
    }
    Ok(Value::Array(out))
}

/// `grafana:port=3001,admin=x` as its name and its params, in order.
pub fn parse_taskserv(spec: &str) -> Result<(String, Vec<(String, String)>), CliError> {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    if name.is_empty() {
        return Err(CliError::Usage(format!("--taskserv {spec}: no name")));
    }
    let mut params = vec![];
    for pair in rest.split(',').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').ok_or_else(|| {
            CliError::Usage(format!("--taskserv {spec}: `{pair}` is not key=value"))
        })?;
        params.push((key.to_owned(), value.to_owned()));
    }
    Ok((name.to_owned(), params))
}

/// The params as JSON of the types the catalog gives them; a taskserv or param the catalog
/// does not know is sent as a string, for the platform to refuse with its reason.
pub fn typed_params(
    name: &str,
    params: &[(String, String)],
    catalog: &[Taskserv],
) -> Result<Map<String, Value>, CliError> {
    let declared = catalog.iter().find(|t| t.name == name).map(|t| &t.params);
    let mut out = Map::new();
    for (key, raw) in params {
        let kind = declared
            .and_then(|d| d.get(key))
            .and_then(|spec| spec["type"].as_str())
            .unwrap_or("string");
        let value = match kind {
            "number" => serde_json::from_str::<serde_json::Number>(raw)
                .map(Value::Number)
                .map_err(|_| ()),
            "bool" => raw.parse::<bool>().map(Value::Bool).map_err(|_| ()),
            _ => Ok(Value::String(raw.clone())),
        }
        .map_err(|()| {
            CliError::Usage(format!(
                "--taskserv {name}: {key} must be a {kind}, not `{raw}`"
            ))
        })?;
        out.insert(key.clone(), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Vec<Taskserv> {
        serde_json::from_value(json!([{
            "name": "grafana", "version": "1", "category": "monitoring",
            "depends_on": [{"name": "docker", "kind": "requires"}],
            "description": "dashboards",
            "params": {"port": {"type": "number", "default": 3000, "description": "p"},
                       "anonymous": {"type": "bool", "description": "a"},
                       "version": {"type": "string", "description": "v"}}
        }]))
        .unwrap()
    }

    #[test]
    fn a_taskserv_argument_gives_its_params_the_catalogs_types() {
        let (name, params) =
            parse_taskserv("grafana:port=3001,anonymous=true,version=1.0").unwrap();
        let typed = typed_params(&name, &params, &catalog()).unwrap();
        assert_eq!(
            Value::Object(typed),
            json!({"port": 3001, "anonymous": true, "version": "1.0"})
        );
    }

    #[test]
    fn a_param_of_the_wrong_type_is_a_usage_error() {
        let (name, params) = parse_taskserv("grafana:port=high").unwrap();
        let error = typed_params(&name, &params, &catalog()).unwrap_err();
        assert_eq!(error.exit_code(), 2);
    }

    #[test]
    fn a_taskserv_without_params_is_its_name() {
        assert_eq!(parse_taskserv("docker").unwrap(), ("docker".into(), vec![]));
        assert!(parse_taskserv("docker:port").is_err());
    }
}
