//! What one scan of a buffer remembers so that no byte is examined more than
//! a bounded number of times, however many anchors a line holds: the bounds
//! of the line last asked about, where a message's content starts, and the
//! next occurrence of each byte a value or block ends at, each searched once
//! from where the last search began. A line of a thousand `password=` keys
//! asks a thousand times where its line starts and where the next blank is;
//! each answer after the first is a comparison.
//!
//! Every search is charged to [`Cursor::work`] (bytes examined), which the
//! hostile-input tests read: the finders' work over a buffer is at most a
//! constant times its length (docs/security.md, "Linear time").

use memchr::{memchr, memmem, memrchr};

use super::span::message_start;

/// The result of the last search for one needle: the first occurrence at
/// or after `from` (`None`: none up to the end of the buffer). A later
/// search from a position between `from` and that occurrence has the same
/// answer.
#[derive(Debug, Clone, Copy, Default)]
struct Next {
    from: usize,
    at: Option<usize>,
    valid: bool,
}

impl Next {
    fn find(
        &mut self,
        buf: &[u8],
        from: usize,
        work: &mut usize,
        search: impl Fn(&[u8]) -> Option<usize>,
    ) -> Option<usize> {
        if self.valid && from >= self.from && self.at.is_none_or(|at| from <= at) {
            return self.at;
        }
        let at = search(&buf[from..]).map(|i| from + i);
        *work += at.unwrap_or(buf.len()) - from + 1;
        *self = Next {
            from,
            at,
            valid: true,
        };
        at
    }
}

/// Which needle a [`Cursor::next`] search is for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Needle {
    /// The end of an unquoted value inside a log line: a blank or
    /// punctuation.
    WordEnd,
    /// A quote (a header's value inside a quoted argument ends there, or at
    /// the end of its line).
    Quote,
    /// `\"`: the end of a JSON string escaped inside a log line.
    EscapedQuote,
    /// `-----END` of a PEM block.
    PemEnd,
    /// `>`: the end of an XML start tag.
    TagEnd,
    /// `</`: an XML end tag.
    CloseTag,
}

const NEEDLES: usize = 6;

/// The memory of one scan over one buffer (see the module doc).
#[derive(Debug, Default)]
pub(super) struct Cursor {
    /// Bytes examined by the searches of this scan.
    pub(super) work: usize,
    /// The line last asked about: its start and the position of its
    /// newline (or the buffer's end).
    line: Option<(usize, usize)>,
    /// For that line: where the first byte of its message that is no blank,
    /// quote or backslash is.
    first_content: Option<usize>,
    next: [Next; NEEDLES],
    /// How far `ipmitool` command lines have been searched for `-P`.
    pub(super) ipmitool_searched: usize,
    /// How far `mysql` command lines have been searched for `-pPW`.
    pub(super) mysql_searched: usize,
    /// For the line last asked about: where `ldap` first is on it.
    ldap: Option<(usize, Option<usize>)>,
    /// Objects (`{…}` values) already measured: inside one that closed
    /// (whose span covers a nested one) or one that did not close on its
    /// line (where a nested one is left to its keys), no object is measured
    /// again.
    pub(super) objects_until: usize,
}

impl Cursor {
    /// The line holding `at`: its start, and where it ends (its newline or
    /// the buffer's end, a `\r` before the newline included).
    pub(super) fn line_bounds(&mut self, buf: &[u8], at: usize) -> (usize, usize) {
        if let Some((start, end)) = self.line {
            if (start..=end).contains(&at) {
                return (start, end);
            }
        }
        // The searches go forward from the last line when they can.
        let start = match self.line {
            Some((_, end)) if end < at => {
                self.work += at - end;
                memrchr(b'\n', &buf[end..at]).map_or(end, |i| end + i + 1)
            }
            _ => {
                self.work += at;
                memrchr(b'\n', &buf[..at]).map_or(0, |i| i + 1)
            }
        };
        let end = memchr(b'\n', &buf[at..]).map_or(buf.len(), |i| at + i);
        self.work += end - at + 1;
        self.line = Some((start, end));
        self.first_content = None;
        (start, end)
    }

    /// Where the line holding `at` ends, before its `\r\n` or `\n`.
    pub(super) fn line_end(&mut self, buf: &[u8], at: usize) -> usize {
        let end = self.line_bounds(buf, at).1;
        if end > at && buf[end - 1] == b'\r' {
            end - 1
        } else {
            end
        }
    }

    /// Whether only blanks, quotes and backslashes stand between the start
    /// of the message on `at`'s line (after a journal's or container
    /// runtime's prefix) and `at`.
    pub(super) fn first_on_line(&mut self, buf: &[u8], at: usize) -> bool {
        let (start, end) = self.line_bounds(buf, at);
        let first = if let Some(first) = self.first_content {
            first
        } else {
            let message = start + message_start(&buf[start..end]);
            let run = buf[message..end]
                .iter()
                .position(|b| !matches!(b, b' ' | b'\t' | b'"' | b'\\'))
                .unwrap_or(end - message);
            self.work += 256 + run;
            self.first_content = Some(message + run);
            message + run
        };
        at <= first
    }

    /// Whether `ldap` (an LDAP client's name) stands before `at` on its
    /// line; each line is searched once.
    pub(super) fn ldap_before(&mut self, buf: &[u8], at: usize) -> bool {
        let (start, end) = self.line_bounds(buf, at);
        let first = match self.ldap {
            Some((line, first)) if line == start => first,
            _ => {
                let first = memmem::find(&buf[start..end], b"ldap").map(|i| start + i);
                self.work += end - start + 1;
                self.ldap = Some((start, first));
                first
            }
        };
        first.is_some_and(|first| first < at)
    }

    /// The first occurrence of `needle` at or after `from`.
    pub(super) fn next(&mut self, buf: &[u8], from: usize, needle: Needle) -> Option<usize> {
        let memo = &mut self.next[needle as usize];
        let work = &mut self.work;
        match needle {
            Needle::WordEnd => memo.find(buf, from, work, |rest| {
                rest.iter().position(|&b| {
                    b.is_ascii_whitespace()
                        || matches!(b, b'"' | b'\'' | b',' | b';' | b'&' | b'}' | b')')
                })
            }),
            Needle::Quote => memo.find(buf, from, work, |rest| memchr::memchr2(b'"', b'\'', rest)),
            Needle::EscapedQuote => memo.find(buf, from, work, |rest| memmem::find(rest, b"\\\"")),
            Needle::PemEnd => memo.find(buf, from, work, |rest| memmem::find(rest, b"-----END")),
            Needle::TagEnd => memo.find(buf, from, work, |rest| memchr(b'>', rest)),
            Needle::CloseTag => memo.find(buf, from, work, |rest| memmem::find(rest, b"</")),
        }
    }
}
