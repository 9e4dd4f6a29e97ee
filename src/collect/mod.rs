//! Collectors: what a bundle holds, one module per source, and the common
//! machinery every collector uses to gather a member safely.
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
//! `CollectContext` is shared with the agent; the rest belongs to the
//! collectors.

pub mod chunks;
pub mod crio;
pub mod journal;
pub mod mounts;
pub mod network;
pub mod system;
pub mod systemd;

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::bundle::escape_controls;
use crate::diagnose::{Placement, Scanner};
use crate::redact::{Mode, Redactor, StreamRedactor};
use chunks::{Chunks, Content};

/// Everything a collector needs to know about the host it reads.
#[derive(Debug, Clone)]
pub struct CollectContext {
    /// Sysroot prefix for host files (`/` on a real host).
    pub root: PathBuf,
    /// Longest a single external command may run before it is killed.
    pub command_timeout: Duration,
    /// Scrubs secrets from every collected byte.
    pub redactor: Redactor,
    /// PATH used to find external commands; `None` = inherit the agent's.
    /// Tests point it at fixture scripts without touching the process-wide
    /// environment, which parallel tests share.
    pub path_env: Option<OsString>,
    /// kubelet's health endpoint, asked once per bundle; `None` = not asked.
    pub kubelet_healthz_url: Option<String>,
    /// The journal streams read by earlier bundles of this run, continued
    /// from their cursors (`journal::Cache`); `None` = every bundle reads
    /// the journal from its start (`collect`, a one-off bundle).
    pub journal_cache: Option<Arc<Mutex<journal::Cache>>>,
}

impl CollectContext {
    /// A context with no kubelet probe.
    pub fn new(root: PathBuf, command_timeout: Duration, redactor: Redactor) -> Self {
        Self {
            root,
            command_timeout,
            redactor,
            path_env: None,
            kubelet_healthz_url: None,
            journal_cache: None,
        }
    }

    /// Whether `root` is the running system's own root, so that commands
    /// which only see the live system (ip, crictl, df) describe the same host
    /// as the files.
    pub fn is_live_root(&self) -> bool {
        self.root.has_root()
            && self
                .root
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::CurDir))
    }

    /// Where an absolute host path lives under `root`, for display: every
    /// symlink on the way resolved inside `root` ([`crate::rootfs`]; a
    /// sysroot's `/etc/resolv.conf` usually points at an absolute `/run/...`
    /// path that must not escape to the live system). A path that does not
    /// resolve is joined as written, `..` never climbing out.
    pub fn host_path(&self, host: &Path) -> PathBuf {
        let resolved =
            crate::rootfs::resolve_path(&self.root, host).unwrap_or_else(|| normalize(host));
        if self.is_live_root() {
            return resolved;
        }
        join_root(&self.root, &resolved)
    }

    /// The regular files (and symlinks to them inside the root) directly in
    /// host directory `dir`, sorted by name.
    pub fn list_files(&self, dir: &str) -> io::Result<Vec<HostFile>> {
        let mut files = Vec::new();
        for name in crate::rootfs::read_dir(&self.root, Path::new(dir))? {
            let name = name.to_string_lossy().into_owned();
            let host = format!("{}/{name}", dir.trim_end_matches('/'));
            let Ok(meta) = crate::rootfs::metadata(&self.root, Path::new(&host)) else {
                continue;
            };
            if !meta.metadata.is_file() {
                continue;
            }
            files.push(HostFile {
                host,
                name,
                bytes: meta.metadata.len(),
                mtime: meta.metadata.modified().ok(),
            });
        }
        Ok(files)
    }

    /// The subdirectories (and symlinks to directories inside the root) of
    /// host directory `dir`, sorted by name.
    pub fn list_dirs(&self, dir: &str) -> io::Result<Vec<String>> {
        let mut dirs = Vec::new();
        for name in crate::rootfs::read_dir(&self.root, Path::new(dir))? {
            let name = name.to_string_lossy().into_owned();
            let host = format!("{}/{name}", dir.trim_end_matches('/'));
            if crate::rootfs::metadata(&self.root, Path::new(&host))
                .is_ok_and(|meta| meta.metadata.is_dir())
            {
                dirs.push(name);
            }
        }
        Ok(dirs)
    }

    /// Reads at most `limit` bytes of host file `host` inside the root,
    /// giving up after `timeout` ([`crate::rootfs::read_limited`]).
    pub fn read_host_file(&self, host: &str, limit: u64, timeout: Duration) -> io::Result<Vec<u8>> {
        crate::rootfs::read_limited(&self.root, Path::new(host), limit, timeout)
    }
}

/// A file found by [`CollectContext::list_files`].
#[derive(Debug, Clone)]
pub struct HostFile {
    pub name: String,
    /// Absolute host path (without the root prefix).
    pub host: String,
    pub bytes: u64,
    pub mtime: Option<SystemTime>,
}

/// Lexically resolves `.` and `..` so that a path can never climb above `/`
/// (and therefore never out of a sysroot once joined to it).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn join_root(root: &Path, host: &Path) -> PathBuf {
    root.join(host.strip_prefix("/").unwrap_or(host))
}

/// Outcome of one member or one collector, as written in the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
    Skipped,
    TimedOut,
    Partial,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
            Status::Skipped => "skipped",
            Status::TimedOut => "timed_out",
            Status::Partial => "partial",
        }
    }
}

/// One member a collector tried to produce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileReport {
    /// Path inside the bundle's top directory, e.g. `journal/this-boot.log`.
    pub path: String,
    /// The command line or the host path the content came from.
    pub source: String,
    pub status: Status,
    pub reason: Option<String>,
    /// Whether the member is in the archive (skipped ones and failures with
    /// no output are only listed here).
    pub archived: bool,
    /// Bytes in the archive.
    pub bytes: u64,
    /// Only the newest part was kept.
    pub truncated: bool,
    /// Size the source produced before capping, when truncated.
    pub original_bytes: Option<u64>,
    /// Secrets replaced in this member.
    pub redactions: usize,
    pub duration_ms: u64,
    /// Bytes of the member carried over from earlier bundles of the same
    /// run without reading them again (the journal cache).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reused_bytes: u64,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One collector's entry in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CollectorReport {
    pub name: String,
    pub status: Status,
    pub reason: Option<String>,
    /// Bytes this collector put in the archive.
    pub bytes: u64,
    pub duration_ms: u64,
    pub files: Vec<FileReport>,
    /// This collector's own size cap, if it has one below the bundle's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// This collector's own time limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_limit_ms: Option<u64>,
    /// One line naming the worst finding (the records collector's summary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

impl CollectorReport {
    pub fn redactions(&self) -> usize {
        self.files.iter().map(|f| f.redactions).sum()
    }
}

/// How much the next member may hold, and what limits it, for the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    pub reason: &'static str,
}

pub const MEMBER_CAP_REASON: &str = "member size cap";
pub const BUNDLE_CAP_REASON: &str = "bundle size cap";
pub const COLLECTOR_CAP_REASON: &str = "collector size cap";
pub const TIME_LIMIT_REASON: &str = "collector time limit";

/// Whether a reason names one of the size caps.
pub fn is_cap_reason(reason: &str) -> bool {
    [MEMBER_CAP_REASON, BUNDLE_CAP_REASON, COLLECTOR_CAP_REASON]
        .iter()
        .any(|cap| reason.starts_with(cap))
}

/// Where finished members go: the archive writer.
pub trait Sink {
    /// The most the next member may hold.
    fn budget(&self) -> Budget;
    /// Adds one complete member (`path` relative to the bundle's top dir) of
    /// exactly `size` bytes read from `data`.
    fn append(&mut self, path: &str, size: u64, data: &mut dyn Read) -> io::Result<()>;

    /// Adds one complete member gathered as [`Content`]. The archive writer
    /// copies its compressed chunks as they are; others read it plainly.
    fn append_content(&mut self, path: &str, content: &Content) -> io::Result<()> {
        self.append(path, content.len(), &mut content.reader())
    }

