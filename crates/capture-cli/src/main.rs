//! The `capture` binary: the server (`serve`, `migrate`, `admin …`) and the client
//! (`login`, `logout`, `balance`, `shot`, `read`, `webhooks …`, `profile …`, `monitor …`,
//! `proxy …`).

mod client;
mod commands;
mod conn;
mod error;
mod inbox_cmd;
mod login;
mod logs;
mod monitor_cmd;
mod profile_cmd;
mod proxy_cmd;
mod read;
mod retry;
mod session;
mod shot;

use std::path::PathBuf;

use anyhow::Context;
use capture_core::time::iso;
use capture_server::config::Roles;
use capture_server::{Application, Config, admin};
use clap::{Parser, Subcommand};
use conn::Conn;

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
    /// Sign in to a server in the browser (OAuth with PKCE) and keep the session.
    Login {
        #[arg(long, env = "CAPTURE_SERVER", default_value = client::DEFAULT_SERVER)]
        server: String,
        /// Only print the address to open (headless machines).
        #[arg(long)]
        no_browser: bool,
        /// How long to wait for the sign-in, in seconds.
        #[arg(long, default_value_t = 600)]
        timeout: u64,
    },
    /// Forget the stored session (and revoke its tokens).
    Logout,
    /// Show this month's balance.
    Balance {
        #[command(flatten)]
        conn: Conn,
        /// Print the JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Capture a page and save the file (an image, a video, a PDF, or the page as Markdown,
    /// text or HTML with --format).
    Shot(shot::ShotCmd),
    /// Print a page as Markdown (its main content, under YAML front matter) or plain text to
    /// stdout.
    Read(read::ReadCmd),
    /// Audit a website (performance, SEO, accessibility, best practices) and print the scores,
    /// the issues to fix first and the report's links.
    Audit {
        #[command(flatten)]
        conn: Conn,
        /// The page to audit, or where the crawl starts (http or https).
        url: String,
        /// Crawl the site (1 action per page audited) instead of auditing the one page.
        #[arg(long)]
        full_site: bool,
        /// Most pages a full-site audit loads (1–50, default 10).
        #[arg(long)]
        max_pages: Option<u32>,
        /// Save the report's PDF here.
        #[arg(long, value_name = "FILE")]
        pdf: Option<PathBuf>,
        /// Print the audit (with its whole report) as JSON.
        #[arg(long)]
        json: bool,
        /// Print only the report's URL.
        #[arg(short, long)]
        quiet: bool,
        /// Audit as a signed-in visitor: one of your browser profiles (id or name).
        #[arg(long)]
        profile: Option<String>,
        /// Leave through one of your proxies (id or name: capture proxy list): the pages and
        /// the crawl's own requests.
        #[arg(long, value_name = "NAME")]
        proxy: Option<String>,
        /// For a pool with sticky rotation: the key that picks its member (default: the
        /// URL's host).
        #[arg(long, value_name = "KEY", requires = "proxy")]
        proxy_sticky_key: Option<String>,
    },
    /// Manage webhook endpoints.
    Webhooks {
        #[command(flatten)]
        conn: Conn,
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        cmd: WebhooksCmd,
    },
    /// Sign in or sign up? Checks a site against the saved test inbox, the recorded history
    /// and the page itself; `record` stores what happened.
    #[command(name = "auth-test", args_conflicts_with_subcommands = true)]
    AuthTest {
        #[command(flatten)]
        conn: Conn,
        #[command(subcommand)]
        cmd: Option<AuthTestCmd>,
        /// The site (any page of it).
        url: Option<String>,
        /// Print the check as JSON (with the inbox password added).
        #[arg(long, global = true)]
        json: bool,
        /// Load the page in the browser: auto (when history and mail do not settle it), always, never.
        #[arg(long)]
        probe: Option<String>,
    },
    /// Browser profiles: `login URL` signs in to a site with the saved test inbox and keeps
    /// the signed-in state; `capture shot --profile NAME` then captures the signed-in page.
    Profile {
        #[command(flatten)]
        conn: Conn,
        /// Print JSON.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        cmd: ProfileCmd,
    },
    /// Monitors: a page captured on a schedule and compared with its baseline (pixels, text or
    /// both); `check ID --wait` runs a check now and prints what changed.
    Monitor {
        #[command(flatten)]
        conn: Conn,
        /// Print the API's JSON.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        cmd: monitor_cmd::MonitorCmd,
    },
    /// Your proxies: one URL or a pool that captures, reads and audits leave through
    /// (`--proxy NAME`); `test ID` fetches a page through each member.
    Proxy {
        #[command(flatten)]
        conn: Conn,
        /// Print the API's JSON.
        #[arg(long, global = true)]
        json: bool,
        #[command(subcommand)]
        cmd: proxy_cmd::ProxyCmd,
    },
    /// The saved test inbox: address, password and messages; --wait prints the verification
    /// link and code of the next mail.
    Inbox {
        #[command(flatten)]
        conn: Conn,
        /// Wait for the next unseen mail (or the first after --since).
        #[arg(long)]
        wait: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Only mail from this address or domain.
        #[arg(long)]
        from: Option<String>,
        /// Only mail received after this ISO 8601 time.
        #[arg(long)]
        since: Option<String>,
        /// Messages listed (1-100).
        #[arg(long)]
        limit: Option<u32>,
        /// How long --wait waits, in seconds.
        #[arg(long, default_value_t = 120)]
        timeout: u64,
    },
}

