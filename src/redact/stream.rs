//! Content that arrives in chunks of any size, redacted line by line:
//! [`StreamRedactor`] holds back an incomplete last line (and the last
//! complete one, so that a secret wrapped onto the next line is seen
//! whole), cuts a line too long to hold with a margin larger than any
//! literal secret, replaces a secret value that runs past the cut up to the
//! end of its line, and keeps a keyfile's section state line by line.

use std::sync::Arc;

use memchr::{memchr, memrchr};

use super::keys::Mode;
use super::literals::Engine;
use super::scan::{scan, LineState, Work};
use super::span::{line_start, Span, MARKER};

/// Longest incomplete line held back before it is cut.
const MAX_LINE: usize = 256 * 1024;
/// Bytes held back at a cut: more than any secret-shaped match can need to
/// be recognised from its start.
const MIN_HOLD: usize = 8 * 1024;

/// Redacts content pushed in chunks, passing redacted bytes to a sink as
/// soon as their lines are complete (all but the last complete line, which
/// waits for the next one in case a secret continues on it).
pub struct StreamRedactor {
    engine: Arc<Engine>,
    mode: Mode,
    pending: Vec<u8>,
    /// Dropping bytes up to the next newline: the rest of a line whose secret
    /// ran past a cut, or the partial first line after a seek.
    swallowing: bool,
    /// For the partial first line: bytes still to drop before giving up on
    /// its end (`None`: to the newline, however far).
    swallow_left: Option<usize>,
    /// Bytes at the start of `pending` already emitted: the last line, kept
    /// as context (the start of a secret wrapped onto the next line).
    behind: usize,
    state: LineState,
    count: usize,
    spans: Vec<Span>,
    hold: usize,
    work: Work,
}

impl StreamRedactor {
    /// A stream over these rules (see [`super::Redactor::stream`]).
    pub(super) fn new(engine: Arc<Engine>, mode: Mode) -> Self {
        let hold = MIN_HOLD.max(engine.longest_form + 1).min(MAX_LINE / 2);
        StreamRedactor {
            engine,
            mode,
            pending: Vec::new(),
            swallowing: false,
            swallow_left: None,
            behind: 0,
            state: LineState::default(),
            count: 0,
            spans: Vec::new(),
            hold,
            work: Work::default(),
        }
    }

    /// The content starts somewhere inside a line (after a seek): that
    /// partial line may hold the end of a secret whose key was cut off, so
    /// it is dropped, up to its end or [`MAX_LINE`] bytes of it. A line
    /// longer than that (a one-line JSON file) resumes there: no secret
    /// value runs that long, and the whole file would be dropped otherwise.
    pub(crate) fn start_mid_line(&mut self) {
        self.swallowing = true;
        self.swallow_left = Some(MAX_LINE);
    }

    pub fn push(&mut self, data: &[u8], sink: &mut dyn FnMut(&[u8])) {
        self.push_joined(data, &[], sink);
    }

    /// [`StreamRedactor::push`] of `first` and `second` joined, without
    /// the caller copying them together first.
    pub(crate) fn push_joined(&mut self, first: &[u8], second: &[u8], sink: &mut dyn FnMut(&[u8])) {
        self.pending.extend_from_slice(first);
        self.pending.extend_from_slice(second);
        self.drain(false, sink);
    }

    /// Flushes the last lines; returns the redaction count.
    pub fn finish(self, sink: &mut dyn FnMut(&[u8])) -> usize {
        self.finish_with_work(sink).0
    }

    /// [`StreamRedactor::finish`], with what the finders cost in all.
    pub fn finish_with_work(mut self, sink: &mut dyn FnMut(&[u8])) -> (usize, Work) {
        self.drain(true, sink);
        (self.count, self.work)
    }

