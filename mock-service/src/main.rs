//! Command-line entry point of the mock assisted-service: serves until
//! SIGTERM or Ctrl-C, then exits within a second, removing the temporary
//! data directory it made.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use mock_assisted_service::{MockConfig, MockServer, Seed};

/// A mock assisted-service for the boot reporter: the real API rules, the
/// boot-reporter enhancement, fault injection and a live status page.
#[derive(Parser, Debug)]
#[command(version)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: String,
    /// Seed JSON file; without it the mock starts empty (see POST /admin/seed).
    #[arg(long)]
    seed: Option<PathBuf>,
    /// Where uploaded bundles are stored; default: a new temporary directory.
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Behave like today's upstream: no boot stages, no host_boot logs type.
    #[arg(long)]
    upstream_compat: bool,
    /// Answer like the hosted service: a refused agent token gets 404
    /// "Object Not Found".
    #[arg(long)]
    hosted: bool,
    /// Run upstream's stage timeouts this many times faster (1 = real time;
    /// 600 makes Rebooting's 40 min take 4 s).
    #[arg(long, default_value_t = 1.0)]
    time_scale: f64,
}

/// Time given to requests in flight after SIGTERM or Ctrl-C: a blocking
/// read of a big bundle is not waited for past it, so the mock is gone
/// within a second of the signal.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(300);

/// The data directory the mock made for itself (no `--data-dir`), removed
/// when the mock exits, on an error too.
struct OwnTempDir(PathBuf);

impl Drop for OwnTempDir {
    fn drop(&mut self) {
        if let Err(err) = std::fs::remove_dir_all(&self.0) {
            if err.kind() != std::io::ErrorKind::NotFound {
                eprintln!("removing {}: {err}", self.0.display());
            }
        }
    }
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let args = Args::parse();
    let seed = match &args.seed {
        Some(p) => Seed::from_file(p)?,
        None => Seed::default(),
    };
    let (data_dir, _own) = if let Some(d) = args.data_dir.clone() {
        (d, None)
    } else {
        let d =
            std::env::temp_dir().join(format!("mock-assisted-service-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        (d.clone(), Some(OwnTempDir(d)))
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the runtime")?;
    let served = runtime.block_on(serve(&args, seed, data_dir));
    // Blocking reads still running (a big bundle being listed) are not
    // waited for: the directory they read is removed next.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    served
}

async fn serve(args: &Args, seed: Seed, data_dir: PathBuf) -> anyhow::Result<()> {
    tracing::info!("storing bundles under {}", data_dir.display());
    let mut config = MockConfig::new(seed, data_dir);
    config.upstream_compat = args.upstream_compat;
    config.hosted = args.hosted;
    config.time_scale = args.time_scale;
    let server = MockServer::start(&args.listen, config).await?;
    let signalled = shutdown_signal()?;
    {
        // Scripts wait for this exact line to learn the port.
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", server.base_url())?;
        out.flush()?;
    }
    signalled.await;
    tracing::info!("shutting down");
    if tokio::time::timeout(SHUTDOWN_GRACE, server.shutdown())
        .await
        .is_err()
    {
        tracing::info!("requests still in flight after {SHUTDOWN_GRACE:?}: dropped");
    }
    Ok(())
}

/// Resolves at SIGTERM or Ctrl-C. Both handlers are installed when this is
/// called, not when it is first polled: a signal sent as soon as the
/// "listening on" line is read must already find them.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
