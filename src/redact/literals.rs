//! Finding the agent's own secrets in content: the engine over their forms
//! (forms long enough sampled through [`super::windows`], shorter ones
//! matched whole by an Aho-Corasick automaton), each sampled hit checked
//! and extended to the longest run of its form, kept when it is the whole
//! form or a fragment of at least [`MIN_FRAGMENT`] bytes, together with the
//! pieces of it wrapped onto the lines around.

use std::ops::ControlFlow;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use super::forms::{Encoding, FormRef, Forms};
use super::span::Span;
use super::windows::{self, WindowSet, WINDOW};

// Sampling finds every run of `windows::SURE` bytes: the fragment rule
// must not ask for shorter ones.
const _: () = assert!(windows::SURE <= MIN_FRAGMENT);

/// Any run of this many bytes of a known secret (in any of its forms) is
/// redacted wherever it appears: 20 base64 characters are 120 bits, which
/// no log line matches by chance, and a token cut to 20 characters or more
/// still reaches the service.
pub const MIN_FRAGMENT: usize = 20;
/// A piece of a secret on the other side of a line wrap is redacted when it
/// is this long, or all that is left of the secret.
const MIN_WRAPPED_PIECE: usize = 4;

/// Largest DFA kept for the short forms (see [`Engine::build`]).
const MAX_DFA_BYTES: usize = 8 << 20;

/// The finders of the literal forms, built once per [`super::Redactor`]
/// and shared by its clones and streams.
#[derive(Debug)]
pub(super) struct Engine {
    /// Forms of [`windows::SURE`] bytes or more, by sampling.
    pub(super) windows: WindowSet,
    /// Shorter forms, matched whole (exact case), when there are any.
    pub(super) short: Option<AhoCorasick>,
    pub(super) forms: Forms,
    pub(super) longest_form: usize,
}

impl Engine {
    pub(super) fn build(forms: Forms) -> Engine {
        // Forms of SURE bytes or more are sampled; the rest are few and
        // short (a password of under 19 bytes and its encodings), matched
        // whole, in each case and alphabet their encoding allows.
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut bytes = Vec::new();
        let mut windows_at_stride_1 = 0;
        let mut longest_form = 0;
        for id in 0..forms.len() {
            let form = forms.get(id);
            longest_form = longest_form.max(form.len);
            if form.len >= windows::SURE {
                windows_at_stride_1 += indexed(&form, &mut bytes, windows::STEP, 1, |_, _| {});
                continue;
            }
            form.write(0, form.len, &mut bytes);
            match form.encoding {
                Encoding::Hex => patterns.push(bytes.to_ascii_uppercase()),
                Encoding::Url => patterns.push(url_lower(&bytes)),
                Encoding::Base64(_) => {
                    if let Some(url_safe) = form.encoding.variant(&bytes) {
                        patterns.push(url_safe);
                    }
                }
                _ => {}
            }
            patterns.push(bytes.clone());
        }
        patterns.sort_unstable();
        patterns.dedup();
        let (step, stride) = windows::layout(windows_at_stride_1);
        // Counted first, so that the entries are allocated once: a vector
        // grown by doubling would hold up to twice as much at its peak.
        // At the first layout that count is the one just taken.
        let mut count = 0;
        if (step, stride) == (windows::STEP, 1) {
            count = windows_at_stride_1;
        } else {
            for id in 0..forms.len() {
                let form = forms.get(id);
                if form.len >= windows::SURE {
                    count += indexed(&form, &mut bytes, step, stride, |_, _| {});
                }
            }
        }
        let mut windows = WindowSet::with_capacity(count, step, stride);
        for id in 0..forms.len() {
            let form = forms.get(id);
            if form.len >= windows::SURE {
                let start = forms.start(id);
                indexed(&form, &mut bytes, step, stride, |key, at| {
                    windows.insert(key, start + u32::try_from(at).expect("forms under 4 GiB"));
                });
            }
        }
        windows.finish(
            |at, out| continuation(&forms, at, out),
            |at, out| precedent(&forms, at, out),
        );
        // A DFA: it is walked over every byte shipped; past MAX_DFA_BYTES
        // the contiguous NFA keeps the memory flat.
        let short = (!patterns.is_empty()).then(|| {
            let build = |kind| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .kind(Some(kind))
                    .build(&patterns)
            };
            build(AhoCorasickKind::DFA)
                .ok()
                .filter(|dfa| dfa.memory_usage() <= MAX_DFA_BYTES)
                .unwrap_or_else(|| {
                    build(AhoCorasickKind::ContiguousNFA).expect("patterns are short")
                })
        });
        Engine {
            windows,
            short,
            forms,
            longest_form,
        }
    }

    /// Bytes held by the finders and the forms.
    pub(super) fn memory_usage(&self) -> usize {
        self.windows.memory_usage()
            + self.short.as_ref().map_or(0, AhoCorasick::memory_usage)
            + self.forms.memory_usage()
    }
}

