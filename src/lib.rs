//! assisted-boot-reporter: tells assisted-service which boot an installing host
//! reached and ships its boot logs, without ever hurting the installation.
//!
//! The binary in `main.rs` is a thin shell around [`agent::run`]; everything is
//! in this library so that tests and fuzz targets can reach the parsers.

pub mod agent;
pub mod api;
pub mod assemble;
pub mod bounded_read;
pub mod bundle;
pub mod child;
pub mod cleanup;
pub mod cli;
pub mod collect;
pub mod config;
pub mod contract;
pub mod diagnose;
pub mod flow;
pub mod gzip;
pub mod ignition;
pub mod instance;
pub mod kubelet;
pub mod ledger;
pub mod logging;
pub mod offline;
pub mod proxy;
pub mod records;
pub mod redact;
pub mod retry;
pub mod rootfs;
pub mod secret;
pub mod stage;
pub mod upload;
