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
//! Before anything runs, the secrets are taken out of the environment (no
//! child inherits them, not even an interrupted cleanup's `systemctl`) and
//! the state directory is locked (one reporter per host). A stop signal
//! ends the agent within [`STOP_BOUND`], whatever it is doing: every child
//! it runs is killed with its process group.
//!
//! The files, by job: `reporter.rs` holds the state and the main loop,
//! `progress.rs` what is read from and told to the service (stage,
//! progress info, the update cap), `bundles.rs` the bundle cycle,
//! `finish.rs` the end of the job and cleanup, `spread.rs` the jitter and
//! per-host delays that keep hosts installed together apart.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::config::{Config, ConfigError, Flags, Paths};
use crate::instance::{self, Lock};
use finish::{finish_interrupted_cleanup, EXIT_WAIT};
use reporter::Reporter;

mod bundles;
mod finish;
mod progress;
mod reporter;
mod spread;

/// A stop signal ends the process within this: children are killed at once,
/// then the spent budget is checkpointed and the exit waits for blocking
/// threads (`finish::EXIT_WAIT`, 2 s) at most; the rest is slack for the
/// checkpoint's fsync.
pub const STOP_BOUND: Duration = Duration::from_secs(3);

/// `run`: reports the boot and ships bundles until the job is over. Every
/// problem on the way is logged; `Err` only when it cannot even start
/// (`main` then exits 0 all the same: the boot is never failed).
pub(crate) fn run(flags: Flags) -> anyhow::Result<()> {
    // First, while the process has a single thread (removing variables is
    // only sound then), and on every path.
    let env = scrub_environment();
    let state_dir = Paths::resolve(&flags).state_dir;
    let Lock::Held(lock) = instance::take(&state_dir) else {
        tracing::warn!(
            "another assisted-boot-reporter is running with the state directory {} (it holds the lock on it); this one exits",
            state_dir.display()
        );
        return Ok(());
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_service(flags, &env));
    // However the run ended, no child outlives the agent: a bundle cut at
    // the deadline leaves its collector's command behind otherwise.
    crate::child::stop_all();
    // A collector thread blocked on a hung file read must not hold the exit.
    runtime.shutdown_timeout(EXIT_WAIT);
    drop(lock);
    Ok(())
}

/// The environment as it was at start, for the configuration, with the
/// secrets the upstream unit's environment may carry (the token, proxy URLs
/// with a password) removed from the process's own: every command the agent
/// runs would inherit them.
fn scrub_environment() -> HashMap<String, String> {
    let env: HashMap<String, String> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    let secrets = crate::contract::env::HTTP_PROXY
        .iter()
        .chain(&crate::contract::env::HTTPS_PROXY)
        .chain([&crate::contract::env::TOKEN]);
    for name in secrets {
        std::env::remove_var(name);
    }
    env
}

/// SIGTERM (shutdown, reboot, `systemctl stop`) and SIGINT.
struct StopSignals {
    term: Signal,
    int: Signal,
}

impl StopSignals {
    fn install() -> Option<Self> {
        Some(Self {
            term: signal(SignalKind::terminate()).ok()?,
            int: signal(SignalKind::interrupt()).ok()?,
        })
    }

    /// The next stop signal's name.
    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

async fn run_service(args: Flags, env: &HashMap<String, String>) {
    let Some(mut stop) = StopSignals::install() else {
        tracing::error!("cannot install signal handlers; exiting");
        return;
    };
    let paths = Paths::resolve(&args);
    if crate::cleanup::cleanup_interrupted(&paths.state_dir) {
        tokio::select! {
            () = finish_interrupted_cleanup(paths) => {}
            signal = stop.next() => {
                tracing::info!("stopping on {signal} while finishing the interrupted cleanup; the next start finishes it");
                crate::child::stop_all();
            }
        }
        return;
    }
    let getenv = |name: &str| env.get(name).cloned();
    let config = match Config::resolve(&args, &getenv) {
        Ok(config) => config,
        // Not configured (yet, or any more: cleanup removes the contract):
        // nothing is wrong with the agent, it has nothing to do. One line
        // names every value missing and every place looked in.
        Err(err @ ConfigError::Missing { .. }) => {
            let dir = &paths.config_dir;
            let absent = if dir.exists() {
                String::new()
            } else {
                format!("; {} does not exist", dir.display())
            };
            tracing::warn!("{err}{absent}; nothing can be reported, exiting");
            return;
        }
        Err(err) => {
            tracing::error!("{err}; nothing can be reported, exiting");
            return;
        }
    };
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
    let stopped = tokio::select! {
        () = reporter.run() => None,
        signal = stop.next() => Some(signal),
    };
    if let Some(signal) = stopped {
        if signal == "SIGTERM" {
            tracing::info!("stopping on SIGTERM (shutdown or reboot); the next boot continues within the same time budget");
        } else {
            tracing::info!("stopping on {signal}");
        }
        let killed = crate::child::stop_all();
        if killed > 0 {
            tracing::info!("killed {killed} running command(s) with their process groups");
        }
        // Whatever was in flight is dropped; the spent budget is kept so a
        // reboot never gives time back. Not once the cleanup began: it is
        // removing the ledger, and finishes on the next start if cut short.
        if !reporter.cleanup_begun {
            reporter.checkpoint();
        }
    }
}
