//! The pool of Chromium processes: slots, least-loaded scheduling, crash restarts,
//! recycling and the memory guard.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::cdp::Conn;
use crate::egress::EgressProxy;
use crate::launch::Chromium;
use crate::prepare::{self, Prepared, View};
use crate::{BrowserConfig, CaptureError, CaptureOutput, CaptureRequest};
use crate::{memory, pipeline};

/// Why a browser process was restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RestartReason {
    /// Its DevTools connection closed: it crashed or was killed.
    Crash,
    /// It served `recycle_after` jobs.
    #[default]
    Recycle,
    /// Its process tree passed the memory limit.
    Memory,
    /// It failed a health check.
    Health,
}

impl RestartReason {
    /// Every reason, in metrics order.
    pub const ALL: [RestartReason; 4] =
        [RestartReason::Crash, RestartReason::Recycle, RestartReason::Memory, RestartReason::Health];

    /// `crash`, `recycle`, `memory` or `health` (logs, metrics labels).
    pub fn as_str(self) -> &'static str {
        match self {
            RestartReason::Crash => "crash",
            RestartReason::Recycle => "recycle",
            RestartReason::Memory => "memory",
            RestartReason::Health => "health",
        }
    }
}

/// A snapshot of the pool for metrics.
#[derive(Debug, Clone, Default)]
pub struct PoolStats {
    restarts: [u64; 4],
    /// The last memory sample of each browser (bytes); None while it restarts or before
    /// its first sample.
    pub memory: Vec<Option<u64>>,
    /// The memory guard's drain threshold (None: the guard is off).
    pub memory_limit: Option<u64>,
}

impl PoolStats {
    /// Restarts for `reason` so far.
    pub fn restarts(&self, reason: RestartReason) -> u64 {
        self.restarts[reason as usize]
    }
}

/// How often the memory guard samples each browser's process tree.
const MEMORY_SAMPLE_EVERY: Duration = Duration::from_secs(2);

/// One running browser.
struct Instance {
    id: u64,
    chromium: Chromium,
    conn: Arc<Conn>,
    /// Fresh contexts with a page, created ahead of jobs (never reused).
    spares: Mutex<Vec<Prepared>>,
    /// Spares being created right now.
    warming: std::sync::atomic::AtomicUsize,
    /// Set when the memory guard kills this browser: why its captures fail.
    killed_for_memory: Mutex<Option<String>>,
    /// Opens each context's own route of the egress proxy.
    routes: crate::egress::Routes,
}

/// A failed job's error as its caller should see it: the memory guard's reason when it
/// killed the browser, else "the browser exited" when the connection is gone.
pub(crate) fn browser_error(e: CaptureError, lease: &Lease) -> CaptureError {
    if let Some(why) = lease.killed_for_memory() {
        return CaptureError::Browser(why);
    }
    match e {
        e if lease.conn().is_closed() && !matches!(e, CaptureError::Browser(_)) => {
            CaptureError::Browser("the browser exited during the capture".into())
        }
        CaptureError::Browser(m) if lease.conn().is_closed() => {
            CaptureError::Browser(format!("the browser exited during the capture ({m})"))
        }
        other => other,
    }
}

/// How long creating a spare page may take.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(15);

impl Instance {
    /// A spare page that is still alive, if any (dead ones are dropped).
    fn take_spare(&self) -> Option<Prepared> {
        loop {
            let mut p = self.spares.lock().unwrap().pop()?;
            if p.still_usable() {
                return Some(p);
            }
        }
    }

    /// Top the spare pages up to `want` in the background, set up for `view`.
    fn refill(self: &Arc<Self>, want: usize, view: View) {
        if self.conn.is_closed() {
            return;
        }
        let have = self.spares.lock().unwrap().len() + self.warming.load(Ordering::SeqCst);
        for _ in have..want {
            self.warming.fetch_add(1, Ordering::SeqCst);
            let me = Arc::downgrade(self);
            let (conn, routes) = (self.conn.clone(), self.routes.clone());
            tokio::spawn(async move {
                let r = prepare::prepare(&conn, Some(&routes), Instant::now() + PREPARE_TIMEOUT, view).await;
                if let Some(inst) = me.upgrade() {
                    if let Ok(p) = r
                        && !inst.conn.is_closed()
                    {
                        inst.spares.lock().unwrap().push(p);
                    }
                    inst.warming.fetch_sub(1, Ordering::SeqCst);
                }
            });
        }
    }
}

