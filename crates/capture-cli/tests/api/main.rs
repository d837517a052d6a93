//! End-to-end tests of the real `capture` binary: REST contract, quotas, idempotency,
//! captures in Chromium, uploads, sharing, streams, durability — on SQLite and PostgreSQL.

mod helpers;

mod api_errors;
mod backpressure;
mod captures;
mod durability;
mod quotas;
mod s3;
mod webhooks;
