//! Host file capture: a host file read under the context's root through
//! [`crate::rootfs`] (regular files only, every path component confined),
//! its newest bytes kept, on a reading thread of its own so that a read
//! stuck on a hung filesystem cannot hold the collector past its deadline.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::capture::{Captured, CommandLimits, Finished, Intake};
use super::command::{PIPE_GRACE, POLL, READ_CHUNK};
use super::context::CollectContext;
use super::report::{Budget, Status};

/// Read before the tail of a big file so that, after its partial first
/// line is dropped, the kept part still fills the budget.
const SEEK_SLACK: u64 = 64 * 1024;

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
pub(super) fn capture_file(
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
mod tests {
    use super::super::testing::{context, run, MemorySink};
    use super::*;

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
}
