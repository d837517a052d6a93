//! The binary's server commands (`serve`, `migrate`, `admin …`) as plain functions that run
//! their own runtime.
//!
//! The `capture` binary calls only these and never awaits this crate's futures itself: rustc
//! does not export an async fn's body, so a crate that awaits one compiles its own copy of it
//! and of every async fn it awaits in turn. Awaiting `Application::build` and `run` from the
//! binary made it compile the service's whole start-up and its loops a second time, about
//! 50 s of a cold release build with nothing beside it (docs/building.md).

use anyhow::Context;
use capture_core::time::iso;
use capture_store::Store;

use crate::app::{Application, shutdown_signal};
use crate::config::Config;
use crate::{admin, crypto};

/// `capture serve`: the service with `cfg`'s roles until SIGTERM or Ctrl-C, then a drain.
pub fn serve(cfg: Config) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the runtime")?;
    rt.block_on(async move {
        // SIGTERM and Ctrl-C are ours before anyone can know the address: one that came
        // between the first answer and the first poll of a lazily made handler killed the
        // process unstopped (no drain, no last spans, no closed database).
        let stop = shutdown_signal();
        let app = Application::build(cfg).await?;
        // Tests and scripts read this first line: the random port, or that a node without the
        // api role is up (database reached, listener and browser started).
        if let Some(addr) = app.local_addr() {
            println!("listening on http://{addr}");
            tracing::info!(%addr, base_url = %app.state().base_url, "serving");
        } else {
            println!("running without HTTP (no api role)");
        }
        Ok(app.run(stop).await?)
    })
}

/// `capture migrate`: apply the database's migrations.
pub fn migrate(cfg: &Config) -> anyhow::Result<()> {
    current_thread()?.block_on(async {
        connect(cfg).await?.close().await;
        println!("migrations applied");
        Ok(())
    })
}

/// What `capture admin …` asks.
#[derive(Debug, Clone)]
pub enum AdminCommand {
    CreateUser { email: String, plan: String, password: Option<String>, legacy_free: bool },
    SetPlan { email: String, plan: String },
    CreateKey { email: String, name: String },
    RevokeKey { key_id: String },
    ListKeys { email: String },
}

/// `capture admin …`: accounts and keys on the configured database, reported on stdout.
pub fn admin(cfg: &Config, cmd: AdminCommand) -> anyhow::Result<()> {
    current_thread()?.block_on(async {
        let store = connect(cfg).await?;
        let r = admin_on(cfg, &store, cmd).await;
        store.close().await;
        r
    })
}

fn current_thread() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the runtime")
}

/// The configured database, migrated.
async fn connect(cfg: &Config) -> anyhow::Result<Store> {
    std::fs::create_dir_all(&cfg.data_dir).ok();
    Store::connect(&cfg.database.url, 2).await.context("CAPTURE_DATABASE_URL")
}

/// Now on the service's clock (`CAPTURE_CLOCK_OFFSET`), as the service itself reads it.
fn now_ms(cfg: &Config) -> i64 {
    capture_core::clock::Clock::with_offset_ms(cfg.clock_offset_ms).now_ms()
}

async fn admin_on(cfg: &Config, store: &Store, cmd: AdminCommand) -> anyhow::Result<()> {
    match cmd {
        AdminCommand::CreateUser { email, plan, password, legacy_free } => {
            let u = admin::create_user(store, &email, &plan, password.as_deref(), legacy_free, now_ms(cfg)).await?;
            let admin_note = if cfg.accounts.is_admin(&u.email) { " (admin: unlimited)" } else { "" };
            println!("created account {} <{}> on plan {}{admin_note}", u.id, u.email, u.plan);
        }
        AdminCommand::SetPlan { email, plan } => {
            admin::set_plan(store, &email, &plan).await?;
            println!("{email} is now on plan {plan}");
        }
        AdminCommand::CreateKey { email, name } => {
            let master = crypto::MasterKey::load_or_create(cfg.master_key.as_deref(), &cfg.data_dir)?;
            let u = admin::user(store, &email).await?;
            let (row, key) = admin::create_key(store, &master, &u.id, &name, now_ms(cfg)).await?;
            println!("created key {} ({}) for {}; it is shown once:", row.id, row.name, u.email);
            println!("{key}");
        }
        AdminCommand::RevokeKey { key_id } => {
            if !store.revoke_key(&key_id, None, capture_core::time::now_ms()).await? {
                anyhow::bail!("no live key with id {key_id}");
            }
            println!("revoked {key_id}");
        }
        AdminCommand::ListKeys { email } => {
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
