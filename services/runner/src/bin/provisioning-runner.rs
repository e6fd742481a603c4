//! The runner of one Terraform job: configured by its environment (see `runner::RunnerConfig`),
//! it reports over JetStream and exits 0 once its result is delivered (Terraform's own
//! exit code travels in the result); any other exit means the job went unreported.

fn main() -> std::process::ExitCode {
    telemetry::init(std::env::var(runner::env::LOG_FORMAT).as_deref() == Ok("json"));
    let config = match runner::RunnerConfig::from_env() {
        Ok(config) => config,
        Err(e) => {
            tracing::error!(error = %e, "invalid runner configuration");
            return std::process::ExitCode::from(64);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "could not start the runtime");
            return std::process::ExitCode::from(70);
        }
    };
    let config_ids = (config.vm_id, config.job_id);
    match runtime.block_on(runner::run(config)) {
        Ok(runner::Ran::Reported {
            terraform_exit_code,
        }) => {
            tracing::info!(terraform_exit_code, "job reported");
            std::process::ExitCode::SUCCESS
        }
        Ok(runner::Ran::Skipped) => {
            // Failed by the watchdog or ended meanwhile: nothing to run, nothing to report.
            tracing::warn!(
                vm_id = %config_ids.0, job_id = %config_ids.1,
                "job skipped: it is no longer active, so Terraform was not started"
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!(error = %e, "could not report the job");
            std::process::ExitCode::from(70)
        }
    }
}
