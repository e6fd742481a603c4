//! The platform gauges, read now for an admin: the same counts the gauges lease holder
//! publishes every 10 s on `<prefix>.gauges.platform` (VMs by status and provider, jobs
//! running and queued, the oldest running job, each durable consumer's lag), measured
//! afresh rather than waiting for the next message.

use bus::PlatformGauges;

use crate::{App, Error, Principal};

impl App {
    /// The platform gauges now (admins only).
    #[tracing::instrument(skip_all, err)]
    pub async fn platform_gauges(&self, principal: &Principal) -> Result<PlatformGauges, Error> {
        if !principal.is_admin() {
            return Err(Error::forbidden("only admins read the platform gauges"));
        }
        let vms = store::gauges::vms(&self.pool).await?;
        let jobs = store::gauges::jobs(&self.pool).await?;
        let consumers = bus::consumer_lags(&self.bus)
            .await
            .map_err(|e| Error::Unavailable(e.to_string()))?;
        Ok(PlatformGauges::now(vms, jobs, consumers))
    }
}
