//! The diagnosis engine's own CPU cost on a journal, for bench/run: reads
//! the file into memory, then feeds it to a `diagnose::Scanner` in the
//! 64 KiB pieces the collectors read, and prints one JSON line with the
//! process CPU time (kernel accounting, /proc/self/stat) the scan took and
//! the memory the engine added: the process's peak RSS (VmHWM) after the
//! scan minus its RSS once the journal was in memory, before the scan.
//! bench/run sets them against `collect` on the same journal.

use std::io::Read as _;

use abr_bench::cpu_seconds;
use anyhow::Context as _;
use assisted_boot_reporter::diagnose::{self, Engine, Scanner};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// The journal text to scan.
    file: std::path::PathBuf,
}

/// A `/proc/self/status` field in KiB (VmRSS, VmHWM).
fn status_kib(key: &str) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with(key))
        .with_context(|| format!("no {key} in /proc/self/status"))?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("odd /proc/self/status line")?
        .parse()?)
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut data = Vec::new();
    std::fs::File::open(&args.file)
        .with_context(|| format!("opening {}", args.file.display()))?
        .read_to_end(&mut data)?;
    let rss_before_kib = status_kib("VmRSS:")?;
    let before = cpu_seconds()?;
    let mut scanner = Scanner::for_member("journal/this-boot.log").context("journal is scanned")?;
    for piece in data.chunks(64 * 1024) {
        scanner.feed(piece);
    }
    let placement = diagnose::whole(&scanner);
    let mut engine = Engine::new();
    engine.absorb(scanner, placement);
    let diagnosis = engine.finish();
    let cpu = cpu_seconds()? - before;
    let engine_peak_kib = status_kib("VmHWM:")?.saturating_sub(rss_before_kib);
    println!(
        "{}",
        serde_json::json!({
            "bytes": data.len(),
            "lines": diagnosis.lines_scanned,
            "findings": diagnosis.findings.len(),
            "cpu_s": cpu,
            "engine_peak_kib": engine_peak_kib,
        })
    );
    Ok(())
}
