//! One buffer through every finder: the anchors of the shapes and the
//! words of secret keys, the short forms' automaton and the sampled literal
//! forms. Their spans are merged so that no part of two overlapping secrets
//! survives, and a line leaves the next what it needs to know (inside a PEM
//! body, inside a keyfile secrets section).
//!
//! Linear by construction: the anchors are found in one vectorised pass;
//! each anchor costs a bounded amount of work plus searches that the
//! [`Cursor`] answers once per stretch of the buffer; the key words inside a
//! word already looked at are skipped. Bounded in memory: a span inside the
//! one before it is folded into it as it is found, and a line on which the
//! shapes find more than [`MAX_SPANS_PER_LINE`] secrets is replaced whole
//! from its first one on (one redaction in the count), its other anchors
//! skipped.

use memchr::memchr;

use super::anchors::{Anchor, Anchors};
use super::cursor::Cursor;
use super::keys::{key_value, value_span, word_len, End, Mode};
use super::literals::{literal_forms, Engine};
use super::shapes::{
    aws_key_id, bearer_token, ldap_password, openshift_token, pem_block, pem_end,
    short_password_flag, tool_password, url_credentials, user_flag, Tool,
};
use super::span::Span;

/// Secrets the shapes may find on one line before the rest of it, from the
/// first, is replaced whole: a line of real secrets holds a handful, a line
/// holding thousands is made to cost memory.
pub(super) const MAX_SPANS_PER_LINE: usize = 128;

/// What one line leaves for the next.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LineState {
    /// Inside the body of a PEM private key block.
    pub(super) in_pem: bool,
    /// Inside a keyfile `[…-secrets]` section.
    pub(super) secret_section: bool,
}

/// What a scan cost: bytes examined by every finder, and the most spans
/// held at once. Both are at most a constant times the bytes scanned; the
/// hostile-input tests hold them to it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    pub examined: usize,
    pub peak_spans: usize,
}

/// The line the anchors are on, and what its shapes found so far.
struct LineSpans {
    /// Where the line ends (its newline, or the buffer's end).
    end: usize,
    /// Index in `found` of this line's first span.
    first: usize,
    /// Replaced whole: the index of that span.
    whole: Option<usize>,
}

/// Folds the spans pushed since `from` that lie inside the one before them
/// into it (a value found again from a key nested in it).
fn absorb(found: &mut Vec<Span>, from: usize) {
    let mut keep = from;
    for i in from..found.len() {
        let span = found[i];
        match keep.checked_sub(1).map(|k| found[k]) {
            Some(last) if span.start >= last.start && span.end <= last.end => {
                found[keep - 1].counted |= span.counted;
            }
            _ => {
                found[keep] = span;
                keep += 1;
            }
        }
    }
    found.truncate(keep);
}

