//! The master secret of runner message signatures, shared by every daemon of a deployment.

use sqlx::PgPool;

/// The deployment's runner signing secret: made once, by whichever daemon asks first, and
/// the same for every daemon after.
pub async fn runner_signing_key(pool: &PgPool) -> Result<Vec<u8>, sqlx::Error> {
    // Two v4 UUIDs: 244 bits from the operating system's random source.
    let fresh = [uuid::Uuid::new_v4(), uuid::Uuid::new_v4()]
        .iter()
        .flat_map(|u| *u.as_bytes())
        .collect::<Vec<u8>>();
    sqlx::query("INSERT INTO runner_signing_keys (id, key) VALUES (1, $1) ON CONFLICT DO NOTHING")
        .bind(&fresh)
        .execute(pool)
        .await?;
    sqlx::query_scalar("SELECT key FROM runner_signing_keys WHERE id = 1")
        .fetch_one(pool)
        .await
}