    /// A line observer for member `path`, fed the same redacted bytes as the
    /// member on their way in (the diagnosis engine); `None` = not observed.
    fn scanner(&mut self, _path: &str) -> Option<Scanner> {
        None
    }

    /// Hands back a member's observer once the member is placed.
    fn scanned(&mut self, _scanner: Scanner, _placement: Placement) {}
}

pub type CollectFn = fn(&mut Members<'_>) -> io::Result<()>;

/// A collector with its own limits.
#[derive(Debug, Clone, Copy)]
pub struct Collector {
    pub name: &'static str,
    pub collect: CollectFn,
    /// Most bytes its members may hold together.
    pub max_bytes: u64,
    /// Longest it may run; commands still running then are killed and the
    /// members not yet started are skipped.
    pub time_limit: Duration,
}

const MIB: u64 = 1024 * 1024;

/// The records collector's time limit, which also bounds the agent's own
/// records summary for `progress_info`.
pub const RECORDS_TIME_LIMIT: Duration = Duration::from_secs(30);

/// Every collector, in bundle order: the small precious ones first and the
/// big journals last, so the bundle size cap can only ever cut the journals;
/// each but the journal has a cap of its own so that, say, a pod log storm
/// cannot eat the journal's share either.
pub const COLLECTORS: &[Collector] = &[
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

/// Runs one collector against `sink` and returns its manifest entry. Errs
/// only when the sink cannot write.
pub fn run(
    spec: &Collector,
    ctx: &CollectContext,
    sink: &mut dyn Sink,
) -> io::Result<CollectorReport> {
    let mut report = run_limited(
        spec.name,
        spec.collect,
        spec.max_bytes,
        spec.time_limit,
        ctx,
        sink,
    )?;
    report.max_bytes = (spec.max_bytes != u64::MAX).then_some(spec.max_bytes);
    report.time_limit_ms = Some(millis(spec.time_limit));
    Ok(report)
}

/// Runs a collector with no limits of its own (tests, one-off members).
pub fn run_collector(
    name: &str,
    collect: CollectFn,
    ctx: &CollectContext,
    sink: &mut dyn Sink,
) -> io::Result<CollectorReport> {
    run_limited(name, collect, u64::MAX, Duration::MAX, ctx, sink)
}

fn run_limited(
    name: &str,
    collect: CollectFn,
    max_bytes: u64,
    time_limit: Duration,
    ctx: &CollectContext,
    sink: &mut dyn Sink,
) -> io::Result<CollectorReport> {
    let started = Instant::now();
    let mut members = Members {
        ctx,
        sink,
        files: Vec::new(),
        note: None,
        digest: None,
        remaining: max_bytes,
        deadline: started.checked_add(time_limit),
        time_limit,
    };
    collect(&mut members)?;
    let Members {
        files,
        note,
        digest,
        ..
    } = members;
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
    })
}

/// Skipped members are optional sources that are absent on this host; they
/// do not make a collector partial. Only a collector with nothing but skips
/// is skipped.
fn summarize(files: &[FileReport], note: Option<String>) -> (Status, Option<String>) {
    let attempted: Vec<&FileReport> = files
        .iter()
        .filter(|f| f.status != Status::Skipped)
        .collect();
    if attempted.is_empty() {
        let reason = note.or_else(|| {
            let mut reasons: Vec<&str> = files.iter().filter_map(|f| f.reason.as_deref()).collect();
            reasons.dedup();
            (!reasons.is_empty()).then(|| reasons.join("; "))
        });
        return (Status::Skipped, reason);
    }
    let bad: Vec<&FileReport> = attempted
        .iter()
        .copied()
        .filter(|f| f.status != Status::Ok)
        .collect();
    let status = if bad.is_empty() {
        Status::Ok
    } else if bad.len() < attempted.len() {
        Status::Partial
    } else if bad.iter().all(|f| f.status == Status::TimedOut) {
        Status::TimedOut
    } else {
        Status::Failed
    };
    let mut reason = note.unwrap_or_default();
    if !bad.is_empty() {
        if !reason.is_empty() {
            reason.push_str("; ");
        }
        let _ = write!(
            reason,
            "{} of {} members not ok",
            bad.len(),
            attempted.len()
        );
        for f in bad.iter().take(3) {
            let _ = write!(
                reason,
                "; {}: {}",
                f.path,
                f.reason.as_deref().unwrap_or("no reason")
            );
        }
    }
    (status, (!reason.is_empty()).then_some(reason))
}

/// Per-member options.
#[derive(Debug, Clone, Copy, Default)]
pub struct Opts {
    pub mode: Mode,
    /// A cap of this member's own, below the others.
    pub max_bytes: Option<u64>,
}

impl Opts {
    pub fn keyfile() -> Self {
        Self {
            mode: Mode::Keyfile,
            max_bytes: None,
        }
    }

    pub fn max_bytes(max: u64) -> Self {
        Self {
            mode: Mode::Text,
            max_bytes: Some(max),
        }
    }
}

/// A collector's handle: gathers members into the sink and remembers what
/// happened to each.
pub struct Members<'a> {
    ctx: &'a CollectContext,
    sink: &'a mut dyn Sink,
    files: Vec<FileReport>,
    note: Option<String>,
    digest: Option<String>,
    /// Bytes left under the collector's own cap.
    remaining: u64,
    /// `None` when the limit is too far away to represent.
    deadline: Option<Instant>,
    time_limit: Duration,
}

