//! Command-line surface: one clap derive struct per subcommand, and the
//! dispatch from a parsed command line to the command that runs it.
//!
//! The top layer: nothing else imports it. Only flags live here; `run`'s are
//! handed to `config` as plain [`Flags`], which merges them with the
//! environment and the discovery contract, so every field is optional.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::Flags;
use crate::offline::args::parse_duration;

#[derive(Debug, Parser)]
#[command(
    name = "assisted-boot-reporter",
    version,
    about,
    propagate_version = true
)]
pub struct Cli {
    /// Verbosity of the agent's own log (to stderr, i.e. the journal).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "info",
        env = "ASSISTED_BOOT_REPORTER_LOG_LEVEL"
    )]
    pub log_level: LogLevel,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
// Parsed once at start-up: boxing the big variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Report the boot stage and ship boot logs until done (what the systemd unit runs).
    Run(RunArgs),
    /// Print the Ignition fragment that installs the reporter on one host
    /// (binary, unit, discovery contract), for assisted-service or an admin.
    Ignition(crate::ignition::IgnitionArgs),
    /// Write the same host_boot bundle the agent ships to a file, with no
    /// service involved (for a support engineer on the host).
    Collect(crate::offline::CollectArgs),
    /// Print what matters in a host_boot bundle: collectors, failed units,
    /// the bootstrap services' timeline, redactions.
    Inspect(crate::offline::InspectArgs),
}

/// Runs the parsed command line. `Err` only when `run` cannot even start
/// (the caller logs it and exits like a runtime failure).
pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Run(args) => crate::agent::run(args.into()),
        // An admin tool, not the boot-time agent: its failures exit non-zero.
        Command::Ignition(args) => Ok(crate::ignition::run(&args)),
        // Interactive tools too: their failures exit 1 (`offline::EXIT_TOOL_FAILURE`).
        Command::Collect(args) => Ok(crate::offline::collect_command(&args)),
        Command::Inspect(args) => Ok(crate::offline::inspect_command(&args)),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

/// Flags of `run`. Every value may also come from the environment or the
/// discovery contract directory; see `docs/discovery-contract.md`.
#[derive(Debug, Default, Clone, Args)]
pub struct RunArgs {
    /// Discovery contract directory written by the discovery agent
    /// [default: <root>/etc/assisted-boot-reporter].
    #[arg(long, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,

    /// The agent's own bookkeeping (boot ledger) [default: <root>/var/lib/assisted-boot-reporter].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Sysroot prefix for every host file read or removed.
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,

    /// assisted-service base URL, e.g. https://api.openshift.com (env ASSISTED_SERVICE_URL).
    #[arg(long, value_name = "URL")]
    pub service_url: Option<String>,

    /// File holding the pull secret JSON or a bare agent token (env PULL_SECRET_TOKEN
    /// carries the value itself). Never pass a secret as an argument: any user can read it.
    #[arg(long, value_name = "PATH")]
    pub pull_secret_file: Option<PathBuf>,

    /// Infra-env of the host (env INFRA_ENV_ID).
    #[arg(long, value_name = "UUID")]
    pub infra_env_id: Option<String>,

    /// The host's ID (env HOST_ID).
    #[arg(long, value_name = "UUID")]
    pub host_id: Option<String>,

    /// The cluster's ID when known; otherwise learnt from the service (env CLUSTER_ID).
    #[arg(long, value_name = "UUID")]
    pub cluster_id: Option<String>,

    /// Time between bundles, e.g. 10m (env LOG_SEND_FREQUENCY_IN_MINUTES, in minutes) [default: 10m].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub upload_interval: Option<Duration>,

    /// How long the reporter runs on a boot before giving up, e.g. 1h
    /// (env SERVICE_TIMEOUT_MINUTES, in minutes) [default: 1h].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub timeout: Option<Duration>,

