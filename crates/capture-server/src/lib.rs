//! The Capture service: HTTP API (`/v1`, `/api`, share pages, files), capture workers,
//! scheduler, blob storage. `capture serve` wires it up through [`app::Application`].
//!
//! Layout (the README's architecture section says how to add a resource):
//! - the bottom: [`state`], [`config`], [`auth`] (credential → account), [`error`] (the
//!   domain error of every service operation), [`schema`] (one derive, the OpenAPI and MCP
//!   views), [`egress`] (the guarded outbound client), [`blob`], [`crypto`], [`html`];
//! - the HTTP edge: [`http`] (request id, authentication and rate-limit headers, errors,
//!   JSON extractor) and [`idempotency`];
//! - one folder per resource: [`screenshots`], [`webhooks`], [`account`], [`audits`], [`runs`], [`ads`], each with its
//!   `types.rs` (the wire contract), `service.rs` (typed operations) and `mod.rs` (routes);
//! - background work: [`jobs`] (a handler per queue kind), [`scheduler`], [`nodes`];
//! - on top: the website ([`web`]), [`oauth`], [`mcp`], [`docs`] and [`app`].

pub mod account;
pub mod admin;
pub mod ads;
pub mod app;
pub mod audits;
pub mod auth;
pub mod automation;
pub mod blob;
pub mod campaigns;
pub mod cluster;
pub mod commands;
pub mod config;
pub mod crypto;
pub mod docs;
pub mod egress;
pub mod error;
pub mod features;
pub mod hotcache;
pub mod html;
pub mod http;
pub mod idempotency;
pub mod inbox;
pub mod jobs;
pub mod lists;
pub mod liveview;
pub mod llms;
pub mod mcp;
pub mod metrics;
pub mod monitors;
pub mod nodes;
pub mod notice;
pub mod oauth;
pub mod paging;
pub mod profiles;
pub mod proxies;
pub mod queues;
pub mod render;
pub mod routes;
pub mod runs;
pub mod scheduler;
pub mod schema;
pub mod screenshots;
pub mod start_error;
pub mod state;
pub mod storage;
pub mod tool;
pub mod traces;
pub mod web;
pub mod webhooks;

pub use app::{Application, shutdown_signal};
pub use config::Config;
pub use start_error::StartError;