impl Members<'_> {
    pub fn ctx(&self) -> &CollectContext {
        self.ctx
    }

    /// A collector-level remark for the manifest (why everything was
    /// skipped, or what was left out on purpose).
    pub fn note(&mut self, note: impl Into<String>) {
        let note = escape_controls(&note.into()).into_owned();
        self.note = Some(match self.note.take() {
            Some(old) => format!("{old}; {note}"),
            None => note,
        });
    }

    /// The collector's one-line finding, copied into the manifest.
    pub fn set_digest(&mut self, digest: Option<String>) {
        self.digest = digest;
    }

    /// Time left before the collector's limit.
    pub fn time_left(&self) -> Duration {
        self.deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        })
    }

    /// Bytes the next member may hold.
    pub fn budget(&self, opts: Opts) -> Budget {
        let mut budget = self.sink.budget();
        if self.remaining < budget.bytes {
            budget = Budget {
                bytes: self.remaining,
                reason: COLLECTOR_CAP_REASON,
            };
        }
        if let Some(max) = opts.max_bytes {
            if max < budget.bytes {
                budget = Budget {
                    bytes: max,
                    reason: MEMBER_CAP_REASON,
                };
            }
        }
        budget
    }

    /// Whether the collector has neither bytes nor time left (callers that
    /// loop over many sources stop early).
    pub fn exhausted(&self) -> bool {
        self.budget(Opts::default()).bytes == 0 || self.time_left().is_zero()
    }

    fn time_limit_reason(&self) -> String {
        format!(
            "{TIME_LIMIT_REASON} ({}) reached",
            humantime::format_duration(self.time_limit)
        )
    }

    /// Runs `program args…` and stores its stdout as `path`.
    pub fn command<I, S>(&mut self, path: &str, program: &str, args: I) -> io::Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command_adjusted(path, program, args, |_| {})
    }

    /// Like [`Members::command`], with a chance to reinterpret the outcome
    /// before it is recorded (journalctl's "no previous boot" is a skip).
    pub fn command_adjusted<I, S>(
        &mut self,
        path: &str,
        program: &str,
        args: I,
        adjust: impl FnOnce(&mut Captured),
    ) -> io::Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command_full(path, program, args, Opts::default(), adjust)
    }

    /// Like [`Members::command`], with per-member options.
    pub fn command_with<I, S>(
        &mut self,
        path: &str,
        program: &str,
        args: I,
        opts: Opts,
    ) -> io::Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command_full(path, program, args, opts, |_| {})
    }

    fn command_full<I, S>(
        &mut self,
        path: &str,
        program: &str,
        args: I,
        opts: Opts,
        adjust: impl FnOnce(&mut Captured),
    ) -> io::Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let source = command_line(program, &args);
        let Some(limits) = self.limits(path, &source, opts, "killed") else {
            return Ok(());
        };
        let mut captured = capture_command(self.ctx, program, &args, source, limits);
        adjust(&mut captured);
        self.add(path, captured)
    }

    /// Runs `journalctl args…` for member `path`. With a journal cache in
    /// the context (the running agent), the member carries on from the previous bundle's read:
    /// journalctl is asked only for the entries after that read's cursor
    /// (`--after-cursor`, `--show-cursor`), the content and the diagnosis
    /// scanner's state so far come from the cache, and the new entries are
    /// redacted, scanned and compressed once. A read that ends without a
    /// cursor (failed, killed) ships what it has and starts afresh next time.
    ///
    /// The first read asks for the newest [`TAIL_PROBE_ENTRIES`] entries
    /// only: when there are fewer, that is the whole stream; otherwise their
    /// size per entry tells how many entries the member cap keeps, and a
    /// second read asks journalctl for that many (with a margin) instead of
    /// streaming a journal of any size through the cap.
    pub fn journal(
        &mut self,
        path: &str,
        args: Vec<OsString>,
        adjust: impl FnOnce(&mut Captured),
    ) -> io::Result<()> {
        // A one-off bundle (`collect`) follows no cursor later, but reads
        // the tail the same way: a throwaway cache that starts empty.
        let cache = self
            .ctx
            .journal_cache
            .clone()
            .unwrap_or_else(|| Arc::new(Mutex::new(journal::Cache::new(0))));
        let source = command_line("journalctl", &args);
        let Some(mut limits) = self.limits(path, &source, Opts::default(), "killed") else {
            return Ok(());
        };
        let (entry, keep) = cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take(path, &source);
        let mut run_args = args;
        // --quiet: no "-- No entries --" when nothing is new.
        run_args.extend(["--quiet", "--show-cursor"].map(OsString::from));
        let mut carried = (0, 0, None);
        let saved = entry.map(|entry| {
            if limits.scanner.is_some() {
                limits.scanner = entry.scanner;
            }
            let mut after = OsString::from("--after-cursor=");
            after.push(&entry.cursor);
            run_args.push(after);
            carried = (entry.original_bytes, entry.redactions, Some(entry.cursor));
            entry.saved
        });
        limits.resume = Some(Resume { saved, keep });
        let first_read = limits.resume.as_ref().is_some_and(|r| r.saved.is_none());
        let mut captured = if first_read {
            let keep = keep.max(limits.budget.bytes);
            self.journal_tail(path, &run_args, &source, limits, keep)
        } else {
            capture_command(self.ctx, "journalctl", &run_args, source.clone(), limits)
        };
        adjust(&mut captured);
        let (old_bytes, old_redactions, old_cursor) = carried;
        captured.original_bytes += old_bytes;
        captured.redactions += old_redactions;
        if let Some(follow) = &captured.follow {
            let cursor = match &follow.cursor {
                Some(cursor) => Some(cursor.clone()),
                None if follow.new_bytes == 0 => old_cursor,
                None => None,
            };
            if let (Some(cursor), Status::Ok) = (cursor, captured.status) {
                let entry = journal::CacheEntry {
                    source,
                    cursor,
                    saved: follow.saved.clone(),
                    original_bytes: captured.original_bytes,
                    redactions: captured.redactions,
                    scanner: captured.scanner.as_ref().map(Scanner::resumed),
                };
                cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .put(path, entry);
            }
        }
        self.add(path, captured)
    }

    /// The first read of a followed journal stream: the newest entries the
    /// member keeps, asked of journalctl by count (see [`Members::journal`]).
    fn journal_tail(
        &mut self,
        path: &str,
        run_args: &[OsString],
        source: &str,
        limits: CommandLimits,
        keep: u64,
    ) -> Captured {
        let (budget, mode, timeout_reason) =
            (limits.budget, limits.mode, limits.timeout_reason.clone());
        let started = Instant::now();
        let timeout = limits.timeout;
        let mut probe_args = run_args.to_vec();
        probe_args.push(format!("--lines={TAIL_PROBE_ENTRIES}").into());
        let probe = capture_command(
            self.ctx,
            "journalctl",
            &probe_args,
            source.to_owned(),
            limits,
        );
        let Some(follow) = &probe.follow else {
            return probe;
        };
        if probe.status != Status::Ok || follow.new_lines < TAIL_PROBE_ENTRIES {
            return probe;
        }
        // Lines, not entries: a multi-line entry makes the estimate ask for
        // more, never for less.
        let per_line = (follow.new_bytes / follow.new_lines).max(1);
        let entries = (keep.saturating_mul(5) / 4 / per_line).max(2 * TAIL_PROBE_ENTRIES);
        let left = timeout.saturating_sub(started.elapsed());
        if left.is_zero() {
            return probe;
        }
        let limits = CommandLimits {
            budget,
            scanner: self.sink.scanner(path),
            mode,
            timeout: left,
            timeout_reason,
            resume: Some(Resume { saved: None, keep }),
        };
        let mut tail_args = run_args.to_vec();
        tail_args.push(format!("--lines={entries}").into());
        let mut captured = capture_command(
            self.ctx,
            "journalctl",
            &tail_args,
            source.to_owned(),
            limits,
        );
        if captured
            .follow
            .as_ref()
            .is_some_and(|f| f.new_lines >= entries)
        {
            // journalctl had more than it was asked for: older entries were
            // never read. The member says so like any cut.
            captured.truncated = true;
            let note =
                format!("older entries not read: journalctl was asked for the newest {entries}");
            captured.reason = Some(match captured.reason.take() {
                Some(reason) => format!("{reason}; {note}"),
                None => note,
            });
        }
        captured
    }

    /// Reads the absolute host path `host` under the context's root and
    /// stores it as `path`.
    pub fn file(&mut self, path: &str, host: &str) -> io::Result<()> {
        self.file_with(path, host, Opts::default())
    }

    pub fn file_with(&mut self, path: &str, host: &str, opts: Opts) -> io::Result<()> {
        let real = self.ctx.host_path(Path::new(host));
        let source = real.display().to_string();
        // A read stuck on a hung filesystem is bounded like a command.
        let Some(limits) = self.limits(path, &source, opts, "reading stopped") else {
            return Ok(());
        };
        let captured = capture_file(self.ctx, host, source, limits);
        self.add(path, captured)
    }

    /// The limits of one command or file read for member `path`: its size
    /// budget and the command timeout, cut to what is left of the collector's
    /// time (`stopped` says what happens at the end: "killed", "reading
    /// stopped"). `None` when nothing is left of either; the skip is recorded.
    fn limits(
        &mut self,
        path: &str,
        source: &str,
        opts: Opts,
        stopped: &str,
    ) -> Option<CommandLimits> {
        let budget = self.budget(opts);
        if budget.bytes == 0 {
            self.record_skip(path, source.to_owned(), budget.reason.to_owned());
            return None;
        }
        let left = self.time_left();
        if left.is_zero() {
            let reason = self.time_limit_reason();
            self.record_skip(path, source.to_owned(), reason);
            return None;
        }
        let (timeout, timeout_reason) = if left < self.ctx.command_timeout {
            (left, format!("{stopped} at the {TIME_LIMIT_REASON}"))
        } else {
            (
                self.ctx.command_timeout,
                format!(
                    "{stopped} after the {} command timeout",
                    humantime::format_duration(self.ctx.command_timeout)
                ),
            )
        };
        Some(CommandLimits {
            budget,
            scanner: self.sink.scanner(path),
            mode: opts.mode,
            timeout,
            timeout_reason,
            resume: None,
        })
    }

    /// Stores content the agent produced itself (summaries). Not truncated:
    /// a cut JSON document is useless, so it is skipped when it does not fit.
    pub fn generated(&mut self, path: &str, source: &str, mut data: Vec<u8>) -> io::Result<()> {
        let started = Instant::now();
        let redactions = self.ctx.redactor.redact(&mut data);
        let budget = self.budget(Opts::default());
        if data.len() as u64 > budget.bytes {
            self.record_skip(path, source.to_owned(), budget.reason.to_owned());
            return Ok(());
        }
        let mut content = Chunks::new(data.len() as u64);
        content.write(&data);
        let content = content.finish();
        let scanner = self.sink.scanner(path).map(|mut scanner| {
            scanner.feed(&data);
            scanner
        });
        self.add(
            path,
            Captured {
                source: source.to_owned(),
                original_bytes: data.len() as u64,
                content,
                truncated: false,
                cap_reason: budget.reason,
                status: Status::Ok,
                reason: None,
                redactions,
                stderr_head: String::new(),
                duration: started.elapsed(),
                scanner,
                follow: None,
            },
        )
    }

    /// Bytes the last member put in the archive.
    pub fn last_bytes(&self) -> u64 {
        self.files.last().map_or(0, |f| f.bytes)
    }

    /// Lists a member that was not attempted.
    pub fn skip(&mut self, path: &str, source: &str, reason: impl Into<String>) {
        self.record_skip(path, source.to_owned(), reason.into());
    }

    #[allow(clippy::needless_pass_by_value)] // callers hand over what they built
    fn record_skip(&mut self, path: &str, source: String, reason: String) {
        self.files.push(FileReport {
            path: escape_controls(path).into_owned(),
            source: escape_controls(&source).into_owned(),
            status: Status::Skipped,
            reason: Some(escape_controls(&reason).into_owned()),
            archived: false,
            bytes: 0,
            truncated: false,
            original_bytes: None,
            redactions: 0,
            duration_ms: 0,
            reused_bytes: 0,
        });
    }

    fn add(&mut self, path: &str, mut captured: Captured) -> io::Result<()> {
        // Names built from host file names: the tar name and the manifest
        // carry the same escaped form.
        let path: &str = &escape_controls(path);
        let size = captured.content.len();
        let archive = match captured.status {
            Status::Ok | Status::Partial => true,
            Status::Failed | Status::TimedOut => size > 0,
            Status::Skipped => false,
        };
        let dropped = captured.content.seen() - size;
        if archive {
            self.sink.append_content(path, &captured.content)?;
            self.remaining = self.remaining.saturating_sub(size);
        }
        if let Some(scanner) = captured.scanner.take() {
            // Only a cut member needs its own line count (to renumber the
            // evidence); the chunks know theirs.
            let member_lines = if dropped > 0 {
                captured.content.lines()
            } else {
                scanner.lines() + 1
            };
            let placement = Placement {
                archived: archive,
                dropped_bytes: dropped,
                member_lines,
            };
            self.sink.scanned(scanner, placement);
        }
        let mut reason = captured.reason;
        let mut note = |text: String| {
            reason = Some(match reason.take() {
                Some(r) => format!("{r}; {text}"),
                None => text,
            });
        };
        if captured.truncated {
            note(format!(
                "{}: kept the last {size} of {} bytes",
                captured.cap_reason, captured.original_bytes
            ));
        }
        if let Some(problem) = captured.content.problem() {
            note(problem.to_owned());
        }
        self.files.push(FileReport {
            path: path.to_owned(),
            source: escape_controls(&captured.source).into_owned(),
            status: captured.status,
            reason: reason.map(|r| escape_controls(&r).into_owned()),
            archived: archive,
            bytes: if archive { size } else { 0 },
            truncated: archive && captured.truncated,
            original_bytes: captured.truncated.then_some(captured.original_bytes),
            redactions: captured.redactions,
            duration_ms: millis(captured.duration),
            reused_bytes: captured.follow.as_ref().map_or(0, |f| f.reused_bytes),
        });
        Ok(())
    }
}

