//! Collectors: what a bundle holds, one module per source, and the common
//! machinery every collector uses to gather a member safely.
//!
//! A collector is a function over [`Members`]: it names each member it wants
//! (`journal/this-boot.log` from `journalctl …`, `network/resolv.conf` from a
//! host file) and [`Members`] does the rest the same way for all of them:
//! runs the command with a deadline or reads the file under [`CollectContext::root`],
//! bounds the content to the budget the [`Sink`] grants (keeping the newest
//! bytes), scrubs the agent's secrets, hands the finished member to the sink
//! at once and records a [`FileReport`] for the manifest.
//!
//! Nothing a host does makes a collector fail the bundle: a missing command or
//! file is `skipped`, a non-zero exit `failed`, a hang `timed_out`. The only
//! error a collector returns is the sink's own write error, because then there
//! is no bundle left to put anything in.
//!
//! INTERFACE OWNED BY THE LEAD (`CollectContext`); the rest by the collectors work.

pub mod crio;
pub mod journal;
pub mod mounts;
pub mod network;
pub mod records;
pub mod system;

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::redact::Redactor;

/// Everything a collector needs to know about the host it reads.
#[derive(Debug, Clone)]
pub struct CollectContext {
    /// Sysroot prefix for host files (`/` on a real host).
    pub root: PathBuf,
    /// Longest a single external command may run before it is killed.
    pub command_timeout: Duration,
    /// Scrubs the agent's own secrets from every collected byte.
    pub redactor: Redactor,
    /// PATH used to find external commands; `None` = inherit the agent's.
    /// Tests point it at fixture scripts without touching the process-wide
    /// environment, which parallel tests share.
    pub path_env: Option<OsString>,
}

impl CollectContext {
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

    /// Where an absolute host path lives under `root`, following symlinks in
    /// the last component inside `root` (a sysroot's `/etc/resolv.conf` usually
    /// points at an absolute `/run/...` path that must not escape to the live
    /// system).
    pub fn host_path(&self, host: &Path) -> PathBuf {
        const MAX_LINKS: usize = 16;
        let mut host = normalize(host);
        if self.is_live_root() {
            return host;
        }
        for _ in 0..MAX_LINKS {
            let joined = join_root(&self.root, &host);
            match std::fs::read_link(&joined) {
                Ok(target) => {
                    let parent = host.parent().unwrap_or_else(|| Path::new("/"));
                    host = normalize(&parent.join(target));
                }
                Err(_) => return joined,
            }
        }
        join_root(&self.root, &host)
    }
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
}

/// How much the next member may hold, and what limits it, for the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    pub reason: &'static str,
}

pub const MEMBER_CAP_REASON: &str = "member size cap";
pub const BUNDLE_CAP_REASON: &str = "bundle size cap";

/// Where finished members go: the archive writer.
pub trait Sink {
    /// The most the next member may hold.
    fn budget(&self) -> Budget;
    /// Adds one complete member (`path` relative to the bundle's top dir).
    fn append(&mut self, path: &str, data: &[u8]) -> io::Result<()>;
}

