//! One member's capture, shared by the command runner (`command.rs`) and
//! host file capture (`file.rs`): the limits it runs under, the `Intake`
//! its bytes go through (redactor, diagnosis observer, compressed chunks, a
//! followed journal stream's cursor taken off its end), and the [`Captured`]
//! result the member is recorded from.

use std::time::{Duration, Instant};

use super::chunks::{self, Chunks, Content};
use super::context::CollectContext;
use super::observe::LineObserver;
use super::report::{Budget, Status, MEMBER_CAP_REASON};
use crate::redact::{Mode, StreamRedactor};

/// A member's content and what happened while gathering it.
#[derive(Debug)]
pub(crate) struct Captured {
    pub(crate) source: String,
    /// Redacted and within budget.
    pub(crate) content: Content,
    /// Bytes the source produced (before redaction and capping).
    pub(crate) original_bytes: u64,
    /// Older bytes were dropped to fit the budget.
    pub(crate) truncated: bool,
    pub(crate) cap_reason: &'static str,
    pub(crate) status: Status,
    pub(crate) reason: Option<String>,
    pub(crate) redactions: usize,
    /// Start of the command's stderr, redacted.
    pub(crate) stderr_head: String,
    pub(crate) duration: Duration,
    /// The line observer that saw the content, handed back to the sink.
    pub(crate) observer: Option<Box<dyn LineObserver>>,
    /// A followed stream's state after this read (`Members::journal`).
    pub(crate) follow: Option<Followed>,
}

/// Where a followed stream stands after one read.
#[derive(Debug)]
pub(crate) struct Followed {
    /// journalctl's `-- cursor:` line, taken off the content; `None` when
    /// it printed none (nothing new, or it stopped early).
    pub(crate) cursor: Option<String>,
    /// The whole stream so far, for the next bundle.
    pub(crate) saved: chunks::Saved,
    /// Source bytes this read took (the cursor line not included).
    pub(crate) new_bytes: u64,
    /// Lines among them.
    pub(crate) new_lines: u64,
    /// Content carried over from earlier bundles.
    pub(crate) reused_bytes: u64,
}

impl Captured {
    /// The first MiB of the content as text: what a collector parses back
    /// out of a small listing (`systemctl list-units`, `journalctl
    /// --list-boots`) it also ships.
    pub(super) fn head_text(&mut self) -> String {
        use std::io::Read as _;
        let mut text = Vec::new();
        let _ = self
            .content
            .reader()
            .take(1024 * 1024)
            .read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    }

    pub(super) fn without_data(
        source: String,
        status: Status,
        reason: String,
        started: Instant,
    ) -> Self {
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
            observer: None,
            follow: None,
        }
    }
}

/// A source's bytes on their way in: redacted line by line, then kept
/// newest-last in bounded, compressed chunks.
pub(super) struct Intake {
    pub(super) redactor: StreamRedactor,
    content: Chunks,
    budget: u64,
    raw: u64,
    /// Sees the redacted bytes too (the diagnosis), in the same pass.
    observer: Option<Box<dyn LineObserver>>,
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
    probe: Option<u64>,
}

/// journalctl's `--show-cursor` line, the last of its output.
const CURSOR_PREFIX: &[u8] = b"-- cursor: ";
/// Held back from a followed stream: more than a cursor line.
const CURSOR_HOLD: usize = 4096;

/// What an [`Intake`] gathered.
pub(super) struct Finished {
    pub(super) content: Content,
    pub(super) raw: u64,
    pub(super) redactions: usize,
    pub(super) observer: Option<Box<dyn LineObserver>>,
    pub(super) follow: Option<Followed>,
}

