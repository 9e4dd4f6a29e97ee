//! Command-line entry point of the mock assisted-service.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;

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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
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
    let data_dir = if let Some(d) = args.data_dir {
        d
    } else {
        let d =
            std::env::temp_dir().join(format!("mock-assisted-service-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        d
    };
    tracing::info!("storing bundles under {}", data_dir.display());
    let mut config = MockConfig::new(seed, data_dir);
    config.upstream_compat = args.upstream_compat;
    config.hosted = args.hosted;
    config.time_scale = args.time_scale;
    let server = MockServer::start(&args.listen, config).await?;
    {
        // Scripts wait for this exact line to learn the port.
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", server.base_url())?;
        out.flush()?;
    }
    shutdown_signal().await;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