#[derive(Default)]
struct SlotState {
    browser: Option<Arc<Instance>>,
    active: usize,
    jobs: u64,
    /// No new jobs; restarted (for `drain_reason`) when the last one finishes.
    draining: bool,
    drain_reason: RestartReason,
    /// The browser's last memory sample (bytes).
    memory: Option<u64>,
    last_error: Option<String>,
}

/// A pool of Chromium processes sharing one egress proxy.
pub struct BrowserPool {
    cfg: BrowserConfig,
    me: Weak<BrowserPool>,
    slots: Mutex<Vec<SlotState>>,
    sem: Arc<Semaphore>,
    changed: Notify,
    /// Restarts by [`RestartReason`].
    restarts: [AtomicU64; 4],
    /// A browser passed the memory limit before serving any job (said once).
    warned_low_limit: AtomicBool,
    next_id: AtomicU64,
    shutting_down: AtomicBool,
    restarts_running: tokio_util::task::TaskTracker,
    /// The most recent job's emulation; spare pages are set up for it.
    last_view: Mutex<View>,
    proxy: EgressProxy,
    /// Bounds the captures decoded and re-encoded at once: the process's budget, shared
    /// with uploads (see [`crate::encode::decode_permits`]).
    decodes: Arc<Semaphore>,
}

/// A claimed page slot on one browser; released on drop.
pub(crate) struct Lease {
    pool: Arc<BrowserPool>,
    /// This is the browser's last job before it is recycled.
    draining: bool,
    slot: usize,
    browser: Arc<Instance>,
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    /// The DevTools connection of the leased browser.
    pub(crate) fn conn(&self) -> &Arc<Conn> {
        &self.browser.conn
    }

    /// Why the memory guard killed this browser, if it did.
    pub(crate) fn killed_for_memory(&self) -> Option<String> {
        self.browser.killed_for_memory.lock().unwrap().clone()
    }

    /// The pool's egress failure log.
    pub(crate) fn failures(&self) -> &Arc<crate::egress::FailureLog> {
        self.pool.proxy.failures()
    }

    /// The pool's decode budget.
    pub(crate) fn decodes(&self) -> &Arc<Semaphore> {
        &self.pool.decodes
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.pool.release(self.slot, &self.browser);
    }
}

impl BrowserPool {
    /// Launch `browsers` Chromium processes and the egress proxy.
    pub async fn start(cfg: BrowserConfig) -> Result<Arc<BrowserPool>, CaptureError> {
        let browsers = cfg.browsers.max(1);
        let pages = cfg.pages_per_browser.max(1);
        std::fs::create_dir_all(&cfg.work_dir)
            .map_err(|e| CaptureError::Browser(format!("cannot create {}: {e}", cfg.work_dir.display())))?;
        crate::launch::remove_stale_profiles(&cfg.work_dir);
        let policy = cfg.egress.clone().with_local_addrs(crate::egress::local_addresses());
        let proxy = EgressProxy::start(policy)
            .await
            .map_err(|e| CaptureError::Browser(format!("cannot start the egress proxy: {e}")))?;
        let pool = Arc::new_cyclic(|me| BrowserPool {
            cfg: BrowserConfig { browsers, pages_per_browser: pages, ..cfg },
            me: me.clone(),
            slots: Mutex::new((0..browsers).map(|_| SlotState::default()).collect()),
            sem: Arc::new(Semaphore::new(browsers * pages)),
            changed: Notify::new(),
            restarts: Default::default(),
            warned_low_limit: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            shutting_down: AtomicBool::new(false),
            restarts_running: tokio_util::task::TaskTracker::new(),
            last_view: Mutex::new(View::default()),
            proxy,
            decodes: crate::encode::decode_permits(),
        });
        let launches = (0..browsers).map(|i| pool.launch(i));
        let results = futures_util::future::join_all(launches).await;
        let mut first_err = None;
        for (i, r) in results.into_iter().enumerate() {
            match r {
                Ok(inst) => pool.install(i, inst, None),
                Err(e) => first_err = Some(e),
            }
        }
        if let Some(e) = first_err {
            pool.shutdown().await;
            return Err(CaptureError::Browser(e));
        }
        pool.watch_memory();
        Ok(pool)
    }

