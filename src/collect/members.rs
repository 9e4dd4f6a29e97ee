//! The handle collectors write members through: [`Members`] turns "member
//! `path` from this command / host file / generated text / followed journal
//! stream" into a capture within the member's budget and time, hands the
//! result to the [`Sink`] (the archive writer) and records a
//! [`FileReport`] for the manifest, counting the collector's own size cap
//! and time limit down as it goes.

use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::capture::{Captured, CommandLimits, Resume};
use super::chunks::{Chunks, Content};
use super::command::{capture_command, command_line};
use super::context::CollectContext;
use super::file::capture_file;
use super::journal_cache;
use super::observe::{Observers, Placement};
use super::report::{
    escape_controls, millis, Budget, FileReport, Status, COLLECTOR_CAP_REASON, MEMBER_CAP_REASON,
    TIME_LIMIT_REASON,
};
use crate::redact::Mode;
use bundle_format::Origin;

/// Entries a followed journal stream's first read asks for to learn their
/// size (and all it needs when the stream is that short).
pub(crate) const TAIL_PROBE_ENTRIES: u64 = 2000;

/// Where finished members go: the archive writer.
pub(crate) trait Sink {
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
}

/// Per-member options.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Opts {
    pub(crate) mode: Mode,
    /// A cap of this member's own, below the others.
    pub(crate) max_bytes: Option<u64>,
}

impl Opts {
    pub(crate) fn max_bytes(max: u64) -> Self {
        Self {
            mode: Mode::Text,
            max_bytes: Some(max),
        }
    }
}

/// A collector's handle: gathers members into the sink and remembers what
/// happened to each.
pub(crate) struct Members<'a> {
    ctx: &'a CollectContext,
    sink: &'a mut dyn Sink,
    /// The line hook: who watches the members as they go in.
    observers: &'a mut dyn Observers,
    files: Vec<FileReport>,
    note: Option<String>,
    digest: Option<String>,
    /// Bytes left under the collector's own cap.
    remaining: u64,
    /// `None` when the limit is too far away to represent.
    deadline: Option<Instant>,
    time_limit: Duration,
}

impl<'a> Members<'a> {
    /// A collector's handle on `sink`, with a size cap and a time limit of
    /// its own counted from `started`.
    pub(super) fn new(
        ctx: &'a CollectContext,
        sink: &'a mut dyn Sink,
        observers: &'a mut dyn Observers,
        max_bytes: u64,
        time_limit: Duration,
        started: Instant,
    ) -> Self {
        Self {
            ctx,
            sink,
            observers,
            files: Vec::new(),
            note: None,
            digest: None,
            remaining: max_bytes,
            deadline: started.checked_add(time_limit),
            time_limit,
        }
    }

    /// What the collector leaves for its report: its members, its note and
    /// its digest.
    pub(super) fn into_parts(self) -> (Vec<FileReport>, Option<String>, Option<String>) {
        (self.files, self.note, self.digest)
    }
}

