//! Building and running the application: the router, the roles (api, worker,
//! scheduler), graceful shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router, middleware};
use capture_browser::{BrowserConfig, BrowserPool, MemoryLimit};
use capture_core::egress::EgressPolicy;
use capture_store::{Listener, Store};
use serde_json::json;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::blob::{BlobStore, LocalBlobStore, S3BlobStore};
use crate::config::{Config, Storage};
use crate::crypto::MasterKey;
use crate::http::error::{method_not_allowed, unknown_route};
use crate::http::{authenticate, request};
pub use crate::start_error::StartError;
use crate::state::{AppState, Inner};
use crate::{docs, jobs, screenshots};

/// The full HTTP router for `state`.
pub fn router(state: AppState) -> Router {
    router_with(state, Router::new())
}

/// The full HTTP router with `extra` routes inside the same layers (request id, error bodies,
/// the catch-panic guard): tests mount a route that panics to see what a client gets.
pub fn router_with(state: AppState, extra: Router<AppState>) -> Router {
    let apis = crate::routes::apis();
    let authed = crate::routes::merged(apis.api_key)
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate::require_api_key));
    // The balance and the inbox also accept the OAuth session of the CLI and MCP clients.
    let account = crate::routes::merged(apis.api_key_or_oauth)
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate::require_api_key_or_oauth));
    // The PDF download is the website's too: a Bearer key or the session cookie.
    let web_app = crate::routes::merged(apis.api_key_or_session).route_layer(middleware::from_fn_with_state(
        state.clone(),
        crate::web::base::session::require_api_key_or_session,
    ));
    let upload_limit = state.cfg.http.max_upload_bytes + 64 * 1024;
    Router::new()
        .merge(authed)
        .merge(account)
        .merge(web_app)
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/files/{name}", get(screenshots::serve_file))
        .route("/s/{token}", get(screenshots::share_page))
        .merge(crate::liveview::public_router())
        .merge(crate::routes::merged(apis.own_auth))
        .merge(crate::audits::public_router())
        .merge(crate::campaigns::public_router())
        .merge(docs::router())
        .merge(crate::llms::router())
        .merge(crate::web::router())
        .merge(crate::oauth::router())
        .merge(crate::mcp::router(state.clone()))
        .merge(crate::automation::remote::router())
        .merge(crate::profiles::internal_router())
        .merge(extra)
        .fallback(unknown_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(upload_limit))
        .layer(middleware::from_fn(request::organization_id))
        // Inside the request id: a panic becomes an error it renders with the id.
        .layer(middleware::from_fn(request::catch_panic))
        .layer(middleware::from_fn_with_state(state.clone(), request::request_id))
        .with_state(state)
}

async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

