//! A mock assisted-service for the boot reporter's tests and demos.
//!
//! It implements the parts of the assisted-service API the reporter talks to,
//! with the real service's rules, as if the boot-reporter enhancement were
//! merged (two new host stages, logs type `host_boot`;
//! docs/upstream-integration.md); `upstream_compat` makes it answer like
//! today's upstream instead. Both run upstream's stage timers (`time_scale`
//! times faster); `hosted` answers like the hosted service. An admin API (no
//! auth, same-site only) seeds state, moves hosts as the installer
//! controller would, injects faults and exposes what was received.

mod admin;
mod api;
mod browse;
mod error;
mod facts;
mod faults;
mod guard;
mod mcs;
mod model;
mod monitor;
mod page;
mod requests;
mod rfc3339;
mod rollup;
mod seed;
mod server;
mod state;
mod store;
mod timeline;
mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use axum::Router;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use faults::{Endpoint, Fault};
pub use model::{AgentToken, Cluster, HostKind, InfraEnv, Role};
pub use seed::{Seed, SeedHost};
pub use store::MAX_UPLOAD_BYTES;

use state::{AppState, Shared};

/// How to run the mock.
#[derive(Clone, Debug)]
pub struct MockConfig {
    pub seed: Seed,
    /// Where uploaded bundles are stored (under `bundles/`).
    pub data_dir: PathBuf,
    /// Behave like today's upstream: no new stages, no `host_boot`.
    pub upstream_compat: bool,
    /// Largest accepted `upfile`; the real service's limit by default.
    pub max_upload_bytes: u64,
    /// Answer like the hosted service (console.redhat.com): a refused agent
    /// token is a 404 "Object Not Found", not a 401.
    pub hosted: bool,
    /// Upstream's stage timeouts run this many times faster (1 = real
    /// time), so tests can watch a host time out in seconds.
    pub time_scale: f64,
}

impl MockConfig {
    /// Enhanced mode and the real upload limit.
    pub fn new(seed: Seed, data_dir: impl Into<PathBuf>) -> Self {
        MockConfig {
            seed,
            data_dir: data_dir.into(),
            upstream_compat: false,
            max_upload_bytes: MAX_UPLOAD_BYTES,
            hosted: false,
            time_scale: 1.0,
        }
    }
}

/// A running mock. Dropping it without `shutdown` also stops it.
pub struct MockServer {
    pub addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl MockServer {
    /// Binds `listener_addr` (e.g. "127.0.0.1:0"), spawns the server on the
    /// current tokio runtime and returns at once.
    pub async fn start(listener_addr: &str, config: MockConfig) -> anyhow::Result<MockServer> {
        anyhow::ensure!(
            config.time_scale.is_finite() && config.time_scale >= 1.0,
            "time scale must be a number >= 1, not {}",
            config.time_scale
        );
        let mode = model::Mode::from_upstream_compat(config.upstream_compat);
        let world = config.seed.into_world(mode)?;
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("creating data dir {}", config.data_dir.display()))?;
        // Stored paths are reported to tests, which may run in another cwd.
        let data_dir = std::fs::canonicalize(&config.data_dir)?;
        let state = Arc::new(AppState {
            mode,
            data_dir,
            max_upload_bytes: config.max_upload_bytes,
            hosted: config.hosted,
            world: Mutex::new(world),
            faults: faults::FaultQueue::default(),
            journal: Arc::default(),
        });
        let listener = tokio::net::TcpListener::bind(listener_addr)
            .await
            .with_context(|| format!("binding {listener_addr}"))?;
        let addr = listener.local_addr()?;
        let (tx, rx) = watch::channel(false);
        tokio::spawn(monitor::run(
            Arc::clone(&state),
            config.time_scale,
            rx.clone(),
        ));
        let task = tokio::spawn(server::serve(listener, app(state), rx));
        Ok(MockServer {
            addr,
            shutdown: tx,
            task,
        })
    }

    /// `http://ADDR`, without the `/api/assisted-install` base path.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting and closes all connections.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.task.await;
    }
}

fn app(state: Shared) -> Router {
    Router::new()
        .nest(model::API_BASE, api::router(Arc::clone(&state)))
        .merge(admin::router())
        .merge(browse::router())
        .merge(page::router())
        .merge(rollup::router())
        .merge(mcs::router())
        .with_state(state)
}
