//! Website audits for Capture: everything about an audit that needs neither the browser
//! pool nor the server.
//!
//! - [`urls`]: normalisation, de-duplication and the crawl's scope;
//! - [`robots`]: robots.txt (RFC 9309) for the `CaptureAudit` user agent;
//! - [`sitemap`]: sitemaps and sitemap indexes, plain or gzip;
//! - [`crawl`]: the breadth-first frontier with its crawl-trap defences;
//! - [`fetch`] and [`probe`]: the only I/O here — robots.txt, sitemaps, link checks and
//!   page probes over a caller-configured `reqwest::Client`;
//! - [`axe`]: axe-core, vendored and compiled in (`CAPTURE_AXE_PATH` may replace it);
//! - [`probe`]: what a crawled URL answers (status, final URL, canonical address, links)
//!   before it costs a place in the page budget;
//! - [`collect`]: the JavaScript the browser runs in an audited page and the types of what
//!   it returns;
//! - [`checks`]: page and site facts → findings with evidence;
//! - [`score`]: category scores 0–100 (documented formula, also in `docs/audits.md`);
//! - [`report`]: the report model (JSON) and its HTML page;
//! - [`run`]: one audit from robots.txt to report, the browser supplied by the caller;
//! - `fixtures` (feature `fixtures`): a local website with known defects for tests.

pub mod axe;
pub mod checks;
pub mod collect;
pub mod crawl;
pub mod fetch;
#[cfg(feature = "fixtures")]
pub mod fixtures;
pub mod probe;
pub mod report;
pub mod robots;
pub mod run;
pub mod score;
pub mod sitemap;
pub mod urls;