/// Calls `add(key, offset)` for each window of `form` the set keeps at this
/// layout, and for the other alphabet's window where the encoding has one;
/// returns how many.
fn indexed(
    form: &FormRef<'_>,
    bytes: &mut Vec<u8>,
    step: usize,
    stride: usize,
    mut add: impl FnMut(u64, usize),
) -> usize {
    let mut offsets = windows::offsets(form.len, form.fragments, step, stride).peekable();
    // A form matched whole needs its last windows only (a large pull
    // secret's encodings are megabytes).
    let first = offsets.peek().copied().unwrap_or(0);
    let from = if form.fragments { 0 } else { first };
    form.write(from, form.len, bytes);
    let mut count = 0;
    for at in offsets {
        let window = &bytes[at - from..at - from + WINDOW];
        add(windows::fold(window), at);
        count += 1;
        if let Some(other) = form.encoding.variant(window) {
            add(windows::fold(&other), at);
            count += 1;
        }
    }
    count
}

/// The sampled windows of the forms in `buf`, extended to the longest run
/// of their form around them: a fragment when it is long enough (or the
/// whole form), with the pieces of it wrapped onto the lines around.
pub(super) fn literal_forms(engine: &Engine, buf: &[u8], found: &mut Vec<Span>) {
    // Runs already extended, as (form, where the form would start, end of
    // the run): every later sample inside one gives the same run again.
    let mut recent: [(usize, usize, usize); 8] = [(usize::MAX, 0, 0); 8];
    let mut next_slot = 0;
    // The form last written out, for the hits that follow in it.
    let mut written: (usize, Vec<u8>) = (usize::MAX, Vec::new());
    let mut window = Vec::new();
    // Runs too short to keep, through the same sample: a window that
    // repeats in a form is checked at two places for the run's end and
    // two for its start, so a fragment may be the union of two of them.
    let mut short_runs: Option<(usize, Span)> = None;
    let order = |at: u32, rest: &[u8]| {
        let mut form = Vec::with_capacity(windows::CONTINUATION);
        continuation(&engine.forms, at, &mut form);
        let content = rest
            .iter()
            .take(windows::CONTINUATION)
            .map(|&b| canonical(b));
        form.iter().copied().cmp(content)
    };
    let order_back = |at: u32, before: &[u8]| {
        let mut form = Vec::with_capacity(windows::CONTINUATION);
        precedent(&engine.forms, at, &mut form);
        let content = before
            .iter()
            .rev()
            .take(windows::CONTINUATION)
            .map(|&b| canonical(b));
        form.iter().copied().cmp(content)
    };
    let mut keep_short = |pos: usize, run: Option<Span>, found: &mut Vec<Span>| {
        if let Some((at, span)) = short_runs {
            if at != pos || run.is_none() {
                if span.end - span.start >= MIN_FRAGMENT {
                    found.push(span);
                }
                short_runs = None;
            }
        }
        if let Some(run) = run {
            short_runs = Some(match short_runs {
                Some((_, span)) => (
                    pos,
                    Span::new(span.start.min(run.start), span.end.max(run.end)),
                ),
                None => (pos, run),
            });
        }
    };
    engine.windows.for_each_candidate(
        buf,
        |pos, at| {
            let (id, at) = engine.forms.locate(at);
            let origin = pos.wrapping_sub(at);
            let seen = recent
                .iter()
                .any(|&(form, start, end)| form == id && start == origin && pos + WINDOW <= end);
            if seen {
                return;
            }
            let form = engine.forms.get(id);
            let content = &buf[pos..pos + WINDOW];
            // The set compares windows case-folded: check the bytes.
            form.write(at, at + WINDOW, &mut window);
            if !same(form.encoding, &window, content) {
                return;
            }
            if !form.fragments {
                // Matched whole only: the form from where it would start.
                if pos >= at && whole_at(&form, &buf[origin..]) {
                    recent[next_slot] = (id, origin, origin + form.len);
                    next_slot = (next_slot + 1) % recent.len();
                    found.push(Span::new(origin, origin + form.len));
                }
                return;
            }
            if written.0 != id {
                form.write(0, form.len, &mut written.1);
                written.0 = id;
            }
            let bytes = written.1.as_slice();
            let run = extend(buf, pos, bytes, at, form.encoding);
            recent[next_slot] = (id, origin, run.end);
            next_slot = (next_slot + 1) % recent.len();
            let len = run.form_end - run.form_start;
            if len != form.len && len < MIN_FRAGMENT {
                keep_short(pos, Some(Span::new(run.start, run.end)), found);
                return;
            }
            let span = Span::new(run.start, run.end);
            wrapped_pieces(
                buf,
                &span,
                bytes,
                form.encoding,
                run.form_start,
                run.form_end,
                found,
            );
            found.push(span);
        },
        order,
        order_back,
    );
    keep_short(usize::MAX, None, found);
}

