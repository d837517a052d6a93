//! The service's tests, in one binary: the REST API, the website and OAuth/MCP, each test
//! against an application started in this process on 127.0.0.1 port 0 (see `helpers.rs`),
//! on SQLite and PostgreSQL, with Chromium where the test captures. What needs several
//! processes (kill -9, restarts, more nodes, `capture serve` itself) is tested against the
//! binary in `crates/capture-cli/tests`; the helpers both suites use are `capture-testkit`.

mod helpers;

mod api;
mod oauth;
mod oauth_handoff;
mod oauth_inbox;
mod oauth_isolation;
mod oauth_monitors;
mod oauth_text;
mod web;
