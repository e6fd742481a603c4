//! The runners' Postgres role, set up as docs/operations.md ("The runners' Postgres role")
//! says: it owns a database of its own for Terraform's state, where the `pg` backend does
//! all its work, and it cannot write the event store.

use std::process::Command;

use crate::database::server_url;
use crate::helpers::spawn_app;

/// Runs the test's Terraform in `dir` with the `pg` backend at `conn_str`.
fn terraform(dir: &std::path::Path, conn_str: &str, args: &[&str]) -> std::process::Output {
    let bin = std::env::var("TERRAFORM_BIN").unwrap_or_else(|_| "terraform".into());
    let mut cmd = Command::new(bin);
    cmd.current_dir(dir)
        .env("TF_IN_AUTOMATION", "1")
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_WORKSPACE", "vm-role-test")
        .args(args);
    if args[0] == "init" {
        cmd.env_remove("TF_WORKSPACE")
            .arg(format!("-backend-config=conn_str={conn_str}"));
    }
    cmd.output().unwrap()
}

#[tokio::test]
async fn the_runners_role_keeps_terraform_state_but_cannot_write_events() {
    let app = spawn_app().await;
    let suffix = &uuid::Uuid::new_v4().simple().to_string()[..12];
    let role = format!("provtest_tf_{suffix}");
    let state_db = format!("provtest_tfstate_{suffix}");
    let admin = store::connect(&server_url("postgres"), 1).await.unwrap();
    // As the docs say: the role, and the state database it owns.
    for statement in [
        format!("CREATE ROLE {role} LOGIN PASSWORD 'role-test'"),
        format!("CREATE DATABASE {state_db} OWNER {role}"),
    ] {
        store::sqlx::query(&statement)
            .execute(&admin)
            .await
            .unwrap();
    }

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        "terraform {\n  backend \"pg\" {}\n}\noutput \"vm_ip\" { value = \"10.77.0.1\" }\n",
    )
    .unwrap();
    let conn_str = server_url(&state_db).replacen("://postgres@", &format!("://{role}@"), 1);
    let conn_str = format!("{conn_str}?sslmode=disable");
    let init = terraform(
        dir.path(),
        &conn_str,
        &["init", "-input=false", "-no-color"],
    );
    let apply = terraform(
        dir.path(),
        &conn_str,
        &["apply", "-auto-approve", "-input=false", "-no-color"],
    );
    let as_role = |db: &str| server_url(db).replacen("://postgres@", &format!("://{role}@"), 1);
    let state = store::connect(&as_role(&state_db), 1).await.unwrap();
    let saved: Result<String, _> = store::sqlx::query_scalar(
        "SELECT data FROM terraform_remote_state.states WHERE name = 'vm-role-test'",
    )
    .fetch_one(&state)
    .await;
    state.close().await;
    let events = store::connect(&as_role(&app.db_name), 1).await.unwrap();
    let write_events = store::sqlx::query("DELETE FROM events")
        .execute(&events)
        .await;
    let read_events = store::sqlx::query("SELECT count(*) FROM events")
        .execute(&events)
        .await;
    events.close().await;

    for statement in [
        format!("DROP DATABASE IF EXISTS {state_db} WITH (FORCE)"),
        format!("DROP OWNED BY {role}"),
        format!("DROP ROLE IF EXISTS {role}"),
    ] {
        // DROP OWNED runs in each database the role has objects in: the test's.
        let db = if statement.starts_with("DROP OWNED") {
            store::connect(&server_url(&app.db_name), 1).await.unwrap()
        } else {
            admin.clone()
        };
        store::sqlx::query(&statement).execute(&db).await.unwrap();
    }
    admin.close().await;

    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(init.status.success(), "init: {}", text(&init));
    assert!(apply.status.success(), "apply: {}", text(&apply));
    assert!(saved.unwrap().contains("10.77.0.1"), "the state is saved");
    let denied = write_events.expect_err("the role cannot write events");
    assert!(denied.to_string().contains("permission denied"), "{denied}");
    let denied = read_events.expect_err("the role cannot read events");
    assert!(denied.to_string().contains("permission denied"), "{denied}");
}
