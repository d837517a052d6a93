//! The Capture service: HTTP API (`/v1`, `/api`, share pages, files), capture workers,
//! scheduler, blob storage. `capture serve` wires it up through [`app::Application`].

pub mod account;
pub mod admin;
pub mod app;
pub mod blob;
pub mod config;
pub mod crypto;
pub mod docs;
pub mod error;
pub mod hotcache;
pub mod mcp;
pub mod metrics;
pub mod nodes;
pub mod oauth;
pub mod pipeline;
pub mod scheduler;
pub mod screenshots;
pub mod state;
pub mod web;
pub mod webhooks;
pub mod worker;

pub use app::{Application, shutdown_signal};
pub use config::Config;