#[derive(Subcommand)]
enum AuthTestCmd {
    /// Record an attempt's outcome for the site.
    Record {
        url: String,
        /// sign_up, sign_in, verify or reset_password.
        #[arg(long)]
        action: String,
        /// success, failure, verification_sent, account_exists, no_account, invalid_credentials, blocked, error.
        #[arg(long)]
        outcome: String,
        /// password, magic_link, email_code, oauth, passkey or unknown.
        #[arg(long)]
        method: Option<String>,
        #[arg(long)]
        note: Option<String>,
    },
}

#[derive(Subcommand)]
enum ProfileCmd {
    /// Sign in (or up) to a site and save the signed-in state as a profile.
    Login {
        /// The site's sign-in (or sign-up) page.
        url: String,
        /// The profile to save into (id or name; default the site's host).
        #[arg(long)]
        name: Option<String>,
        /// The address to type (default the test inbox's).
        #[arg(long)]
        email: Option<String>,
        /// The password to type (default the test inbox's); used once, never stored.
        #[arg(long)]
        password: Option<String>,
        /// How long to wait for the site's mail, in seconds (5-120).
        #[arg(long, default_value_t = 30)]
        mail_timeout: u64,
        /// Sign in through one of your proxies (id or name), as the captures that use the
        /// profile will.
        #[arg(long, value_name = "NAME")]
        proxy: Option<String>,
    },
    /// List profiles.
    List,
    /// Delete a profile and its state.
    Delete { id: String },
}

