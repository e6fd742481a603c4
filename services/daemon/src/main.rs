use anyhow::Context;
use daemon::{telemetry, Application, Config, Roles};
use secrecy::{ExposeSecret, SecretString};

const USAGE: &str = "usage: provisioningd [run|api|relay|projector|dispatcher|ingester|migrate|openapi|rebuild-projections|replay [--projection vms|catalog]|providers validate|providers list|users grant-admin EMAIL|policies check|taskservs check|taskservs list]

  run (default)         every role in one process
  api, relay, ...       one role (for scale-out)
  migrate               apply the database migrations and exit
  openapi               print the OpenAPI document
  rebuild-projections   rebuild the read models from the events table (projector stopped)
  replay                rebuild the read models (or one: --projection vms|catalog) into
                        fresh tables and swap them in, while the daemon runs
  providers validate    check hcl/providers.toml against the Terraform folders and the catalog
  providers list        print the provider registry
  users grant-admin EMAIL
                        make the user with EMAIL an admin (made if they never signed in)
  policies check        validate the policies of PROVISIONING_POLICY_DIR and exit
  taskservs check       load and check the taskservs of PROVISIONING_TASKSERVS_DIR and exit
  taskservs list        print the taskservs' catalog in order, with their dependencies

Configuration comes from the environment; see docs/operations.md.";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let command = std::env::args().nth(1).unwrap_or_else(|| "run".to_owned());
    let roles = match command.as_str() {
        "run" => Roles::ALL,
        "api" => Roles {
            api: true,
            ..Roles::NONE
        },
        "relay" => Roles {
            relay: true,
            ..Roles::NONE
        },
        "projector" => Roles {
            projector: true,
            ..Roles::NONE
        },
        "dispatcher" => Roles {
            dispatcher: true,
            ..Roles::NONE
        },
        "ingester" => Roles {
            ingester: true,
            ..Roles::NONE
        },
        "openapi" => {
            println!("{}", api::openapi_json());
            return Ok(());
        }
        "migrate" | "rebuild-projections" | "replay" => Roles::NONE,
        "providers" => return providers(std::env::args().nth(2).as_deref()).await,
        "users" => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            return users(&args).await;
        }
        "policies" => return policies(std::env::args().nth(2).as_deref()),
        "taskservs" => return taskservs(std::env::args().nth(2).as_deref()),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            return Ok(());
        }
        other => anyhow::bail!("unknown command {other:?}\n\n{USAGE}"),
    };
    let config = Config::from_env()?;
    telemetry::init(config.json_logs);

    let admin_token = admin_token(&config, roles);
    let http_addr = config.http_addr;
    let app = Application::build(config, roles, admin_token)
        .await
        .context("could not start")?;
    match command.as_str() {
        "migrate" => {
            println!("migrations applied");
            return Ok(());
        }
        "replay" => {
            let args: Vec<String> = std::env::args().skip(2).collect();
            let name = match args.as_slice() {
                [] => None,
                [flag, name] if flag == "--projection" => Some(name.as_str()),
                _ => anyhow::bail!("usage: provisioningd replay [--projection vms|catalog]"),
            };
            let scope = projector::Scope::named(name).with_context(|| {
                format!(
                    "no projection {name:?}: one of {:?}",
                    projector::PROJECTIONS
                )
            })?;
            let done = projector::replay(app.pool(), scope).await?;
            println!(
                "replayed {} events into {} in {:.1} s ({:.0} events/s); they show the events \
                 up to position {}, where the projector goes on",
                done.events,
                done.tables.join(", "),
                done.elapsed.as_secs_f64(),
                done.events_per_s(),
                done.reached.position
            );
            return Ok(());
        }
        "rebuild-projections" => {
            let n = projector::rebuild(app.pool()).await?;
            println!("read models rebuilt from {n} events");
            return Ok(());
        }
        _ => {}
    }
    if roles.api {
        let base = format!("http://{}:{}", http_addr.ip(), app.port());
        println!("provisioningd listening on {base}");
        println!("  API:     {base}/api/v1");
        println!("  console: {base}/console");
    }
    let stop = app.shutdown_token();
    tokio::spawn(async move {
        shutdown_signal().await;
        tracing::info!("stopping");
        stop.cancel();
    });
    app.run_until_stopped().await?;
    Ok(())
}

