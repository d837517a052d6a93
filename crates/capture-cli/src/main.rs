//! The `capture` binary: `serve`, `migrate`, `admin …`.

use std::path::PathBuf;

use anyhow::Context;
use capture_core::time::iso;
use capture_server::config::Roles;
use capture_server::{Application, Config, admin};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "capture", version, about = "Capture: a self-hostable page-capture service")]
struct Cli {
    /// Optional TOML file with CAPTURE_* settings (environment variables win).
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the service (API, workers and scheduler by default).
    Serve {
        /// Roles to run: any of api,worker,scheduler.
        #[arg(long, value_name = "ROLES")]
        roles: Option<String>,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Administer accounts and keys on the configured database.
    Admin {
        #[command(subcommand)]
        cmd: AdminCmd,
    },
}

#[derive(Subcommand)]
enum AdminCmd {
    /// Accounts.
    User {
        #[command(subcommand)]
        cmd: UserCmd,
    },
    /// API keys.
    Key {
        #[command(subcommand)]
        cmd: KeyCmd,
    },
}

#[derive(Subcommand)]
enum UserCmd {
    /// Create an account.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "free")]
        plan: String,
        #[arg(long)]
        password: Option<String>,
        /// Mark the account as on the pre-cutover free allowance.
        #[arg(long)]
        legacy_free: bool,
    },
    /// Change an account's plan.
    SetPlan {
        #[arg(long)]
        email: String,
        #[arg(long)]
        plan: String,
    },
}

#[derive(Subcommand)]
enum KeyCmd {
    /// Create a key; the key itself is printed alone on the last line.
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "default")]
        name: String,
    },
    /// Revoke a key by id (takes effect on the next call).
    Revoke { key_id: String },
    /// List an account's keys.
    List {
        #[arg(long)]
        email: String,
    },
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn init_logs() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("CAPTURE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    init_logs();
    let mut cfg = Config::load(cli.config.as_deref())?;
    match cli.cmd {
        Cmd::Serve { roles } => {
            if let Some(r) = roles {
                cfg.roles = Roles::parse(&r).map_err(|e| anyhow::anyhow!("--roles: {e}"))?;
            }
            let app = Application::build(cfg).await?;
            if let Some(addr) = app.local_addr() {
                // Tests and scripts read this line to find a random port.
                println!("listening on http://{addr}");
                tracing::info!(%addr, base_url = %app.state().base_url, "serving");
            }
            app.run(capture_server::shutdown_signal()).await
        }
        Cmd::Migrate => {
            std::fs::create_dir_all(&cfg.data_dir).ok();
            let store = capture_store::Store::connect(&cfg.database_url, 2).await.context("CAPTURE_DATABASE_URL")?;
            store.close().await;
            println!("migrations applied");
            Ok(())
        }
        Cmd::Admin { cmd } => {
            std::fs::create_dir_all(&cfg.data_dir).ok();
            let store = capture_store::Store::connect(&cfg.database_url, 2).await.context("CAPTURE_DATABASE_URL")?;
            let r = admin_cmd(&cfg, &store, cmd).await;
            store.close().await;
            r
        }
    }
}

async fn admin_cmd(cfg: &Config, store: &capture_store::Store, cmd: AdminCmd) -> anyhow::Result<()> {
    match cmd {
        AdminCmd::User { cmd: UserCmd::Create { email, plan, password, legacy_free } } => {
            let u = admin::create_user(store, &email, &plan, password.as_deref(), legacy_free).await?;
            let admin_note = if cfg.is_admin(&u.email) { " (admin: unlimited)" } else { "" };
            println!("created account {} <{}> on plan {}{admin_note}", u.id, u.email, u.plan);
        }
        AdminCmd::User { cmd: UserCmd::SetPlan { email, plan } } => {
            admin::set_plan(store, &email, &plan).await?;
            println!("{email} is now on plan {plan}");
        }
        AdminCmd::Key { cmd: KeyCmd::Create { email, name } } => {
            let master = capture_server::crypto::MasterKey::load_or_create(cfg.master_key.as_deref(), &cfg.data_dir)?;
            let u = admin::user(store, &email).await?;
            let (row, key) = admin::create_key(store, &master, &u.id, &name).await?;
            println!("created key {} ({}) for {}; it is shown once:", row.id, row.name, u.email);
            println!("{key}");
        }
        AdminCmd::Key { cmd: KeyCmd::Revoke { key_id } } => {
            if !store.revoke_key(&key_id, None, capture_core::time::now_ms()).await? {
                anyhow::bail!("no live key with id {key_id}");
            }
            println!("revoked {key_id}");
        }
        AdminCmd::Key { cmd: KeyCmd::List { email } } => {
            let u = admin::user(store, &email).await?;
            let month = capture_core::time::MonthWindow::containing(capture_core::time::now_ms()).label;
            let usage = store.usage_by_key(&u.id, &month).await?;
            println!("{:<30} {:<20} {:<14} {:<26} {:>8}  STATUS", "ID", "NAME", "PREFIX", "CREATED", "USED");
            for k in store.list_keys(&u.id).await? {
                let used = usage.iter().find(|(id, _)| *id == k.id).map_or(0, |(_, n)| *n);
                let status = k.revoked_at.map_or("active".to_string(), |t| format!("revoked {}", iso(t)));
                println!("{:<30} {:<20} {:<14} {:<26} {:>8}  {status}", k.id, k.name, k.prefix, iso(k.created_at), used);
            }
        }
    }
    Ok(())
}
