//! Prometheus metrics kept in memory: HTTP requests by route and status, capture time
//! histogram, capture outcomes. Jobs by status, queue depth and browser restarts are
//! read at scrape time. `capture_scheduler_leader` says whether this process runs the
//! scheduler now (one node at a time on PostgreSQL).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Upper bounds (seconds) of the capture-time histogram.
const BUCKETS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0];

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
    scheduler_leader: AtomicBool,
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

    /// Record whether this process is the scheduler leader.
    pub fn set_scheduler_leader(&self, leader: bool) {
        self.scheduler_leader.store(leader, Ordering::Relaxed);
    }

    /// Is this process the scheduler leader?
    pub fn is_scheduler_leader(&self) -> bool {
        self.scheduler_leader.load(Ordering::Relaxed)
    }

    /// Render the text exposition format.
    pub fn render(&self, jobs_by_status: &[(String, i64)], queue_depth: i64, browser_restarts: u64) -> String {
        let mut s = String::new();
        s.push_str("# HELP capture_jobs Screenshot jobs by status.\n# TYPE capture_jobs gauge\n");
        for st in ["pending", "processing", "done", "failed"] {
            let n = jobs_by_status.iter().find(|(k, _)| k == st).map_or(0, |(_, n)| *n);
            let _ = writeln!(s, "capture_jobs{{status=\"{st}\"}} {n}");
        }
        let _ = writeln!(
            s,
            "# HELP capture_queue_depth Tasks waiting for a worker.\n# TYPE capture_queue_depth gauge\ncapture_queue_depth {queue_depth}"
        );
        let _ = writeln!(
            s,
            "# HELP capture_browser_restarts_total Browser processes restarted (crash or recycle).\n# TYPE capture_browser_restarts_total counter\ncapture_browser_restarts_total {browser_restarts}"
        );
        let _ = writeln!(
            s,
            "# HELP capture_scheduler_leader 1 when this process runs the scheduler (one leader at a time).\n# TYPE capture_scheduler_leader gauge\ncapture_scheduler_leader {}",
            u8::from(self.is_scheduler_leader())
        );
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
