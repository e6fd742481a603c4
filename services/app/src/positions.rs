//! Read-your-writes without help from the client: every command records the position of
//! its last event as the caller's last write, in Postgres where every daemon sees it; a read
//! by that caller waits, bounded, until the read models show it. A client that sends its
//! own `min_position` waits for that instead.

use std::time::Duration;

use domain::identity::UserId;

use crate::{App, Error};

/// How often a waiting read looks at the read models' position again.
const POLL: Duration = Duration::from_millis(20);

impl App {
    /// Records `position` as the caller's last write. A failure is logged and left: the
    /// command committed, and the caller's next read may then not wait for it.
    pub(crate) async fn remember_write(&self, user: UserId, position: Option<i64>) {
        let Some(position) = position else { return };
        if let Err(error) = store::positions::record(&self.pool, user, position).await {
            tracing::warn!(%error, "could not record the caller's last write");
        }
    }

    /// Waits, at most `within`, until the read models show `user`'s last write; whether
    /// they do (also when the user wrote nothing).
    pub async fn wait_for_writes_of(&self, user: UserId, within: Duration) -> Result<bool, Error> {
        match store::positions::last(&self.pool, user).await? {
            None => Ok(true),
            Some(position) => self.wait_until_projected(position, within).await,
        }
    }

    /// Waits, at most `within`, until the read models show the event at `position`;
    /// whether they do.
    pub async fn wait_until_projected(
        &self,
        position: i64,
        within: Duration,
    ) -> Result<bool, Error> {
        let deadline = tokio::time::Instant::now() + within;
        while !store::projected::reached(&self.pool, position).await? {
            if tokio::time::Instant::now() >= deadline {
                return Ok(false);
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(true)
    }
}
