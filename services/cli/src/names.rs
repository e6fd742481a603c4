//! A VM named by id or by name: an argument that is not a UUID is a name, looked up among
//! the caller's VMs that are not destroyed (a name is unique among those, by convention).

use serde_json::Value;

use crate::client::Api;
use crate::error::CliError;
use crate::wire::{read, Vm, VmId, VmPage};

/// Every status but `destroyed`: the VMs whose names count.
pub const LIVE: &[&str] = &[
    "requested",
    "provisioning",
    "provisioned",
    "initializing",
    "running",
    "unreachable",
    "failed",
    "destroy_requested",
    "destroying",
];

/// The id `arg` stands for.
pub async fn resolve(api: &Api, arg: &str) -> Result<VmId, CliError> {
    if let Some(id) = VmId::parse(arg) {
        return Ok(id);
    }
    let statuses: Vec<String> = LIVE.iter().map(|s| s.to_string()).collect();
    let items = list(api, &statuses, None, "false").await?;
    let vms: Vec<Vm> = items
        .iter()
        .map(|v| read(v, "VM"))
        .collect::<Result<_, _>>()?;
    pick(&vms, arg)
}

/// The one VM of `vms` named `name`.
pub fn pick(vms: &[Vm], name: &str) -> Result<VmId, CliError> {
    let named: Vec<&Vm> = vms
        .iter()
        .filter(|vm| vm.name == name && vm.status != "destroyed")
        .collect();
    match named[..] {
        [] => Err(CliError::Api {
            status: 404,
            code: "not_found".into(),
            detail: format!("no VM named {name}"),
        }),
        [vm] => Ok(vm.id.clone()),
        _ => {
            let ids: Vec<&str> = named.iter().map(|vm| vm.id.as_str()).collect();
            Err(CliError::Api {
                status: 409,
                code: "ambiguous".into(),
                detail: format!(
                    "{} VMs are named {name}: {}; give an id",
                    ids.len(),
                    ids.join(", ")
                ),
            })
        }
    }
}

/// Every VM of the caller that the filters select, page after page, newest first.
pub async fn list(
    api: &Api,
    statuses: &[String],
    provider: Option<&str>,
    archived: &str,
) -> Result<Vec<Value>, CliError> {
    let mut items = vec![];
    let mut after: Option<String> = None;
    loop {
        let mut query = vec![
            ("limit", "1000".to_owned()),
            ("archived", archived.to_owned()),
        ];
        if !statuses.is_empty() {
            query.push(("status", statuses.join(",")));
        }
        if let Some(provider) = provider {
            query.push(("provider", provider.to_owned()));
        }
        if let Some(after) = &after {
            query.push(("after", after.clone()));
        }
        let page: VmPage = read(&api.get("/api/v1/vms", &query).await?, "page of VMs")?;
        items.extend(page.items);
        match page.next {
            Some(next) if after.as_ref() != Some(&next) => after = Some(next),
            _ => return Ok(items),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page as `GET /api/v1/vms` answers it, cut to what matters here.
    fn canned() -> Vec<Vm> {
        let page = serde_json::json!([
            {"id": "11111111-0000-0000-0000-000000000001", "name": "web", "provider": "local",
             "template": "small", "status": "running", "ip": "10.0.0.1",
             "created_at": "2026-12-06T10:00:00Z", "expires_at": null, "last_error": null,
             "job": null, "queue": []},
            {"id": "11111111-0000-0000-0000-000000000002", "name": "db", "provider": "local",
             "template": "small", "status": "failed", "ip": null,
             "created_at": "2026-12-06T10:00:00Z", "expires_at": null, "last_error": "x",
             "job": null, "queue": []},
            {"id": "11111111-0000-0000-0000-000000000003", "name": "db", "provider": "local",
             "template": "small", "status": "provisioned", "ip": null,
             "created_at": "2026-12-06T10:00:00Z", "expires_at": null, "last_error": null,
             "job": {"id": 1, "action": "create", "state": "running", "cancel_requested": false},
             "queue": []},
            {"id": "11111111-0000-0000-0000-000000000004", "name": "old", "provider": "local",
             "template": "small", "status": "destroyed", "ip": null,
             "created_at": "2026-12-06T10:00:00Z", "expires_at": null, "last_error": null,
             "job": null, "queue": []}
        ]);
        serde_json::from_value(page).unwrap()
    }

    #[test]
    fn a_name_of_one_vm_is_its_id() {
        assert_eq!(
            pick(&canned(), "web").unwrap().as_str(),
            "11111111-0000-0000-0000-000000000001"
        );
    }

    #[test]
    fn a_name_of_no_live_vm_is_refused_with_exit_1() {
        let error = pick(&canned(), "old").unwrap_err();
        assert_eq!(error.line(false), "error: no VM named old");
        assert_eq!(error.exit_code(), 1);
    }

    #[test]
    fn a_name_of_two_vms_is_refused_naming_both_ids() {
        let error = pick(&canned(), "db").unwrap_err();
        let line = error.line(false);
        assert!(
            line.contains("11111111-0000-0000-0000-000000000002"),
            "{line}"
        );
        assert!(
            line.contains("11111111-0000-0000-0000-000000000003"),
            "{line}"
        );
        assert_eq!(error.exit_code(), 1);
    }

    #[test]
    fn a_uuid_is_an_id_and_anything_else_a_name() {
        assert!(VmId::parse("11111111-0000-0000-0000-000000000001").is_some());
        assert!(VmId::parse("web-1").is_none());
    }
}