/// `providers validate` and `providers list`.
async fn providers(command: Option<&str>) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let registry = registry::Registry::load(&config.hcl_dir)?;
    let credentials = daemon::config::credentials(&registry, &config)?;
    match command {
        Some("validate") => {
            let pool = store::connect(config.database_url.expose_secret(), 2).await?;
            store::migrate(&pool).await?;
            daemon::check_catalog(&pool, &registry).await?;
            println!(
                "provider registry OK: {} providers, folders and catalog match",
                registry.providers.len()
            );
        }
        Some("list") => {
            println!(
                "{:<14} {:<28} {:<8} {:<26} {:<30} credentials",
                "id", "name", "enabled", "folders", "regions"
            );
            for p in &registry.providers {
                let present = match (p.credentials.is_empty(), credentials.present(p)) {
                    (true, _) => "none needed",
                    (false, true) => "present",
                    (false, false) => "missing",
                };
                println!(
                    "{:<14} {:<28} {:<8} {:<26} {:<30} {present}",
                    p.id,
                    p.name,
                    p.enabled,
                    p.folders.join(","),
                    p.regions.join(",")
                );
            }
        }
        _ => anyhow::bail!("usage: provisioningd providers validate|list"),
    }
    Ok(())
}

/// The admin token, if enabled: `PROVISIONING_ADMIN_TOKEN`'s value; a generated one,
/// printed once, for `generate`, or when it is unset and no sign-in is configured (so a
/// first local run works); otherwise none.
fn admin_token(config: &Config, roles: Roles) -> Option<SecretString> {
    let generated = || {
        let token = format!(
            "{}{}",
            uuid::Uuid::new_v4().simple(),
            uuid::Uuid::new_v4().simple()
        );
        println!("this run's admin token (shown once): {token}");
        SecretString::from(token)
    };
    match config.admin_token.as_ref().map(|t| t.expose_secret()) {
        Some("generate") if roles.api => Some(generated()),
        Some("generate") => None,
        Some(_) => config.admin_token.clone(),
        None if roles.api && !config.sign_in_configured() => Some(generated()),
        None => None,
    }
}

/// `users grant-admin EMAIL`.
async fn users(args: &[String]) -> anyhow::Result<()> {
    let [command, email] = args else {
        anyhow::bail!("usage: provisioningd users grant-admin EMAIL");
    };
    if command != "grant-admin" || !email.contains('@') {
        anyhow::bail!("usage: provisioningd users grant-admin EMAIL");
    }
    let config = Config::from_env()?;
    let pool = store::connect(config.database_url.expose_secret(), 2).await?;
    store::migrate(&pool).await?;
    let user = store::users::grant_admin(&pool, email).await?;
    println!("{} is {} (user {})", user.email, user.role, user.id);
    Ok(())
}

/// `policies check`.
fn policies(command: Option<&str>) -> anyhow::Result<()> {
    if command != Some("check") {
        anyhow::bail!("usage: provisioningd policies check");
    }
    let config = Config::from_env()?;
    let policies = api::policy::Policies::load(config.policy_dir)?;
    println!(
        "policies OK: {} policies from {}",
        policies.book().len(),
        policies.source()
    );
    Ok(())
}

/// `taskservs check` and `taskservs list`: the catalog loaded as the daemon loads it.
fn taskservs(command: Option<&str>) -> anyhow::Result<()> {
    let config = Config::from_env()?;
    let dir = &config.taskservs_dir();
    let catalog = taskservs::Catalog::load(dir)?;
    match command {
        Some("check") => {
            let count = catalog.definitions().count();
            println!("taskservs OK: {count} from {}", dir.display());
        }
        Some("list") => {
            for d in catalog.definitions() {
                let deps: Vec<String> = d
                    .depends_on
                    .iter()
                    .map(|dep| format!("{} {}", dep.kind.as_str(), dep.name))
                    .collect();
                println!(
                    "{:<26} {:<8} {:<12} {}",
                    d.name.as_str(),
                    d.version,
                    d.category,
                    deps.join(", ")
                );
            }
        }
        _ => anyhow::bail!("usage: provisioningd taskservs check|list"),
    }
    Ok(())
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}