/// Finds every secret in `buf[block.0..block.1]`, the rest of `buf` being
/// context; `spans` comes back relative to the block, sorted and disjoint.
/// `state` is the state at the start of the block, and becomes the state at
/// its end.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan(
    engine: &Engine,
    buf: &[u8],
    block: (usize, usize),
    mode: Mode,
    state: &mut LineState,
    open_end: bool,
    spans: &mut Vec<Span>,
) -> Work {
    let (from, to) = block;
    let mut found: Vec<Span> = Vec::new();
    let mut cur = Cursor::default();
    let mut peak = 0;
    // Whether a PEM body goes on past the block.
    let mut pem_open = false;
    if state.in_pem {
        // The body of a key begun in an earlier block.
        let end = pem_end(buf, from, &mut cur);
        pem_open = end.is_none_or(|end| end > to);
        found.push(Span {
            counted: false,
            open: end.is_none(),
            ..Span::new(from, end.unwrap_or(buf.len()))
        });
    }
    if mode == Mode::Keyfile && state.secret_section {
        if let Some(eq) = memchr(b'=', buf) {
            if let Some(span) = value_span(buf, eq + 1, End::Line, open_end, &mut cur) {
                found.push(span);
            }
        }
    }
    // The key words inside a word already looked at are skipped: the word,
    // and so the key, is the same.
    let mut words_until = 0;
    let mut line = LineSpans {
        end: 0,
        first: found.len(),
        whole: None,
    };
    for (anchor, start) in Anchors::get().find_iter(buf) {
        cur.work += 1;
        if start > line.end || line.end == 0 {
            peak = peak.max(found.len());
            line = LineSpans {
                end: cur.line_bounds(buf, start).1,
                first: found.len(),
                whole: None,
            };
        }
        if let Some(whole) = line.whole {
            // Only a PEM block can take the replacement past the line.
            if anchor == Anchor::PemBegin && (from..to).contains(&start) {
                if let Some(span) = pem_block(buf, start, &mut cur) {
                    let whole = &mut found[whole];
                    if span.end > whole.end {
                        pem_open |= span.open || span.end > to;
                        whole.end = span.end;
                        whole.open = span.open;
                    }
                }
            }
            continue;
        }
        let before = found.len();
        let mut overflow = false;
        match anchor {
            Anchor::KeyWord => {
                if start < words_until {
                    continue;
                }
                let key_end = start + word_len(&buf[start..]);
                cur.work += key_end - start;
                words_until = key_end;
                key_value(buf, key_end, mode, open_end, &mut cur, &mut found);
            }
            Anchor::Url => url_credentials(buf, start, open_end, &mut cur, &mut found),
            Anchor::Bearer => bearer_token(buf, start, open_end, &mut cur, &mut found),
            // One begun before the block was handled with its line.
            Anchor::PemBegin if (from..to).contains(&start) => {
                if let Some(span) = pem_block(buf, start, &mut cur) {
                    pem_open |= span.open || span.end > to;
                    found.push(span);
                }
            }
            Anchor::PemBegin => {}
            Anchor::ShortPasswordFlag => {
                short_password_flag(buf, start, open_end, &mut cur, &mut found);
            }
            Anchor::Ipmitool | Anchor::Mysql => {
                let tool = if anchor == Anchor::Mysql {
                    Tool::Mysql
                } else {
                    Tool::Ipmitool
                };
                let limit = MAX_SPANS_PER_LINE - (found.len() - line.first);
                overflow = tool_password(buf, start, tool, open_end, limit, &mut cur, &mut found);
            }
            Anchor::UserFlag => user_flag(buf, start, open_end, &mut cur, &mut found),
            Anchor::LdapPassword => ldap_password(buf, start, open_end, &mut cur, &mut found),
            Anchor::AwsKeyId => aws_key_id(buf, start, &mut cur, &mut found),
            Anchor::OpenshiftToken => openshift_token(buf, start, &mut cur, &mut found),
        }
        absorb(&mut found, before);
        if overflow || found.len() - line.first > MAX_SPANS_PER_LINE {
            // From the line's first secret to its end (or the end of the
            // furthest span found on it: a PEM body), as one.
            let mine = &found[line.first..];
            let start = mine.iter().map(|s| s.start).min().unwrap_or(start);
            let end = mine.iter().map(|s| s.end).max().unwrap_or(line.end);
            let open = mine.iter().any(|s| s.open && s.end == end);
            let raw_end = if line.end > 0 && buf.get(line.end - 1) == Some(&b'\r') {
                line.end - 1
            } else {
                line.end
            };
            peak = peak.max(found.len());
            found.truncate(line.first);
            found.push(Span {
                open: open || (open_end && line.end == buf.len()),
                ..Span::new(start, end.max(raw_end))
            });
            line.whole = Some(found.len() - 1);
        }
    }
    peak = peak.max(found.len());
    if let Some(automaton) = &engine.short {
        // Short forms count whole only; overlapping hits of one form are
        // merged as they come.
        let first = found.len();
        for hit in automaton.find_overlapping_iter(buf) {
            let span = Span::new(hit.start(), hit.end());
            let mine = found.len() > first;
            match found.last_mut() {
                Some(last) if mine && span.start < last.end && span.end >= last.end => {
                    last.end = span.end;
                }
                _ => found.push(span),
            }
        }
        cur.work += buf.len();
    }
    literal_forms(engine, buf, &mut found);
    cur.work += buf.len();
    peak = peak.max(found.len());

    state.in_pem = pem_open;

    // Earliest first; of two starting together the longer. Overlaps are
    // merged into the earlier span so no fragment of either survives.
    found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    for mut span in found {
        // Only what falls inside the block.
        if span.end <= from || span.start >= to {
            continue;
        }
        span.start = span.start.max(from) - from;
        span.end = span.end.min(to) - from;
        match spans.last_mut() {
            Some(last) if span.start < last.end => {
                if span.end > last.end {
                    last.end = span.end;
                    last.open = span.open;
                    last.quoted = false;
                }
                last.counted |= span.counted;
            }
            _ => spans.push(span),
        }
    }
    Work {
        examined: cur.work + buf.len(),
        peak_spans: peak,
    }
}

#[cfg(test)]
mod tests {
    use crate::redact::testing::{assert_no_run, distinct_secret, redact};
    use crate::redact::Redactor;

    #[test]
    fn longer_secret_wins_over_its_prefix() {
        let redactor = Redactor::new(["abcdefgh", "abcdefghijkl"]);
        let mut data = b"xabcdefghijklx".to_vec();
        assert_eq!(redactor.redact(&mut data), 1);
        assert_eq!(data, b"x[REDACTED]x");
    }

    #[test]
    fn overlapping_and_adjacent_forms() {
        let a = distinct_secret(48, 21);
        let b = distinct_secret(48, 22);
        let r = Redactor::new([a.as_str(), b.as_str()]);
        // The tail of one right against the head of the other, then each
        // twice in a row, then a's fragment in the middle of b's base64.
        let cases = [
            format!("x {}{} y", &a[20..], &b[..25]),
            format!("x {b}{b} y"),
            format!("x {}{a} y", &a[..30]),
            format!("x {}{}{} y", &b[..10], &a[3..40], &b[10..]),
        ];
        for text in &cases {
            let (out, n) = redact(&r, text);
            assert_no_run(out.as_bytes(), a.as_bytes(), text);
            assert_no_run(out.as_bytes(), b.as_bytes(), text);
            assert!(
                out.starts_with("x ") && out.ends_with(" y") && n >= 1,
                "{out}"
            );
        }
        // One secret the start of another: both forms overlap in content.
        let long = format!("{a}{}", &b[..30]);
        let r = Redactor::new([a.as_str(), long.as_str()]);
        let (out, n) = redact(&r, &format!("x {long} y {a} z"));
        assert_eq!((out.as_str(), n), ("x [REDACTED] y [REDACTED] z", 2));
    }
}
