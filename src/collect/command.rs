//! The child-process runner: a command run with a deadline, no stdin, its
//! stdout read on a thread of its own into the member's `Intake` and the
//! start of its stderr kept for the manifest's reason; killed and reaped at
//! the deadline with its process group ([`crate::child`]), not waited for
//! when a background process holds its pipes (which dies with the group);
//! its exit told as a [`Status`] and a reason.

use std::ffi::OsString;
use std::io::{self, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::capture::{Captured, CommandLimits, Finished, Intake};
use super::context::CollectContext;
use super::report::Status;

/// The command line as the manifest's source shows it.
pub(super) fn command_line(program: &str, args: &[OsString]) -> String {
    let mut line = program.to_owned();
    for arg in args {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

/// How long to keep reading after the command exited, when something it
/// started in the background still holds the output pipe open.
pub(super) const PIPE_GRACE: Duration = Duration::from_millis(500);
pub(super) const POLL: Duration = Duration::from_millis(10);
/// stderr is only for the manifest's reason; a little is enough.
const STDERR_KEEP: usize = 4096;
pub(super) const READ_CHUNK: usize = 64 * 1024;

/// A reader thread reached EOF (or failed reading).
struct ReaderDone(Option<io::Error>);

enum Ending {
    Finished(ExitStatus),
    /// Exited, but a background process kept stdout open.
    PipeHeld(ExitStatus),
    TimedOut,
}

/// Runs a command with a deadline; its stdout, redacted and bounded to
/// `budget`, is the member.
pub(super) fn capture_command(
    ctx: &CollectContext,
    program: &str,
    args: &[OsString],
    source: String,
    limits: CommandLimits,
) -> Captured {
    let CommandLimits {
        budget,
        observer,
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
    let mut child = match crate::child::spawn(&mut command) {
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
        ctx, budget, mode, observer, resume,
    ))));
    let stderr_head = Arc::new(Mutex::new(Vec::new()));
    let abandoned = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel::<ReaderDone>();
    if let Err(err) = start_readers(child.child(), &intake, &stderr_head, &abandoned, done_tx) {
        child.kill();
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
        child.kill();
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
    // Whatever it left in the background dies with its group.
    drop(child);

    let intake = intake
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take()
        .expect("only this function takes the intake");
    let mut stderr =
        std::mem::take(&mut *stderr_head.lock().unwrap_or_else(PoisonError::into_inner));
    ctx.redactor.redact(&mut stderr);
    let stderr_head = String::from_utf8_lossy(&stderr).into_owned();
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
    let Finished {
        content,
        raw: original_bytes,
        redactions,
        observer,
        follow,
    } = intake.finish_ended(status == Status::Ok);
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
        observer,
        follow,
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
pub(crate) fn first_line(text: &str) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::run_collector;
    use super::super::testing::{context, fixture_path, run, script, MemorySink};
    use super::*;

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
