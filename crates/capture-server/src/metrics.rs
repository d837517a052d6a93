//! Prometheus metrics kept in memory: HTTP requests by route and status, capture time
//! histogram, capture outcomes, jobs refused by back-pressure. Jobs and tasks by status,
//! queue depth, browser restarts and browser memory are read at scrape time.
//! `capture_scheduler_leader` says whether this process runs the scheduler now (one node
//! at a time on PostgreSQL); `capture_inbox_waiting` counts the inbox long-polls in progress.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use capture_browser::PoolStats;
use capture_store::{QueueLimits, QueueScope};

/// Upper bounds (seconds) of the capture-time histogram.
const BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// Upper bounds (seconds) of the monitors' lag histogram (due time to check started).
const LAG_BUCKETS: &[f64] = &[0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

/// Process metrics.
#[derive(Default)]
pub struct Metrics {
    http: Mutex<BTreeMap<(String, String, u16), u64>>,
    capture_buckets: [AtomicU64; 10],
    capture_count: AtomicU64,
    capture_sum_ms: AtomicU64,
    captures_done: AtomicU64,
    captures_failed: AtomicU64,
    capture_retries: AtomicU64,
    captures_handed_back: AtomicU64,
    forwarded_calls: AtomicU64,
    forwarded_micros: AtomicU64,
    scheduler_leader: AtomicBool,
    refused_account: AtomicU64,
    refused_global: AtomicU64,
    inbox_waiting: AtomicU64,
    monitor_lag_buckets: [AtomicU64; 8],
    monitor_runs: AtomicU64,
    monitor_lag_sum_ms: AtomicU64,
}

/// One inbox long-poll counted in `capture_inbox_waiting` while it lives.
pub struct InboxWaiting<'a>(&'a AtomicU64);

impl Drop for InboxWaiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What `/metrics` reads at scrape time.
pub struct Scrape<'a> {
    /// Screenshot jobs by status.
    pub jobs_by_status: &'a [(String, i64)],
    /// Queued and running tasks: `(kind, status, count)`.
    pub tasks_by_status: &'a [(String, String, i64)],
    /// Queued tasks of every kind.
    pub queue_depth: i64,
    pub queue_limits: QueueLimits,
    /// The browser pool (worker role).
    pub browser: Option<PoolStats>,
}

impl Metrics {
    /// Count one HTTP request.
    pub fn http_request(&self, method: &str, route: &str, status: u16) {
        let mut m = self.http.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry((method.to_string(), route.to_string(), status)).or_default() += 1;
    }

