//! The `capture` binary's client commands (`login`, `logout`, `balance`, `shot`, `read`,
//! `audit`, `webhooks …`, `auth-test`, `inbox`, `profile …`, `monitor …`, `proxy …`): an HTTP
//! client of the API. A crate of its own, apart from the binary, because it does not need the
//! server: it compiles while `capture-server` does (see docs/building.md).

mod client;
mod commands;
mod conn;
mod error;
mod inbox_cmd;
mod login;
mod monitor_cmd;
mod profile_cmd;
mod proxy_cmd;
mod read;
mod retry;
mod session;
mod shot;

use std::path::PathBuf;

use clap::Subcommand;
use conn::Conn;

/// The client's subcommands, flattened into the binary's.
#[derive(Subcommand)]
pub enum ClientCmd {
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
pub enum AuthTestCmd {
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
pub enum ProfileCmd {
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
pub enum WebhooksCmd {
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

/// Run one client command on a runtime of its own: the exit code says how it ended, and an
/// error is printed on stderr. A plain function, so that the binary awaits none of this
/// crate's futures (see `capture_server::commands`).
pub fn main(cmd: ClientCmd) -> std::process::ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cmd)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::from(e.code)
        }
    }
}

/// Run one client command: its error carries the exit code.
async fn run(cmd: ClientCmd) -> Result<(), error::ClientError> {
    match cmd {
        ClientCmd::Login { server, no_browser, timeout } => {
            login::login(&server, no_browser, std::time::Duration::from_secs(timeout)).await
        }
        ClientCmd::Logout => login::logout().await,
        ClientCmd::Balance { conn, json } => {
            let c = conn.connect(false).await?;
            commands::balance(&c, json).await
        }
        ClientCmd::Shot(a) => shot::run(a).await,
        ClientCmd::Read(a) => read::run(a).await,
        ClientCmd::Audit { conn, url, full_site, max_pages, pdf, json, quiet, profile, proxy, proxy_sticky_key } => {
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
        ClientCmd::Webhooks { conn, json, cmd } => {
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
        ClientCmd::AuthTest { conn, cmd, url, json, probe } => {
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
        ClientCmd::Profile { conn, json, cmd } => {
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
        ClientCmd::Monitor { conn, json, cmd } => {
            let c = conn.connect(false).await?;
            monitor_cmd::run(&c, cmd, json).await
        }
        ClientCmd::Proxy { conn, json, cmd } => {
            let c = conn.connect(false).await?;
            proxy_cmd::run(&c, cmd, json).await
        }
        ClientCmd::Inbox { conn, wait, json, from, since, limit, timeout } => {
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
    }
}
