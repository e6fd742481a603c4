//! `cluster templates|create|list|show|scale|destroy`: clusters through
//! `/api/v1/clusters`, named by id or by name among the caller's clusters.

use serde_json::{json, Map, Value};

use crate::args::{ClusterCreateArgs, Format};
use crate::client::Api;
use crate::error::CliError;
use crate::output::{self, fields, short_id, Cell, Colour, Style, Table};
use crate::wire::{read, Cluster, ClusterTemplate, VmId};

use super::cluster_wait::{history, wait, Goal};

/// The seed's names of cluster templates and the names this platform gives them.
const ALIASES: &[(&str, &str)] = &[
    ("kubernetes-single", "k3s-single"),
    ("kubernetes-ha", "k3s-ha"),
];

/// The template `name` stands for: itself, or the platform's name for a seed's name.
pub fn template_name(name: &str) -> &str {
    ALIASES
        .iter()
        .find(|(seed, _)| *seed == name)
        .map_or(name, |(_, ours)| ours)
}

pub async fn templates(api: &Api, format: Format) -> Result<(), CliError> {
    let value = api.get("/api/v1/extensions/clusters", &[]).await?;
    output::print(format, &value, |style| {
        let templates: Vec<ClusterTemplate> = read(&value, "cluster template list")?;
        let mut table = Table::new(vec!["NAME", "DESCRIPTION", "ROLES"]);
        for template in &templates {
            let roles: Vec<String> = template
                .roles
                .iter()
                .map(|r| format!("{}×{}", r.name, count_text(&r.count)))
                .collect();
            table.row(vec![
                template.name.as_str().into(),
                template.description.as_str().into(),
                roles.join(", ").into(),
            ]);
        }
        Ok(table.render(style))
    })
}

/// A role's count as a template gives it: `2`, or `1-5 (3)` for a range and its default.
fn count_text(count: &Value) -> String {
    match count {
        Value::Number(n) => n.to_string(),
        Value::Object(range) => format!(
            "{}-{} ({})",
            range.get("min").unwrap_or(&Value::Null),
            range.get("max").unwrap_or(&Value::Null),
            range.get("default").unwrap_or(&Value::Null)
        ),
        other => other.to_string(),
    }
}

pub async fn create(api: &Api, format: Format, args: ClusterCreateArgs) -> Result<(), CliError> {
    let mut body = json!({
        "name": args.name,
        "template": template_name(&args.template),
        "provider": args.provider,
        "roles": roles(&args.counts, &args.templates)?,
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
        (None, None) => {
            return Err(CliError::Usage(
                "give --key or --ssh-key: the nodes need an SSH key".into(),
            ))
        }
    }
    let answer = api.post("/api/v1/clusters", &body).await?;
    let cluster: Cluster = read(&answer, "cluster")?;
    if !args.wait {
        return output::print(format, &answer, |_| Ok(details(&cluster)));
    }
    wait(api, format, &cluster, None, Goal::Ready).await
}

/// The `roles` of a request from `--count ROLE=N` and `--template ROLE=T`.
pub fn roles(counts: &[String], templates: &[String]) -> Result<Value, CliError> {
    let mut roles = Map::new();
    for spec in counts {
        let (role, count) = pair("--count", spec)?;
        let count: u32 = count.parse().map_err(|_| {
            CliError::Usage(format!("--count {spec}: `{count}` is not a node count"))
        })?;
        entry(&mut roles, role).insert("count".into(), json!(count));
    }
    for spec in templates {
        let (role, template) = pair("--template", spec)?;
        entry(&mut roles, role).insert("template".into(), json!(template));
    }
    Ok(Value::Object(roles))
}

fn pair<'a>(flag: &str, spec: &'a str) -> Result<(&'a str, &'a str), CliError> {
    match spec.split_once('=') {
        Some((role, value)) if !role.is_empty() && !value.is_empty() => Ok((role, value)),
        _ => Err(CliError::Usage(format!("{flag} {spec}: not ROLE=VALUE"))),
    }
}

fn entry<'a>(roles: &'a mut Map<String, Value>, role: &str) -> &'a mut Map<String, Value> {
    let value = roles
        .entry(role.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    match value {
        Value::Object(map) => map,
        _ => unreachable!("every role's entry is made an object above"),
    }
}

