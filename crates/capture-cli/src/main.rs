//! The `capture` binary: the server (`serve`, `migrate`, `admin …`) and the client
//! (`login`, `logout`, `balance`, `shot`, `read`, `webhooks …`, `profile …`, `monitor …`,
//! `proxy …`).

mod logs;

use std::path::PathBuf;

use capture_server::Config;
use capture_server::commands::{self, AdminCommand};
use capture_server::config::Roles;
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
    // The client commands need none of the service's settings; each side runs its own runtime
    // (the binary awaits nothing: see capture_server::commands).
    if let Cmd::Client(cmd) = cli.cmd {
        return capture_client::main(cmd);
    }
    if matches!(cli.cmd, Cmd::Serve { .. }) {
        bound_malloc_arenas();
    }
    match run(cli) {
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

fn run(cli: Cli) -> anyhow::Result<()> {
    // Settings first: the log format is one of them, and a bad value is reported on stderr
    // before any log line.
    let mut cfg = Config::load(cli.config.as_deref())?;
    logs::init(cfg.log_format);
    match cli.cmd {
        Cmd::Serve { roles } => {
            if let Some(r) = roles {
                cfg.roles = Roles::parse(&r).map_err(|e| anyhow::anyhow!("--roles: {e}"))?;
            }
            commands::serve(cfg)
        }
        Cmd::Openapi => {
            println!("{}", serde_json::to_string_pretty(&capture_server::docs::openapi())?);
            Ok(())
        }
        Cmd::Migrate => commands::migrate(&cfg),
        Cmd::Admin { cmd } => commands::admin(&cfg, cmd.into()),
        // Run by `main` without the service's settings.
        Cmd::Client(_) => Ok(()),
    }
}

impl From<AdminCmd> for AdminCommand {
    fn from(cmd: AdminCmd) -> Self {
        match cmd {
            AdminCmd::User { cmd: UserCmd::Create { email, plan, password, legacy_free } } => {
                AdminCommand::CreateUser { email, plan, password, legacy_free }
            }
            AdminCmd::User { cmd: UserCmd::SetPlan { email, plan } } => AdminCommand::SetPlan { email, plan },
            AdminCmd::Key { cmd: KeyCmd::Create { email, name } } => AdminCommand::CreateKey { email, name },
            AdminCmd::Key { cmd: KeyCmd::Revoke { key_id } } => AdminCommand::RevokeKey { key_id },
            AdminCmd::Key { cmd: KeyCmd::List { email } } => AdminCommand::ListKeys { email },
        }
    }
}
