//! The test helpers of Capture's two service suites, in one dev-only crate both depend on:
//! the in-process suite (`crates/capture-server/tests/service`, which starts the application
//! in the test process) and the multi-process one (`crates/capture-cli/tests`, which spawns the
//! `capture` binary). Each suite has its own `TestApp` harness; what they share is here and
//! works on any harness through the [`common::Api`] and [`common::Harness`] traits: the
//! database choice, the HTTP calls, fixture sites, waiting with a deadline, and the helpers of
//! each resource's scenarios.

pub mod common;

pub mod ads;
pub mod audits;
pub mod campaigns;
pub mod captures;
pub mod corpus;
pub mod hardening;
pub mod inbox_fixture;
pub mod members_site;
pub mod moto;
pub mod oauth;
pub mod proxies;
pub mod runs;
pub mod sse;
pub mod visitor;
pub mod webhooks;