impl Intake {
    pub(super) fn new(
        ctx: &CollectContext,
        budget: Budget,
        mode: Mode,
        observer: Option<Box<dyn LineObserver>>,
        resume: Option<Resume>,
    ) -> Self {
        let (content, follow) = match resume {
            None => (Chunks::new(budget.bytes), None),
            Some(Resume { saved, keep, probe }) => {
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
                    probe,
                };
                (content, Some(follow))
            }
        };
        Self {
            redactor: ctx.redactor.stream(mode),
            content,
            budget: budget.bytes,
            raw: 0,
            observer,
            follow,
        }
    }

    pub(super) fn push(&mut self, data: &[u8]) {
        self.raw += data.len() as u64;
        let Some(follow) = &mut self.follow else {
            Self::pass(
                &mut self.redactor,
                &mut self.content,
                &mut self.observer,
                (data, &[]),
            );
            return;
        };
        follow.lines += crate::newlines::count(data);
        let total = follow.held.len() + data.len();
        if total <= 2 * CURSOR_HOLD {
            follow.held.extend_from_slice(data);
            return;
        }
        // All but the last CURSOR_HOLD bytes of held + data go on, in one
        // push as before; only the bytes held back are copied.
        let n = total - CURSOR_HOLD;
        if n >= follow.held.len() {
            let (now, later) = data.split_at(n - follow.held.len());
            follow.last_passed = now.last().or(follow.held.last()).copied();
            Self::pass(
                &mut self.redactor,
                &mut self.content,
                &mut self.observer,
                (&follow.held, now),
            );
            follow.held.clear();
            follow.held.extend_from_slice(later);
        } else {
            follow.held.extend_from_slice(data);
            follow.last_passed = Some(follow.held[n - 1]);
            Self::pass(
                &mut self.redactor,
                &mut self.content,
                &mut self.observer,
                (&follow.held[..n], &[]),
            );
            follow.held.drain(..n);
        }
    }

    /// Redacts `parts` (joined) into the content and the observer.
    fn pass(
        redactor: &mut StreamRedactor,
        content: &mut Chunks,
        observer: &mut Option<Box<dyn LineObserver>>,
        parts: (&[u8], &[u8]),
    ) {
        match observer {
            Some(observer) => redactor.push_joined(parts.0, parts.1, &mut |b| {
                content.write(b);
                observer.feed(b);
            }),
            None => redactor.push_joined(parts.0, parts.1, &mut |b| content.write(b)),
        }
    }

    /// Flushes the last line; returns the content, the bytes read, the
    /// redaction count, the observer and a followed stream's state.
    pub(super) fn finish(self) -> Finished {
        self.finish_ended(true)
    }

    /// [`Intake::finish`] of a source that ended well (`Status::Ok`) or
    /// not: a probe that ended well with its lines is dropped by its
    /// caller (see [`Resume::probe`]).
    pub(super) fn finish_ended(mut self, ended_well: bool) -> Finished {
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
                &mut self.observer,
                (&held, &[]),
            );
        }
        let mut content = self.content;
        let mut observer = self.observer;
        let count = self.redactor.finish(&mut |b| {
            content.write(b);
            if let Some(observer) = &mut observer {
                observer.feed(b);
            }
        });
        let follow = self.follow.map(|f| {
            // A probe its caller reads again is not saved: sealing its open
            // chunk would compress bytes the next read compresses again.
            let dropped = ended_well && f.probe.is_some_and(|lines| f.lines >= lines);
            Followed {
                cursor,
                saved: if dropped {
                    chunks::Saved::default()
                } else {
                    content.save()
                },
                new_bytes: self.raw,
                new_lines: f.lines,
                reused_bytes: f.reused_bytes,
            }
        });
        Finished {
            content: content.finish_within(self.budget),
            raw: self.raw,
            redactions: count,
            observer,
            follow,
        }
    }
}

/// What bounds one command or one file read.
pub(super) struct CommandLimits {
    pub(super) budget: Budget,
    pub(super) observer: Option<Box<dyn LineObserver>>,
    pub(super) mode: Mode,
    pub(super) timeout: Duration,
    /// The manifest's reason when `timeout` kills it.
    pub(super) timeout_reason: String,
    /// A followed stream (`Members::journal`): where it stood after the
    /// last bundle, `None` when it starts afresh.
    pub(super) resume: Option<Resume>,
}

/// How a followed stream carries on.
#[derive(Debug)]
pub(super) struct Resume {
    pub(super) saved: Option<chunks::Saved>,
    /// Bytes the stream keeps for later bundles (the member cap).
    pub(super) keep: u64,
    /// A probe of this many lines (`Members::journal_tail`): when it ends
    /// well with that many, its caller reads the stream again and drops
    /// it, so its state is not saved.
    pub(super) probe: Option<u64>,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::testing::context;
    use super::*;

    /// A followed stream: lines with a secret, then journalctl's cursor.
    fn stream() -> Vec<u8> {
        let mut text = Vec::new();
        for i in 0..40_000 {
            text.extend_from_slice(format!("line {i} {}\n", "x".repeat(i % 131)).as_bytes());
            if i % 997 == 0 {
                text.extend_from_slice(b"token sekrit-token-1234567890 here\n");
            }
        }
        text.extend_from_slice(b"-- cursor: s=abc;i=42\n");
        text
    }

