//! `taskserv create`: taskservs installed on a running VM by an install job (their
//! requirements first); `--wait` follows the job until it ends.

use serde_json::json;

use super::vm::{details, taskservs, wait};
use crate::args::Format;
use crate::client::Api;
use crate::error::CliError;
use crate::follow::Goal;
use crate::names;
use crate::output;
use crate::wire::{read, Vm};

pub async fn create(
    api: &Api,
    format: Format,
    specs: &[String],
    vm: &str,
    wait_: bool,
) -> Result<(), CliError> {
    let id = names::resolve(api, vm).await?;
    let body = json!({ "taskservs": taskservs(api, specs).await? });
    let answer = api
        .post(&format!("/api/v1/vms/{id}/taskservs"), &body)
        .await?;
    if !wait_ {
        return output::print(format, &answer, |_| Ok(details(&read(&answer, "VM")?)));
    }
    let vm: Vm = read(&answer, "VM")?;
    wait(api, format, &vm, "install", Goal::Installed).await
}
