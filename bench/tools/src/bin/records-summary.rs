//! CPU time of the bootstrap records summary on 16 MiB record files of
//! hostile shapes (`bench/run --only records`; docs/benchmarks.md, section 8).
//!
//! Each shape is built in memory at exactly the parse limit (16 MiB, what
//! the agent reads of a record file) and summarized as the records
//! collector does: parse, build the timeline, digest, and serialize
//! `records/summary.json`. CPU time is the thread's own (schedstat), best
//! of three runs; one line of JSON per shape on stdout. `bench/run --quick`
//! (CI's smoke run, a debug build) passes a smaller `--bytes` and one run.

use std::fmt::Write as _;
use std::time::Duration;

use assisted_boot_reporter::records::{Summary, PARSE_LIMIT};
use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Size of each record file, at most the parse limit [default: the parse limit].
    #[arg(long)]
    bytes: Option<u64>,
    /// Runs per shape; the best is reported.
    #[arg(long, default_value_t = 3)]
    runs: u32,
}

/// Nanoseconds this thread spent on a CPU.
fn thread_cpu() -> Duration {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat");
    let ns: u64 = text
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("schedstat field");
    Duration::from_nanos(ns)
}

/// Repeats `item(i)` (comma-separated) inside `[ ]` up to `limit` bytes.
fn array_of(limit: usize, item: impl Fn(usize) -> String) -> Vec<u8> {
    let mut out = String::from("[");
    let mut i = 0;
    loop {
        let next = item(i);
        if out.len() + next.len() + 2 > limit {
            break;
        }
        if i > 0 {
            out.push(',');
        }
        out.push_str(&next);
        i += 1;
    }
    out.push(']');
    out.into_bytes()
}

fn shapes(limit: usize) -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = fastrand::Rng::with_seed(12);
    let mut nested = "[".repeat(limit / 2);
    nested.push_str(&"]".repeat(limit / 2));
    let mut giant = String::from("[{\"phase\":\"stage end\",\"stage\":\"");
    giant.push_str(&"x".repeat(limit - 64));
    giant.push_str("\",\"result\":\"failure\"}]");
    let mut stream = String::new();
    while stream.len() + 40 < limit {
        let _ = writeln!(stream, "{{\"phase\":\"service start\"}}");
    }
    vec![
        (
            "stage ends, distinct names, no starts",
            array_of(limit, |i| {
                format!(
                    "{{\"timestamp\":\"2025-02-03T10:00:01Z\",\"phase\":\"stage end\",\"stage\":\"s{i}\",\"result\":\"success\"}}"
                )
            }),
        ),
        (
            "stage ends, one name",
            array_of(limit, |_| {
                "{\"phase\":\"stage end\",\"stage\":\"same\",\"result\":\"failure\"}".into()
            }),
        ),
        (
            "stage starts, never ended",
            array_of(limit, |i| {
                format!("{{\"phase\":\"stage start\",\"stage\":\"s{i}\"}}")
            }),
        ),
        (
            "service starts (restart loop)",
            array_of(limit, |_| "{\"phase\":\"service start\"}".into()),
        ),
        ("empty objects", array_of(limit, |_| "{}".into())),
        ("numbers", array_of(limit, |i| (i % 10).to_string())),
        ("one string as long as the file", giant.into_bytes()),
        ("nested arrays", nested.into_bytes()),
        ("entry stream, no array", stream.into_bytes()),
        ("random bytes", (0..limit).map(|_| rng.u8(..)).collect()),
    ]
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let bytes = args.bytes.unwrap_or(PARSE_LIMIT);
    anyhow::ensure!(
        (1024..=PARSE_LIMIT).contains(&bytes),
        "--bytes must be between 1024 and the parse limit ({PARSE_LIMIT})"
    );
    anyhow::ensure!(args.runs > 0, "--runs must be at least 1");
    for (shape, data) in shapes(usize::try_from(bytes)?) {
        let mut best = Duration::MAX;
        let mut summary_bytes = 0;
        let mut entries = 0;
        for _ in 0..args.runs {
            let started = thread_cpu();
            let mut summary = Summary::default();
            summary.add_file("bootkube.json", &data);
            summary.finish();
            let json = serde_json::to_vec_pretty(&summary).expect("serializes");
            best = best.min(thread_cpu().saturating_sub(started));
            summary_bytes = json.len();
            entries = summary.services.first().map_or(0, |s| s.entries);
        }
        println!(
            "{}",
            serde_json::json!({
                "shape": shape,
                "input_bytes": data.len(),
                "entries_kept": entries,
                "summary_bytes": summary_bytes,
                "cpu_ms": best.as_secs_f64() * 1000.0,
            })
        );
    }
    Ok(())
}