#[derive(Subcommand)]
enum WebhooksCmd {
    /// List endpoints.
    List,
    /// Create an endpoint (the signing secret is shown once).
    Create {
        url: String,
        /// Event types (repeatable); default all.
        #[arg(long = "event")]
        events: Vec<String>,
        #[arg(long)]
        description: Option<String>,
    },
    /// Send a test.ping.
    Test { id: String },
    /// Replace the signing secret.
    Rotate { id: String },
    /// The last 50 deliveries.
    Deliveries { id: String },
    /// Delete an endpoint.
    Delete { id: String },
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
    if is_client(&cli.cmd) {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("error: cannot start the runtime: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        return match rt.block_on(run_client(cli.cmd)) {
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

fn is_client(cmd: &Cmd) -> bool {
    matches!(
        cmd,
        Cmd::Login { .. }
            | Cmd::Logout
            | Cmd::Balance { .. }
            | Cmd::Shot(_)
            | Cmd::Read(_)
            | Cmd::Audit { .. }
            | Cmd::Webhooks { .. }
            | Cmd::AuthTest { .. }
            | Cmd::Inbox { .. }
            | Cmd::Profile { .. }
            | Cmd::Monitor { .. }
            | Cmd::Proxy { .. }
    )
}

async fn run_client(cmd: Cmd) -> Result<(), error::ClientError> {
    match cmd {
        Cmd::Login { server, no_browser, timeout } => {
            login::login(&server, no_browser, std::time::Duration::from_secs(timeout)).await
        }
        Cmd::Logout => login::logout().await,
        Cmd::Balance { conn, json } => {
            let c = conn.connect(false).await?;
            commands::balance(&c, json).await
        }
        Cmd::Shot(a) => shot::run(a).await,
        Cmd::Read(a) => read::run(a).await,
        Cmd::Audit { conn, url, full_site, max_pages, pdf, json, quiet, profile, proxy, proxy_sticky_key } => {
            let c = conn.connect(quiet).await?;
            let args = commands::AuditArgs {
                url,
                full_site,
                max_pages,
                pdf,
                json,
                quiet,
                profile,
                proxy,
                proxy_sticky_key,
                idempotency_key: retry::new_idempotency_key(),
            };
            commands::audit(&c, args).await
        }
        Cmd::Webhooks { conn, json, cmd } => {
            let c = conn.connect(false).await?;
            let cmd = match cmd {
                WebhooksCmd::List => commands::WebhookCmd::List,
                WebhooksCmd::Create { url, events, description } => {
                    commands::WebhookCmd::Create { url, events, description }
                }
                WebhooksCmd::Test { id } => commands::WebhookCmd::Test { id },
                WebhooksCmd::Rotate { id } => commands::WebhookCmd::Rotate { id },
                WebhooksCmd::Deliveries { id } => commands::WebhookCmd::Deliveries { id },
                WebhooksCmd::Delete { id } => commands::WebhookCmd::Delete { id },
            };
            commands::webhooks(&c, cmd, json).await
        }
        Cmd::AuthTest { conn, cmd, url, json, probe } => {
            let c = conn.connect(false).await?;
            match (cmd, url) {
                (Some(AuthTestCmd::Record { url, action, outcome, method, note }), _) => {
                    inbox_cmd::record(&c, &url, &action, &outcome, method, note, json).await
                }
                (None, Some(url)) => inbox_cmd::check(&c, &url, json, probe).await,
                (None, None) => Err(error::ClientError::new(
                    error::exit::INVALID,
                    "give the site's URL: capture auth-test URL (or capture auth-test record URL --action A --outcome O)",
                )),
            }
        }
        Cmd::Profile { conn, json, cmd } => {
            let c = conn.connect(false).await?;
            match cmd {
                ProfileCmd::Login { url, name, email, password, mail_timeout, proxy } => {
                    let args = profile_cmd::LoginArgs { url, name, email, password, mail_timeout, proxy, json };
                    profile_cmd::login(&c, args).await
                }
                ProfileCmd::List => profile_cmd::list(&c, json).await,
                ProfileCmd::Delete { id } => profile_cmd::delete(&c, &id).await,
            }
        }
        Cmd::Monitor { conn, json, cmd } => {
            let c = conn.connect(false).await?;
            monitor_cmd::run(&c, cmd, json).await
        }
        Cmd::Proxy { conn, json, cmd } => {
            let c = conn.connect(false).await?;
            proxy_cmd::run(&c, cmd, json).await
        }
        Cmd::Inbox { conn, wait, json, from, since, limit, timeout } => {
            let c = conn.connect(false).await?;
            let args = inbox_cmd::InboxArgs {
                wait,
                json,
                from,
                since,
                limit,
                timeout: std::time::Duration::from_secs(timeout),
            };
            inbox_cmd::inbox(&c, args).await
        }
        _ => Ok(()),
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
        other => {
            debug_assert!(is_client(&other));
            Ok(())
        }
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
