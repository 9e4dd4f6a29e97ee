//! The diagnosis engine's own CPU cost on a journal, for bench/run: reads
//! the file into memory, then feeds it to a `diagnose::Scanner` in the
//! 64 KiB pieces the collectors read, and prints one JSON line with the
//! CPU time the scan took and the memory the engine added: the process's
//! peak RSS (VmHWM, reset once the journal is in memory) after the scan
//! minus its RSS before the scan.
//! bench/run sets them against `collect` on the same journal, and against
//! `gzip -6` on the same bytes.
//!
//! CPU is the main thread's run time from the scheduler
//! (/proc/thread-self/schedstat, nanoseconds; the scan is one thread), or
//! the kernel's tick accounting where schedstat is missing. A running
//! thread's schedstat moves at the scheduler's ticks, so `--repeat N` scans
//! N times and reports the mean (memory: the first scan's).
//!
//! Instructions: bench/run runs this tool under `valgrind --tool=callgrind`
//! twice on the same file, once as is and once with `--no-scan` (read the
//! file, build nothing, scan nothing); the difference of the two runs' Ir
//! totals is the engine's: building its matchers, the scan, correlation.

use std::io::Read as _;

use abr_bench::cpu_seconds;
use anyhow::Context as _;
use assisted_boot_reporter::diagnose::{self, Engine, Scanner};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// The journal text to scan.
    file: std::path::PathBuf,
    /// Read the file and stop: the baseline bench/run subtracts from a
    /// scan's instruction count.
    #[arg(long)]
    no_scan: bool,
    /// Scan the file this many times, each with a fresh scanner and
    /// engine, and report the mean: the scheduler's run time of a running
    /// thread moves at its ticks (4 ms at HZ=250), a sixteenth of one scan
    /// of 60 MiB. The first scan also builds the matchers (once per
    /// process, as in the agent); `cpu_first_s` is that scan's time.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    repeat: u32,
}

/// CPU seconds of this thread: schedstat's run time (ns), else the
/// process's ticks.
fn thread_cpu_seconds() -> anyhow::Result<f64> {
    if let Ok(text) = std::fs::read_to_string("/proc/thread-self/schedstat") {
        if let Some(Ok(ns)) = text.split_whitespace().next().map(str::parse::<u64>) {
            return Ok(std::time::Duration::from_nanos(ns).as_secs_f64());
        }
    }
    cpu_seconds()
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
    if args.no_scan {
        println!(
            "{}",
            serde_json::json!({ "bytes": data.len(), "no_scan": true })
        );
        return Ok(());
    }
    // Reset the peak (VmHWM) to what is resident now: reading the file
    // may have peaked higher (a buffer grown by copying), which would hide
    // what the engine adds.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before_kib = status_kib("VmRSS:")?;
    let before = thread_cpu_seconds()?;
    let mut diagnosis = scan(&data)?;
    let cpu_first = thread_cpu_seconds()? - before;
    // The engine's memory is that of one scan: the repeats' allocations
    // beside the first diagnosis would add to it.
    let engine_peak_kib = status_kib("VmHWM:")?.saturating_sub(rss_before_kib);
    for _ in 1..args.repeat {
        diagnosis = scan(&data)?;
    }
    let cpu = (thread_cpu_seconds()? - before) / f64::from(args.repeat);
    println!(
        "{}",
        serde_json::json!({
            "bytes": data.len(),
            "lines": diagnosis.lines_scanned,
            "findings": diagnosis.findings.len(),
            "categories": diagnosis
                .findings
                .iter()
                .map(|f| f.category.as_str())
                .collect::<Vec<_>>(),
            "lines_unread": diagnosis.lines_unread,
            "cpu_s": cpu,
            "cpu_first_s": cpu_first,
            "repeat": args.repeat,
            "engine_peak_kib": engine_peak_kib,
        })
    );
    Ok(())
}

/// One scan of the whole file as the collector feeds a member: 64 KiB
/// pieces, then the engine's correlation.
fn scan(data: &[u8]) -> anyhow::Result<diagnose::Diagnosis> {
    let mut scanner = Scanner::for_member("journal/this-boot.log").context("journal is scanned")?;
    for piece in data.chunks(64 * 1024) {
        scanner.feed(piece);
    }
    let placement = diagnose::whole(&scanner);
    let mut engine = Engine::new();
    engine.absorb(scanner, placement);
    Ok(engine.finish())
}
