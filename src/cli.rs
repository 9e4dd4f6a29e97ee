//! Command-line surface: one clap derive struct per subcommand, and the
//! dispatch from a parsed command line to the command that runs it.
//!
//! The top layer: nothing else imports it. Only flags live here; `run`'s are
//! handed to `config` as plain [`Flags`], which merges them with the
//! environment and the discovery contract, so every field is optional.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::settings::{Key, SETTINGS};
use crate::config::Flags;

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
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
// Parsed once at start-up: boxing the big variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Command {
    /// Report the boot stage and ship boot logs until done (what the systemd unit runs).
    Run(RunArgs),
    /// Print the Ignition fragment that installs the reporter on one host
    /// (binary, unit, discovery contract), for assisted-service or an admin.
    Ignition(crate::ignition::IgnitionArgs),
    /// Write the same host_boot bundle the agent ships to a file, with no
    /// service involved (for a support engineer on the host).
    Collect(crate::tools::CollectArgs),
    /// Print what matters in a host_boot bundle: the findings, collectors,
    /// failed units, the bootstrap services' timeline, redactions; or, for
    /// several bundles, a cluster's hosts and the causes they share.
    Inspect(crate::tools::InspectArgs),
    /// List every failure signature the diagnosis recognises: id, category,
    /// severity, the upstream source of the message, an example line.
    Signatures(crate::tools::SignaturesArgs),
    /// Check the configuration `run` would use on this host and print each
    /// setting with where its value came from (flag, environment, contract
    /// file, reporter.conf, default).
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Debug, Subcommand)]
// Parsed once at start-up: boxing the big variant would buy nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum ConfigCommand {
    /// Resolve as `run` does, strictly: a reporter.conf line that means
    /// nothing is an error here (the agent only warns). Takes `run`'s flags.
    Check(RunArgs),
}

/// How a command failed: what `main` decides the exit code from.
#[derive(Debug)]
pub enum Failure {
    /// The boot-time agent could not even start (it logs every later
    /// problem itself). Never fails the boot.
    Agent(anyhow::Error),
    /// An interactive tool (`ignition`, `collect`, `inspect`, `signatures`,
    /// `config check`) failed: its caller must see it.
    Tool(anyhow::Error),
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Run(args) => crate::agent::run(args.into()).map_err(Failure::Agent),
        Command::Ignition(args) => crate::ignition::run(&args).map_err(Failure::Tool),
        Command::Collect(args) => crate::tools::collect_command(&args).map_err(Failure::Tool),
        Command::Inspect(args) => crate::tools::inspect_command(&args).map_err(Failure::Tool),
        Command::Signatures(args) => crate::tools::signatures_command(&args).map_err(Failure::Tool),
        Command::Config(ConfigCommand::Check(args)) => {
            crate::tools::config_check_command(&args.into()).map_err(Failure::Tool)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    /// Debug builds only: a release build compiles trace events out and
    /// logs what debug does
    Trace,
}

/// Flags of `run`. Every value may also come from the environment or the
/// discovery contract directory; see `docs/discovery-contract.md`.
#[derive(Debug, Default, Clone, Args)]
pub(crate) struct RunArgs {
    /// Discovery contract directory written by the discovery agent
    /// [default: <root>/etc/assisted-boot-reporter].
    #[arg(long, value_name = "DIR")]
    pub(crate) config_dir: Option<PathBuf>,

    /// The agent's own bookkeeping (boot ledger) [default: <root>/var/lib/assisted-boot-reporter].
    #[arg(long, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,

    /// Sysroot prefix for every host file read or removed.
    #[arg(long, value_name = "DIR")]
    pub(crate) root: Option<PathBuf>,

    /// File holding the pull secret JSON or a bare agent token (env PULL_SECRET_TOKEN
    /// carries the value itself). Never pass a secret as an argument: any user can read it.
    #[arg(long, value_name = "PATH")]
    pub(crate) pull_secret_file: Option<PathBuf>,

    /// CA bundle (PEM) to trust for the service [default: the contract's CA file when present].
    #[arg(long, value_name = "PATH")]
    pub(crate) cacert: Option<PathBuf>,

    /// Skip TLS verification of the service. Logged as a warning on every start.
    #[arg(long)]
    pub(crate) insecure: bool,

    /// Every other setting: flags built from config's settings table.
    #[command(flatten)]
    pub(crate) settings: SettingFlags,
}

impl From<RunArgs> for Flags {
    fn from(args: RunArgs) -> Self {
        Flags {
            config_dir: args.config_dir,
            state_dir: args.state_dir,
            root: args.root,
            pull_secret_file: args.pull_secret_file,
            cacert: args.cacert,
            insecure: args.insecure,
            settings: args.settings.0,
        }
    }
}

/// The flags of config's settings table: one per setting, its help and
/// syntax check from the table, so a setting is described once.
#[derive(Debug, Default, Clone)]
pub(crate) struct SettingFlags(BTreeMap<Key, String>);

impl clap::FromArgMatches for SettingFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = SettingFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for setting in SETTINGS {
            if let Some(value) = matches.get_one::<String>(setting.flag) {
                self.0.insert(setting.key, value.clone());
            }
        }
        Ok(())
    }
}

impl Args for SettingFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        cmd.args(SETTINGS.iter().map(|setting| {
            let arg = clap::Arg::new(setting.flag)
                .long(setting.flag)
                .value_name(setting.value_name)
                .help(setting.full_help());
            if setting.may_hold_a_secret() {
                // clap quotes a refused value: config checks these instead,
                // with errors that never quote them.
                return arg;
            }
            // A bad flag is a usage error (exit 2) before anything runs.
            arg.value_parser(move |value: &str| setting.check(value).map(|()| value.to_owned()))
        }))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
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
    // Every log line passes the redactor, like everything else emitted.
    crate::logging::init(level, std::env::var_os("JOURNAL_STREAM").is_none());
}