pub type CollectFn = fn(&mut Members<'_>) -> io::Result<()>;

/// Every collector, in bundle order: the small precious ones first and the
/// big journals last, so a giant journal can only eat its own share of the
/// bundle size cap.
pub const COLLECTORS: &[(&str, CollectFn)] = &[
    ("records", records::collect),
    ("network", network::collect),
    ("mounts", mounts::collect),
    ("system", system::collect),
    ("crio", crio::collect),
    ("journal", journal::collect),
];

/// Runs one collector against `sink` and returns its manifest entry. Errs
/// only when the sink cannot write.
pub fn run_collector(
    name: &str,
    collect: CollectFn,
    ctx: &CollectContext,
    sink: &mut dyn Sink,
) -> io::Result<CollectorReport> {
    let started = Instant::now();
    let mut members = Members {
        ctx,
        sink,
        files: Vec::new(),
        note: None,
    };
    collect(&mut members)?;
    let Members { files, note, .. } = members;
    let (status, reason) = summarize(&files, note);
    Ok(CollectorReport {
        name: name.to_owned(),
        status,
        reason,
        bytes: files.iter().map(|f| f.bytes).sum(),
        duration_ms: millis(started.elapsed()),
        files,
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

/// A collector's handle: gathers members into the sink and remembers what
/// happened to each.
pub struct Members<'a> {
    ctx: &'a CollectContext,
    sink: &'a mut dyn Sink,
    files: Vec<FileReport>,
    note: Option<String>,
}

impl Members<'_> {
    pub fn ctx(&self) -> &CollectContext {
        self.ctx
    }

    /// A collector-level remark for the manifest (why everything was
    /// skipped, or what was left out on purpose).
    pub fn note(&mut self, note: impl Into<String>) {
        self.note = Some(note.into());
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
        let args: Vec<OsString> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let source = command_line(program, &args);
        let budget = self.sink.budget();
        if budget.bytes == 0 {
            self.record_skip(path, source, budget.reason.to_owned());
            return Ok(());
        }
        let mut captured = capture_command(self.ctx, program, &args, source, budget);
        adjust(&mut captured);
        self.add(path, captured)
    }

    /// Reads the absolute host path `host` under the context's root and
    /// stores it as `path`.
    pub fn file(&mut self, path: &str, host: &str) -> io::Result<()> {
        let real = self.ctx.host_path(Path::new(host));
        let source = real.display().to_string();
        let budget = self.sink.budget();
        if budget.bytes == 0 {
            self.record_skip(path, source, budget.reason.to_owned());
            return Ok(());
        }
        let captured = capture_file(self.ctx, host, &real, source, budget);
        self.add(path, captured)
    }

    /// Stores content the agent produced itself (summaries). Not truncated:
    /// a cut JSON document is useless, so it is skipped when it does not fit.
    pub fn generated(&mut self, path: &str, source: &str, mut data: Vec<u8>) -> io::Result<()> {
        let started = Instant::now();
        let redactions = self.ctx.redactor.redact(&mut data);
        let budget = self.sink.budget();
        if data.len() as u64 > budget.bytes {
            self.record_skip(path, source.to_owned(), budget.reason.to_owned());
            return Ok(());
        }
        self.add(
            path,
            Captured {
                source: source.to_owned(),
                original_bytes: data.len() as u64,
                data,
                truncated: false,
                cap_reason: budget.reason,
                status: Status::Ok,
                reason: None,
                redactions,
                stderr_head: String::new(),
                duration: started.elapsed(),
            },
        )
    }

    /// Lists a member that was not attempted.
    pub fn skip(&mut self, path: &str, source: &str, reason: impl Into<String>) {
        self.record_skip(path, source.to_owned(), reason.into());
    }

    fn record_skip(&mut self, path: &str, source: String, reason: String) {
        self.files.push(FileReport {
            path: path.to_owned(),
            source,
            status: Status::Skipped,
            reason: Some(reason),
            archived: false,
            bytes: 0,
            truncated: false,
            original_bytes: None,
            redactions: 0,
            duration_ms: 0,
        });
    }

    fn add(&mut self, path: &str, captured: Captured) -> io::Result<()> {
        let archive = match captured.status {
            Status::Ok | Status::Partial => true,
            Status::Failed | Status::TimedOut => !captured.data.is_empty(),
            Status::Skipped => false,
        };
        if archive {
            self.sink.append(path, &captured.data)?;
        }
        let mut reason = captured.reason;
        if captured.truncated {
            let note = format!(
                "{}: kept the last {} of {} bytes",
                captured.cap_reason,
                captured.data.len(),
                captured.original_bytes
            );
            reason = Some(match reason {
                Some(r) => format!("{r}; {note}"),
                None => note,
            });
        }
        self.files.push(FileReport {
            path: path.to_owned(),
            source: captured.source,
            status: captured.status,
            reason,
            archived: archive,
            bytes: if archive {
                captured.data.len() as u64
            } else {
                0
            },
            truncated: archive && captured.truncated,
            original_bytes: captured.truncated.then_some(captured.original_bytes),
            redactions: captured.redactions,
            duration_ms: millis(captured.duration),
        });
        Ok(())
    }
}

/// A member's content and what happened while gathering it.
#[derive(Debug)]
pub struct Captured {
    pub source: String,
    /// Redacted and within budget.
    pub data: Vec<u8>,
    pub original_bytes: u64,
    pub truncated: bool,
    pub cap_reason: &'static str,
    pub status: Status,
    pub reason: Option<String>,
    pub redactions: usize,
    /// Start of the command's stderr, redacted.
    pub stderr_head: String,
    pub duration: Duration,
}

impl Captured {
    fn without_data(source: String, status: Status, reason: String, started: Instant) -> Self {
        Self {
            source,
            data: Vec::new(),
            original_bytes: 0,
            truncated: false,
            cap_reason: MEMBER_CAP_REASON,
            status,
            reason: Some(reason),
            redactions: 0,
            stderr_head: String::new(),
            duration: started.elapsed(),
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

/// Keeps the newest `capacity` bytes of a stream in bounded memory.
#[derive(Debug)]
struct TailBuffer {
    buf: VecDeque<u8>,
    capacity: usize,
    seen: u64,
}

impl TailBuffer {
    fn new(capacity: usize) -> Self {
        Self {
            buf: VecDeque::new(),
            capacity,
            seen: 0,
        }
    }

    fn push(&mut self, chunk: &[u8]) {
        self.seen += chunk.len() as u64;
        if chunk.len() >= self.capacity {
            self.buf.clear();
            self.buf
                .extend(chunk[chunk.len() - self.capacity..].iter().copied());
            return;
        }
        let overflow = (self.buf.len() + chunk.len()).saturating_sub(self.capacity);
        self.buf.drain(..overflow);
        let needed = self.buf.len() + chunk.len();
        if needed > self.buf.capacity() {
            // Grow geometrically but never past the cap: VecDeque's own
            // doubling would briefly hold twice the cap for a full journal.
            let target = needed.max(self.buf.len() * 2).min(self.capacity);
            self.buf.reserve_exact(target - self.buf.len());
        }
        self.buf.extend(chunk.iter().copied());
    }

    /// Whether older bytes were thrown away.
    fn dropped(&self) -> bool {
        self.seen > self.buf.len() as u64
    }

    fn into_vec(self) -> Vec<u8> {
        Vec::from(self.buf)
    }
}

/// Ring size for a member cap: the cap plus room for one secret, so that a
/// secret cut by the ring's front edge can be removed whole (see
/// [`finish_content`]).
fn ring_capacity(cap: u64, redactor: &Redactor) -> usize {
    usize::try_from(cap)
        .unwrap_or(usize::MAX)
        .saturating_add(redactor.longest_secret())
}

/// Redacts `data` (the newest bytes of a source) and trims it to `cap`.
/// Returns the content, the redaction count and whether it was cut.
fn finish_content(
    mut data: Vec<u8>,
    front_dropped: bool,
    cap: u64,
    redactor: &Redactor,
) -> (Vec<u8>, usize, bool) {
    let redactions = redactor.redact(&mut data);
    let mut truncated = front_dropped;
    if front_dropped {
        // The first bytes may be the end of a secret whose start was
        // dropped; the redactor cannot recognise a fragment, so drop them too.
        let fragment = redactor.longest_secret().saturating_sub(1).min(data.len());
        data.drain(..fragment);
    }
    let cap = usize::try_from(cap).unwrap_or(usize::MAX);
    if data.len() > cap {
        data.drain(..data.len() - cap);
        truncated = true;
    }
    (data, redactions, truncated)
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

/// A reader thread reached EOF (or failed reading).
struct ReaderDone(Option<io::Error>);

enum Ending {
    Finished(ExitStatus),
    /// Exited, but a background process kept stdout open.
    PipeHeld(ExitStatus),
    TimedOut,
}

/// Runs a command with a deadline; its stdout, bounded to `budget` and
/// redacted, is the member.
fn capture_command(
    ctx: &CollectContext,
    program: &str,
    args: &[OsString],
    source: String,
    budget: Budget,
) -> Captured {
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

    let tail = Arc::new(Mutex::new(TailBuffer::new(ring_capacity(
        budget.bytes,
        &ctx.redactor,
    ))));
    let stderr_head = Arc::new(Mutex::new(Vec::new()));
    let abandoned = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<ReaderDone>();
    if let Err(err) = start_readers(&mut child, &tail, &stderr_head, &abandoned, done_tx) {
        kill_and_reap(&mut child);
        return Captured::without_data(
            source,
            Status::Failed,
            format!("cannot read the output of {program}: {err}"),
            started,
        );
    }

    let deadline = started + ctx.command_timeout;
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

    let buffer = std::mem::replace(
        &mut *tail.lock().unwrap_or_else(PoisonError::into_inner),
        TailBuffer::new(0),
    );
    let mut stderr =
        std::mem::take(&mut *stderr_head.lock().unwrap_or_else(PoisonError::into_inner));
    ctx.redactor.redact(&mut stderr);
    let stderr_head = String::from_utf8_lossy(&stderr).into_owned();

    let original_bytes = buffer.seen;
    let front_dropped = buffer.dropped();
    let (data, redactions, truncated) = finish_content(
        buffer.into_vec(),
        front_dropped,
        budget.bytes,
        &ctx.redactor,
    );

    let (status, mut reason) = match ending {
        Ending::TimedOut => (
            Status::TimedOut,
            Some(format!(
                "killed after the {} command timeout",
                humantime::format_duration(ctx.command_timeout)
            )),
        ),
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
        data,
        original_bytes,
        truncated,
        cap_reason: budget.reason,
        status,
        reason,
        redactions,
        stderr_head,
        duration: started.elapsed(),
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
    tail: &Arc<Mutex<TailBuffer>>,
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

    let tail = Arc::clone(tail);
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
                        tail.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .push(&chunk[..n]);
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

/// Reads a host file's newest `budget` bytes. Only regular files: opening a
/// FIFO or a device would block or never end.
fn capture_file(
    ctx: &CollectContext,
    host: &str,
    real: &Path,
    source: String,
    budget: Budget,
) -> Captured {
    let started = Instant::now();
    let open = File::open(real).and_then(|f| {
        let meta = f.metadata()?;
        Ok((f, meta))
    });
    let (mut file, meta) = match open {
        Ok(opened) => opened,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            return Captured::without_data(
                source,
                Status::Skipped,
                format!("{host} does not exist"),
                started,
            );
        }
        Err(err) => {
            return Captured::without_data(
                source,
                Status::Failed,
                format!("cannot open {host}: {err}"),
                started,
            );
        }
    };
    if !meta.is_file() {
        return Captured::without_data(
            source,
            Status::Skipped,
            format!("{host} is not a regular file"),
            started,
        );
    }

    let capacity = ring_capacity(budget.bytes, &ctx.redactor);
    let mut skipped_bytes = 0u64;
    if meta.len() > capacity as u64 {
        let offset = meta.len() - capacity as u64;
        if file.seek(SeekFrom::Start(offset)).is_ok() {
            skipped_bytes = offset;
        }
    }
    // A file that grows while we read (a live log) must not keep us reading
    // forever: stop after twice what we can keep.
    let read_limit = (capacity as u64).saturating_mul(2);
    let mut tail = TailBuffer::new(capacity);
    let mut chunk = vec![0u8; READ_CHUNK];
    let mut read_error = None;
    while tail.seen < read_limit {
        match file.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => tail.push(&chunk[..n]),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => {
                read_error = Some(err);
                break;
            }
        }
    }
    let original_bytes = skipped_bytes + tail.seen;
    let front_dropped = skipped_bytes > 0 || tail.dropped();
    let (data, redactions, truncated) =
        finish_content(tail.into_vec(), front_dropped, budget.bytes, &ctx.redactor);
    let (status, reason) = match read_error {
        None => (Status::Ok, None),
        Some(err) if data.is_empty() => (Status::Failed, Some(format!("reading {host}: {err}"))),
        Some(err) => (
            Status::Partial,
            Some(format!("reading {host} stopped early: {err}")),
        ),
    };
    Captured {
        source,
        data,
        original_bytes,
        truncated,
        cap_reason: budget.reason,
        status,
        reason,
        redactions,
        stderr_head: String::new(),
        duration: started.elapsed(),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A sink that keeps members in memory, and contexts on fixture scripts.

    use super::{Budget, CollectContext, Sink, BUNDLE_CAP_REASON, MEMBER_CAP_REASON};
    use crate::redact::Redactor;
    use std::ffi::OsString;
    use std::io;
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

        fn append(&mut self, path: &str, data: &[u8]) -> io::Result<()> {
            self.used += data.len() as u64;
            self.members.push((path.to_owned(), data.to_vec()));
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
        CollectContext {
            root: root.to_path_buf(),
            command_timeout: Duration::from_secs(20),
            redactor: Redactor::new(["sekrit-token-1234567890"]),
            path_env,
        }
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
    fn tail_buffer_keeps_newest_bytes_within_capacity() {
        let mut tail = TailBuffer::new(5);
        tail.push(b"abc");
        tail.push(b"defg");
        assert_eq!(tail.buf.iter().copied().collect::<Vec<_>>(), b"cdefg");
        tail.push(b"0123456789");
        assert!(tail.buf.capacity() < 64);
        assert_eq!(tail.seen, 17);
        assert!(tail.dropped());
        assert_eq!(tail.into_vec(), b"56789");
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
}