    fn drain(&mut self, last: bool, sink: &mut dyn FnMut(&[u8])) {
        let mut offset = self.behind;
        loop {
            let rest = &self.pending[offset..];
            if self.swallowing {
                let nl = memchr(b'\n', rest);
                match (nl, self.swallow_left) {
                    (Some(nl), left) if left.is_none_or(|left| nl <= left) => {
                        offset += nl;
                        self.swallowing = false;
                        self.swallow_left = None;
                    }
                    (_, Some(left)) if rest.len() > left => {
                        offset += left;
                        self.swallowing = false;
                        self.swallow_left = None;
                    }
                    (_, left) => {
                        self.swallow_left = left.map(|left| left - rest.len());
                        offset = self.pending.len();
                        break;
                    }
                }
                continue;
            }
            if rest.is_empty() {
                break;
            }
            if last {
                self.emit_lines(offset, self.pending.len(), sink);
                offset = self.pending.len();
                break;
            }
            if let Some(nl) = memrchr(b'\n', rest) {
                // Emit all but the last complete line.
                if let Some(before) = memrchr(b'\n', &rest[..nl]) {
                    let end = offset + before + 1;
                    self.emit_lines(offset, end, sink);
                    offset = end;
                    continue;
                }
                if rest.len() - nl - 1 > MAX_LINE {
                    // The next line is overlong: no more waiting for it.
                    let end = offset + nl + 1;
                    self.emit_lines(offset, end, sink);
                    offset = end;
                    continue;
                }
                break;
            }
            if rest.len() > MAX_LINE {
                offset = self.cut_long_line(offset, sink);
                continue;
            }
            break;
        }
        let keep = context_start(&self.pending, offset);
        self.pending.drain(..keep);
        self.behind = offset - keep;
    }

    /// Redacts and emits `pending[from..to]`, which ends at a line end or at
    /// the end of the content.
    fn emit_lines(&mut self, from: usize, to: usize, sink: &mut dyn FnMut(&[u8])) {
        if self.mode == Mode::Keyfile {
            // Section state is per line.
            let mut start = from;
            while start < to {
                let end = memchr(b'\n', &self.pending[start..to]).map_or(to, |i| start + i + 1);
                let line = &self.pending[start..end];
                if let Some(section) = section_name(line) {
                    self.state.secret_section = section.ends_with(b"-secrets");
                }
                self.spans.clear();
                let work = scan(
                    &self.engine,
                    line,
                    (0, line.len()),
                    Mode::Keyfile,
                    &mut self.state,
                    false,
                    &mut self.spans,
                );
                self.work.examined += work.examined;
                self.work.peak_spans = self.work.peak_spans.max(work.peak_spans);
                self.count += emit_with_spans(line, &self.spans, sink);
                start = end;
            }
            return;
        }
        // Scanned with the line before and the line after as context, so a
        // secret wrapped across lines is seen whole; only spans inside the
        // block are applied here.
        self.spans.clear();
        let start = context_start(&self.pending, from);
        let end = memchr(b'\n', &self.pending[to..]).map_or(to, |i| to + i + 1);
        let context = &self.pending[start..end];
        let work = scan(
            &self.engine,
            context,
            (from - start, to - start),
            Mode::Text,
            &mut self.state,
            false,
            &mut self.spans,
        );
        self.work.examined += work.examined;
        self.work.peak_spans = self.work.peak_spans.max(work.peak_spans);
        self.count += emit_with_spans(&self.pending[from..to], &self.spans, sink);
    }

    /// Emits most of an overlong incomplete line, keeping back enough to
    /// recognise any secret that starts near the cut. Returns the new offset.
    fn cut_long_line(&mut self, offset: usize, sink: &mut dyn FnMut(&[u8])) -> usize {
        let buf = &self.pending[offset..];
        self.spans.clear();
        let mut state = self.state;
        let work = scan(
            &self.engine,
            buf,
            (0, buf.len()),
            self.mode,
            &mut state,
            true,
            &mut self.spans,
        );
        self.work.examined += work.examined;
        self.work.peak_spans = self.work.peak_spans.max(work.peak_spans);
        let mut cut = buf.len() - self.hold;
        let crossing = self.spans.iter().position(|s| s.start < cut && s.end > cut);
        if let Some(i) = crossing {
            let span = self.spans[i];
            if span.open {
                // The value may go on past what we hold: replace it and
                // everything after it up to the end of the line.
                let before = &self.spans[..=i];
                self.count += emit_with_spans(&buf[..span.end], before, sink);
                self.swallowing = true;
                self.swallow_left = None;
                self.state = state;
                return offset + buf.len();
            }
            cut = span.end;
        }
        let keep = self.spans.iter().take_while(|s| s.end <= cut).count();
        // A PEM body still open at the cut would be the open span above; a
        // block begun after the cut is scanned again with what follows.
        self.state.in_pem = false;
        self.count += emit_with_spans(&buf[..cut], &self.spans[..keep], sink);
        offset + cut
    }
}