/// What follows the window at `at` of the concatenation in its form, up to
/// [`windows::CONTINUATION`] bytes, [`canonical`].
fn continuation(forms: &Forms, at: u32, out: &mut Vec<u8>) {
    let (id, offset) = forms.locate(at);
    let form = forms.get(id);
    form.write(
        offset + WINDOW,
        offset + WINDOW + windows::CONTINUATION,
        out,
    );
    for b in out.iter_mut() {
        *b = canonical(*b);
    }
}

/// What precedes the window at `at` of the concatenation in its form, up
/// to [`windows::CONTINUATION`] bytes, read backwards, [`canonical`].
fn precedent(forms: &Forms, at: u32, out: &mut Vec<u8>) {
    let (id, offset) = forms.locate(at);
    forms
        .get(id)
        .write(offset.saturating_sub(windows::CONTINUATION), offset, out);
    out.reverse();
    for b in out.iter_mut() {
        *b = canonical(*b);
    }
}

/// A byte as the forms' encodings compare it, near enough to order them:
/// one case, one base64 alphabet.
fn canonical(b: u8) -> u8 {
    match b {
        b'-' => b'+',
        b'_' => b'/',
        b => b.to_ascii_lowercase(),
    }
}

/// A URL-encoded form with its escapes' hex in lower case.
fn url_lower(form: &[u8]) -> Vec<u8> {
    let mut out = form.to_vec();
    for i in 0..out.len() {
        if out[i] == b'%' {
            for b in out.iter_mut().skip(i + 1).take(2) {
                *b = b.to_ascii_lowercase();
            }
        }
    }
    out
}

fn same(encoding: Encoding, form: &[u8], content: &[u8]) -> bool {
    form.len() == content.len() && form.iter().zip(content).all(|(&f, &c)| encoding.same(f, c))
}

