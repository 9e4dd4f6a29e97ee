//! Collectors: what a bundle holds, one module per source, and the registry
//! that runs them.
//!
//! A collector is a function over [`Members`]: it names each member it wants
//! (`journal/this-boot.log` from `journalctl …`, `network/resolv.conf` from a
//! host file) and [`Members`] does the rest the same way for all of them:
//! runs the command with a deadline or reads the file under [`CollectContext::root`],
//! streams the bytes through the redactor into compressed [`chunks::Chunks`]
//! bounded by the budget (keeping the newest bytes), hands the finished
//! member to the [`Sink`] and records a [`FileReport`] for the manifest.
//!
//! Every collector has its own size cap and time limit ([`Collector`]), on
//! top of the member cap and the bundle cap the sink enforces, so no source
//! can starve the ones after it of bytes or time.
//!
//! Nothing a host does makes a collector fail the bundle: a missing command or
//! file is `skipped`, a non-zero exit `failed`, a hang `timed_out`. The only
//! error a collector returns is the sink's own write error, because then there
//! is no bundle left to put anything in.
//!
//! This file is the registry ([`COLLECTORS`]) and the run over one collector.
//! The machinery is beside it, one job per file: `context` (the host and the
//! shared limits), `report` (statuses, member reports, budgets and caps),
//! `members` (the handle collectors write through), `layout` (where a
//! disk's root keeps `/etc` and `/var`), `capture` (one member's
//! intake and result), `command` (the child-process runner), `file` (host
//! file capture), `text` (what of a host file may be shipped: text, gzip
//! inflated within bounds), `chunks` (compressed content in memory) and
//! `journal_cache`. Collectors import those files, never this one, which
//! names them all.

pub(crate) mod capture;
pub mod chunks;
pub(crate) mod command;
pub(crate) mod context;
pub(crate) mod crio;
mod file;
pub(crate) mod journal;
pub(crate) mod journal_cache;
pub(crate) mod layout;
pub(crate) mod members;
pub(crate) mod mounts;
pub(crate) mod network;
pub(crate) mod observe;
pub(crate) mod report;
pub(crate) mod system;
pub(crate) mod systemd;
#[cfg(test)]
pub(crate) mod testing;
pub mod text;

use std::io;
use std::time::{Duration, Instant};

// The names modules outside collect/ use. Collectors import the files
// themselves: this one names them all, so importing it would be a circle.
pub(crate) use context::CollectContext;
pub(crate) use members::{Members, Sink};
#[cfg(test)]
use observe::Unobserved;
pub(crate) use observe::{LineObserver, Observers, Placement};
pub(crate) use report::{
    is_cap_reason, Budget, CollectorReport, Status, BUNDLE_CAP_REASON, MEMBER_CAP_REASON,
};
use report::{millis, summarize};

pub(crate) type CollectFn = fn(&mut Members<'_>) -> io::Result<()>;

/// A collector with its own limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Collector {
    pub(crate) name: &'static str,
    pub(crate) collect: CollectFn,
    /// Most bytes its members may hold together.
    pub(crate) max_bytes: u64,
    /// Longest it may run; commands still running then are killed and the
    /// members not yet started are skipped.
    pub(crate) time_limit: Duration,
}

const MIB: u64 = 1024 * 1024;

/// The records collector's time limit, which also bounds the agent's own
/// records summary for `progress_info`.
pub(crate) const RECORDS_TIME_LIMIT: Duration = Duration::from_secs(30);

/// Every collector, in bundle order: the small precious ones first and the
/// big journals last, so the bundle size cap can only ever cut the journals;
/// each but the journal has a cap of its own so that, say, a pod log storm
/// cannot eat the journal's share either.
pub(crate) const COLLECTORS: &[Collector] = &[
    Collector {
        name: "records",
        collect: crate::records::collector::collect,
        max_bytes: 16 * MIB,
        time_limit: RECORDS_TIME_LIMIT,
    },
    Collector {
        name: "network",
        collect: network::collect,
        max_bytes: 16 * MIB,
        time_limit: Duration::from_secs(120),
    },
    Collector {
        name: "mounts",
        collect: mounts::collect,
        max_bytes: 8 * MIB,
        time_limit: Duration::from_secs(90),
    },
    Collector {
        name: "system",
        collect: system::collect,
        max_bytes: 8 * MIB,
        time_limit: Duration::from_secs(90),
    },
    Collector {
        name: "systemd",
        collect: systemd::collect,
        max_bytes: 24 * MIB,
        time_limit: Duration::from_secs(180),
    },
    Collector {
        name: "crio",
        collect: crio::collect,
        max_bytes: 48 * MIB,
        time_limit: Duration::from_secs(180),
    },
    Collector {
        name: "journal",
        collect: journal::collect,
        max_bytes: u64::MAX,
        time_limit: Duration::from_secs(600),
    },
];

