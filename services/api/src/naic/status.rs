//! The platform's VM statuses under the names NAIC's frontend knows (its labels in
//! `src/util/index.ts`); one mapping for every NAIC answer and push.

use domain::provisioning::VmStatus;

/// NAIC's name for a status. A VM that never phoned home (`unreachable`) is `UNKNOWN`
/// (labelled "Unknown": the platform does not know whether it is up); a failed job, create or
/// destroy, is `PROVISIONING_FAILED` (NAIC has no name for a failed destroy; the page still
/// offers to delete it again).
pub fn naic_status(status: VmStatus) -> &'static str {
    match status {
        VmStatus::Unknown | VmStatus::Unreachable => "UNKNOWN",
        VmStatus::Requested => "TO_BE_PROVISIONED",
        VmStatus::Provisioning => "PROVISIONING",
        VmStatus::Provisioned => "PROVISIONING_COMPLETED",
        VmStatus::Failed => "PROVISIONING_FAILED",
        VmStatus::Initializing => "INITIALIZING",
        VmStatus::Running => "RUNNING",
        VmStatus::DestroyRequested => "TO_BE_DESTROYED",
        VmStatus::Destroying => "DESTROYING",
        VmStatus::Destroyed => "DESTROYED",
    }
}

/// [`naic_status`] of a read model's status text; text the platform does not know is
/// `UNKNOWN`, as the frontend shows any name it does not know.
pub fn naic_status_of(status: &str) -> &'static str {
    VmStatus::parse(status).map_or("UNKNOWN", naic_status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_status_has_the_naic_name_the_frontend_labels() {
        let cases = [
            ("requested", "TO_BE_PROVISIONED"),
            ("provisioning", "PROVISIONING"),
            ("provisioned", "PROVISIONING_COMPLETED"),
            ("initializing", "INITIALIZING"),
            ("running", "RUNNING"),
            ("failed", "PROVISIONING_FAILED"),
            ("destroy_requested", "TO_BE_DESTROYED"),
            ("destroying", "DESTROYING"),
            ("destroyed", "DESTROYED"),
            ("unreachable", "UNKNOWN"),
            ("no-such-status", "UNKNOWN"),
        ];
        for (ours, theirs) in cases {
            assert_eq!(naic_status_of(ours), theirs, "{ours}");
        }
    }
}