/// Whether `buf` starts with the whole form, written out a piece at a time
/// (a large pull secret's forms are megabytes; most hits differ early).
fn whole_at(form: &FormRef<'_>, buf: &[u8]) -> bool {
    if buf.len() < form.len {
        return false;
    }
    let mut at = 0;
    form.stream(0, |piece| {
        let piece = &piece[..piece.len().min(form.len - at)];
        if !same(form.encoding, piece, &buf[at..at + piece.len()]) {
            return ControlFlow::Break(());
        }
        at += piece.len();
        if at == form.len {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    at == form.len
}

/// A run of a form in the content: `start..end` of the buffer equals
/// `form_start..form_end` of the form.
struct Run {
    start: usize,
    end: usize,
    form_start: usize,
    form_end: usize,
}

/// The longest run of `form` through `buf[pos..pos + WINDOW]`, which equals
/// `form[at..at + WINDOW]`.
fn extend(buf: &[u8], pos: usize, form: &[u8], at: usize, encoding: Encoding) -> Run {
    let end = pos + WINDOW;
    let before = buf[..pos]
        .iter()
        .rev()
        .zip(form[..at].iter().rev())
        .take_while(|(&c, &f)| encoding.same(f, c))
        .count();
    let after = buf[end..]
        .iter()
        .zip(&form[at + WINDOW..])
        .take_while(|(&c, &f)| encoding.same(f, c))
        .count();
    Run {
        start: pos - before,
        end: end + after,
        form_start: at - before,
        form_end: at + WINDOW + after,
    }
}

/// The rest of a secret on the lines around a fragment that ends (starts)
/// at a line break: a token wrapped by a terminal, `base64`, or a logger.
fn wrapped_pieces(
    buf: &[u8],
    span: &Span,
    form: &[u8],
    encoding: Encoding,
    form_start: usize,
    form_end: usize,
    out: &mut Vec<Span>,
) {
    // Forward, across as many wraps as it takes.
    let (mut at, mut form_at) = (span.end, form_end);
    while form_at < form.len() {
        let Some(next) = after_line_break(buf, at) else {
            break;
        };
        let len = buf[next..]
            .iter()
            .zip(&form[form_at..])
            .take_while(|(&c, &f)| encoding.same(f, c))
            .count();
        if len < MIN_WRAPPED_PIECE && form_at + len < form.len() || len == 0 {
            break;
        }
        out.push(Span::new(next, next + len));
        at = next + len;
        form_at += len;
    }
    // Backward: the start of the secret at the end of the line above.
    let (mut at, mut form_at) = (span.start, form_start);
    while form_at > 0 {
        let Some(prev_end) = before_line_break(buf, at) else {
            break;
        };
        let len = buf[..prev_end]
            .iter()
            .rev()
            .zip(form[..form_at].iter().rev())
            .take_while(|(&c, &f)| encoding.same(f, c))
            .count();
        if len < MIN_WRAPPED_PIECE && len < form_at || len == 0 {
            break;
        }
        out.push(Span::new(prev_end - len, prev_end));
        at = prev_end - len;
        form_at -= len;
    }
}

/// Where the next line's text starts (after its indentation), when `at` is
/// the end of a line.
fn after_line_break(buf: &[u8], at: usize) -> Option<usize> {
    let rest = &buf[at..];
    let skip = if rest.starts_with(b"\r\n") {
        2
    } else if rest.starts_with(b"\n") {
        1
    } else {
        return None;
    };
    let mut next = at + skip;
    while next < buf.len() && matches!(buf[next], b' ' | b'\t') {
        next += 1;
    }
    Some(next)
}

/// Where the previous line's text ends, when `at` is the start of a line's
/// text (after its indentation).
fn before_line_break(buf: &[u8], at: usize) -> Option<usize> {
    let mut start = at;
    while start > 0 && matches!(buf[start - 1], b' ' | b'\t') {
        start -= 1;
    }
    if start == 0 || buf[start - 1] != b'\n' {
        return None;
    }
    let mut end = start - 1;
    if end > 0 && buf[end - 1] == b'\r' {
        end -= 1;
    }
    Some(end)
}

#[cfg(test)]
mod tests {
    use crate::redact::testing::{
        assert_no_run, b64, chunked, distinct_secret, engine_bytes, go_bytes, hex, many_auths,
        redact, TOKEN,
    };
    use crate::redact::windows;
    use crate::redact::{Redactor, MIN_FRAGMENT};

    #[test]
    fn base64_wrapped_at_76_columns_is_redacted_line_by_line() {
        let pull = format!(r#"{{"auths":{{"cloud.openshift.com":{{"auth":"{TOKEN}"}}}}}}"#);
        let r = Redactor::new([pull.as_str()]);
        let whole = b64(pull.as_bytes());
        let wrapped: Vec<&str> = whole
            .as_bytes()
            .chunks(76)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        let text = format!("data:\n{}\nend\n", wrapped.join("\n"));
        for size in [1, 7, 64, 4096] {
            let (out, _) = chunked(&r, text.as_bytes(), size);
            let out = String::from_utf8(out).unwrap();
            for piece in &wrapped {
                assert!(!out.contains(piece), "{piece} in {out}");
            }
            assert!(
                out.starts_with("data:\n") && out.ends_with("\nend\n"),
                "{out}"
            );
        }
    }

    #[test]
    fn token_split_by_a_line_wrap() {
        let r = Redactor::new([TOKEN]);
        for cut in [3, 10, 25, 40, TOKEN.len() - 3] {
            let text = format!(
                "X-Secret-Kay {}\n    {} end\nnext line\n",
                &TOKEN[..cut],
                &TOKEN[cut..]
            );
            for size in [1, 5, text.len()] {
                let (out, _) = chunked(&r, text.as_bytes(), size);
                let out = String::from_utf8(out).unwrap();
                assert!(!out.contains(&TOKEN[..cut]), "cut {cut}: {out}");
                assert!(!out.contains(&TOKEN[cut..]), "cut {cut}: {out}");
                assert!(out.ends_with(" end\nnext line\n"), "{out}");
            }
        }
    }

    #[test]
    fn a_fragment_is_found_at_every_offset_modulo_the_step() {
        let secret = distinct_secret(64, 7);
        let r = Redactor::new([secret.as_str()]);
        let step = windows::STEP;
        for lead in 0..=2 * step {
            for from in 0..=secret.len() - MIN_FRAGMENT {
                let fragment = &secret[from..from + MIN_FRAGMENT];
                let text = format!("{} {fragment} tail\n", "x".repeat(lead));
                let (out, n) = redact(&r, &text);
                assert_eq!(
                    out,
                    format!("{} [REDACTED] tail\n", "x".repeat(lead)),
                    "lead {lead}, from {from}"
                );
                assert_eq!(n, 1);
                // One byte short of a fragment: left alone wherever it falls.
                let short = &secret[from..from + MIN_FRAGMENT - 1];
                let text = format!("{} {short} tail\n", "x".repeat(lead));
                assert_eq!(
                    redact(&r, &text),
                    (text.clone(), 0),
                    "lead {lead}, from {from}"
                );
            }
        }
    }

    #[test]
    fn a_fragment_of_a_secret_that_repeats_a_window_is_found() {
        // A window more than MAX_SHARED places share: a run of one
        // character, a short period. Found by fuzzing: 20 `t`s of a secret
        // opening with 48, between bytes that sort above every letter.
        for secret in [
            format!("{}AgbcdefghijklmnobqrstuvtttttttBAAAA", "t".repeat(48)),
            format!("{}Q7x", "ab".repeat(40)),
            format!("{}{}", distinct_secret(15, 3), "z".repeat(60)),
        ] {
            let r = Redactor::new([secret.as_str()]);
            for lead in 0..=2 * windows::STEP {
                for from in 0..=secret.len() - MIN_FRAGMENT {
                    for (before, after) in [(" ", " "), ("\u{ff}", "\u{ff}"), ("!", "~")] {
                        let fragment = &secret[from..from + MIN_FRAGMENT];
                        let text = format!("{}{before}{fragment}{after}o\n", "x".repeat(lead));
                        let (out, _) = redact(&r, &text);
                        assert_no_run(
                            out.as_bytes(),
                            secret.as_bytes(),
                            &format!("lead {lead}, from {from}, {before:?}"),
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fragments_at_line_and_chunk_boundaries() {
        let secret = distinct_secret(100, 11);
        let r = Redactor::new([secret.as_str()]);
        // Fragments starting a line, ending a line (also before CRLF), a
        // whole line, and the whole secret wrapped over three lines.
        let mut text = String::new();
        for (i, cut) in [0usize, 5, 13, 37, 70].iter().enumerate() {
            let piece = &secret[*cut..*cut + MIN_FRAGMENT + i];
            let lines = format!("{piece} after\nbefore {piece}\nbefore {piece}\r\n{piece}\n");
            text.push_str(&lines);
        }
        let wrapped = format!(
            "{}\n{}\n{}\nend\n",
            &secret[..30],
            &secret[30..60],
            &secret[60..]
        );
        text.push_str(&wrapped);
        let (whole, count) = chunked(&r, text.as_bytes(), text.len());
        assert_no_run(&whole, secret.as_bytes(), "whole");
        assert_eq!(count, 5 * 4 + 3);
        assert!(whole.ends_with(b"\nend\n"));
        for size in [1, 2, 3, 5, 7, 11, 12, 13, 19, 64, 100] {
            let (out, n) = chunked(&r, text.as_bytes(), size);
            assert_eq!(out, whole, "chunk size {size}");
            assert_eq!(n, count);
        }
    }

    #[test]
    fn a_pull_secret_of_many_auths_costs_little_per_auth_and_drops_none() {
        // Issue 25: ~25 KB of finders per auth (~40 KB of peak memory),
        // 6,000 auths ~250 MiB.
        const AUTHS: usize = 6000;
        let (pull, auths) = many_auths(AUTHS);
        let mut secrets: Vec<&str> = auths.iter().map(|(a, _)| a.as_str()).collect();
        secrets.push(&pull);
        let r = Redactor::new(secrets);
        let per_auth = engine_bytes(&r) / AUTHS;
        assert!(
            per_auth < 1536,
            "{per_auth} bytes per auth: {}",
            r.describe()
        );
        for i in [0, 1, AUTHS / 2, AUTHS - 2, AUTHS - 1] {
            let (auth, password) = &auths[i];
            let pair = format!("mirror+robot{i:05}:{password}");
            for needle in [
                auth.clone(),
                password.clone(),
                pair,
                hex(auth.as_bytes(), false),
                hex(password.as_bytes(), true),
                go_bytes(password.as_bytes()),
                auth[5..30].to_owned(),
            ] {
                let text = format!("registry {i} [{needle}] ok\n");
                let (out, n) = chunked(&r, text.as_bytes(), 64);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    format!("registry {i} [[REDACTED]] ok\n"),
                    "{needle}"
                );
                assert_eq!(n, 1);
            }
        }
    }

    #[test]
    fn a_long_pull_secret_stays_small_and_fast_to_build() {
        // Four registries, two of them with a ~1.1 KB password: thousands of
        // windows, which an automaton could only hold as an NFA.
        let auths: Vec<String> = (0..4u64)
            .map(|i| {
                b64(format!(
                    "pool-{i}:{}",
                    distinct_secret(if i < 2 { 32 } else { 1100 }, i)
                )
                .as_bytes())
            })
            .collect();
        let pull = format!(
            r#"{{"auths":{{{}}}}}"#,
            auths
                .iter()
                .enumerate()
                .map(|(i, a)| format!(r#""r{i}.io":{{"auth":"{a}"}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        let r = Redactor::new([pull.as_str()]);
        assert!(r.engine.windows.len() > 10_000, "{}", r.describe());
        assert!(
            r.engine.windows.memory_usage() < 4 << 20,
            "{}",
            r.describe()
        );
        assert!(r.engine.short.is_none(), "{}", r.describe());
        for auth in &auths {
            let text = format!("pulling with {}\n", &auth[auth.len() / 3..]);
            assert_no_run(
                chunked(&r, text.as_bytes(), 7).0.as_slice(),
                auth.as_bytes(),
                "auth",
            );
        }
    }
}