/// A member's content and what happened while gathering it.
#[derive(Debug)]
pub struct Captured {
    pub source: String,
    /// Redacted and within budget.
    pub content: Content,
    /// Bytes the source produced (before redaction and capping).
    pub original_bytes: u64,
    /// Older bytes were dropped to fit the budget.
    pub truncated: bool,
    pub cap_reason: &'static str,
    pub status: Status,
    pub reason: Option<String>,
    pub redactions: usize,
    /// Start of the command's stderr, redacted.
    pub stderr_head: String,
    pub duration: Duration,
    /// The line observer that saw the content, handed back to the sink.
    pub scanner: Option<Scanner>,
    /// A followed stream's state after this read (`Members::journal`).
    pub follow: Option<Followed>,
}

/// Where a followed stream stands after one read.
#[derive(Debug)]
pub struct Followed {
    /// journalctl's `-- cursor:` line, taken off the content; `None` when
    /// it printed none (nothing new, or it stopped early).
    pub cursor: Option<String>,
    /// The whole stream so far, for the next bundle.
    pub saved: chunks::Saved,
    /// Source bytes this read took (the cursor line not included).
    pub new_bytes: u64,
    /// Lines among them.
    pub new_lines: u64,
    /// Content carried over from earlier bundles.
    pub reused_bytes: u64,
}