    /// Record one capture's duration and outcome.
    pub fn capture(&self, seconds: f64, ok: bool) {
        for (i, b) in BUCKETS.iter().enumerate() {
            if seconds <= *b {
                self.capture_buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.capture_count.fetch_add(1, Ordering::Relaxed);
        self.capture_sum_ms.fetch_add((seconds * 1000.0) as u64, Ordering::Relaxed);
        if ok {
            self.captures_done.fetch_add(1, Ordering::Relaxed);
        } else {
            self.captures_failed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Count a retried transient browser failure.
    pub fn capture_retry(&self) {
        self.capture_retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a capture handed back to the queue so another account could have its slot.
    pub fn capture_handed_back(&self) {
        self.captures_handed_back.fetch_add(1, Ordering::Relaxed);
    }

    /// Count a tool call forwarded to the node holding its session, and how long it took.
    pub fn forwarded_call(&self, seconds: f64) {
        self.forwarded_calls.fetch_add(1, Ordering::Relaxed);
        self.forwarded_micros.fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }

    /// Record a monitor's run claimed `lag_ms` after it was due.
    pub fn monitor_lag(&self, lag_ms: i64) {
        let secs = lag_ms.max(0) as f64 / 1000.0;
        for (i, b) in LAG_BUCKETS.iter().enumerate() {
            if secs <= *b {
                self.monitor_lag_buckets[i].fetch_add(1, Ordering::Relaxed);
            }
        }
        self.monitor_runs.fetch_add(1, Ordering::Relaxed);
        self.monitor_lag_sum_ms.fetch_add(lag_ms.max(0) as u64, Ordering::Relaxed);
    }

    /// Record whether this process is the scheduler leader.
    pub fn set_scheduler_leader(&self, leader: bool) {
        self.scheduler_leader.store(leader, Ordering::Relaxed);
    }

    /// Is this process the scheduler leader?
    pub fn is_scheduler_leader(&self) -> bool {
        self.scheduler_leader.load(Ordering::Relaxed)
    }

    /// Count a job refused because the queue (the account's share or all of it) is full.
    pub fn queue_refused(&self, scope: QueueScope) {
        match scope {
            QueueScope::Account => &self.refused_account,
            QueueScope::Global => &self.refused_global,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    /// Count an inbox long-poll (`GET /v1/inbox/messages/wait`, the `inbox_wait` tool)
    /// until the returned guard is dropped.
    pub fn inbox_waiting(&self) -> InboxWaiting<'_> {
        self.inbox_waiting.fetch_add(1, Ordering::Relaxed);
        InboxWaiting(&self.inbox_waiting)
    }

    /// Render the text exposition format.
    pub fn render(&self, now: &Scrape<'_>) -> String {
        let mut s = String::new();
        s.push_str("# HELP capture_jobs Screenshot jobs by status.\n# TYPE capture_jobs gauge\n");
        for st in ["pending", "processing", "done", "failed"] {
            let n = now.jobs_by_status.iter().find(|(k, _)| k == st).map_or(0, |(_, n)| *n);
            let _ = writeln!(s, "capture_jobs{{status=\"{st}\"}} {n}");
        }
        let _ = writeln!(
            s,
            "# HELP capture_queue_depth Tasks waiting for a worker.\n# TYPE capture_queue_depth gauge\ncapture_queue_depth {}",
            now.queue_depth
        );
        let _ = writeln!(
            s,
            "# HELP capture_scheduler_leader 1 when this process runs the scheduler (one leader at a time).\n# TYPE capture_scheduler_leader gauge\ncapture_scheduler_leader {}",
            u8::from(self.is_scheduler_leader())
        );
        s.push_str("# HELP capture_queue_tasks Tasks in the queue by kind and status (queued: waiting; running: claimed by a worker).\n# TYPE capture_queue_tasks gauge\n");
        let mut tasks: Vec<(&str, &str, i64)> = vec![("screenshot", "queued", 0), ("screenshot", "running", 0)];
        for (kind, status, n) in now.tasks_by_status {
            match tasks.iter_mut().find(|(k, st, _)| k == kind && st == status) {
                Some(t) => t.2 = *n,
                None => tasks.push((kind, status, *n)),
            }
        }
        for (kind, status, n) in tasks {
            let _ = writeln!(s, "capture_queue_tasks{{kind=\"{kind}\",status=\"{status}\"}} {n}");
        }
        s.push_str("# HELP capture_queue_max_pending Bound on pending + processing screenshot jobs (0: unbounded).\n# TYPE capture_queue_max_pending gauge\n");
        for (scope, limit) in [("global", now.queue_limits.global), ("account", now.queue_limits.per_account)] {
            let _ = writeln!(s, "capture_queue_max_pending{{scope=\"{scope}\"}} {}", limit.unwrap_or(0));
        }
        s.push_str("# HELP capture_queue_refused_total Jobs refused because the queue was full (account: 429 QUEUE_FULL; global: 503).\n# TYPE capture_queue_refused_total counter\n");
        for (scope, n) in [("account", &self.refused_account), ("global", &self.refused_global)] {
            let _ = writeln!(s, "capture_queue_refused_total{{scope=\"{scope}\"}} {}", n.load(Ordering::Relaxed));
        }
        let _ = writeln!(
            s,
            "# HELP capture_inbox_waiting Inbox long-polls waiting for mail on this process.\n# TYPE capture_inbox_waiting gauge\ncapture_inbox_waiting {}",
            self.inbox_waiting.load(Ordering::Relaxed)
        );
        s.push_str("# HELP capture_browser_restarts_total Browser processes restarted, by reason (crash, recycle, memory, health).\n# TYPE capture_browser_restarts_total counter\n");
        for reason in capture_browser::RestartReason::ALL {
            let n = now.browser.as_ref().map_or(0, |b| b.restarts(reason));
            let _ = writeln!(s, "capture_browser_restarts_total{{reason=\"{}\"}} {n}", reason.as_str());
        }
        if let Some(b) = &now.browser {
            s.push_str("# HELP capture_browser_memory_bytes Memory of each browser's process tree (sum of PSS, else RSS), sampled every 2 s.\n# TYPE capture_browser_memory_bytes gauge\n");
            for (slot, bytes) in b.memory.iter().enumerate() {
                if let Some(bytes) = bytes {
                    let _ = writeln!(s, "capture_browser_memory_bytes{{browser=\"{slot}\"}} {bytes}");
                }
            }
            let _ = writeln!(
                s,
                "# HELP capture_browser_memory_limit_bytes CAPTURE_BROWSER_MAX_MEMORY (0: off).\n# TYPE capture_browser_memory_limit_bytes gauge\ncapture_browser_memory_limit_bytes {}",
                b.memory_limit.unwrap_or(0)
            );
        }
        s.push_str("# HELP capture_capture_seconds Time to capture a page, browser work and storage.\n# TYPE capture_capture_seconds histogram\n");
        for (i, b) in BUCKETS.iter().enumerate() {
            let _ = writeln!(
                s,
                "capture_capture_seconds_bucket{{le=\"{b}\"}} {}",
                self.capture_buckets[i].load(Ordering::Relaxed)
            );
        }
        let count = self.capture_count.load(Ordering::Relaxed);
        let _ = writeln!(s, "capture_capture_seconds_bucket{{le=\"+Inf\"}} {count}");
        let _ =
            writeln!(s, "capture_capture_seconds_sum {}", self.capture_sum_ms.load(Ordering::Relaxed) as f64 / 1000.0);
        let _ = writeln!(s, "capture_capture_seconds_count {count}");
        s.push_str("# HELP capture_monitor_lag_seconds From a monitor's due time to its check's start (the scheduler leader's).\n# TYPE capture_monitor_lag_seconds histogram\n");
        for (i, b) in LAG_BUCKETS.iter().enumerate() {
            let _ = writeln!(
                s,
                "capture_monitor_lag_seconds_bucket{{le=\"{b}\"}} {}",
                self.monitor_lag_buckets[i].load(Ordering::Relaxed)
            );
        }
        let runs = self.monitor_runs.load(Ordering::Relaxed);
        let _ = writeln!(s, "capture_monitor_lag_seconds_bucket{{le=\"+Inf\"}} {runs}");
        let _ = writeln!(
            s,
            "capture_monitor_lag_seconds_sum {}",
            self.monitor_lag_sum_ms.load(Ordering::Relaxed) as f64 / 1000.0
        );
        let _ = writeln!(s, "capture_monitor_lag_seconds_count {runs}");
        let _ = writeln!(
            s,
            "# HELP capture_captures_total Captures finished by this process.\n# TYPE capture_captures_total counter"
        );
        let _ =
            writeln!(s, "capture_captures_total{{outcome=\"done\"}} {}", self.captures_done.load(Ordering::Relaxed));
        let _ = writeln!(
            s,
            "capture_captures_total{{outcome=\"failed\"}} {}",
            self.captures_failed.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP capture_capture_retries_total Transient browser failures retried.\n# TYPE capture_capture_retries_total counter\ncapture_capture_retries_total {}",
            self.capture_retries.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP capture_captures_handed_back_total Captures handed back to the queue so another account could have a slot.\n# TYPE capture_captures_handed_back_total counter\ncapture_captures_handed_back_total {}",
            self.captures_handed_back.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            s,
            "# HELP capture_forwarded_tool_calls_seconds Tool calls forwarded to the node holding their session.\n# TYPE capture_forwarded_tool_calls_seconds summary\ncapture_forwarded_tool_calls_seconds_sum {}\ncapture_forwarded_tool_calls_seconds_count {}",
            self.forwarded_micros.load(Ordering::Relaxed) as f64 / 1e6,
            self.forwarded_calls.load(Ordering::Relaxed)
        );
        s.push_str("# HELP capture_http_requests_total HTTP requests by method, route and status.\n# TYPE capture_http_requests_total counter\n");
        let m = self.http.lock().unwrap_or_else(|p| p.into_inner());
        for ((method, route, status), n) in m.iter() {
            let _ = writeln!(
                s,
                "capture_http_requests_total{{method=\"{method}\",route=\"{route}\",status=\"{status}\"}} {n}"
            );
        }
        s
    }
}
