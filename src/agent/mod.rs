//! The reporter's life on one boot: resolve configuration, place this boot in
//! the ledger, tell the install flow from the host and the service, report
//! the boot's stage, ship bundles on an interval, and leave for good (last
//! bundle, credentials gone, unit disabled) once the job is over or the one
//! time budget, counted from the first start on this host, is spent — on
//! whichever boot that happens.
//!
//! Nothing here may fail or delay the installation: every runtime failure is
//! logged and the process exits 0; only usage errors (clap) exit 2.
//!
//! The files, by job: `reporter.rs` holds the state and the main loop,
//! `progress.rs` what is read from and told to the service (stage,
//! progress info, the update cap), `bundles.rs` the bundle cycle,
//! `finish.rs` the end of the job and cleanup, `spread.rs` the jitter and
//! per-host delays that keep hosts installed together apart.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};

use crate::config::{Config, Flags};
use finish::finish_interrupted_cleanup;
use reporter::Reporter;

pub use progress::MAX_PROGRESS_PUTS_PER_BOOT;

mod bundles;
mod finish;
mod progress;
mod reporter;
mod spread;

/// Runtime failures end the process successfully: a failing reporter must
/// never mark anything on the host as failed.
pub const EXIT_RUNTIME_FAILURE: ExitCode = ExitCode::SUCCESS;

/// `run`: reports the boot and ships bundles until the job is over. Never
/// fails the boot: every problem is logged and the process exits 0 (the
/// unit's `Restart=` then has nothing to retry in a loop).
pub fn run(flags: Flags) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_service(flags));
    // A collector thread blocked on a hung command must not hold the exit.
    runtime.shutdown_timeout(Duration::from_secs(2));
    Ok(ExitCode::SUCCESS)
}

async fn run_service(args: Flags) {
    if finish_interrupted_cleanup(&args) {
        return;
    }
    let getenv = |name: &str| std::env::var(name).ok();
    let config = match Config::resolve(&args, &getenv) {
        Ok(config) => config,
        Err(err) => {
            tracing::error!("{err}; nothing can be reported, exiting");
            return;
        }
    };
    // Read once; every command the collectors run would inherit it otherwise.
    // Still single-threaded here (no blocking task has run yet).
    std::env::remove_var(crate::contract::env::TOKEN);
    // A proxy password in the environment would reach every command too.
    for name in crate::contract::env::HTTP_PROXY
        .iter()
        .chain(&crate::contract::env::HTTPS_PROXY)
    {
        std::env::remove_var(name);
    }
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    if config.insecure {
        tracing::warn!(
            "TLS CERTIFICATE VERIFICATION IS DISABLED (--insecure): anyone on the path to {} can read the agent token",
            config.service_url
        );
    }
    let mut reporter = match Reporter::new(config) {
        Ok(reporter) => reporter,
        Err(err) => {
            tracing::error!("{err:#}; exiting");
            return;
        }
    };
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers; exiting");
        return;
    };
    let stopped = tokio::select! {
        () = reporter.run() => false,
        _ = term.recv() => {
            tracing::info!("stopping on SIGTERM (shutdown or reboot); the next boot continues within the same time budget");
            true
        }
        _ = int.recv() => {
            tracing::info!("stopping on SIGINT");
            true
        }
    };
    if stopped {
        // Whatever was in flight is dropped; the spent budget is kept so a
        // reboot never gives time back.
        reporter.checkpoint();
    }
}