impl Captured {
    fn without_data(source: String, status: Status, reason: String, started: Instant) -> Self {
        Self {
            source,
            content: Content::default(),
            original_bytes: 0,
            truncated: false,
            cap_reason: MEMBER_CAP_REASON,
            status,
            reason: Some(reason),
            redactions: 0,
            stderr_head: String::new(),
            duration: started.elapsed(),
            scanner: None,
            follow: None,
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

fn command_line(program: &str, args: &[OsString]) -> String {
    let mut line = program.to_owned();
    for arg in args {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// A source's bytes on their way in: redacted line by line, then kept
/// newest-last in bounded, compressed chunks.
struct Intake {
    redactor: StreamRedactor,
    content: Chunks,
    budget: u64,
    raw: u64,
    /// Sees the redacted bytes too (the diagnosis), in the same pass.
    scanner: Option<Scanner>,
    /// A followed stream: the last bytes are held back until the end,
    /// where journalctl's `-- cursor:` line is taken off.
    follow: Option<FollowIntake>,
}

#[derive(Debug)]
struct FollowIntake {
    held: Vec<u8>,
    /// The last byte passed on (a cursor line starts a line).
    last_passed: Option<u8>,
    lines: u64,
    reused_bytes: u64,
}

/// Entries a followed journal stream's first read asks for to learn their
/// size (and all it needs when the stream is that short).
pub const TAIL_PROBE_ENTRIES: u64 = 2000;

/// journalctl's `--show-cursor` line, the last of its output.
const CURSOR_PREFIX: &[u8] = b"-- cursor: ";
/// Held back from a followed stream: more than a cursor line.
const CURSOR_HOLD: usize = 4096;

/// What an [`Intake`] gathered.
struct Finished {
    content: Content,
    raw: u64,
    redactions: usize,
    scanner: Option<Scanner>,
    follow: Option<Followed>,
}

impl Intake {
    fn new(
        ctx: &CollectContext,
        budget: Budget,
        mode: Mode,
        scanner: Option<Scanner>,
        resume: Option<Resume>,
    ) -> Self {
        let (content, follow) = match resume {
            None => (Chunks::new(budget.bytes), None),
            Some(Resume { saved, keep }) => {
                let keep = keep.max(budget.bytes);
                let (content, reused_bytes) = match &saved {
                    Some(saved) => (Chunks::resume(keep, saved), saved.seen),
                    None => (Chunks::new(keep), 0),
                };
                let follow = FollowIntake {
                    held: Vec::new(),
                    last_passed: None,
                    lines: 0,
                    reused_bytes,
                };
                (content, Some(follow))
            }
        };
        Self {
            redactor: ctx.redactor.stream(mode),
            content,
            budget: budget.bytes,
            raw: 0,
            scanner,
            follow,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.raw += data.len() as u64;
        let Some(follow) = &mut self.follow else {
            Self::pass(
                &mut self.redactor,
                &mut self.content,
                &mut self.scanner,
                data,
            );
            return;
        };
        follow.lines += memchr::memchr_iter(b'\n', data).count() as u64;
        follow.held.extend_from_slice(data);
        if follow.held.len() > 2 * CURSOR_HOLD {
            let n = follow.held.len() - CURSOR_HOLD;
            follow.last_passed = Some(follow.held[n - 1]);
            Self::pass(
                &mut self.redactor,
                &mut self.content,
                &mut self.scanner,
                &follow.held[..n],
            );
            follow.held.drain(..n);
        }
    }

    fn pass(
        redactor: &mut StreamRedactor,
        content: &mut Chunks,
        scanner: &mut Option<Scanner>,
        data: &[u8],
    ) {
        match scanner {
            Some(scanner) => redactor.push(data, &mut |b| {
                content.write(b);
                scanner.feed(b);
            }),
            None => redactor.push(data, &mut |b| content.write(b)),
        }
    }

    /// Flushes the last line; returns the content, the bytes read, the
    /// redaction count, the observer and a followed stream's state.
    fn finish(mut self) -> Finished {
        let mut cursor = None;
        if let Some(follow) = &mut self.follow {
            let mut held = std::mem::take(&mut follow.held);
            if let Some(body) = held.strip_suffix(b"\n") {
                let start = memchr::memrchr(b'\n', body).map_or(0, |i| i + 1);
                let line_start = start > 0 || follow.last_passed.is_none_or(|b| b == b'\n');
                if line_start && body[start..].starts_with(CURSOR_PREFIX) {
                    let text = String::from_utf8_lossy(&body[start + CURSOR_PREFIX.len()..]);
                    cursor = Some(text.trim().to_owned()).filter(|c| !c.is_empty());
                    self.raw -= (held.len() - start) as u64;
                    follow.lines -= 1;
                    held.truncate(start);
                }
            }
            Self::pass(
                &mut self.redactor,
                &mut self.content,
                &mut self.scanner,
                &held,
            );
        }
        let mut content = self.content;
        let mut scanner = self.scanner;
        let count = self.redactor.finish(&mut |b| {
            content.write(b);
            if let Some(scanner) = &mut scanner {
                scanner.feed(b);
            }
        });
        let follow = self.follow.map(|f| Followed {
            cursor,
            saved: content.save(),
            new_bytes: self.raw,
            new_lines: f.lines,
            reused_bytes: f.reused_bytes,
        });
        Finished {
            content: content.finish_within(self.budget),
            raw: self.raw,
            redactions: count,
            scanner,
            follow,
        }
    }
}

/// How long to keep reading after the command exited, when something it
/// started in the background still holds the output pipe open.
const PIPE_GRACE: Duration = Duration::from_millis(500);
/// How long to wait for a killed command to be reaped.
const KILL_GRACE: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(10);
/// stderr is only for the manifest's reason; a little is enough.
const STDERR_KEEP: usize = 4096;
const READ_CHUNK: usize = 64 * 1024;
/// Read before the tail of a big file so that, after its partial first
/// line is dropped, the kept part still fills the budget.
const SEEK_SLACK: u64 = 64 * 1024;

/// A reader thread reached EOF (or failed reading).
struct ReaderDone(Option<io::Error>);

enum Ending {
    Finished(ExitStatus),
    /// Exited, but a background process kept stdout open.
    PipeHeld(ExitStatus),
    TimedOut,
}

/// What bounds one command.
struct CommandLimits {
    budget: Budget,
    scanner: Option<Scanner>,
    mode: Mode,
    timeout: Duration,
    /// The manifest's reason when `timeout` kills it.
    timeout_reason: String,
    /// A followed stream (`Members::journal`): where it stood after the
    /// last bundle, `None` when it starts afresh.
    resume: Option<Resume>,
}

/// How a followed stream carries on.
#[derive(Debug)]
struct Resume {
    saved: Option<chunks::Saved>,
    /// Bytes the stream keeps for later bundles (the member cap).
    keep: u64,
}

/// Runs a command with a deadline; its stdout, redacted and bounded to
/// `budget`, is the member.
fn capture_command(
    ctx: &CollectContext,
    program: &str,
    args: &[OsString],
    source: String,
    limits: CommandLimits,
) -> Captured {
    let CommandLimits {
        budget,
        scanner,
        mode,
        timeout,
        timeout_reason,
        resume,
    } = limits;
    let started = Instant::now();
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = &ctx.path_env {
        command.env("PATH", path);
    }
    let mut child = match spawn(&mut command) {
        Ok(child) => child,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Captured::without_data(
                source,
                Status::Skipped,
                format!("{program} not found on PATH"),
                started,
            );
        }
        Err(err) => {
            return Captured::without_data(
                source,
                Status::Failed,
                format!("cannot run {program}: {err}"),
                started,
            );
        }
    };

    let intake = Arc::new(Mutex::new(Some(Intake::new(
        ctx, budget, mode, scanner, resume,
    ))));
    let stderr_head = Arc::new(Mutex::new(Vec::new()));
    let abandoned = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<ReaderDone>();
    if let Err(err) = start_readers(&mut child, &intake, &stderr_head, &abandoned, done_tx) {
        kill_and_reap(&mut child);
        return Captured::without_data(
            source,
            Status::Failed,
            format!("cannot read the output of {program}: {err}"),
            started,
        );
    }

    let deadline = started + timeout;
    // Both pipes must reach EOF: stderr carries the reason for a failure.
    let mut open_pipes = 2;
    let mut read_error = None;
    let mut exited: Option<(ExitStatus, Instant)> = None;
    let ending = loop {
        if exited.is_none() {
            match child.try_wait() {
                Ok(Some(status)) => exited = Some((status, Instant::now())),
                Ok(None) => {}
                Err(err) => {
                    read_error.get_or_insert(err);
                }
            }
        }
        if let Some((status, at)) = exited {
            if open_pipes == 0 {
                break Ending::Finished(status);
            }
            if at.elapsed() >= PIPE_GRACE {
                break Ending::PipeHeld(status);
            }
        }
        let now = Instant::now();
        if now >= deadline {
            break Ending::TimedOut;
        }
        let nap = POLL.min(deadline - now);
        if open_pipes == 0 {
            std::thread::sleep(nap);
        } else {
            match done_rx.recv_timeout(nap) {
                Ok(ReaderDone(err)) => {
                    open_pipes -= 1;
                    if let Some(err) = err {
                        read_error.get_or_insert(err);
                    }
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => open_pipes = 0,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
        }
    };
    if matches!(ending, Ending::TimedOut) {
        kill_and_reap(&mut child);
        // Let the readers drain what the killed command had already written.
        let until = Instant::now() + Duration::from_millis(100);
        while open_pipes > 0 {
            let left = until.saturating_duration_since(Instant::now());
            match done_rx.recv_timeout(left) {
                Ok(_) => open_pipes -= 1,
                Err(_) => break,
            }
        }
    }
    abandoned.store(true, Ordering::Relaxed);

    let intake = intake
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .expect("only this function takes the intake");
    let mut stderr =
        std::mem::take(&mut *stderr_head.lock().unwrap_or_else(PoisonError::into_inner));
    ctx.redactor.redact(&mut stderr);
    let stderr_head = String::from_utf8_lossy(&stderr).into_owned();
    let Finished {
        content,
        raw: original_bytes,
        redactions,
        scanner,
        follow,
    } = intake.finish();

    let (status, mut reason) = match ending {
        Ending::TimedOut => (Status::TimedOut, Some(timeout_reason)),
        Ending::Finished(exit) => exit_outcome(exit, &stderr_head),
        Ending::PipeHeld(exit) => {
            let (status, reason) = exit_outcome(exit, &stderr_head);
            let held = "stopped reading: a background process kept the output open";
            (
                status,
                Some(reason.map_or_else(|| held.to_owned(), |r| format!("{r}; {held}"))),
            )
        }
    };
    if let Some(err) = read_error {
        let note = format!("reading output: {err}");
        reason = Some(reason.map_or_else(|| note.clone(), |r| format!("{r}; {note}")));
    }
    Captured {
        source,
        truncated: content.truncated(),
        content,
        original_bytes,
        cap_reason: budget.reason,
        status,
        reason,
        redactions,
        stderr_head,
        duration: started.elapsed(),
        scanner,
        follow,
    }
}

/// Spawns, retrying briefly on ETXTBSY: an executable still open for writing
/// in a process that is between fork and exec (a package update, or a test
/// writing a script while another thread forks) cannot be executed for a
/// moment.
fn spawn(command: &mut Command) -> io::Result<Child> {
    const ATTEMPTS: u32 = 5;
    let mut attempt = 1;
    loop {
        match command.spawn() {
            Err(err) if err.kind() == io::ErrorKind::ExecutableFileBusy && attempt < ATTEMPTS => {
                std::thread::sleep(Duration::from_millis(20) * attempt);
                attempt += 1;
            }
            result => return result,
        }
    }
}

fn exit_outcome(exit: ExitStatus, stderr: &str) -> (Status, Option<String>) {
    use std::os::unix::process::ExitStatusExt as _;
    if exit.success() {
        return (Status::Ok, None);
    }
    let what = match (exit.code(), exit.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "failed".to_owned(),
    };
    let reason = match first_line(stderr) {
        Some(line) => format!("{what}: {line}"),
        None => what,
    };
    (Status::Failed, Some(reason))
}

/// First non-empty line of `text`, shortened for the manifest.
pub fn first_line(text: &str) -> Option<String> {
    const MAX_CHARS: usize = 300;
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(line.chars().take(MAX_CHARS).collect())
}

/// Readers run on their own threads so that the deadline holds even when a
/// grandchild keeps the pipes open after the command is gone.
fn start_readers(
    child: &mut Child,
    intake: &Arc<Mutex<Option<Intake>>>,
    stderr_head: &Arc<Mutex<Vec<u8>>>,
    abandoned: &Arc<AtomicBool>,
    done: mpsc::Sender<ReaderDone>,
) -> io::Result<()> {
    let mut stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("stdout was not captured"))?;
    let mut stderr = child
        .stderr
        .take()
        .ok_or_else(|| io::Error::other("stderr was not captured"))?;

    let intake = Arc::clone(intake);
    let stop = Arc::clone(abandoned);
    let stdout_done = done.clone();
    std::thread::Builder::new()
        .name("collect-stdout".into())
        .spawn(move || {
            let mut chunk = vec![0u8; READ_CHUNK];
            let error = loop {
                match stdout.read(&mut chunk) {
                    Ok(0) => break None,
                    Ok(n) => {
                        if stop.load(Ordering::Relaxed) {
                            break None;
                        }
                        let mut guard = intake.lock().unwrap_or_else(PoisonError::into_inner);
                        match guard.as_mut() {
                            Some(intake) => intake.push(&chunk[..n]),
                            None => break None,
                        }
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(err) => break Some(err),
                }
            };
            let _ = stdout_done.send(ReaderDone(error));
        })?;

    let head = Arc::clone(stderr_head);
    let stop = Arc::clone(abandoned);
    std::thread::Builder::new()
        .name("collect-stderr".into())
        .spawn(move || {
            let mut chunk = [0u8; 4096];
            loop {
                match stderr.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        let mut head = head.lock().unwrap_or_else(PoisonError::into_inner);
                        let room = STDERR_KEEP.saturating_sub(head.len()).min(n);
                        head.extend_from_slice(&chunk[..room]);
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = done.send(ReaderDone(None));
        })?;
    Ok(())
}

fn kill_and_reap(child: &mut Child) {
    let _ = child.kill();
    let until = Instant::now() + KILL_GRACE;
    while Instant::now() < until {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) => std::thread::sleep(POLL),
        }
    }
}

/// How reading a host file ended, told by its reading thread.
enum FileEnd {
    Missing,
    /// A FIFO, socket or device: never opened for reading.
    NotRegular(String),
    OpenFailed(io::Error),
    /// Read to the end or to the read limit; an error stopped it early.
    Read {
        skipped_bytes: u64,
        error: Option<io::Error>,
    },
}

/// Reads a host file's newest `budget` bytes. Only regular files, opened
/// through [`crate::rootfs`] (every path component inside the root, the type
/// checked before any read open). Opening and reading happen on a thread of
/// their own so that a read stuck in the kernel (a hung network filesystem)
/// cannot hold the collector past `limits.timeout`: the thread is then
/// abandoned and what it read so far is kept.
fn capture_file(
    ctx: &CollectContext,
    host: &str,
    source: String,
    limits: CommandLimits,
) -> Captured {
    let CommandLimits {
        budget,
        scanner,
        mode,
        timeout,
        timeout_reason,
        resume,
    } = limits;
    let started = Instant::now();
    let intake = Arc::new(Mutex::new(Some(Intake::new(
        ctx, budget, mode, scanner, resume,
    ))));
    let abandoned = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<FileEnd>();
    let spawned = {
        let intake = Arc::clone(&intake);
        let abandoned = Arc::clone(&abandoned);
        let root = ctx.root.clone();
        let host = PathBuf::from(host);
        std::thread::Builder::new()
            .name("collect-file".into())
            .spawn(move || {
                let end = read_host_file(&root, &host, budget, &intake, &abandoned);
                let _ = done_tx.send(end);
            })
    };
    if let Err(err) = spawned {
        return Captured::without_data(
            source,
            Status::Failed,
            format!("cannot start reading {host}: {err}"),
            started,
        );
    }
    let end = done_rx.recv_timeout(timeout);
    abandoned.store(true, Ordering::Relaxed);
    let (skipped_bytes, timed_out, read_error) = match end {
        Ok(FileEnd::Missing) => {
            return Captured::without_data(
                source,
                Status::Skipped,
                format!("{host} does not exist"),
                started,
            );
        }
        Ok(FileEnd::NotRegular(what)) => {
            return Captured::without_data(
                source,
                Status::Skipped,
                format!("{host} is {what}"),
                started,
            );
        }
        Ok(FileEnd::OpenFailed(err)) => {
            return Captured::without_data(
                source,
                Status::Failed,
                format!("cannot open {host}: {err}"),
                started,
            );
        }
        Ok(FileEnd::Read {
            skipped_bytes,
            error,
        }) => (skipped_bytes, None, error),
        Err(_) => (0, Some(timeout_reason), None),
    };
    // A timed-out reader may be in the middle of pushing a chunk: wait a
    // moment for it, but never for as long as it likes.
    let intake = if timed_out.is_some() {
        take_within(&intake, PIPE_GRACE)
    } else {
        intake.lock().unwrap_or_else(PoisonError::into_inner).take()
    };
    let Some(intake) = intake else {
        return Captured::without_data(
            source,
            Status::TimedOut,
            format!(
                "{}; nothing kept: the reader was still busy",
                timed_out.unwrap_or_default()
            ),
            started,
        );
    };
    let Finished {
        content,
        raw,
        redactions,
        scanner,
        follow,
    } = intake.finish();
    let (status, reason) = match (timed_out, read_error) {
        (Some(timeout_reason), _) => (Status::TimedOut, Some(timeout_reason)),
        (None, Some(err)) if content.is_empty() => {
            (Status::Failed, Some(format!("reading {host}: {err}")))
        }
        (None, Some(err)) => (
            Status::Partial,
            Some(format!("reading {host} stopped early: {err}")),
        ),
        (None, None) => (Status::Ok, None),
    };
    Captured {
        source,
        truncated: skipped_bytes > 0 || content.truncated(),
        content,
        original_bytes: skipped_bytes + raw,
        cap_reason: budget.reason,
        status,
        reason,
        redactions,
        stderr_head: String::new(),
        duration: started.elapsed(),
        scanner,
        follow,
    }
}

/// Takes what `intake` holds, waiting at most `grace` for its lock.
fn take_within(intake: &Mutex<Option<Intake>>, grace: Duration) -> Option<Intake> {
    let until = Instant::now() + grace;
    loop {
        match intake.try_lock() {
            Ok(mut guard) => return guard.take(),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => {
                return poisoned.into_inner().take()
            }
            Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => {
                std::thread::sleep(POLL);
            }
            Err(std::sync::TryLockError::WouldBlock) => return None,
        }
    }
}

/// The reading thread of [`capture_file`]: pushes the file's newest bytes
/// into `intake` until the end, the read limit, or `abandoned`.
fn read_host_file(
    root: &Path,
    host: &Path,
    budget: Budget,
    intake: &Mutex<Option<Intake>>,
    abandoned: &AtomicBool,
) -> FileEnd {
    let opened = match crate::rootfs::open(root, host) {
        Ok(opened) if opened.metadata.is_file() => opened,
        Ok(_) => return FileEnd::NotRegular("a directory".into()),
        Err(err) if err.kind() == io::ErrorKind::NotFound => return FileEnd::Missing,
        Err(err) if err.kind() == io::ErrorKind::Unsupported => {
            return FileEnd::NotRegular(err.to_string());
        }
        Err(err) => return FileEnd::OpenFailed(err),
    };
    let mut file = opened.file;
    let len = opened.metadata.len();
    let mut skipped_bytes = 0u64;
    let window = budget.bytes.saturating_add(SEEK_SLACK);
    if len > window {
        let offset = len - window;
        if file.seek(SeekFrom::Start(offset)).is_ok() {
            skipped_bytes = offset;
            // The first line read is a fragment whose start (perhaps a
            // secret's key) is gone: drop it rather than guess.
            if let Some(intake) = intake
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_mut()
            {
                intake.redactor.start_mid_line();
            }
        }
    }
    // A file that grows while we read (a live log) must not keep us reading
    // forever: stop after twice what we can keep.
    let read_limit = window.saturating_mul(2);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut read = 0u64;
    let mut error = None;
    while read < read_limit && !abandoned.load(Ordering::Relaxed) {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                read += n as u64;
                let mut guard = intake.lock().unwrap_or_else(PoisonError::into_inner);
                match guard.as_mut() {
                    Some(intake) => intake.push(&chunk[..n]),
                    None => break,
                }
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => {
                error = Some(err);
                break;
            }
        }
    }
    FileEnd::Read {
        skipped_bytes,
        error,
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A sink that keeps members in memory, and contexts on fixture scripts.

    use super::{Budget, CollectContext, Sink, BUNDLE_CAP_REASON, MEMBER_CAP_REASON};
    use crate::redact::Redactor;
    use std::ffi::OsString;
    use std::io::{self, Read};
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    pub struct MemorySink {
        pub members: Vec<(String, Vec<u8>)>,
        pub member_cap: u64,
        pub total_cap: u64,
        pub used: u64,
    }

    impl MemorySink {
        pub fn new(member_cap: u64, total_cap: u64) -> Self {
            Self {
                members: Vec::new(),
                member_cap,
                total_cap,
                used: 0,
            }
        }

        pub fn get(&self, path: &str) -> Option<&[u8]> {
            self.members
                .iter()
                .find(|(p, _)| p == path)
                .map(|(_, d)| d.as_slice())
        }
    }

    impl Sink for MemorySink {
        fn budget(&self) -> Budget {
            let remaining = self.total_cap - self.used;
            if remaining < self.member_cap {
                Budget {
                    bytes: remaining,
                    reason: BUNDLE_CAP_REASON,
                }
            } else {
                Budget {
                    bytes: self.member_cap,
                    reason: MEMBER_CAP_REASON,
                }
            }
        }

        fn append(&mut self, path: &str, size: u64, data: &mut dyn Read) -> io::Result<()> {
            let mut buf = Vec::new();
            data.read_to_end(&mut buf)?;
            assert_eq!(
                buf.len() as u64,
                size,
                "{path}: size announced != bytes read"
            );
            self.used += size;
            self.members.push((path.to_owned(), buf));
            Ok(())
        }
    }

    pub fn fixtures_bin() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin")
    }

    /// PATH with `extra` first (for wrappers that set fixture env), then the
    /// fixtures, then the system's tools the fixture scripts use.
    pub fn fixture_path(extra: Option<&Path>) -> OsString {
        let mut dirs: Vec<PathBuf> = extra.into_iter().map(Path::to_path_buf).collect();
        dirs.push(fixtures_bin());
        dirs.push("/usr/bin".into());
        dirs.push("/bin".into());
        std::env::join_paths(dirs).expect("joinable PATH")
    }

    pub fn context(root: &Path, path_env: Option<OsString>) -> CollectContext {
        let mut ctx = CollectContext::new(
            root.to_path_buf(),
            Duration::from_secs(20),
            Redactor::new(["sekrit-token-1234567890"]),
        );
        ctx.path_env = path_env;
        ctx
    }

    /// Writes an executable `sh` script named `name` into `dir`.
    pub fn script(dir: &Path, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{context, fixture_path, script, MemorySink};
    use super::*;

    fn run(ctx: &CollectContext, sink: &mut MemorySink, f: CollectFn) -> CollectorReport {
        run_collector("test", f, ctx, sink).expect("memory sink never fails")
    }

    #[test]
    fn capped_command_keeps_the_tail_as_raw_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        // 3000 numbered lines then invalid UTF-8 at the very end.
        script(
            tmp.path(),
            "noisy",
            r"i=0; while [ $i -lt 3000 ]; do echo line-$i; i=$((i+1)); done; printf 'end-\377\376\n'",
        );
        let ctx = context(Path::new("/"), Some(fixture_path(Some(tmp.path()))));
        let mut sink = MemorySink::new(100, u64::MAX);
        let report = run(&ctx, &mut sink, |m| m.command("noisy.txt", "noisy", ["x"]));
        let file = &report.files[0];
        assert_eq!(file.status, Status::Ok, "{file:?}");
        assert!(file.truncated);
        assert_eq!(file.bytes, 100);
        assert!(file.original_bytes.unwrap() > 20_000);
        assert!(file.reason.as_deref().unwrap().contains("member size cap"));
        let data = sink.get("noisy.txt").unwrap();
        assert_eq!(data.len(), 100);
        assert!(data.ends_with(b"line-2999\nend-\xff\xfe\n"), "{data:?}");
    }

    #[test]
    fn secret_cut_by_the_cap_leaves_no_fragment() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = context(Path::new("/"), Some(fixture_path(Some(tmp.path()))));
        // The cap cuts right inside the secret; its end must not survive.
        script(
            tmp.path(),
            "leaky",
            "printf 'xxxxsekrit-token-1234567890abcdefghijklmnopqrst'",
        );
        let mut sink = MemorySink::new(16, u64::MAX);
        let report = run(&ctx, &mut sink, |m| {
            m.command("leaky.txt", "leaky", [""; 0])
        });
        let data = sink.get("leaky.txt").unwrap();
        assert!(!String::from_utf8_lossy(data).contains("7890"), "{data:?}");
        assert_eq!(data, b"efghijklmnopqrst");
        assert!(report.files[0].truncated);

        // When the whole secret is inside what is kept, it is replaced.
        script(
            tmp.path(),
            "leaky2",
            "printf 'xxxxsekrit-token-1234567890abcdef'",
        );
        let mut sink = MemorySink::new(16, u64::MAX);
        let report = run(&ctx, &mut sink, |m| {
            m.command("leaky.txt", "leaky2", [""; 0])
        });
        assert_eq!(sink.get("leaky.txt").unwrap(), b"[REDACTED]abcdef");
        assert_eq!(report.files[0].redactions, 1);
    }

    #[test]
    fn hanging_command_is_killed_and_partial_output_kept() {
        let tmp = tempfile::tempdir().unwrap();
        script(tmp.path(), "hang", "echo started; exec sleep 30");
        let mut ctx = context(Path::new("/"), Some(fixture_path(Some(tmp.path()))));
        ctx.command_timeout = Duration::from_millis(500);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let started = Instant::now();
        let report = run(&ctx, &mut sink, |m| m.command("hang.txt", "hang", [""; 0]));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        let file = &report.files[0];
        assert_eq!(file.status, Status::TimedOut);
        assert!(file.reason.as_deref().unwrap().contains("killed after"));
        assert_eq!(sink.get("hang.txt").unwrap(), b"started\n");
        assert_eq!(report.status, Status::TimedOut);
    }

    #[test]
    fn plain_sleep_times_out_quickly() {
        let mut ctx = context(Path::new("/"), None);
        ctx.command_timeout = Duration::from_millis(300);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let started = Instant::now();
        let report = run(&ctx, &mut sink, |m| m.command("sleep.txt", "sleep", ["30"]));
        assert!(started.elapsed() < Duration::from_secs(4));
        assert_eq!(report.files[0].status, Status::TimedOut);
        // Nothing was printed, so there is nothing to archive.
        assert!(!report.files[0].archived);
        assert!(sink.members.is_empty());
    }

    #[test]
    fn background_grandchild_holding_the_pipe_does_not_hang() {
        let ctx = context(Path::new("/"), None);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let started = Instant::now();
        let report = run(&ctx, &mut sink, |m| {
            m.command("bg.txt", "sh", ["-c", "sleep 10 & echo hello"])
        });
        assert!(started.elapsed() < Duration::from_secs(5));
        let file = &report.files[0];
        assert_eq!(file.status, Status::Ok, "{file:?}");
        assert!(file
            .reason
            .as_deref()
            .unwrap()
            .contains("background process"));
        assert_eq!(sink.get("bg.txt").unwrap(), b"hello\n");
    }

    #[test]
    fn missing_command_is_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let ctx = context(Path::new("/"), Some(tmp.path().as_os_str().to_owned()));
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run(&ctx, &mut sink, |m| {
            m.command("j.log", "journalctl", ["--list-boots"])
        });
        assert_eq!(report.status, Status::Skipped);
        assert_eq!(
            report.files[0].reason.as_deref(),
            Some("journalctl not found on PATH")
        );
        assert_eq!(
            report.reason.as_deref(),
            Some("journalctl not found on PATH")
        );
        assert!(sink.members.is_empty());
    }

    #[test]
    fn failing_command_keeps_stdout_and_first_stderr_line() {
        let ctx = context(Path::new("/"), None);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run(&ctx, &mut sink, |m| {
            m.command(
                "f.txt",
                "sh",
                ["-c", "echo partial; echo 'boom: sekrit-token-1234567890' >&2; echo second >&2; exit 3"],
            )
        });
        let file = &report.files[0];
        assert_eq!(file.status, Status::Failed);
        assert_eq!(
            file.reason.as_deref(),
            Some("exit code 3: boom: [REDACTED]")
        );
        assert!(file.archived);
        assert_eq!(sink.get("f.txt").unwrap(), b"partial\n");
        assert_eq!(report.status, Status::Failed);
    }

    #[test]
    fn files_are_read_under_root_with_symlinks_kept_inside() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("etc")).unwrap();
        std::fs::create_dir_all(root.path().join("run/nm")).unwrap();
        std::fs::write(
            root.path().join("run/nm/resolv.conf"),
            b"nameserver 10.0.0.1\n",
        )
        .unwrap();
        std::os::unix::fs::symlink("/run/nm/resolv.conf", root.path().join("etc/resolv.conf"))
            .unwrap();
        let ctx = context(root.path(), None);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run(&ctx, &mut sink, |m| {
            m.file("resolv.conf", "/etc/resolv.conf")?;
            m.file("escape", "/../../etc/../etc/passwd")?;
            m.file("missing", "/etc/nope")
        });
        assert_eq!(sink.get("resolv.conf").unwrap(), b"nameserver 10.0.0.1\n");
        assert!(report.files[0].source.ends_with("run/nm/resolv.conf"));
        // `..` cannot climb out of the root to the live /etc/passwd.
        assert_eq!(report.files[1].status, Status::Skipped);
        assert_eq!(report.files[2].status, Status::Skipped);
        assert_eq!(
            report.files[2].reason.as_deref(),
            Some("/etc/nope does not exist")
        );
        assert_eq!(report.status, Status::Ok);
    }

    #[test]
    fn big_file_keeps_its_tail_and_invalid_utf8() {
        let root = tempfile::tempdir().unwrap();
        let mut content = vec![b'a'; 10_000];
        content.extend_from_slice(b"\xff\xfe sekrit-token-1234567890 tail\n");
        std::fs::write(root.path().join("big"), &content).unwrap();
        let ctx = context(root.path(), None);
        let mut sink = MemorySink::new(60, u64::MAX);
        let report = run(&ctx, &mut sink, |m| m.file("big", "/big"));
        let file = &report.files[0];
        assert!(file.truncated);
        assert_eq!(file.original_bytes, Some(content.len() as u64));
        assert_eq!(file.redactions, 1);
        let data = sink.get("big").unwrap();
        // Redaction shortened the kept part; it never grows past the cap.
        assert!(data.len() <= 60 && data.len() > 30, "{}", data.len());
        assert_eq!(file.bytes, data.len() as u64);
        assert!(data.ends_with(b"\xff\xfe [REDACTED] tail\n"), "{data:?}");
    }

    #[test]
    fn exhausted_bundle_budget_skips_without_running() {
        let tmp = tempfile::tempdir().unwrap();
        let marker = tmp.path().join("ran");
        script(
            tmp.path(),
            "touchy",
            &format!("touch '{}'", marker.display()),
        );
        let ctx = context(Path::new("/"), Some(fixture_path(Some(tmp.path()))));
        let mut sink = MemorySink::new(100, 0);
        let report = run(&ctx, &mut sink, |m| m.command("t", "touchy", [""; 0]));
        assert_eq!(report.files[0].reason.as_deref(), Some(BUNDLE_CAP_REASON));
        assert!(!marker.exists());
    }

    #[test]
    fn live_root_detection() {
        let mut ctx = context(Path::new("/"), None);
        assert!(ctx.is_live_root());
        ctx.root = PathBuf::from("/./");
        assert!(ctx.is_live_root());
        ctx.root = PathBuf::from("/sysroot");
        assert!(!ctx.is_live_root());
        assert_eq!(
            ctx.host_path(Path::new("/etc/x")),
            PathBuf::from("/sysroot/etc/x")
        );
    }
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
        let report = super::run(&spec, &ctx, &mut sink).unwrap();
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
        let report = super::run(&spec, &ctx, &mut sink).unwrap();
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

    #[test]
    fn big_command_output_is_held_compressed_and_keeps_the_tail() {
        let ctx = context(Path::new("/"), None);
        let mut sink = MemorySink::new(2 << 20, u64::MAX);
        // 8 MiB of numbered lines, a secret in the middle of a line near the end.
        let report = run_collector(
            "big",
            |m| {
                m.command(
                    "big.txt",
                    "sh",
                    [
                        "-c",
                        "seq 1 1200000; echo 'x password=hunter22 y'; echo last",
                    ],
                )
            },
            &ctx,
            &mut sink,
        )
        .unwrap();
        let file = &report.files[0];
        assert!(file.truncated);
        assert_eq!(file.bytes, 2 << 20);
        assert_eq!(file.redactions, 1);
        let data = sink.get("big.txt").unwrap();
        assert_eq!(data.len(), 2 << 20);
        assert!(data.ends_with(b"1200000\nx password=[REDACTED] y\nlast\n"));
        // The kept part starts right after the cut, in the stream's order.
        let first = data.iter().position(|&b| b == b'\n').unwrap();
        let second: u64 = std::str::from_utf8(&data[first + 1..first + 8])
            .unwrap()
            .split('\n')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(second > 900_000, "{second}");
    }
}
