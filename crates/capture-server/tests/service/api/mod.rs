//! The REST contract: quotas, idempotency, captures in Chromium, uploads, sharing, streams,
//! webhooks, audits, ads, campaigns and their suppressions, runs, S3 storage, cursor pages, and
//! the hardening around them.

mod ads;
mod api_errors;
mod audits;
mod bulk;
mod campaigns;
mod capture_options;
mod captures;
mod hardening;
mod hardening3;
mod inbox;
mod lists;
pub(crate) mod live_view;
mod monitors;
mod nodes;
mod page_text;
mod profiles;
mod proxies;
mod quotas;
mod real_web;
mod render_links;
mod runs;
mod s3;
mod storage;
mod suppressions;
mod traces;
mod video;
mod webhooks;
