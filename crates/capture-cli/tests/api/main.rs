//! End-to-end tests of the real `capture` binary: REST contract, quotas, idempotency,
//! captures in Chromium, uploads, sharing, streams, durability — on SQLite and PostgreSQL —
//! and several nodes on one PostgreSQL database.

mod helpers;
#[path = "../web/visitor.rs"]
#[allow(dead_code)]
mod visitor;

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
#[allow(dead_code)]
mod inbox_fixture;
mod nodes;
mod quotas;
mod runs;
mod s3;
mod webhooks;
