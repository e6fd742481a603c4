//! The runner of one Terraform job: configured by its environment (see `runner::RunnerConfig`),
//! it reports over JetStream and exits with Terraform's exit code.

fn main() -> std::process::ExitCode {
    daemon::telemetry::init(std::env::var("PROVISIONING_LOG_FORMAT").as_deref() == Ok("json"));
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
    match runtime.block_on(runner::run(config)) {
        Ok(code) => std::process::ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Err(e) => {
            tracing::error!(error = %e, "could not report the job");
            std::process::ExitCode::from(70)
        }
    }
}