/// Emits `buf` with each span replaced; returns the number of secrets.
fn emit_with_spans(buf: &[u8], spans: &[Span], sink: &mut dyn FnMut(&[u8])) -> usize {
    let mut at = 0;
    for span in spans {
        sink(&buf[at..span.start]);
        if !span.counted {
            // Continues a replacement already shown.
        } else if span.quoted {
            sink(b"\"");
            sink(MARKER);
            sink(b"\"");
        } else {
            sink(MARKER);
        }
        at = span.end;
    }
    sink(&buf[at..]);
    spans.iter().filter(|s| s.counted).count()
}

/// Where the context before `at` starts: the line that ends there, at most
/// [`MIN_HOLD`] bytes of it.
fn context_start(buf: &[u8], at: usize) -> usize {
    if at == 0 {
        return 0;
    }
    line_start(buf, at - 1).max(at.saturating_sub(MIN_HOLD))
}

fn section_name(line: &[u8]) -> Option<&[u8]> {
    let line = line.trim_ascii();
    let inner = line.strip_prefix(b"[")?.strip_suffix(b"]")?;
    Some(inner)
}

#[cfg(test)]
mod tests {
    use memchr::memmem;

    use super::*;
    use crate::redact::testing::chunked;
    use crate::redact::Redactor;

    #[test]
    fn secrets_straddling_chunks_are_caught_at_every_split() {
        let r = Redactor::new(["sekrit-token-1234567890"]);
        let text =
            b"a sekrit-token-1234567890 b\npsk=abcdefgh\nAuthorization: Bearer zzzzzzzzzzzz9\nend";
        let (whole, n_whole) = chunked(&r, text, text.len());
        assert_eq!(n_whole, 3);
        for size in 1..text.len() {
            let (out, n) = chunked(&r, text, size);
            assert_eq!(out, whole, "chunk size {size}");
            assert_eq!(n, 3);
        }
    }

    #[test]
    fn overlong_lines_are_cut_without_leaking() {
        let r = Redactor::new(["sekrit-token-1234567890"]);
        // A single 1 MiB line with a secret right at every likely cut point.
        let mut line = Vec::new();
        while line.len() < 1 << 20 {
            line.extend_from_slice(
                b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx sekrit-token-1234567890 ",
            );
        }
        let (out, n) = chunked(&r, &line, 4096);
        assert!(memmem::find(&out, b"sekrit").is_none());
        assert!(memmem::find(&out, b"7890").is_none());
        assert_eq!(n, memmem::find_iter(&line, b"sekrit-token").count());
        // A secret value that never ends on this line: replaced to its end.
        let mut line = b"start password=".to_vec();
        line.resize(MAX_LINE * 2, b'p');
        line.extend_from_slice(b"\nnext line\n");
        let (out, n) = chunked(&r, &line, 65536);
        assert_eq!(out, b"start password=[REDACTED]\nnext line\n");
        assert_eq!(n, 1);
    }

    #[test]
    fn start_mid_line_drops_the_partial_line() {
        let r = Redactor::default();
        let mut out = Vec::new();
        let mut s = r.stream(Mode::Text);
        s.start_mid_line();
        s.push(b"rd-tail-of-secret\nnext\n", &mut |b| {
            out.extend_from_slice(b);
        });
        s.finish(&mut |b| out.extend_from_slice(b));
        assert_eq!(out, b"\nnext\n");
    }

    #[test]
    fn start_mid_line_gives_up_on_a_partial_line_longer_than_a_line() {
        // A tail read of a one-line file: the first MAX_LINE bytes go, the
        // rest is kept (and redacted) rather than the whole file dropped.
        let r = Redactor::default();
        let mut line = vec![b'x'; MAX_LINE + 1000];
        line.extend_from_slice(b" password=hunter2 y\nnext\n");
        for chunk in [7, 4096, 65536, line.len()] {
            let mut out = Vec::new();
            let mut s = r.stream(Mode::Text);
            s.start_mid_line();
            for piece in line.chunks(chunk) {
                s.push(piece, &mut |b| out.extend_from_slice(b));
            }
            let n = s.finish(&mut |b| out.extend_from_slice(b));
            let mut want = vec![b'x'; 1000];
            want.extend_from_slice(b" password=[REDACTED] y\nnext\n");
            assert_eq!(out, want, "chunks of {chunk}");
            assert_eq!(n, 1);
        }
    }
}
