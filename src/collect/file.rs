//! Host file capture: a host file read under the context's root through
//! [`crate::rootfs`] (regular files only, every path component confined),
//! its newest bytes kept. The file is read on a thread of its own
//! ([`crate::rootfs::open_streamed_with`]) so that a read stuck on a hung
//! filesystem cannot hold the collector past its deadline; what is read is
//! checked, redacted and compressed here, on the collector's thread. Only
//! text reaches the redactor and the member: a gzip file is inflated first
//! (bounded), and a file that is not text is left out ([`super::text`]).

use std::fs::{File, Metadata};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::time::Instant;

use super::capture::{Captured, CommandLimits, Finished, Intake};
use super::context::CollectContext;
use super::report::Status;
use super::text::{self, End, GZIP_MAGIC};

/// Read before the tail of a big file so that, after its partial first
/// line is dropped, the kept part still fills the budget.
const SEEK_SLACK: u64 = 64 * 1024;

/// Where the stream of a host file starts, decided on its reading thread.
enum Plan {
    /// Plain bytes from `offset` (the tail that fits, or 0).
    Plain { offset: u64 },
    /// A gzip file, from its start; the first `skip` inflated bytes are
    /// older than what is kept.
    Gzip { skip: u64 },
}

/// Reads a host file's newest `budget` bytes. Only regular files, opened
/// through [`crate::rootfs`] (every path component inside the root, the type
/// checked before any read open), read on a thread of their own so that a
/// read stuck in the kernel (a hung network filesystem) cannot hold the
/// collector past `limits.timeout`: the thread is then abandoned and what
/// was read so far is kept.
pub(super) fn capture_file(
    ctx: &CollectContext,
    host: &str,
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
    let window = budget.bytes.saturating_add(SEEK_SLACK);
    let opened = crate::rootfs::open_streamed_with(
        ctx.sysroot(),
        Path::new(host),
        timeout,
        move |file, meta| Ok(plan(file, meta, window)),
    );
    let (mut stream, plan) = match opened {
        Ok(opened) => opened,
        Err(err) => {
            let (status, reason) = match err.kind() {
                io::ErrorKind::NotFound => (Status::Skipped, format!("{host} does not exist")),
                // A FIFO, socket or device (never opened for reading), a directory.
                io::ErrorKind::Unsupported => (Status::Skipped, format!("{host} is {err}")),
                io::ErrorKind::TimedOut => (
                    Status::TimedOut,
                    format!("{timeout_reason}; nothing read: opening it did not return"),
                ),
                _ => (Status::Failed, format!("cannot open {host}: {err}")),
            };
            return Captured::without_data(source, status, reason, started);
        }
    };
    let mut intake = Intake::new(ctx, budget, mode, observer, resume);
    let (skipped_bytes, end, gzip) = match plan {
        Plan::Gzip { skip } => {
            if skip > 0 {
                intake.redactor.start_mid_line();
            }
            let (got, end) = text::gunzip(&mut stream, skip, text::Bounds::HOST, &mut |data| {
                intake.push(data);
            });
            (got.skipped, end, Some(got.compressed))
        }
        Plan::Plain { offset } => {
            if offset > 0 {
                // The first line read is a fragment whose start (perhaps a
                // secret's key) is gone: the redactor drops it rather than guess.
                intake.redactor.start_mid_line();
            }
            // A file that grows while we read (a live log) must not keep us
            // reading forever: stop after twice what we can keep.
            let (_, end) = text::read_text(&mut stream, window.saturating_mul(2), &mut |data| {
                intake.push(data);
            });
            (offset, end, None)
        }
    };
    let (timed_out, read_error) = match end {
        End::LeftOut(left_out) => {
            // Whatever went into the intake so far is dropped with it.
            return Captured::without_data(source, Status::Skipped, left_out.reason(host), started);
        }
        End::Broken(_) if stream.timed_out() => (Some(timeout_reason), None),
        End::Broken(err) => (None, Some(err)),
        End::Complete => (None, None),
    };
    let Finished {
        content,
        raw,
        redactions,
        observer,
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
    let reason = match (gzip, reason) {
        (Some(compressed), reason) => {
            let note = format!("inflated from gzip ({compressed} bytes on the host)");
            Some(reason.map_or(note.clone(), |r| format!("{r}; {note}")))
        }
        (None, reason) => reason,
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
        observer,
        follow,
    }
}

/// Decides where the stream starts (on the reading thread: these reads may
/// hang like any): a gzip file from its start, a plain file at the tail
/// that fits `window`.
fn plan(file: &mut File, meta: &Metadata, window: u64) -> Plan {
    let len = meta.len();
    let mut magic = [0u8; 2];
    if file.read_at(&mut magic, 0).is_ok_and(|n| n == 2) && magic == GZIP_MAGIC {
        // ISIZE, the last member's size modulo 4 GiB (RFC 1952): for the
        // one-member files kubelet writes, the whole size, so the older part
        // is inflated without being redacted and compressed too. A wrong one
        // costs either work (too small) or content (too big), never a bound.
        let mut trailer = [0u8; 4];
        let announced = (len >= 18 && file.read_at(&mut trailer, len - 4).is_ok_and(|n| n == 4))
            .then(|| u64::from(u32::from_le_bytes(trailer)))
            .filter(|&size| size <= text::Bounds::HOST.max_inflated);
        let skip = announced.map_or(0, |size| size.saturating_sub(window));
        return Plan::Gzip { skip };
    }
    if len > window && file.seek(SeekFrom::Start(len - window)).is_ok() {
        return Plan::Plain {
            offset: len - window,
        };
    }
    Plan::Plain { offset: 0 }
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