pub async fn list(api: &Api, format: Format, all: bool, everyone: bool) -> Result<(), CliError> {
    let items = list_values(api, everyone).await?;
    let items: Vec<Value> = items
        .into_iter()
        .filter(|c| all || c["status"] != "destroyed")
        .collect();
    let value = Value::Array(items);
    output::print(format, &value, |style| {
        let clusters: Vec<Cluster> = read(&value, "cluster list")?;
        Ok(table(&clusters, style))
    })
}

async fn list_values(api: &Api, everyone: bool) -> Result<Vec<Value>, CliError> {
    let query = [("all", everyone.to_string())];
    read(&api.get("/api/v1/clusters", &query).await?, "cluster list")
}

fn table(clusters: &[Cluster], style: Style) -> String {
    let mut table = Table::new(vec![
        "ID",
        "NAME",
        "TEMPLATE",
        "PROVIDER",
        "STATUS",
        "NODES",
        "REQUESTED",
    ]);
    for cluster in clusters {
        table.row(vec![
            short_id(cluster.id.as_str()).into(),
            cluster.name.as_str().into(),
            cluster.template.as_str().into(),
            cluster.provider.as_str().into(),
            Cell::coloured(cluster.status.as_str(), colour(&cluster.status)),
            cluster.nodes.len().to_string().into(),
            cluster.requested_at.as_str().into(),
        ]);
    }
    table.render(style)
}

fn colour(status: &str) -> Option<Colour> {
    match status {
        "ready" => Some(Colour::Green),
        "failed" | "rolling_back" => Some(Colour::Red),
        "destroyed" => None,
        _ => Some(Colour::Yellow),
    }
}

/// The id `arg` stands for: itself if a UUID, else the one cluster of the caller by that
/// name that is not destroyed.
pub async fn resolve(api: &Api, arg: &str) -> Result<VmId, CliError> {
    if let Some(id) = VmId::parse(arg) {
        return Ok(id);
    }
    let clusters: Vec<Cluster> = read(
        &Value::Array(list_values(api, false).await?),
        "cluster list",
    )?;
    pick(&clusters, arg)
}

pub fn pick(clusters: &[Cluster], name: &str) -> Result<VmId, CliError> {
    let named: Vec<&Cluster> = clusters
        .iter()
        .filter(|c| c.name == name && c.status != "destroyed")
        .collect();
    match named[..] {
        [] => Err(CliError::Api {
            status: 404,
            code: "not_found".into(),
            detail: format!("no cluster named {name}"),
        }),
        [cluster] => Ok(cluster.id.clone()),
        _ => {
            let ids: Vec<&str> = named.iter().map(|c| c.id.as_str()).collect();
            Err(CliError::Api {
                status: 409,
                code: "ambiguous".into(),
                detail: format!(
                    "{} clusters are named {name}: {}; give an id",
                    ids.len(),
                    ids.join(", ")
                ),
            })
        }
    }
}

pub async fn show(api: &Api, format: Format, arg: &str) -> Result<(), CliError> {
    let id = resolve(api, arg).await?;
    show_id(api, format, &id).await
}

pub(super) async fn show_id(api: &Api, format: Format, id: &VmId) -> Result<(), CliError> {
    let value = api.get(&format!("/api/v1/clusters/{id}"), &[]).await?;
    output::print(format, &value, |_| Ok(details(&read(&value, "cluster")?)))
}