    /// Sample every browser's memory every [`MEMORY_SAMPLE_EVERY`] until the pool is shut
    /// down or dropped (the task holds only a weak reference between samples).
    fn watch_memory(self: &Arc<Self>) {
        let me = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(MEMORY_SAMPLE_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(pool) = me.upgrade() else { return };
                if pool.shutting_down.load(Ordering::SeqCst) {
                    return;
                }
                pool.sample_memory().await;
            }
        });
    }

    /// Read each browser's memory; apply the guard: past `drain_above` no new jobs and a
    /// restart once its captures finish (at once when it has none); past `kill_above` a
    /// restart at once, failing its captures with a transient browser error.
    async fn sample_memory(&self) {
        let browsers: Vec<(usize, u64, Option<u32>)> = {
            let slots = self.slots.lock().unwrap();
            slots
                .iter()
                .enumerate()
                .filter_map(|(i, s)| s.browser.as_ref().map(|b| (i, b.id, b.chromium.root_pid())))
                .collect()
        };
        let sampled = tokio::task::spawn_blocking(move || {
            browsers.into_iter().map(|(slot, id, pid)| (slot, id, pid.and_then(memory::tree_bytes))).collect()
        })
        .await
        .unwrap_or_else(|_| Vec::new());
        for (slot, id, bytes) in sampled {
            let Some(bytes) = bytes else { continue };
            if let Some(why) = self.judge_memory(slot, id, bytes) {
                self.replace(slot, id, RestartReason::Memory, &why);
            }
        }
    }

    /// Record a sample of browser `id` in `slot`; Some(why) when it must restart now.
    fn judge_memory(&self, slot: usize, id: u64, bytes: u64) -> Option<String> {
        let mb = |b: u64| b >> 20;
        let mut slots = self.slots.lock().unwrap();
        let s = &mut slots[slot];
        if s.browser.as_ref().is_none_or(|b| b.id != id) {
            return None;
        }
        s.memory = Some(bytes);
        let limit = self.cfg.memory_limit?;
        if bytes > limit.kill_above {
            tracing::warn!(
                slot,
                memory_mb = mb(bytes),
                limit_mb = mb(limit.drain_above),
                captures = s.active,
                "browser far over its memory limit: restarting it now, its captures will be retried"
            );
            if let Some(b) = &s.browser {
                *b.killed_for_memory.lock().unwrap() = Some(format!(
                    "the page exceeded the browser memory limit: the browser used {} MB (limit {} MB) and was restarted",
                    mb(bytes),
                    mb(limit.drain_above)
                ));
            }
            return Some(format!("its memory ({} MB) passed 1.5 × the limit", mb(bytes)));
        }
        if bytes <= limit.drain_above {
            return None;
        }
        if !(s.draining && s.drain_reason == RestartReason::Memory) {
            s.draining = true;
            s.drain_reason = RestartReason::Memory;
            if s.jobs == 0 && !self.warned_low_limit.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    slot,
                    memory_mb = mb(bytes),
                    limit_mb = mb(limit.drain_above),
                    "a browser that has not served a job yet is over the memory limit (CAPTURE_BROWSER_MAX_MEMORY is too low): \
                     browsers will be restarted after nearly every job"
                );
            }
            tracing::info!(
                slot,
                memory_mb = mb(bytes),
                limit_mb = mb(limit.drain_above),
                captures = s.active,
                "browser over its memory limit: no new jobs, restarting it when its captures finish"
            );
        }
        (s.active == 0).then(|| format!("its memory ({} MB) passed the limit", mb(bytes)))
    }

    /// Start one Chromium and connect to it.
    async fn launch(&self, slot: usize) -> Result<Arc<Instance>, String> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let dir = self.cfg.work_dir.join(format!(
            "chromium-{}-{slot}-{id}-{:08x}",
            std::process::id(),
            rand::random::<u32>()
        ));
        let (chromium, conn) = Chromium::launch(&self.cfg.chromium_path, dir, Some(self.proxy.addr())).await?;
        Ok(Arc::new(Instance {
            id,
            chromium,
            conn,
            spares: Mutex::new(Vec::new()),
            warming: Default::default(),
            killed_for_memory: Mutex::new(None),
            routes: self.proxy.routes(),
        }))
    }

    /// Put a fresh instance into a slot and watch its connection.
    fn install(&self, slot: usize, inst: Arc<Instance>, restart: Option<RestartReason>) {
        let conn = inst.conn.clone();
        let id = inst.id;
        inst.refill(self.spares_wanted(), *self.last_view.lock().unwrap());
        {
            let mut slots = self.slots.lock().unwrap();
            let s = &mut slots[slot];
            s.browser = Some(inst);
            s.active = 0;
            s.jobs = 0;
            s.draining = false;
            s.drain_reason = RestartReason::default();
            s.memory = None;
            s.last_error = None;
        }
        if let Some(reason) = restart {
            self.restarts[reason as usize].fetch_add(1, Ordering::Relaxed);
        }
        self.changed.notify_waiters();
        let me = self.me.clone();
        tokio::spawn(async move {
            conn.closed().await;
            if let Some(pool) = me.upgrade() {
                pool.replace(slot, id, RestartReason::Crash, "its DevTools connection closed");
            }
        });
    }

    /// Take instance `id` out of `slot` (if still there) and start a replacement.
    fn replace(&self, slot: usize, id: u64, reason: RestartReason, why: &str) {
        if self.shutting_down.load(Ordering::SeqCst) {
            return;
        }
        let old = {
            let mut slots = self.slots.lock().unwrap();
            let s = &mut slots[slot];
            match &s.browser {
                Some(b) if b.id == id => {
                    s.active = 0;
                    s.draining = false;
                    s.memory = None;
                    s.browser.take()
                }
                _ => return,
            }
        };
        tracing::info!(slot, reason = reason.as_str(), why, "restarting browser");
        if let Some(pool) = self.me.upgrade() {
            self.restarts_running.spawn(pool.restart(slot, old, reason));
        }
    }

    async fn restart(self: Arc<Self>, slot: usize, old: Option<Arc<Instance>>, reason: RestartReason) {
        if let Some(old) = old {
            old.chromium.kill_gracefully(Some(&old.conn)).await;
        }
        let mut backoff = Duration::from_millis(250);
        loop {
            if self.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            match self.launch(slot).await {
                Ok(inst) => {
                    if self.shutting_down.load(Ordering::SeqCst) {
                        inst.chromium.kill().await;
                        return;
                    }
                    self.install(slot, inst, Some(reason));
                    return;
                }
                Err(e) => {
                    tracing::warn!(slot, error = %e, "browser restart failed");
                    self.slots.lock().unwrap()[slot].last_error = Some(e);
                    self.changed.notify_waiters();
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(10));
                }
            }
        }
    }

    fn try_claim(&self) -> Option<(usize, Arc<Instance>, bool)> {
        let mut slots = self.slots.lock().unwrap();
        let pages = self.cfg.pages_per_browser;
        let alive = |s: &SlotState| s.browser.as_ref().is_some_and(|b| !b.conn.is_closed());
        // A browser whose connection just dropped is replaced (its watcher may not
        // have run yet); never hand it a job.
        let dead: Vec<(usize, u64)> = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.browser.is_some() && !alive(s))
            .filter_map(|(i, s)| s.browser.as_ref().map(|b| (i, b.id)))
            .collect();
        if !dead.is_empty() {
            drop(slots);
            for (slot, id) in dead {
                self.replace(slot, id, RestartReason::Crash, "its DevTools connection closed");
            }
            slots = self.slots.lock().unwrap();
        }
        let best = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| alive(s) && !s.draining && s.active < pages)
            .min_by_key(|(_, s)| (s.active, s.jobs))
            .map(|(i, _)| i)?;
        let s = &mut slots[best];
        s.active += 1;
        s.jobs += 1;
        if self.cfg.recycle_after > 0 && s.jobs >= self.cfg.recycle_after {
            s.draining = true;
            s.drain_reason = RestartReason::Recycle;
        }
        Some((best, s.browser.clone()?, s.draining))
    }

    fn release(&self, slot: usize, browser: &Arc<Instance>) {
        let recycle = {
            let mut slots = self.slots.lock().unwrap();
            let s = &mut slots[slot];
            match &s.browser {
                Some(b) if b.id == browser.id => {
                    s.active = s.active.saturating_sub(1);
                    (s.draining && s.active == 0).then_some(s.drain_reason)
                }
                _ => None,
            }
        };
        match recycle {
            Some(RestartReason::Memory) => self.replace(
                slot,
                browser.id,
                RestartReason::Memory,
                "its memory passed the limit and its last capture finished",
            ),
            Some(reason) => self.replace(slot, browser.id, reason, "recycling after its job limit"),
            None => {}
        }
        self.changed.notify_waiters();
    }

    /// Is browser `id` in `slot` taking no new jobs (about to be restarted)?
    fn draining(&self, slot: usize, id: u64) -> bool {
        let slots = self.slots.lock().unwrap();
        let s = &slots[slot];
        s.browser.as_ref().is_none_or(|b| b.id != id) || s.draining
    }

    async fn acquire(self: &Arc<Self>) -> Result<Lease, CaptureError> {
        let permit = self
            .sem
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| CaptureError::Browser("the browser pool is shut down".into()))?;
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.shutting_down.load(Ordering::SeqCst) {
                return Err(CaptureError::Browser("the browser pool is shut down".into()));
            }
            if let Some((slot, browser, draining)) = self.try_claim() {
                return Ok(Lease { draining, pool: self.clone(), slot, browser, _permit: permit });
            }
            notified.await;
        }
    }

    /// Warm spare pages kept per browser: one per page slot, plus one, so a job that
    /// follows another at once still finds a warm page while the next one is being set up
    /// (setting one up takes about as long as a simple capture).
    fn spares_wanted(&self) -> usize {
        self.cfg.pages_per_browser + 1
    }

    fn launch_error(&self) -> Option<String> {
        let slots = self.slots.lock().unwrap();
        if slots.iter().all(|s| s.browser.is_none()) { slots.iter().find_map(|s| s.last_error.clone()) } else { None }
    }

    /// Claim a page slot and a fresh page set up for `view` (a warm spare when there is
    /// one), both by `deadline`. `what` names the deadline in its error.
    pub(crate) async fn lease_page(
        &self,
        deadline: Instant,
        view: View,
        what: &str,
    ) -> Result<(Lease, Prepared, bool), CaptureError> {
        let me = self.me.upgrade().ok_or_else(|| CaptureError::Browser("the browser pool is shut down".into()))?;
        let lease = match tokio::time::timeout_at(deadline, me.acquire()).await {
            Ok(r) => r?,
            Err(_) => {
                if let Some(e) = self.launch_error() {
                    return Err(CaptureError::Browser(format!("no browser available: {e}")));
                }
                return Err(CaptureError::Deadline(what.to_owned()));
            }
        };
        *self.last_view.lock().unwrap() = view;
        let spare = lease.browser.take_spare();
        let spare_missing = spare.is_none();
        if spare_missing && !lease.draining {
            // Nothing warm left: start warming now rather than after this job.
            lease.browser.refill(self.spares_wanted(), view);
        }
        let prepared = match spare {
            Some(p) => p,
            None => {
                let until = deadline.min(Instant::now() + PREPARE_TIMEOUT);
                prepare::prepare(lease.conn(), Some(&lease.browser.routes), until, view).await.map_err(|e| match e {
                    CaptureError::Timeout(_) if until == deadline => CaptureError::Deadline(what.to_owned()),
                    // A page that cannot be set up within PREPARE_TIMEOUT fails this
                    // attempt only (transient: the job is retried), not the whole job.
                    CaptureError::Timeout(m) => CaptureError::Browser(format!("setting up a page timed out: {m}")),
                    other => browser_error(other, &lease),
                })?
            }
        };
        Ok((lease, prepared, spare_missing))
    }

    /// After a job on `lease`: warm the next page, so it does not compete with the job for
    /// CPU (not on a browser that will be restarted: the memory guard may have drained it
    /// meanwhile).
    pub(crate) fn after_job(&self, lease: &Lease, spare_was_missing: bool) {
        if !spare_was_missing && !lease.draining && !self.draining(lease.slot, lease.browser.id) {
            lease.browser.refill(self.spares_wanted(), *self.last_view.lock().unwrap());
        }
    }

    /// Run one capture; waits for a free page slot. Never panics; every DevTools call
    /// is bounded by `req.deadline`.
    pub async fn capture(&self, req: CaptureRequest) -> Result<CaptureOutput, CaptureError> {
        let deadline = Instant::now() + req.deadline;
        let what = crate::deadline_message(req.deadline);
        let view = View::of(&req);
        let mut clock = crate::phases::PhaseClock::start();
        let (lease, prepared, spare_missing) = self.lease_page(deadline, view, &what).await?;
        clock.step("page");
        // The customer's proxy: the context's own route connects through it from now on.
        if let Some(up) = &req.proxy {
            prepared.route_through(up.clone())?;
        }
        let conn = lease.conn().clone();
        let result = pipeline::run(&conn, prepared, lease.failures(), lease.decodes(), &req, deadline, clock).await;
        let result = match result {
            Err(e) => Err(browser_error(e, &lease)),
            ok => ok,
        };
        self.after_job(&lease, spare_missing);
        drop(lease);
        result
    }

    /// A route of the egress proxy through `upstream` for requests of the service's own that
    /// must leave as the pages do (an audit's crawl): open while the route is held.
    pub async fn egress_route(
        &self,
        upstream: capture_core::egress::UpstreamProxy,
    ) -> Result<crate::egress::EgressRoute, CaptureError> {
        self.proxy.route(upstream).await.map_err(|e| CaptureError::Browser(format!("cannot open an egress route: {e}")))
    }

    /// Readiness: every browser answers Browser.getVersion within 2 s (restarting dead ones).
    pub async fn check(&self) -> Result<(), String> {
        if self.shutting_down.load(Ordering::SeqCst) {
            return Err("the browser pool is shut down".into());
        }
        let browsers: Vec<(usize, Option<Arc<Instance>>)> = {
            let slots = self.slots.lock().unwrap();
            slots.iter().map(|s| s.browser.clone()).enumerate().collect()
        };
        let checks = browsers.into_iter().map(|(slot, b)| async move {
            let Some(b) = b else {
                return Err(format!("browser {slot} is restarting"));
            };
            let r =
                tokio::time::timeout(Duration::from_secs(2), b.conn.cmd(&crate::protocol::GetVersion {}, None)).await;
            match r {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => {
                    self.replace(slot, b.id, RestartReason::Health, "it failed a health check");
                    Err(format!("browser {slot} failed Browser.getVersion: {e}; restarting it"))
                }
                Err(_) => {
                    self.replace(slot, b.id, RestartReason::Health, "it did not answer a health check");
                    Err(format!("browser {slot} did not answer Browser.getVersion within 2 s; restarting it"))
                }
            }
        });
        let errors: Vec<String> =
            futures_util::future::join_all(checks).await.into_iter().filter_map(Result::err).collect();
        if errors.is_empty() { Ok(()) } else { Err(errors.join("; ")) }
    }

    /// How many times a browser process was (re)started after the first start.
    pub fn restarts(&self) -> u64 {
        self.restarts.iter().map(|n| n.load(Ordering::Relaxed)).sum()
    }

    /// How many restarts were for `reason`.
    pub fn restarts_for(&self, reason: RestartReason) -> u64 {
        self.restarts[reason as usize].load(Ordering::Relaxed)
    }

    /// Restart counts and the last memory sample of each browser (metrics).
    pub fn stats(&self) -> PoolStats {
        let memory = self.slots.lock().unwrap().iter().map(|s| s.memory).collect();
        PoolStats {
            restarts: RestartReason::ALL.map(|r| self.restarts_for(r)),
            memory,
            memory_limit: self.cfg.memory_limit.map(|l| l.drain_above),
        }
    }

    /// The egress proxy's address (every browser connection goes through it).
    pub fn egress_addr(&self) -> std::net::SocketAddr {
        self.proxy.addr()
    }

    /// Profile folders of the running browsers (diagnostics and tests).
    pub fn profile_dirs(&self) -> Vec<std::path::PathBuf> {
        let slots = self.slots.lock().unwrap();
        slots.iter().filter_map(|s| s.browser.as_ref()).map(|b| b.chromium.profile_dir.clone()).collect()
    }

    /// Kill all Chromium processes (whole process groups) and delete their profiles.
    pub async fn shutdown(&self) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.sem.close();
        self.changed.notify_waiters();
        let all: Vec<Arc<Instance>> = {
            let mut slots = self.slots.lock().unwrap();
            slots.iter_mut().filter_map(|s| s.browser.take()).collect()
        };
        let kills = all.iter().map(|b| b.chromium.kill_gracefully(Some(&b.conn)));
        futures_util::future::join_all(kills).await;
        // A restart that was launching kills its browser itself when it sees the flag.
        self.restarts_running.close();
        let _ = tokio::time::timeout(Duration::from_secs(35), self.restarts_running.wait()).await;
    }
}
