//! `vm logs [-f]`: Terraform's output of a VM's jobs; with `-f`, the running job's lines
//! live from the VM's stream, each once, until that job ends (the last one, when none runs).

use serde_json::Value;

use crate::args::Format;
use crate::client::Api;
use crate::error::CliError;
use crate::follow::{ends_job, follow, Step};
use crate::names;
use crate::output;
use crate::wire::{read, LogLine, Vm, VmId};

/// The most lines `GET .../logs` answers at once.
const PAGE: usize = 10_000;

pub async fn logs(api: &Api, format: Format, arg: &str, follow_: bool) -> Result<(), CliError> {
    let id = names::resolve(api, arg).await?;
    if follow_ {
        let vm: Vm = read(&api.get(&format!("/api/v1/vms/{id}"), &[]).await?, "VM")?;
        let job = match vm.job {
            Some(job) => Some(job.id),
            // No job runs or waits: the stream is read up to the end of the last one.
            None => last_job(api, &id).await?,
        };
        if let Some(job) = job {
            return follow_job(api, format, &id, job).await;
        }
    }
    let lines = stored(api, &id).await?;
    output::print(format, &lines, |_| {
        let lines: Vec<LogLine> = read(&lines, "log")?;
        Ok(lines.iter().map(|l| format!("{}\n", l.message)).collect())
    })
}

/// The number of the VM's last job, if it had any.
async fn last_job(api: &Api, id: &VmId) -> Result<Option<u32>, CliError> {
    let jobs = api.get(&format!("/api/v1/vms/{id}/jobs"), &[]).await?;
    Ok(jobs
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|job| job["id"].as_u64())
        .max()
        .map(|id| id as u32))
}

/// Every stored line of the VM's jobs, page after page.
async fn stored(api: &Api, id: &VmId) -> Result<Value, CliError> {
    let path = format!("/api/v1/vms/{id}/logs");
    let mut all: Vec<Value> = vec![];
    loop {
        let mut query = vec![("limit", PAGE.to_string())];
        if let Some(last) = all.last() {
            query.push(("after_job", last["job_id"].to_string()));
            query.push(("after_line", last["line"].to_string()));
        }
        let page = match api.get(&path, &query).await? {
            Value::Array(page) => page,
            _ => return Err(CliError::Local(format!("{path} answered no list"))),
        };
        let full = page.len() == PAGE;
        all.extend(page);
        if !full {
            return Ok(Value::Array(all));
        }
    }
}

/// Prints the VM's lines from the first (as they come, one JSON object a line with
/// `-o json`) until job `job` ends.
async fn follow_job(api: &Api, format: Format, id: &VmId, job: u32) -> Result<(), CliError> {
    follow(api, id, |event| {
        if event.kind == "LogLine" {
            match format {
                Format::Table => println!("{}", event.text("message").unwrap_or_default()),
                // A stream of lines: one document each, as `jq` reads them.
                Format::Json | Format::Yaml => println!("{}", event.data),
            }
        }
        if ends_job(event) && event.job_id() == Some(job) {
            Step::Done(Ok(()))
        } else {
            Step::Continue
        }
    })
    .await
}