    /// Longest delay of the first bundle (after the stage report) and of the
    /// last one, drawn per host so hosts started together do not upload
    /// together; 0 sends them at once (env LOG_SEND_SPREAD_SECONDS, in
    /// seconds) [default: 1m].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub upload_spread: Option<Duration>,

    /// CA bundle (PEM) to trust for the service [default: the contract's CA file when present].
    #[arg(long, value_name = "PATH")]
    pub cacert: Option<PathBuf>,

    /// Skip TLS verification of the service. Logged as a warning on every start.
    #[arg(long)]
    pub insecure: bool,

    /// Where kubelet answers "ok" once healthy [default: http://127.0.0.1:10248/healthz].
    #[arg(long, value_name = "URL")]
    pub kubelet_healthz_url: Option<String>,

    /// The logs type bundles are uploaded as [default: host_boot].
    #[arg(long, value_name = "TYPE")]
    pub logs_type: Option<String>,

    /// Longest a single collector command may run before it is killed [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub command_timeout: Option<Duration>,

    /// First retry delay of a failed request; doubles up to --retry-max-delay [default: 1s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub retry_initial_delay: Option<Duration>,

    /// Cap of the retry delay (a Retry-After above it is capped too) [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub retry_max_delay: Option<Duration>,

    /// Attempts per request before giving up until the next cycle [default: 5].
    #[arg(long, value_name = "N")]
    pub retry_attempts: Option<u32>,

    /// Time limit of one HTTP request, upload included [default: 5m].
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Option<Duration>,

    /// Proxy for an http:// service URL (env HTTP_PROXY) [default: the
    /// discovery contract's proxy.env]. A password here is visible to every
    /// user of the host: put it in proxy.env instead.
    #[arg(long, value_name = "URL")]
    pub http_proxy: Option<String>,

    /// Proxy for an https:// service URL, tunnelled with CONNECT (env HTTPS_PROXY).
    #[arg(long, value_name = "URL")]
    pub https_proxy: Option<String>,

    /// Comma-separated hosts, domains, IP addresses and CIDRs reached
    /// without the proxy, or `*` (env NO_PROXY).
    #[arg(long, value_name = "LIST")]
    pub no_proxy: Option<String>,
}

impl From<RunArgs> for Flags {
    fn from(args: RunArgs) -> Self {
        let RunArgs {
            config_dir,
            state_dir,
            root,
            service_url,
            pull_secret_file,
            infra_env_id,
            host_id,
            cluster_id,
            upload_interval,
            timeout,
            upload_spread,
            cacert,
            insecure,
            kubelet_healthz_url,
            logs_type,
            command_timeout,
            retry_initial_delay,
            retry_max_delay,
            retry_attempts,
            request_timeout,
            http_proxy,
            https_proxy,
            no_proxy,
        } = args;
        Flags {
            config_dir,
            state_dir,
            root,
            service_url,
            pull_secret_file,
            infra_env_id,
            host_id,
            cluster_id,
            upload_interval,
            timeout,
            upload_spread,
            cacert,
            insecure,
            kubelet_healthz_url,
            logs_type,
            command_timeout,
            retry_initial_delay,
            retry_max_delay,
            retry_attempts,
            request_timeout,
            http_proxy,
            https_proxy,
            no_proxy,
        }
    }
}

pub fn init_tracing(level: LogLevel) {
    let level = match level {
        LogLevel::Error => tracing::Level::ERROR,
        LogLevel::Warn => tracing::Level::WARN,
        LogLevel::Info => tracing::Level::INFO,
        LogLevel::Debug => tracing::Level::DEBUG,
        LogLevel::Trace => tracing::Level::TRACE,
    };
    // journald adds its own timestamps; under a terminal the time helps.
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        // Every log line passes the redactor, like everything else emitted.
        .with_writer(crate::redact::log_writer)
        // journald and log greps want plain text.
        .with_ansi(false)
        .with_target(false);
    if std::env::var_os("JOURNAL_STREAM").is_some() {
        builder.without_time().init();
    } else {
        builder.init();
    }
}
