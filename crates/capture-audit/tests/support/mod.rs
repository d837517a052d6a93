//! Test helpers: a minimal DevTools driver for running the collection scripts for real.

pub mod chrome;
