//! The test databases: each test's is cloned from a migrated template.

use tokio::sync::OnceCell;

pub fn server_url(db: &str) -> String {
    let base = std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| daemon::config::DEFAULT_DATABASE_URL.to_owned());
    let mut url = url::Url::parse(&base).expect("DATABASE_URL is a URL");
    url.set_path(db);
    url.to_string()
}

pub fn nats_url() -> String {
    std::env::var("NATS_URL").unwrap_or_else(|_| daemon::config::DEFAULT_NATS_URL.to_owned())
}

/// The migrated template database, named after the migrations it holds, so that test runs
/// of different versions (or two at once) share the server without disturbing each other.
pub async fn template() -> &'static str {
    static TEMPLATE: OnceCell<String> = OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let name = format!("provtest_template_{}", migrations_hash());
            let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
            let mut conn = admin.acquire().await.unwrap();
            store::sqlx::query("SELECT pg_advisory_lock(hashtext('provtest_template'))")
                .execute(&mut *conn)
                .await
                .unwrap();
            let exists: bool = store::sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)",
            )
            .bind(&name)
            .fetch_one(&mut *conn)
            .await
            .unwrap();
            if !exists {
                // Built under another name and renamed, so a run that dies half-way leaves
                // no half-migrated template behind.
                let building = format!("{name}_building");
                store::sqlx::query(&format!("DROP DATABASE IF EXISTS {building} WITH (FORCE)"))
                    .execute(&mut *conn)
                    .await
                    .unwrap();
                let pool = store::connect(&server_url(&building), 2).await.unwrap();
                store::migrate(&pool).await.unwrap();
                pool.close().await;
                store::sqlx::query(&format!("ALTER DATABASE {building} RENAME TO {name}"))
                    .execute(&mut *conn)
                    .await
                    .unwrap();
            }
            store::sqlx::query("SELECT pg_advisory_unlock(hashtext('provtest_template'))")
                .execute(&mut *conn)
                .await
                .unwrap();
            name
        })
        .await
}

fn migrations_hash() -> String {
    use std::hash::{Hash, Hasher};
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for file in files {
        file.file_name().hash(&mut hasher);
        std::fs::read(&file).unwrap().hash(&mut hasher);
    }
    format!("{:016x}", hasher.finish())
}
