//! assisted-boot-reporter: tells assisted-service which boot an installing host
//! reached and ships its boot logs, without ever hurting the installation.
//!
//! The binary in `main.rs` is a thin shell around [`agent::run`]; everything is
//! in this library so that tests and fuzz targets can reach the parsers.

pub mod agent;
pub mod api;
pub(crate) mod assemble;
pub mod bounded_read;
pub(crate) mod bundle;
pub(crate) mod child;
pub mod cleanup;
pub mod cli;
pub mod collect;
pub mod config;
pub mod contract;
pub mod diagnose;
pub(crate) mod dns;
pub(crate) mod flow;
pub(crate) mod gzip;
pub(crate) mod ignition;
pub(crate) mod instance;
pub(crate) mod kubelet;
pub mod ledger;
pub(crate) mod logging;
pub(crate) mod newlines;
pub(crate) mod proxy;
pub mod records;
pub mod redact;
pub(crate) mod retry;
pub(crate) mod rootfs;
pub(crate) mod secret;
pub mod stage;
pub mod tools;
pub(crate) mod upload;