impl Members<'_> {
    pub(crate) fn ctx(&self) -> &CollectContext {
        self.ctx
    }

    /// A collector-level remark for the manifest (why everything was
    /// skipped, or what was left out on purpose).
    pub(crate) fn note(&mut self, note: impl Into<String>) {
        let note = escape_controls(&note.into()).into_owned();
        self.note = Some(match self.note.take() {
            Some(old) => format!("{old}; {note}"),
            None => note,
        });
    }

    /// The collector's one-line finding, copied into the manifest.
    pub(crate) fn set_digest(&mut self, digest: Option<String>) {
        self.digest = digest;
    }

    /// Time left before the collector's limit.
    pub(crate) fn time_left(&self) -> Duration {
        self.deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        })
    }

    /// Bytes the next member may hold.
    pub(crate) fn budget(&self, opts: Opts) -> Budget {
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
    pub(crate) fn exhausted(&self) -> bool {
        self.budget(Opts::default()).bytes == 0 || self.time_left().is_zero()
    }

    fn time_limit_reason(&self) -> String {
        format!(
            "{TIME_LIMIT_REASON} ({}) reached",
            humantime::format_duration(self.time_limit)
        )
    }

    /// Runs `program args…` and stores its stdout as `path`.
    pub(crate) fn command<I, S>(&mut self, path: &str, program: &str, args: I) -> io::Result<()>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command_adjusted(path, program, args, |_| {})
    }

    /// Like [`Members::command`], with a chance to reinterpret the outcome
    /// before it is recorded (journalctl's "no previous boot" is a skip).
    pub(crate) fn command_adjusted<I, S>(
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
    pub(crate) fn command_with<I, S>(
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
        let origin = self.command_origin(program);
        let Some(limits) = self.limits(path, &source, opts, "killed", origin) else {
            return Ok(());
        };
        let mut captured = capture_command(self.ctx, program, &args, source, limits);
        adjust(&mut captured);
        self.add(path, captured, origin)
    }

    /// What a command describes: journalctl given a root (`--root=`,
    /// `--directory=`) reads that root's journal files; every other command
    /// (and journalctl on the running machine's own `/`) describes the
    /// machine it runs on.
    fn command_origin(&self, program: &str) -> Origin {
        if program == "journalctl" && !self.ctx.is_live_root() {
            Origin::Root
        } else {
            Origin::RunningMachine
        }
    }

    /// Runs `journalctl args…` for member `path`. With a journal cache in
    /// the context (the running agent), the member carries on from the previous bundle's read:
    /// journalctl is asked only for the entries after that read's cursor
    /// (`--after-cursor`, `--show-cursor`), the content and the diagnosis
    /// observer's state so far come from the cache, and the new entries are
    /// redacted, scanned and compressed once. A read that ends without a
    /// cursor (failed, killed) ships what it has and starts afresh next time.
    ///
    /// The first read asks for the newest [`TAIL_PROBE_ENTRIES`] entries
    /// only: when there are fewer, that is the whole stream; otherwise their
    /// size per entry tells how many entries the member cap keeps, and a
    /// second read asks journalctl for that many (with a margin) instead of
    /// streaming a journal of any size through the cap.
    pub(crate) fn journal(
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
            .unwrap_or_else(|| Arc::new(Mutex::new(journal_cache::Cache::new(0))));
        let source = command_line("journalctl", &args);
        let origin = self.command_origin("journalctl");
        let Some(mut limits) = self.limits(path, &source, Opts::default(), "killed", origin) else {
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
            if limits.observer.is_some() {
                limits.observer = entry.observer;
            }
            let mut after = OsString::from("--after-cursor=");
            after.push(&entry.cursor);
            run_args.push(after);
            carried = (entry.original_bytes, entry.redactions, Some(entry.cursor));
            entry.saved
        });
        limits.resume = Some(Resume {
            saved,
            keep,
            probe: None,
        });
        let first_read = limits.resume.as_ref().is_some_and(|r| r.saved.is_none());
        let mut captured = if first_read {
            let keep = keep.max(limits.budget.bytes);
            self.journal_tail(path, &run_args, &source, limits, keep)
        } else {
            capture_command(self.ctx, "journalctl", &run_args, source.clone(), limits)
        };
        no_entries_is_no_failure(&mut captured);
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
                let entry = journal_cache::CacheEntry {
                    source,
                    cursor,
                    saved: follow.saved.clone(),
                    original_bytes: captured.original_bytes,
                    redactions: captured.redactions,
                    observer: captured.observer.as_ref().map(|o| o.resumed()),
                };
                cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .put(path, entry);
            }
        }
        self.add(path, captured, origin)
    }

    /// The first read of a followed journal stream: the newest entries the
    /// member keeps, asked of journalctl by count (see [`Members::journal`]).
    fn journal_tail(
        &mut self,
        path: &str,
        run_args: &[OsString],
        source: &str,
        mut limits: CommandLimits,
        keep: u64,
    ) -> Captured {
        let (budget, mode, timeout_reason) =
            (limits.budget, limits.mode, limits.timeout_reason.clone());
        let started = Instant::now();
        let timeout = limits.timeout;
        let mut probe_args = run_args.to_vec();
        probe_args.push(format!("--lines={TAIL_PROBE_ENTRIES}").into());
        if let Some(resume) = &mut limits.resume {
            resume.probe = Some(TAIL_PROBE_ENTRIES);
        }
        let mut probe = capture_command(
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
            // A probe that ended well is not saved (Resume::probe): with no
            // cursor, the next bundle starts afresh, as after a failed read.
            if let Some(follow) = &mut probe.follow {
                follow.cursor = None;
            }
            return probe;
        }
        let limits = CommandLimits {
            budget,
            observer: self.observers.observer(path),
            mode,
            timeout: left,
            timeout_reason,
            resume: Some(Resume {
                saved: None,
                keep,
                probe: None,
            }),
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
    pub(crate) fn file(&mut self, path: &str, host: &str) -> io::Result<()> {
        self.file_with(path, host, Opts::default())
    }

    pub(crate) fn file_with(&mut self, path: &str, host: &str, opts: Opts) -> io::Result<()> {
        let real = self.ctx.host_path(Path::new(host));
        let source = real.display().to_string();
        // A read stuck on a hung filesystem is bounded like a command.
        let Some(limits) = self.limits(path, &source, opts, "reading stopped", Origin::Root) else {
            return Ok(());
        };
        let captured = capture_file(self.ctx, host, source, limits);
        self.add(path, captured, Origin::Root)
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
        origin: Origin,
    ) -> Option<CommandLimits> {
        let budget = self.budget(opts);
        if budget.bytes == 0 {
            self.record_skip(path, source.to_owned(), budget.reason.to_owned(), origin);
            return None;
        }
        let left = self.time_left();
        if left.is_zero() {
            let reason = self.time_limit_reason();
            self.record_skip(path, source.to_owned(), reason, origin);
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
            observer: self.observers.observer(path),
            mode: opts.mode,
            timeout,
            timeout_reason,
            resume: None,
        })
    }

    /// Stores content the agent produced itself from the root's files
    /// (summaries). Not truncated: a cut JSON document is useless, so it is
    /// skipped when it does not fit.
    pub(crate) fn generated(&mut self, path: &str, source: &str, data: Vec<u8>) -> io::Result<()> {
        self.generated_from(path, source, data, Origin::Root)
    }

    /// [`Members::generated`], of what the running machine says (its live
    /// `/proc`, a probe of its loopback).
    pub(crate) fn generated_live(
        &mut self,
        path: &str,
        source: &str,
        data: Vec<u8>,
    ) -> io::Result<()> {
        self.generated_from(path, source, data, Origin::RunningMachine)
    }

    fn generated_from(
        &mut self,
        path: &str,
        source: &str,
        mut data: Vec<u8>,
        origin: Origin,
    ) -> io::Result<()> {
        let started = Instant::now();
        let redactions = self.ctx.redactor.redact(&mut data);
        let budget = self.budget(Opts::default());
        if data.len() as u64 > budget.bytes {
            self.record_skip(path, source.to_owned(), budget.reason.to_owned(), origin);
            return Ok(());
        }
        let mut content = Chunks::new(data.len() as u64);
        content.write(&data);
        let content = content.finish();
        let observer = self.observers.observer(path).map(|mut observer| {
            observer.feed(&data);
            observer
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
                observer,
                follow: None,
            },
            origin,
        )
    }

    /// Bytes the last member put in the archive.
    pub(crate) fn last_bytes(&self) -> u64 {
        self.files.last().map_or(0, |f| f.bytes)
    }

    /// Lists a member of the root that was not attempted.
    pub(crate) fn skip(&mut self, path: &str, source: &str, reason: impl Into<String>) {
        self.record_skip(path, source.to_owned(), reason.into(), Origin::Root);
    }

    /// Lists a member of the running machine that was not attempted.
    pub(crate) fn skip_live(&mut self, path: &str, source: &str, reason: impl Into<String>) {
        self.record_skip(
            path,
            source.to_owned(),
            reason.into(),
            Origin::RunningMachine,
        );
    }

    /// Whether members that describe the running machine are collected
    /// ([`CollectContext::running_machine`]); when not, the collector
    /// notes which commands it left out, once.
    pub(crate) fn running_machine(&mut self, left_out: &str) -> bool {
        if self.ctx.running_machine {
            return true;
        }
        let root = self.ctx.layout.as_ref().map_or_else(
            || self.ctx.root.display().to_string(),
            |l| l.report.path.clone(),
        );
        self.note(format!(
            "not run: {left_out} (they describe the machine collect runs on, not the root {root})"
        ));
        false
    }

    #[allow(clippy::needless_pass_by_value)] // callers hand over what they built
    fn record_skip(&mut self, path: &str, source: String, reason: String, origin: Origin) {
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
            origin: Some(origin),
        });
    }

    fn add(&mut self, path: &str, mut captured: Captured, origin: Origin) -> io::Result<()> {
        // Names built from host file names: escaped and redacted like their
        // content, the same form in the tar name and in the manifest.
        let escaped = escape_controls(path);
        let path: &str = &self.ctx.redactor.redact_str(&escaped);
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
        if let Some(observer) = captured.observer.take() {
            // Only a cut member needs its own line count (to renumber the
            // evidence); the chunks know theirs.
            let member_lines = if dropped > 0 {
                captured.content.lines()
            } else {
                observer.lines() + 1
            };
            let placement = Placement {
                archived: archive,
                dropped_bytes: dropped,
                member_lines,
            };
            self.observers.observed(observer, placement);
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
            origin: Some(origin),
        });
        Ok(())
    }
}

/// journalctl (systemd 252, RHCOS 9's) asked for `--show-cursor` over a
/// query that matches nothing exits 1 without a word on either stream: a
/// unit that never ran (bootkube on a master, most units of a boot that
/// did not get far) is a source absent from this journal, skipped, not a
/// failure. Any real error says something on stderr.
fn no_entries_is_no_failure(captured: &mut Captured) {
    if captured.status == Status::Failed
        && captured.reason.as_deref() == Some("exit code 1")
        && captured.content.is_empty()
        && captured.stderr_head.trim().is_empty()
    {
        captured.status = Status::Skipped;
        captured.reason = Some("no entries".into());
    }
}

#[cfg(test)]
mod tests {
    use super::super::report::BUNDLE_CAP_REASON;
    use super::super::testing::{context, fixture_path, run, script, MemorySink};
    use super::*;

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
}