/// Runs one collector against `sink`, its members watched by `observers`,
/// and returns its manifest entry. Errs only when the sink cannot write.
pub(crate) fn run(
    spec: &Collector,
    ctx: &CollectContext,
    sink: &mut dyn Sink,
    observers: &mut dyn Observers,
) -> io::Result<CollectorReport> {
    let mut report = run_limited(
        spec.name,
        spec.collect,
        spec.max_bytes,
        spec.time_limit,
        ctx,
        sink,
        observers,
    )?;
    report.max_bytes = (spec.max_bytes != u64::MAX).then_some(spec.max_bytes);
    report.time_limit_ms = Some(millis(spec.time_limit));
    Ok(report)
}

/// Runs a collector with no limits of its own (tests, one-off members).
#[cfg(test)]
pub(crate) fn run_collector(
    name: &str,
    collect: CollectFn,
    ctx: &CollectContext,
    sink: &mut dyn Sink,
) -> io::Result<CollectorReport> {
    run_limited(
        name,
        collect,
        u64::MAX,
        Duration::MAX,
        ctx,
        sink,
        &mut Unobserved,
    )
}

fn run_limited(
    name: &str,
    collect: CollectFn,
    max_bytes: u64,
    time_limit: Duration,
    ctx: &CollectContext,
    sink: &mut dyn Sink,
    observers: &mut dyn Observers,
) -> io::Result<CollectorReport> {
    let started = Instant::now();
    let mut members = Members::new(ctx, sink, observers, max_bytes, time_limit, started);
    collect(&mut members)?;
    let (files, note, digest) = members.into_parts();
    let (status, reason) = summarize(&files, note);
    Ok(CollectorReport {
        name: name.to_owned(),
        status,
        reason,
        bytes: files.iter().map(|f| f.bytes).sum(),
        duration_ms: millis(started.elapsed()),
        files,
        max_bytes: None,
        time_limit_ms: None,
        digest,
        unlisted: None,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::report::COLLECTOR_CAP_REASON;
    use super::testing::{context, fixture_path, script, MemorySink};
    use super::*;

    #[test]
    fn collector_cap_and_time_limit_are_enforced_and_named() {
        let tmp = tempfile::tempdir().unwrap();
        script(tmp.path(), "hang", "echo started; exec sleep 30");
        let ctx = context(Path::new("/"), Some(fixture_path(Some(tmp.path()))));
        let spec = Collector {
            name: "limited",
            collect: |m| {
                m.command("a.txt", "sh", ["-c", "printf 0123456789"])?;
                m.command("b.txt", "sh", ["-c", "printf abcdefghij"])?;
                m.command("c.txt", "hang", [""; 0])?;
                m.command("d.txt", "sh", ["-c", "echo never"])
            },
            max_bytes: 15,
            time_limit: Duration::from_millis(700),
        };
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let started = Instant::now();
        let report = super::run(&spec, &ctx, &mut sink, &mut Unobserved).unwrap();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(sink.get("a.txt").unwrap(), b"0123456789");
        assert_eq!(sink.get("b.txt").unwrap(), b"fghij");
        let b = &report.files[1];
        assert!(b.truncated);
        assert!(
            b.reason
                .as_deref()
                .unwrap()
                .starts_with(COLLECTOR_CAP_REASON),
            "{b:?}"
        );
        // Out of bytes: c is skipped without running, and so is d.
        assert_eq!(report.files[2].status, Status::Skipped);
        assert_eq!(
            report.files[2].reason.as_deref(),
            Some(COLLECTOR_CAP_REASON)
        );
        assert_eq!(report.max_bytes, Some(15));
        assert_eq!(report.time_limit_ms, Some(700));

        let spec = Collector {
            max_bytes: u64::MAX,
            ..spec
        };
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = super::run(&spec, &ctx, &mut sink, &mut Unobserved).unwrap();
        let c = &report.files[2];
        assert_eq!(c.status, Status::TimedOut, "{c:?}");
        assert_eq!(
            c.reason.as_deref(),
            Some("killed at the collector time limit")
        );
        assert_eq!(sink.get("c.txt").unwrap(), b"started\n");
        let d = &report.files[3];
        assert_eq!(d.status, Status::Skipped);
        assert_eq!(
            d.reason.as_deref(),
            Some("collector time limit (700ms) reached")
        );
    }
}