async fn readyz(State(state): State<AppState>) -> Response {
    let db = match tokio::time::timeout(Duration::from_secs(3), state.store.ping()).await {
        Ok(Ok(())) => "ok".to_string(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readyz: database check failed");
            "unavailable".into()
        }
        Err(_) => "timeout".into(),
    };
    let browser = match &state.browser.pool {
        None => "not-running (no worker role)".to_string(),
        Some(pool) => match pool.check().await {
            Ok(()) => "ok".into(),
            Err(e) => {
                tracing::warn!(error = %e, "readyz: browser check failed");
                "unavailable".into()
            }
        },
    };
    let storage = match tokio::time::timeout(Duration::from_secs(3), state.blobs.check()).await {
        Ok(Ok(())) => "ok".to_string(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readyz: storage check failed");
            "unavailable".into()
        }
        Err(_) => "timeout".into(),
    };
    let ok = db == "ok" && storage == "ok" && (browser == "ok" || state.browser.pool.is_none());
    let status = if ok { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    // Features are reported, not required: a node that cannot mail or make videos still
    // serves everything else, so it stays in the balancer; `unavailableFeatures` says what
    // cannot work (the mail check is the same one as `checks.mail`).
    let mail = crate::features::live_mail_check(&state).await;
    let features = crate::features::report(&state, &mail);
    let (features, unavailable) = crate::features::readiness_json(&features);
    let body = json!({
        "status": if ok {"ready"} else {"unavailable"},
        "checks": {"database": db, "browser": browser, "storage": storage, "mail": mail},
        "features": features,
        "unavailableFeatures": unavailable,
    });
    (status, Json(body)).into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    let by_status = state.store.count_by_status().await.unwrap_or_default();
    let tasks = state.store.tasks_by_status().await.unwrap_or_default();
    let depth = state.store.queue_depth().await.unwrap_or(0);
    let body = state.metrics.render(&crate::metrics::Scrape {
        jobs_by_status: &by_status,
        tasks_by_status: &tasks,
        queue_depth: depth,
        queue_limits: state.cfg.queue.limits(),
        browser: state.browser.pool.as_ref().map(|b| b.stats()),
    });
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response()
}

/// A built application: listener bound, database migrated, browser started.
pub struct Application {
    state: AppState,
    listener: Option<TcpListener>,
    addr: Option<SocketAddr>,
    /// PostgreSQL notifications from every node (None on SQLite).
    notifications: Option<Listener>,
    /// The inbound SMTP server of the saved test inboxes (inbound role).
    inbound: Option<capture_mail::InboundServer>,
}

impl Application {
    /// Prepare every role of `cfg`.
    pub async fn build(cfg: Config) -> Result<Application, StartError> {
        std::fs::create_dir_all(&cfg.data_dir)
            .map_err(|e| StartError::setting(format!("CAPTURE_DATA_DIR {}", cfg.data_dir.display()), e))?;
        let store = Store::connect(&cfg.database.url, cfg.database.pool)
            .await
            .map_err(|e| StartError::setting("CAPTURE_DATABASE_URL", e))?
            .with_gate_slots(cfg.database.create_slots);
        // Listen before serving or claiming, so nothing committed after start-up is missed.
        // Not fatal: without notifications (e.g. behind a transaction-mode pooler) nodes poll.
        let notifications = match store.listener() {
            Some(mut l) => {
                if let Err(e) = l.connect().await {
                    tracing::warn!(error = %e, "LISTEN failed; polling until the listener connects");
                }
                Some(l)
            }
            None => None,
        };
        let master = MasterKey::load_or_create(cfg.master_key.as_deref(), &cfg.data_dir)?;
        let (listener, addr) = if cfg.roles.api {
            let l = TcpListener::bind(&cfg.http.listen)
                .await
                .map_err(|e| StartError::setting(format!("CAPTURE_LISTEN {}", cfg.http.listen), e))?;
            let a = l.local_addr()?;
            (Some(l), Some(a))
        } else {
            (None, None)
        };
        let base_url = cfg
            .http
            .base_url
            .clone()
            .or_else(|| addr.map(|a| format!("http://{a}")))
            .unwrap_or_else(|| format!("http://{}", cfg.http.listen));
        let blobs: Arc<dyn BlobStore> = match &cfg.storage.location {
            Storage::Local(dir) => Arc::new(
                LocalBlobStore::new(dir.clone(), &base_url)
                    .map_err(|e| StartError::setting(format!("CAPTURE_STORAGE_URL {}", dir.display()), e))?,
            ),
            Storage::S3(s3) => {
                let store = S3BlobStore::new(s3, cfg.storage.public_urls, cfg.storage.presign_ttl, &base_url)
                    .map_err(|e| StartError::setting(format!("CAPTURE_STORAGE_URL s3://{}", s3.bucket), e))?;
                // Not fatal: the bucket may come up after us; readiness reports it meanwhile.
                match tokio::time::timeout(Duration::from_secs(10), store.check()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(bucket = %s3.bucket, error = %e, "S3 storage is not usable yet"),
                    Err(_) => tracing::warn!(bucket = %s3.bucket, "S3 storage did not answer in 10s"),
                }
                Arc::new(store)
            }
        };
        // What captures, webhooks and fetches may reach: the allowlist, never the service's
        // own listeners (the API here, or the configured one on a node without the api role;
        // the browser pool adds its egress proxy, the inbound mail server its port).
        let mut egress = EgressPolicy::new(cfg.egress_allow.clone(), Vec::new())
            .with_local_addrs(capture_browser::egress::local_addresses())
            .with_proxy_roots(cfg.proxy_roots.clone());
        if let Some(a) = addr.or_else(|| cfg.http.listen.parse().ok()) {
            egress.deny_listener(a);
        }
        let clock = capture_core::clock::Clock::with_offset_ms(cfg.clock_offset_ms);
        let inbox_arrived = Arc::new(tokio::sync::Notify::new());
        let inbound = if cfg.roles.inbound {
            crate::inbox::inbound::bind(&store, &blobs, &cfg.inbox, clock, inbox_arrived.clone()).await?
        } else {
            None
        };
        match inbound.as_ref().map(crate::inbox::inbound::local_addr) {
            Some(a) => egress.deny_listener(a),
            None if cfg.inbox.listen.port() != 0 => egress.deny_listener(cfg.inbox.listen),
            None => {}
        }
        let browser = if cfg.roles.worker {
            let browsers = cfg.browser.browsers.max(1);
            let pool = BrowserPool::start(BrowserConfig {
                chromium_path: cfg.browser.chromium_path.clone(),
                browsers,
                pages_per_browser: cfg.browser.worker_concurrency.div_ceil(browsers).max(1),
                recycle_after: cfg.browser.recycle_after,
                memory_limit: cfg.browser.max_memory.map(MemoryLimit::new),
                egress: egress.clone(),
                work_dir: cfg.data_dir.join("browser"),
            })
            .await
            .map_err(|e| StartError::Chromium { path: cfg.browser.chromium_path.clone(), cause: e.into() })?;
            // The browsers' egress proxy is one of our listeners too: webhooks, buckets and
            // fetches never reach it, even with its literal address allowed.
            egress.deny_listener(pool.egress_addr());
            Some(pool)
        } else {
            None
        };
        let mailer: Option<Arc<dyn capture_mail::Mailer>> = match &cfg.mail.smtp_url {
            Some(u) => Some(Arc::new(
                capture_mail::SmtpMailer::from_url(u).map_err(|e| StartError::setting("CAPTURE_SMTP_URL", e.0))?,
            )),
            None => None,
        };
        let (job_events, _) = tokio::sync::broadcast::channel(1024);
        if clock.offset_ms() != 0 {
            tracing::warn!(offset_ms = clock.offset_ms(), now = %clock.now(), "CAPTURE_CLOCK_OFFSET: the service's clock is shifted (tests and demos only)");
        }
        let features = crate::state::Features::new(&cfg);
        let traces = crate::traces::Traces::start(&cfg.traces, cfg.clock_offset_ms)
            .map_err(|e| StartError::setting("OTEL_EXPORTER_OTLP_ENDPOINT", e))?;
        if traces.enabled() && !crate::traces::bridged() {
            tracing::warn!(
                "OTEL_EXPORTER_OTLP_ENDPOINT is set, but this process's log subscriber has no trace \
                layer (capture_server::traces::layer): nothing will be traced"
            );
        }
        let video_permits = (cfg.browser.video_memory >> 20) as usize;
        let video_waiting = cfg.browser.worker_concurrency.max(1);
        let state = AppState(Arc::new(Inner {
            cfg,
            store,
            blobs,
            master,
            base_url,
            job_events,
            metrics: Default::default(),
            hot: Default::default(),
            browser: Arc::new(crate::state::Browser {
                pool: browser,
                video_memory: tokio::sync::Semaphore::new(video_permits),
                video_waiting: Arc::new(tokio::sync::Semaphore::new(video_waiting)),
            }),
            egress: Arc::new(egress),
            mail: Arc::new(crate::state::Mail {
                mailer,
                inbound_addr: inbound.as_ref().map(crate::inbox::inbound::local_addr),
            }),
            shutdown: CancellationToken::new(),
            clock,
            wake: Default::default(),
            front_example: std::sync::OnceLock::new(),
            features,
            cluster: Arc::new(crate::cluster::Cluster::new(inbox_arrived)),
            traces,
        }));
        // Where the other nodes reach this one: the setting, else the bound address when it
        // names one interface (not 0.0.0.0 or ::).
        let internal = state
            .cfg
            .cluster
            .internal_url
            .clone()
            .or_else(|| addr.filter(|a| !a.ip().is_unspecified()).map(|a| format!("http://{a}")));
        if let Some(u) = internal {
            let _ = state.cluster.internal_url.set(u);
        }
        Ok(Application { state, listener, addr, notifications, inbound })
    }

    /// The bound address (api role).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.addr
    }

    /// The shared state (for tests and admin tooling).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serve until `shutdown` resolves, then drain: stop accepting, let in-flight captures
    /// finish within `CAPTURE_SHUTDOWN_GRACE`, hand the rest back to the queue, stop Chromium.
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()> + Send + 'static) -> Result<(), StartError> {
        let stop = self.state.shutdown.clone();
        let hard_stop = CancellationToken::new();
        let state = self.state.clone();
        let mut tasks = tokio::task::JoinSet::new();

        if let Some(listener) = self.listener {
            let app = router(state.clone());
            let stop_http = stop.clone();
            tasks.spawn(async move {
                // Peer addresses feed the website's sign-in throttle.
                let app = app.into_make_service_with_connect_info::<SocketAddr>();
                let r =
                    axum::serve(listener, app).with_graceful_shutdown(async move { stop_http.cancelled().await }).await;
                if let Err(e) = r {
                    tracing::error!(error = %e, "HTTP server failed");
                }
            });
        }
        if let Some(server) = self.inbound {
            let (store, settings, st) = (state.store.clone(), state.cfg.inbox.clone(), stop.clone());
            let (blobs, clock) = (state.blobs.clone(), state.clock);
            tasks.spawn(async move { crate::inbox::inbound::run(server, store, blobs, settings, clock, st).await });
        }
        if let Some(url) = crate::cluster::internal_url(&state).filter(|_| state.cfg.roles.api) {
            let (s, st) = (state.clone(), stop.clone());
            tasks.spawn(async move { crate::cluster::advertise(s, url, st).await });
        }
        if let Some(notifications) = self.notifications {
            let (s, st) = (state.clone(), stop.clone());
            tasks.spawn(async move { crate::nodes::listen(s, notifications, st).await });
        }
        let start = jobs::Start { state: state.clone(), stop: stop.clone(), hard_stop: hard_stop.clone() };
        jobs::spawn_all(&mut tasks, &start);
        if state.cfg.roles.scheduler {
            let (s, st) = (state.clone(), stop.clone());
            tasks.spawn(async move { crate::scheduler::run(s, st).await });
        }
        // The front page's live example: this node captures its own API reference.
        if let Some(pool) = state.browser.pool.clone().filter(|_| state.cfg.roles.api) {
            let (s, st) = (state.clone(), stop.clone());
            tasks.spawn(async move { crate::web::front::render_example(s, pool, st).await });
        }

        shutdown.await;
        tracing::info!("shutting down: draining in-flight work");
        stop.cancel();
        // Wake streams so they end; they watch the broadcast channel.
        let grace = state.cfg.queue.shutdown_grace;
        let hs = hard_stop.clone();
        let timer = tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            hs.cancel();
        });
        let drain = async { while tasks.join_next().await.is_some() {} };
        if tokio::time::timeout(grace + Duration::from_secs(10), drain).await.is_err() {
            tracing::warn!("some tasks did not stop in time");
        }
        timer.abort();
        // Live sessions ended with the shutdown signal: let them finalise first.
        crate::runs::live::drain(&state, Duration::from_secs(20)).await;
        crate::automation::drain(&state, Duration::from_secs(20)).await;
        if let Some(pool) = &state.browser.pool {
            pool.shutdown().await;
        }
        state.store.close().await;
        // Last: the spans of everything above.
        state.traces.shutdown().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Resolves on SIGTERM or Ctrl-C. The handlers are installed when this is called (inside the
/// runtime), not when the future is first polled: from then on the signals no longer end the
/// process at once, however late `run` starts waiting for them.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (term, int) = {
        use tokio::signal::unix::{SignalKind, signal};
        (signal(SignalKind::terminate()).ok(), signal(SignalKind::interrupt()).ok())
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! { _ = wait(term) => {}, _ = wait(int) => {} }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