pub async fn scale(
    api: &Api,
    format: Format,
    arg: &str,
    role: &str,
    count: u32,
    wait_: bool,
) -> Result<(), CliError> {
    let id = resolve(api, arg).await?;
    // The events so far: `--wait` follows from the one after, so an earlier scale to the
    // same count is not taken for this one.
    let last = match wait_ {
        true => history(api, id.as_str(), 0)
            .await?
            .last()
            .and_then(|e| e["sequence"].as_u64()),
        false => None,
    };
    let body = json!({"role": role, "count": count});
    let answer = api
        .post(&format!("/api/v1/clusters/{id}/scale"), &body)
        .await?;
    let cluster: Cluster = read(&answer, "cluster")?;
    if !wait_ {
        return output::print(format, &answer, |_| Ok(details(&cluster)));
    }
    // A role given the count it has records nothing: there is nothing to wait for.
    let asked = history(api, id.as_str(), last.unwrap_or(0))
        .await?
        .iter()
        .any(|e| {
            e["type"] == "ScaleRequested"
                && e["data"]["role"] == role
                && e["data"]["count"] == count
        });
    if !asked {
        eprintln!("Role {role} has {count} node(s) already: nothing to wait for");
        return output::print(format, &answer, |_| Ok(details(&cluster)));
    }
    let goal = Goal::Scaled {
        role: role.to_owned(),
        to: count,
    };
    wait(api, format, &cluster, last, goal).await
}

pub async fn destroy(api: &Api, format: Format, arg: &str, wait_: bool) -> Result<(), CliError> {
    let id = resolve(api, arg).await?;
    let answer = api.delete(&format!("/api/v1/clusters/{id}")).await?;
    let cluster: Cluster = read(&answer, "cluster")?;
    if !wait_ {
        return output::print(format, &answer, |_| Ok(details(&cluster)));
    }
    wait(api, format, &cluster, None, Goal::Destroyed).await
}

/// One cluster, every field a person needs: its fields, then its roles, nodes, gates and
/// outputs as lines.
pub(super) fn details(cluster: &Cluster) -> String {
    let mut pairs = vec![
        ("id", cluster.id.to_string()),
        ("name", cluster.name.clone()),
        ("template", cluster.template.clone()),
        ("provider", cluster.provider.clone()),
        ("status", cluster.status.clone()),
        ("requested", cluster.requested_at.clone()),
    ];
    if let Some(failure) = &cluster.failure {
        pairs.push(("failure", failure.clone()));
    }
    let mut out = fields(&pairs);
    out.push_str("\nroles\n");
    for role in &cluster.roles {
        out.push_str(&format!(
            "  {}  {} node(s) of {} (range {}-{})\n",
            role.name, role.count, role.template, role.min, role.max
        ));
    }
    out.push_str("nodes\n");
    if cluster.nodes.is_empty() {
        out.push_str("  -\n");
    }
    for node in &cluster.nodes {
        out.push_str(&format!(
            "  {}[{}]  {}  {}  {}  {}\n",
            node.role,
            node.index,
            node.name,
            node.vm_id,
            node.status,
            node.address.as_deref().unwrap_or("-")
        ));
    }
    out.push_str("gates\n");
    for gate in &cluster.gates {
        let why = gate
            .why
            .as_deref()
            .map(|w| format!(": {w}"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  stage {}  {}/{}  {}{why}\n",
            gate.stage, gate.role, gate.taskserv, gate.state
        ));
    }
    if !cluster.outputs.is_empty() {
        out.push_str("outputs\n");
        for (key, value) in &cluster.outputs {
            out.push_str(&format!("  {key} = {value}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_template_names_stand_for_the_platforms() {
        assert_eq!(template_name("kubernetes-ha"), "k3s-ha");
        assert_eq!(template_name("kubernetes-single"), "k3s-single");
        assert_eq!(template_name("etcd-cluster"), "etcd-cluster");
    }

    #[test]
    fn counts_and_templates_make_the_roles_of_a_request() {
        let roles = roles(
            &["agent=2".into(), "server=3".into()],
            &["agent=large".into()],
        )
        .unwrap();
        assert_eq!(
            roles,
            json!({"agent": {"count": 2, "template": "large"}, "server": {"count": 3}})
        );
        assert_eq!(roles_error("agent"), 2);
        assert_eq!(roles_error("agent=many"), 2);
    }

    fn roles_error(count: &str) -> u8 {
        roles(&[count.into()], &[]).unwrap_err().exit_code()
    }

    #[test]
    fn a_template_count_reads_as_a_number_or_a_range() {
        assert_eq!(count_text(&json!(1)), "1");
        assert_eq!(
            count_text(&json!({"min": 1, "max": 5, "default": 2})),
            "1-5 (2)"
        );
    }
}
