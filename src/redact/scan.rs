//! One buffer through every finder: the anchors of the shapes and the
//! words of secret keys, the short forms' automaton and the sampled literal
//! forms. Their spans are merged so that no part of two overlapping secrets
//! survives, and a line leaves the next what it needs to know (inside a PEM
//! body, inside a keyfile secrets section).

use memchr::memchr;

use super::anchors::{Anchor, Anchors};
use super::keys::{key_value, value_span, word_len, End, Mode};
use super::literals::{literal_forms, Engine};
use super::shapes::{
    bearer_token, ipmitool_password, pem_block, pem_end, short_password_flag, url_credentials,
};
use super::span::Span;

/// What one line leaves for the next.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LineState {
    /// Inside the body of a PEM private key block.
    pub(super) in_pem: bool,
    /// Inside a keyfile `[…-secrets]` section.
    pub(super) secret_section: bool,
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
) {
    let (from, to) = block;
    let mut found: Vec<Span> = Vec::new();
    // Whether a PEM body goes on past the block.
    let mut pem_open = false;
    if state.in_pem {
        // The body of a key begun in an earlier block.
        let end = pem_end(buf, from);
        pem_open = end.is_none_or(|end| end > to);
        found.push(Span {
            counted: false,
            open: end.is_none(),
            ..Span::new(from, end.unwrap_or(buf.len()))
        });
    }
    if mode == Mode::Keyfile && state.secret_section {
        if let Some(eq) = memchr(b'=', buf) {
            if let Some(span) = value_span(buf, eq + 1, End::Line, open_end) {
                found.push(span);
            }
        }
    }
    let mut last_key_end = usize::MAX;
    for (anchor, start) in Anchors::get().find_iter(buf) {
        match anchor {
            Anchor::KeyWord => {
                let key_end = start + word_len(&buf[start..]);
                if key_end != last_key_end {
                    last_key_end = key_end;
                    key_value(buf, key_end, mode, open_end, &mut found);
                }
            }
            Anchor::Url => url_credentials(buf, start, open_end, &mut found),
            Anchor::Bearer => bearer_token(buf, start, open_end, &mut found),
            // One begun before the block was handled with its line.
            Anchor::PemBegin if (from..to).contains(&start) => {
                if let Some(span) = pem_block(buf, start) {
                    pem_open |= span.open || span.end > to;
                    found.push(span);
                }
            }
            Anchor::PemBegin => {}
            Anchor::ShortPasswordFlag => short_password_flag(buf, start, open_end, &mut found),
            Anchor::Ipmitool => ipmitool_password(buf, start, open_end, &mut found),
        }
    }
    if let Some(automaton) = &engine.short {
        // Short forms count whole only.
        for hit in automaton.find_overlapping_iter(buf) {
            found.push(Span::new(hit.start(), hit.end()));
        }
    }
    literal_forms(engine, buf, &mut found);

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