    fn follow_intake() -> Intake {
        probe_intake(None)
    }

    fn probe_intake(probe: Option<u64>) -> Intake {
        let ctx = context(Path::new("/nonexistent"), None);
        let budget = Budget {
            bytes: 64 << 20,
            reason: MEMBER_CAP_REASON,
        };
        let resume = Resume {
            saved: None,
            keep: 64 << 20,
            probe,
        };
        Intake::new(&ctx, budget, Mode::Text, None, Some(resume))
    }

    /// The pieces a plain hold-back buffer passes on: every byte copied
    /// into it, all but its last [`CURSOR_HOLD`] passed once it holds
    /// twice that.
    fn held_back_pieces(pieces: &[&[u8]]) -> (Vec<Vec<u8>>, Vec<u8>) {
        let (mut passed, mut held) = (Vec::new(), Vec::new());
        for piece in pieces {
            held.extend_from_slice(piece);
            if held.len() > 2 * CURSOR_HOLD {
                let n = held.len() - CURSOR_HOLD;
                passed.push(held.drain(..n).collect());
            }
        }
        (passed, held)
    }

    #[test]
    fn a_followed_stream_is_passed_on_as_a_hold_back_buffer_would() {
        let text = stream();
        let body_len = text.len() - b"-- cursor: s=abc;i=42\n".len();
        for size in [1, 100, 4095, 4096, 5000, 8193, 65_536, 300_000] {
            let pieces: Vec<&[u8]> = text.chunks(size).collect();
            let mut intake = follow_intake();
            for piece in &pieces {
                intake.push(piece);
            }
            let finished = intake.finish();
            let follow = finished.follow.expect("a followed stream");
            assert_eq!(follow.cursor.as_deref(), Some("s=abc;i=42"), "{size}");
            assert_eq!(follow.new_bytes, body_len as u64, "{size}");
            assert_eq!(finished.raw, body_len as u64, "{size}");

            // The same redactor pushes as the plain buffer's, so the same
            // chunks, compressed byte for byte.
            let (passed, held) = held_back_pieces(&pieces);
            let mut model = follow_intake();
            for piece in &passed {
                Intake::pass(
                    &mut model.redactor,
                    &mut model.content,
                    &mut model.observer,
                    (piece, &[]),
                );
            }
            model.raw = text.len() as u64;
            let state = model.follow.as_mut().expect("followed");
            state.held = held;
            state.last_passed = passed.last().and_then(|p| p.last()).copied();
            state.lines = memchr::memchr_iter(b'\n', &text).count() as u64;
            let expected = model.finish();
            let expected_follow = expected.follow.as_ref().expect("followed");
            assert_eq!(follow.new_lines, expected_follow.new_lines, "{size}");
            assert_eq!(finished.redactions, expected.redactions, "{size}");
            assert_eq!(finished.content.head, expected.content.head, "{size}");
            assert_eq!(finished.content.tail, expected.content.tail, "{size}");
            let gz = |c: &Content| c.sealed.iter().map(|s| s.gz.to_vec()).collect::<Vec<_>>();
            assert_eq!(gz(&finished.content), gz(&expected.content), "{size}");
        }
    }

    #[test]
    fn a_probe_that_ends_well_with_its_lines_is_not_saved() {
        let text = stream();
        let lines = memchr::memchr_iter(b'\n', &text).count() as u64 - 1;
        let saved_bytes = |probe: Option<u64>, ended_well: bool| {
            let mut intake = probe_intake(probe);
            intake.push(&text);
            let finished = intake.finish_ended(ended_well);
            let follow = finished.follow.expect("a followed stream");
            assert_eq!(follow.new_lines, lines);
            assert_eq!(follow.cursor.as_deref(), Some("s=abc;i=42"));
            (follow.saved.held_bytes(), finished.content.len())
        };
        let (whole, len) = saved_bytes(None, true);
        assert!(whole > 0);
        // Read again by its caller: nothing saved, the member still whole.
        assert_eq!(saved_bytes(Some(lines), true), (0, len));
        // Kept by its caller: saved as any read.
        assert_eq!(saved_bytes(Some(lines + 1), true), (whole, len));
        assert_eq!(saved_bytes(Some(lines), false), (whole, len));
    }
}
