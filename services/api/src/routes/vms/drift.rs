//! The drift a VM's last refresh found, as `GET /api/v1/vms/{id}` shows it.

use domain::provisioning::{DriftReport, DriftedResource};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;

/// What the last refresh (asked for, or queued by the drift check) found changed outside
/// Terraform, until the next successful create job (or the destroy) clears it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DriftOut {
    /// The refresh job that found it.
    pub job_id: u32,
    /// When that job's result was recorded.
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub detected_at: OffsetDateTime,
    /// The drifted resources, in Terraform's order.
    pub resources: Vec<DriftedResourceOut>,
}

/// One resource Terraform found changed outside it.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct DriftedResourceOut {
    /// Terraform's address, e.g. `openstack_compute_instance_v2.vm`.
    pub address: String,
    /// `update` (attributes differ) or `delete` (the resource is gone).
    pub action: String,
    /// The names of the changed attributes (nested ones as `a.b`); never their values,
    /// which may be secret.
    pub attributes: Vec<String>,
}

impl From<&DriftReport> for DriftOut {
    fn from(report: &DriftReport) -> Self {
        DriftOut {
            job_id: report.job_id.get(),
            detected_at: report.detected_at,
            resources: report
                .resources
                .iter()
                .map(DriftedResourceOut::from)
                .collect(),
        }
    }
}

impl From<&DriftedResource> for DriftedResourceOut {
    fn from(resource: &DriftedResource) -> Self {
        DriftedResourceOut {
            address: resource.address.clone(),
            action: resource.action.clone(),
            attributes: resource.attributes.clone(),
        }
    }
}
