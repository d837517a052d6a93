//! Helpers shared with the multi-process tests of `crates/capture-cli/tests/api`, which
//! include this folder by path (they have no tests of their own).

pub mod ads;
pub mod audits;
pub mod campaigns;
pub mod captures;
pub mod hardening;
#[allow(dead_code)]
pub mod inbox_fixture;
pub mod moto;
pub mod oauth;
pub mod runs;
pub mod sse;
pub mod webhooks;
