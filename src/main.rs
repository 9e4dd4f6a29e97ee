//! Entry point: parse, set up logging, run, report the error chain once,
//! and decide the exit code from how the command failed, here only.

use std::io::Write as _;
use std::process::ExitCode;

use assisted_boot_reporter::cli::{self, Failure};
use assisted_boot_reporter::redact;
use clap::Parser;

fn main() -> ExitCode {
    // A usage error exits 2 from here (clap), before anything runs.
    let cli = cli::Cli::parse();
    cli::init_tracing(cli.log_level);
    match cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Agent(err)) => {
            // One line with the whole chain: journald shows it as a single
            // entry. Exit 0: a failing reporter must never mark the boot
            // failed, and the unit's `Restart=` has nothing to retry.
            tracing::error!("{err:#}");
            ExitCode::SUCCESS
        }
        Err(Failure::Tool(err)) => {
            // Through the redactor: an error may quote a host path or a
            // records digest.
            let _ = writeln!(redact::log_writer(), "error: {err:#}");
            ExitCode::FAILURE
        }
    }
}
