//! End-to-end tests of the real `capture` binary where one process is not enough: kill -9
//! and restarts (durability, leases, owed deliveries), several nodes on one PostgreSQL
//! database, the inbound mail server, the service's own process (logs, CPU, Chromium's
//! renderers, PATH), and `capture serve` refusing a bad configuration. The rest of the
//! service's tests run in-process: `crates/capture-server/tests/service/`; the helpers both
//! suites use are the `capture-testkit` crate.

mod helpers;

mod ads;
mod api_errors;
mod audits;
mod backpressure;
mod campaigns;
mod captures;
mod cluster;
mod durability;
mod hardening;
mod inbox;
mod nodes;
mod runs;
mod webhooks;
