//! The REST contract: quotas, idempotency, captures in Chromium, uploads, sharing, streams,
//! webhooks, audits, ads, campaigns, runs, S3 storage, and the hardening around them.

mod ads;
mod api_errors;
mod audits;
mod campaigns;
mod captures;
mod hardening;
mod inbox;
mod quotas;
mod runs;
mod s3;
mod webhooks;
