//! One replacement found in a scanned buffer ([`Span`]), what stands in
//! its place in shipped content ([`MARKER`]), and the line positions the
//! finders measure values by.

use memchr::memrchr;

/// What replaces a secret in shipped content.
pub const MARKER: &[u8] = b"[REDACTED]";

/// One replacement: `start..end` of the scanned buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Span {
    pub(super) start: usize,
    pub(super) end: usize,
    /// Replaced by `"[REDACTED]"` (a JSON object replaced by a string).
    pub(super) quoted: bool,
    /// Ends where the buffer ends and may continue past it.
    pub(super) open: bool,
    /// Counted as a redaction and shown as [`MARKER`]; false for the rest
    /// of a PEM block whose marker was emitted with its start.
    pub(super) counted: bool,
}

impl Span {
    pub(super) fn new(start: usize, end: usize) -> Span {
        Span {
            start,
            end,
            quoted: false,
            open: false,
            counted: true,
        }
    }
}

pub(super) fn line_start(buf: &[u8], at: usize) -> usize {
    memrchr(b'\n', &buf[..at]).map_or(0, |i| i + 1)
}

/// Where a line's message starts: after the prefix a container runtime
/// (`<time> stdout F `) or `journalctl -o short-iso-precise` (`<time> host
/// ident[pid]: `) puts before what the program printed, else 0. A YAML key
/// first in a pod log's or journal's message is first on its line.
pub(super) fn message_start(line: &[u8]) -> usize {
    // Prefixes are short; a long first token is no time stamp.
    let head = &line[..line.len().min(256)];
    if !head.first().is_some_and(u8::is_ascii_digit) {
        return 0;
    }
    let mut tokens = head.split(|&b| b == b' ');
    let (Some(time), Some(second), Some(third)) = (tokens.next(), tokens.next(), tokens.next())
    else {
        return 0;
    };
    if time.len() < 10 || !time.contains(&b'T') {
        return 0;
    }
    let after = |n: usize| (time.len() + second.len() + third.len() + n).min(line.len());
    let cri = matches!(second, b"stdout" | b"stderr") && matches!(third, b"F" | b"P");
    let journal = !second.is_empty() && third.len() > 1 && third.ends_with(b":");
    if cri || journal {
        after(3)
    } else {
        0
    }
}
