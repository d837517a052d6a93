//! The `capture` binary: the server (`serve`, `migrate`, `admin …`) and the client
//! (`login`, `logout`, `balance`, `shot`, `read`, `webhooks …`, `profile …`, `monitor …`,
//! `proxy …`).

mod logs;

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
    /// Run the service (API, workers, scheduler and the inbound SMTP server by default).
    Serve {
        /// Roles to run: any of api,worker,scheduler,inbound.
        #[arg(long, value_name = "ROLES")]
        roles: Option<String>,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Print the OpenAPI 3.1 document the service serves at /openapi.json (the SDKs are
    /// generated from it; no database needed).
    Openapi,
    /// Administer accounts and keys on the configured database.
    Admin {
        #[command(subcommand)]
        cmd: AdminCmd,
    },
    #[command(flatten)]
    Client(capture_client::ClientCmd),
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
    if matches!(cli.cmd, Cmd::Serve { .. }) {
        bound_malloc_arenas();
    }
    if let Cmd::Client(cmd) = cli.cmd {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("error: cannot start the runtime: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        return match rt.block_on(capture_client::run(cmd)) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::ExitCode::from(e.code)
            }
        };
    }
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

/// glibc gives each thread that allocates under contention its own malloc arena (up to 8 per
/// core), and memory freed in one arena is not reused by another: after a burst of captures the
/// server held 64–80 MB instead of ~50. glibc reads `MALLOC_ARENA_MAX` only when the process
/// starts, so `serve` without it re-executes itself once with `MALLOC_ARENA_MAX=2` and a fixed
/// `MALLOC_MMAP_THRESHOLD_` (exec keeps the PID, so supervisors notice nothing). A value the
/// operator set is kept as it is.
fn bound_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        use std::os::unix::process::CommandExt;
        if std::env::var_os("MALLOC_ARENA_MAX").is_some() {
            return;
        }
        let Ok(exe) = std::env::current_exe() else { return };
        let mut cmd = std::process::Command::new(exe);
        cmd.args(std::env::args_os().skip(1)).env("MALLOC_ARENA_MAX", "2");
        // A fixed mmap threshold: buffers above 256 KiB (decoded captures, encodes) are mapped
        // and given back when freed. glibc otherwise raises the threshold after each such free,
        // and the next big buffers come from the heap and stay (83 MB after the capture bench
        // with its 6000 px pages, against the 80 MB budget).
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
            cmd.env("MALLOC_MMAP_THRESHOLD_", "262144");
        }
        let err = cmd.exec();
        // Only reached when the exec failed (the binary was replaced on disk, say): run as we are.
        eprintln!("note: could not re-execute with MALLOC_ARENA_MAX=2 ({err}); using glibc's default arenas");
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    // Settings first: the log format is one of them, and a bad value is reported on stderr
    // before any log line.
    let mut cfg = Config::load(cli.config.as_deref())?;
    logs::init(cfg.log_format);
    match cli.cmd {
        Cmd::Serve { roles } => {
            if let Some(r) = roles {
                cfg.roles = Roles::parse(&r).map_err(|e| anyhow::anyhow!("--roles: {e}"))?;
            }
            // SIGTERM and Ctrl-C are ours before anyone can know the address: one that came
            // between the first answer and the first poll of a lazily made handler killed the
            // process unstopped (no drain, no last spans, no closed database).
            let stop = capture_server::shutdown_signal();
            let app = Application::build(cfg).await?;
            // Tests and scripts read this first line: the random port, or that a node
            // without the api role is up (database reached, listener and browser started).
            if let Some(addr) = app.local_addr() {
                println!("listening on http://{addr}");
                tracing::info!(%addr, base_url = %app.state().base_url, "serving");
            } else {
                println!("running without HTTP (no api role)");
            }
            Ok(app.run(stop).await?)
        }
        Cmd::Openapi => {
            println!("{}", serde_json::to_string_pretty(&capture_server::docs::openapi())?);
            Ok(())
        }
        Cmd::Migrate => {
            std::fs::create_dir_all(&cfg.data_dir).ok();
            let store = capture_store::Store::connect(&cfg.database.url, 2).await.context("CAPTURE_DATABASE_URL")?;
            store.close().await;
            println!("migrations applied");
            Ok(())
        }
        Cmd::Admin { cmd } => {
            std::fs::create_dir_all(&cfg.data_dir).ok();
            let store = capture_store::Store::connect(&cfg.database.url, 2).await.context("CAPTURE_DATABASE_URL")?;
            let r = admin_cmd(&cfg, &store, cmd).await;
            store.close().await;
            r
        }
        // Run by `main` without the service's settings.
        Cmd::Client(_) => Ok(()),
    }
}

/// Now on the service's clock (`CAPTURE_CLOCK_OFFSET`), as the service itself reads it.
fn now_ms(cfg: &Config) -> i64 {
    capture_core::clock::Clock::with_offset_ms(cfg.clock_offset_ms).now_ms()
}

async fn admin_cmd(cfg: &Config, store: &capture_store::Store, cmd: AdminCmd) -> anyhow::Result<()> {
    match cmd {
        AdminCmd::User { cmd: UserCmd::Create { email, plan, password, legacy_free } } => {
            let u = admin::create_user(store, &email, &plan, password.as_deref(), legacy_free, now_ms(cfg)).await?;
            let admin_note = if cfg.accounts.is_admin(&u.email) { " (admin: unlimited)" } else { "" };
            println!("created account {} <{}> on plan {}{admin_note}", u.id, u.email, u.plan);
        }
        AdminCmd::User { cmd: UserCmd::SetPlan { email, plan } } => {
            admin::set_plan(store, &email, &plan).await?;
            println!("{email} is now on plan {plan}");
        }
        AdminCmd::Key { cmd: KeyCmd::Create { email, name } } => {
            let master = capture_server::crypto::MasterKey::load_or_create(cfg.master_key.as_deref(), &cfg.data_dir)?;
            let u = admin::user(store, &email).await?;
            let (row, key) = admin::create_key(store, &master, &u.id, &name, now_ms(cfg)).await?;
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
                println!(
                    "{:<30} {:<20} {:<14} {:<26} {:>8}  {status}",
                    k.id,
                    k.name,
                    k.prefix,
                    iso(k.created_at),
                    used
                );
            }
        }
    }
    Ok(())
}
