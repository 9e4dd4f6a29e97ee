//! The forms the agent's own secrets take in content, derived once from
//! the secrets it was handed: literal, JSON-escaped (once and twice),
//! URL-encoded, hex, Go's `%v` of a byte slice, base64 at each byte
//! alignment, a pull secret's credentials, their decoded `user:password`
//! and the password alone, the pull secret re-serialized and line by line.
//! The literal finders ([`super::literals`]) are built from them.
//!
//! A form is never stored: only its source (the secret's bytes, once) and
//! how it is written ([`Encoding`]); its bytes are written out when they
//! are compared. A pull secret of thousands of auths has ~20 forms per
//! auth, and storing each was most of what the redactor held.

use std::collections::HashSet;
use std::ops::ControlFlow;

use base64::Engine as _;
use memchr::memchr;

/// Secrets shorter than this are not redacted: replacing every "a" or "42"
/// would destroy the logs and protect nothing. A password shorter than this
/// inside a longer credential is still redacted with the credential.
pub(super) const MIN_SECRET_LEN: usize = 8;

/// A structured secret (a pull secret) up to this size counts base64
/// fragments of its text, JSON syntax included; a larger one is matched
/// whole in base64, the credentials inside by their own forms.
const MAX_FRAGMENTED_STRUCTURED: usize = 64 * 1024;

/// How a form is written from its source's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Literal,
    /// JSON-escaped, as a string value.
    JsonOnce,
    /// JSON-escaped twice: JSON quoted in a JSON log line.
    JsonTwice,
    /// URL-encoded with upper-case hex, matched with lower-case hex too
    /// (`A`..`F` read in either case).
    Url,
    /// Lower-case hex, matched in either case (`%x`, `%X`, `xxd -p`).
    Hex,
    /// Go's `%v` of a byte slice without its brackets: `104 117 110`.
    GoBytes,
    /// The base64 characters of a blob holding the source at this byte
    /// alignment that depend on the source only; the standard alphabet,
    /// matched as equal to the URL-safe one.
    Base64(u8),
}

const ENCODINGS: [Encoding; 9] = [
    Encoding::Literal,
    Encoding::JsonOnce,
    Encoding::JsonTwice,
    Encoding::Url,
    Encoding::Hex,
    Encoding::GoBytes,
    Encoding::Base64(0),
    Encoding::Base64(1),
    Encoding::Base64(2),
];

impl Encoding {
    fn index(self) -> u32 {
        match self {
            Encoding::Literal => 0,
            Encoding::JsonOnce => 1,
            Encoding::JsonTwice => 2,
            Encoding::Url => 3,
            Encoding::Hex => 4,
            Encoding::GoBytes => 5,
            Encoding::Base64(align) => 6 + u32::from(align),
        }
    }

    /// Whether a form byte matches a content byte: hex in either case,
    /// base64 in either alphabet, the rest exactly. (In a URL-encoded form
    /// an `A`..`F` outside an escape reads in either case too: one form
    /// for both escapes' cases, a loss of under a bit per letter.)
    #[inline]
    pub(super) fn same(self, form: u8, content: u8) -> bool {
        match self {
            Encoding::Hex => form == content.to_ascii_lowercase(),
            Encoding::Url => {
                form == content || (matches!(form, b'A'..=b'F') && content == form | 0x20)
            }
            Encoding::Base64(_) => {
                form == content
                    || (form == b'+' && content == b'-')
                    || (form == b'/' && content == b'_')
            }
            _ => form == content,
        }
    }

    /// The window bytes content may show for these form bytes, besides
    /// the bytes themselves (matched case-folded, see `windows::fold`):
    /// base64's URL-safe alphabet.
    pub(super) fn variant(self, window: &[u8]) -> Option<Vec<u8>> {
        if !matches!(self, Encoding::Base64(_)) || !window.iter().any(|&b| b == b'+' || b == b'/') {
            return None;
        }
        Some(
            window
                .iter()
                .map(|&b| match b {
                    b'+' => b'-',
                    b'/' => b'_',
                    b => b,
                })
                .collect(),
        )
    }
}

/// One form: its source's bytes, how they are written, how long that is,
/// and whether its fragments count.
#[derive(Debug, Clone, Copy)]
pub(super) struct FormRef<'a> {
    pub(super) source: &'a [u8],
    pub(super) encoding: Encoding,
    pub(super) len: usize,
    /// Fragments count (tokens, passwords and base64 text), not only the
    /// whole: false for the lines of a structured secret, whose fragments
    /// are JSON syntax and registry names, and for `user:password`.
    pub(super) fragments: bool,
}

impl FormRef<'_> {
    /// Streams the form's bytes from `from` on, in pieces, until `f` breaks.
    pub(super) fn stream(&self, from: usize, f: impl FnMut(&[u8]) -> ControlFlow<()>) {
        stream(self.source, self.encoding, from, f);
    }

    /// Bytes `from..to` of the form (clipped to its end) into `out`.
    pub(super) fn write(&self, from: usize, to: usize, out: &mut Vec<u8>) {
        out.clear();
        let to = to.min(self.len);
        if from >= to {
            return;
        }
        self.stream(from, |piece| {
            let room = to - from - out.len();
            out.extend_from_slice(&piece[..piece.len().min(room)]);
            if out.len() == to - from {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
    }
}

/// Every form of the agent's secrets: their sources, once, in one buffer,
/// and for each form its source, encoding and place in a virtual
/// concatenation of all forms (the windows finder's positions).
#[derive(Debug, Default)]
pub(super) struct Forms {
    arena: Vec<u8>,
    /// `(start, len)` of each source in `arena`.
    sources: Vec<(u32, u32)>,
    /// Where each form starts in the concatenation, then its total length:
    /// a form's length is the distance to the next.
    starts: Vec<u32>,
    /// Each form's source (high bits), fragments flag (bit 4) and encoding.
    packed: Vec<u32>,
}

impl Forms {
    pub(super) fn len(&self) -> usize {
        self.packed.len()
    }

    #[cfg(test)]
    pub(super) fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    pub(super) fn get(&self, form: usize) -> FormRef<'_> {
        let packed = self.packed[form];
        let (start, len) = self.sources[(packed >> 5) as usize];
        FormRef {
            source: &self.arena[start as usize..(start + len) as usize],
            encoding: ENCODINGS[(packed & 15) as usize],
            len: (self.starts[form + 1] - self.starts[form]) as usize,
            fragments: packed & 16 != 0,
        }
    }

    /// Where form `form` starts in the concatenation of all forms.
    pub(super) fn start(&self, form: usize) -> u32 {
        self.starts[form]
    }

    /// The form and offset in it of position `at` of the concatenation.
    pub(super) fn locate(&self, at: u32) -> (usize, usize) {
        let form = self.starts.partition_point(|&s| s <= at) - 1;
        (form, (at - self.starts[form]) as usize)
    }

    pub(super) fn memory_usage(&self) -> usize {
        self.arena.capacity()
            + self.sources.capacity() * 8
            + (self.starts.capacity() + self.packed.capacity()) * 4
    }

    /// A source at `start..start + len` of the arena.
    fn add_range(&mut self, start: usize, len: usize) -> u32 {
        let start = u32::try_from(start).expect("secrets under 4 GiB");
        let len = u32::try_from(len).expect("secrets under 4 GiB");
        self.sources.push((start, len));
        u32::try_from(self.sources.len() - 1).expect("fewer than 4G sources")
    }

    fn add_source(&mut self, bytes: &[u8]) -> u32 {
        let start = self.arena.len();
        self.arena.extend_from_slice(bytes);
        self.add_range(start, bytes.len())
    }

    fn add_form(&mut self, source: u32, encoding: Encoding, len: usize, fragments: bool) {
        if len < MIN_SECRET_LEN {
            return;
        }
        assert!(source < 1 << 27, "fewer than 128M sources");
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        let end = u64::from(*self.starts.last().expect("a start")) + len as u64;
        self.starts
            .push(u32::try_from(end).expect("forms of secrets under 4 GiB in all"));
        self.packed
            .push(source << 5 | u32::from(fragments) << 4 | encoding.index());
    }

    /// A source and the encodings it is matched in: each one that writes
    /// it differently from those before. Whether fragments count, for its
    /// base64 forms apart.
    fn add(
        &mut self,
        secret: &[u8],
        encodings: &[Encoding],
        fragments: bool,
        base64_fragments: bool,
    ) {
        let source = self.add_source(secret);
        self.add_encodings(source, secret, encodings, fragments, base64_fragments);
    }

    fn add_encodings(
        &mut self,
        source: u32,
        secret: &[u8],
        encodings: &[Encoding],
        fragments: bool,
        base64_fragments: bool,
    ) {
        let json = std::str::from_utf8(secret).is_ok();
        let needs_json = secret.iter().any(|&b| json_escape_len(b) > 1);
        let needs_url = secret.iter().any(|&b| !is_unreserved(b));
        for &encoding in encodings {
            let distinct = match encoding {
                Encoding::JsonOnce | Encoding::JsonTwice => json && needs_json,
                Encoding::Url => needs_url,
                _ => true,
            };
            if distinct {
                let fragments = if matches!(encoding, Encoding::Base64(_)) {
                    base64_fragments
                } else {
                    fragments
                };
                self.add_form(source, encoding, form_len(secret, encoding), fragments);
            }
        }
    }
}

/// Structured text (a pull secret): its fragments are JSON syntax.
fn is_structured(secret: &[u8]) -> bool {
    secret
        .iter()
        .any(|&b| b.is_ascii_whitespace() || matches!(b, b'{' | b'"'))
}

/// Every encoding but the literal, for a structured secret (its lines are
/// its literal forms).
const STRUCTURED: [Encoding; 8] = [
    Encoding::JsonOnce,
    Encoding::JsonTwice,
    Encoding::Url,
    Encoding::Hex,
    Encoding::GoBytes,
    Encoding::Base64(0),
    Encoding::Base64(1),
    Encoding::Base64(2),
];

/// Byte strings in one buffer: thousands of auths, their pairs and their
/// passwords as as many allocations left the heap in pieces.
#[derive(Default)]
struct Pool {
    bytes: Vec<u8>,
    spans: Vec<(usize, usize)>,
}

impl Pool {
    fn push(&mut self, text: &[u8]) {
        self.bytes.extend_from_slice(text);
        self.spans
            .push((self.bytes.len() - text.len(), self.bytes.len()));
    }

    fn get(&self, (start, end): (usize, usize)) -> &[u8] {
        &self.bytes[start..end]
    }

    fn iter(&self) -> impl Iterator<Item = &[u8]> {
        self.spans.iter().map(|&span| self.get(span))
    }

    /// Sorted by content, each once.
    fn sort_dedup(&mut self) {
        let mut spans = std::mem::take(&mut self.spans);
        spans.sort_unstable_by(|&a, &b| self.get(a).cmp(self.get(b)));
        spans.dedup_by(|a, b| self.get(*a) == self.get(*b));
        self.spans = spans;
    }

    fn contains(&self, text: &[u8]) -> bool {
        self.spans
            .binary_search_by(|&span| self.get(span).cmp(text))
            .is_ok()
    }

    fn total(&self) -> usize {
        self.spans.iter().map(|(start, end)| end - start).sum()
    }
}

pub(super) fn derive_forms<I, S>(secrets: I) -> Forms
where
    I: IntoIterator<Item = S>,
    S: AsRef<[u8]>,
{
    let mut atomic = Pool::default();
    let mut structured: Vec<Vec<u8>> = Vec::new();
    for secret in secrets {
        let secret = secret.as_ref().trim_ascii();
        if secret.len() < MIN_SECRET_LEN {
            continue;
        }
        if !is_structured(secret) {
            atomic.push(secret);
            continue;
        }
        structured.push(secret.to_vec());
        // The same pull secret serialized again (a `.dockerconfigjson`
        // written by another tool), and each credential inside it.
        if let Some(compact) = reserialize(secret, &mut atomic) {
            structured.push(compact);
        }
    }
    // The token and each auth arrive twice: given, and found in the pull
    // secret.
    atomic.sort_dedup();
    structured.sort_unstable();
    structured.dedup();
    // `auth` is base64 of `user:password`: both the pair and the password
    // leak as often as the auth itself (a registry login, a proxy URL).
    // The pair is matched whole only: its user part (`openshift-release-
    // dev+ocm_access_…`) names an organisation in every image path, and a
    // fragment of it is no secret. The password's fragments count.
    let mut pairs = Pool::default();
    let mut decoded = Pool::default();
    for secret in atomic.iter() {
        if let Some(text) = decode_base64(secret) {
            if let Some(colon) = memchr(b':', &text) {
                decoded.push(&text[colon + 1..]);
                pairs.push(&text);
            } else {
                decoded.push(&text);
            }
        }
    }
    for text in decoded.iter() {
        if text.len() >= MIN_SECRET_LEN {
            atomic.push(text);
        }
    }
    drop(decoded);
    atomic.sort_dedup();
    pairs.sort_dedup();
    // A pair that is also an atomic secret (a proxy's) is there already.
    let unique: Vec<(usize, usize)> = pairs
        .spans
        .iter()
        .copied()
        .filter(|&span| !atomic.contains(pairs.get(span)))
        .collect();
    pairs.spans = unique;

    // Sized first: an arena grown by doubling holds up to twice as much.
    let mut forms = Forms::default();
    forms.arena.reserve_exact(
        atomic.total() + pairs.total() + structured.iter().map(Vec::len).sum::<usize>(),
    );
    for secret in atomic.iter() {
        forms.add(secret, &ENCODINGS, true, true);
    }
    for pair in pairs.iter() {
        forms.add(pair, &ENCODINGS, false, false);
    }
    drop((atomic, pairs));
    for secret in &structured {
        let start = forms.arena.len();
        let source = forms.add_source(secret);
        // Base64 of a large one: matched whole (the auths inside by their
        // own base64 forms), as its fragments would cost ~4 windows per
        // byte for JSON syntax and registry names.
        let base64_fragments = secret.len() <= MAX_FRAGMENTED_STRUCTURED;
        forms.add_encodings(source, secret, &STRUCTURED, false, base64_fragments);
        // Content is matched line by line, so a multi-line secret (a
        // pretty-printed pull secret) is matched by each of its lines,
        // sources within its own.
        let mut lines: HashSet<&[u8]> = HashSet::new();
        let mut at = 0;
        for line in secret.split(|&b| b == b'\n') {
            let lead = line.len() - line.trim_ascii_start().len();
            let trimmed = line.trim_ascii();
            if trimmed.len() >= MIN_SECRET_LEN && lines.insert(trimmed) {
                let line_source = if trimmed.len() == secret.len() {
                    source
                } else {
                    forms.add_range(start + at + lead, trimmed.len())
                };
                forms.add_encodings(line_source, trimmed, &[Encoding::Literal], false, false);
            }
            at += line.len() + 1;
        }
    }
    forms.arena.shrink_to_fit();
    forms.sources.shrink_to_fit();
    forms.starts.shrink_to_fit();
    forms.packed.shrink_to_fit();
    forms
}

/// `json` written compact with its object keys sorted, as
/// `serde_json::Value` (and Go) write it, and the string values of
/// credential keys anywhere in it (into `credentials`); `None` when it is
/// no JSON. Streamed, each object's members in one buffer: a `Value` of a
/// pull secret of thousands of auths held ~800 bytes per auth in small
/// pieces, left behind in the heap.
fn reserialize(json: &[u8], credentials: &mut Pool) -> Option<Vec<u8>> {
    use serde::de::DeserializeSeed as _;
    let mut out = Vec::with_capacity(json.len());
    let mut de = serde_json::Deserializer::from_slice(json);
    Compact {
        out: &mut out,
        credentials,
        credential: false,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(out)
}

/// Writes the value it is given compact into `out`; a string under a
/// credential key goes to `credentials` too.
struct Compact<'a> {
    out: &'a mut Vec<u8>,
    credentials: &'a mut Pool,
    credential: bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for Compact<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Compact<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.out
            .extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, &v).map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, &v).map_err(E::custom)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.out, &serde_json::Number::from_f64(v)).map_err(E::custom)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        if self.credential {
            self.credentials.push(v.trim().as_bytes());
        }
        serde_json::to_writer(&mut *self.out, v).map_err(E::custom)
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        self.out.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push(b'[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(b',');
            }
            let seed = Compact {
                out: &mut *self.out,
                credentials: &mut *self.credentials,
                credential: false,
            };
            if seq.next_element_seed(seed)?.is_none() {
                // The end: no comma before it.
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(b']');
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Each member's key and value, in one buffer: key start, value
        // start, value end.
        let mut members = Vec::new();
        let mut spans: Vec<(usize, usize, usize)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let credential = matches!(
                key.to_ascii_lowercase().as_str(),
                "auth" | "password" | "identitytoken" | "registrytoken"
            );
            let start = members.len();
            members.extend_from_slice(key.as_bytes());
            let value = members.len();
            map.next_value_seed(Compact {
                out: &mut members,
                credentials: &mut *self.credentials,
                credential,
            })?;
            spans.push((start, value, members.len()));
        }
        // Sorted by key; a repeated key keeps its last value, as a map does.
        spans.sort_by(|a, b| members[a.0..a.1].cmp(&members[b.0..b.1]));
        let mut last: Option<&[u8]> = None;
        let mut kept: Vec<(usize, usize, usize)> = Vec::with_capacity(spans.len());
        for span in spans {
            let key = &members[span.0..span.1];
            if last == Some(key) {
                kept.pop();
            }
            last = Some(key);
            kept.push(span);
        }
        self.out.push(b'{');
        for (i, &(start, value, end)) in kept.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            let key =
                std::str::from_utf8(&members[start..value]).map_err(serde::de::Error::custom)?;
            serde_json::to_writer(&mut *self.out, key).map_err(serde::de::Error::custom)?;
            self.out.push(b':');
            self.out.extend_from_slice(&members[value..end]);
        }
        self.out.push(b'}');
        Ok(())
    }
}

/// Printable text that base64 (either alphabet, padded or not) decodes to.
fn decode_base64(text: &[u8]) -> Option<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let decoded = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(text).ok())?;
    let printable = decoded.iter().all(|b| (0x20..0x7f).contains(b));
    (printable && decoded.len() >= MIN_SECRET_LEN).then_some(decoded)
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";
const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Bytes serde_json writes for `b` inside a string (UTF-8 continuation and
/// lead bytes pass as they are).
fn json_escape_len(b: u8) -> usize {
    match b {
        b'"' | b'\\' | 0x08 | 0x0c | b'\n' | b'\r' | b'\t' => 2,
        0..0x20 => 6,
        _ => 1,
    }
}

fn json_escape(b: u8, out: &mut Vec<u8>) {
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0..0x20 => {
            out.extend_from_slice(b"\\u00");
            out.push(HEX_LOWER[usize::from(b >> 4)]);
            out.push(HEX_LOWER[usize::from(b & 15)]);
        }
        _ => out.push(b),
    }
}

/// The base64 characters of `align` zero bytes then `n` source bytes that
/// depend on the source only: `start..end` of that encoding.
fn base64_span(align: u8, n: usize) -> (usize, usize) {
    let align = usize::from(align);
    let start = (8 * align).div_ceil(6);
    let end = 8 * (align + n) / 6;
    (start, end.max(start))
}

/// Length of `source` written in `encoding`.
pub(super) fn form_len(source: &[u8], encoding: Encoding) -> usize {
    match encoding {
        Encoding::Literal => source.len(),
        Encoding::Hex => 2 * source.len(),
        Encoding::Base64(align) => {
            let (start, end) = base64_span(align, source.len());
            end - start
        }
        Encoding::JsonOnce => source.iter().map(|&b| json_escape_len(b)).sum(),
        Encoding::JsonTwice => {
            let mut once = Vec::new();
            source
                .iter()
                .map(|&b| {
                    once.clear();
                    json_escape(b, &mut once);
                    once.iter().map(|&e| json_escape_len(e)).sum::<usize>()
                })
                .sum()
        }
        Encoding::Url => source
            .iter()
            .map(|&b| if is_unreserved(b) { 1 } else { 3 })
            .sum(),
        Encoding::GoBytes => source
            .iter()
            .map(|&b| match b {
                0..10 => 2,
                10..100 => 3,
                _ => 4,
            })
            .sum::<usize>()
            .saturating_sub(1),
    }
}

/// Streams `source` written in `encoding` from byte `from` of the form on,
/// in pieces, until `f` breaks or the form ends. Fixed-width encodings
/// start right there; the others are written from their start, skipping.
fn stream(
    source: &[u8],
    encoding: Encoding,
    from: usize,
    mut f: impl FnMut(&[u8]) -> ControlFlow<()>,
) {
    const CHUNK: usize = 256;
    let mut buf = [0u8; CHUNK];
    match encoding {
        Encoding::Literal => {
            if from < source.len() {
                let _ = f(&source[from..]);
            }
        }
        Encoding::Hex => {
            let mut at = from;
            while at < 2 * source.len() {
                let n = CHUNK.min(2 * source.len() - at);
                for (i, slot) in buf[..n].iter_mut().enumerate() {
                    // Two characters per source byte, high nibble first.
                    let char_at = at + i;
                    let b = source[char_at / 2];
                    let nibble = if char_at % 2 == 0 { b >> 4 } else { b & 15 };
                    *slot = HEX_LOWER[usize::from(nibble)];
                }
                if f(&buf[..n]).is_break() {
                    return;
                }
                at += n;
            }
        }
        Encoding::Base64(align) => {
            let (start, end) = base64_span(align, source.len());
            let lead = 8 * usize::from(align);
            let mut at = from + start;
            while at < end {
                let n = CHUNK.min(end - at);
                for (i, slot) in buf[..n].iter_mut().enumerate() {
                    // Bits 6j.. of the blob are bits 6j - 8 align.. of the
                    // source.
                    let bit = 6 * (at + i) - lead;
                    let hi = u16::from(source[bit / 8]) << 8;
                    let lo = u16::from(*source.get(bit / 8 + 1).unwrap_or(&0));
                    let sextet = ((hi | lo) >> (10 - bit % 8)) & 63;
                    *slot = BASE64[usize::from(sextet)];
                }
                if f(&buf[..n]).is_break() {
                    return;
                }
                at += n;
            }
        }
        Encoding::JsonOnce | Encoding::JsonTwice | Encoding::Url | Encoding::GoBytes => {
            let mut out: Vec<u8> = Vec::with_capacity(CHUNK + 64);
            let mut once: Vec<u8> = Vec::with_capacity(8);
            // Bytes of the form before `out`.
            let mut written = 0;
            for (i, &b) in source.iter().enumerate() {
                match encoding {
                    Encoding::JsonOnce => json_escape(b, &mut out),
                    Encoding::JsonTwice => {
                        once.clear();
                        json_escape(b, &mut once);
                        for &e in &once {
                            json_escape(e, &mut out);
                        }
                    }
                    Encoding::Url if is_unreserved(b) => out.push(b),
                    Encoding::Url => out.extend_from_slice(&[
                        b'%',
                        HEX_UPPER[usize::from(b >> 4)],
                        HEX_UPPER[usize::from(b & 15)],
                    ]),
                    _ => {
                        if i > 0 {
                            out.push(b' ');
                        }
                        let mut digits = [0u8; 3];
                        let mut n = 0;
                        let mut v = b;
                        loop {
                            digits[n] = b'0' + v % 10;
                            n += 1;
                            v /= 10;
                            if v == 0 {
                                break;
                            }
                        }
                        out.extend(digits[..n].iter().rev());
                    }
                }
                if out.len() >= CHUNK || i + 1 == source.len() {
                    let end = written + out.len();
                    if end > from {
                        let skip = from.saturating_sub(written);
                        if f(&out[skip..]).is_break() {
                            return;
                        }
                    }
                    written = end;
                    out.clear();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::redact::testing::{assert_gone, b64, go_bytes, hex, redact, TOKEN};
    use crate::redact::{Redactor, MARKER, MIN_FRAGMENT};

    #[test]
    fn multi_line_secret_is_matched_line_by_line() {
        let secret = "{\n  \"auths\": {\n    \"x\": {\"auth\": \"QUJDREVGR0hJSks=\"}\n  }\n}";
        let r = Redactor::new([secret]);
        assert!(r.longest_secret() > 8);
        let (out, _) = redact(&r, &format!("dump:\n{secret}\n"));
        assert!(!out.contains("QUJDREVGR0hJSks"), "{out}");
    }

    #[test]
    fn token_in_every_encoding() {
        let r = Redactor::new([TOKEN]);
        let decoded = "e2e-token:S3cr3t-abcdefghijklmnopqrstuvwxyz0123456789";
        let password = "S3cr3t-abcdefghijklmnopqrstuvwxyz0123456789";
        let url = TOKEN.replace('=', "%3D");
        let cases: Vec<(String, &str)> = vec![
            (format!("plain {TOKEN} end"), TOKEN),
            (format!(r#"json {{\"token\":\"{TOKEN}\"}}"#), TOKEN),
            (format!("url https://x/?t={url}&a=b"), &url),
            (
                format!("url lower {} end", url.replace("%3D", "%3d")),
                "%3d",
            ),
            (format!("decoded {decoded} end"), decoded),
            (format!("password alone {password} end"), password),
            (format!("prefix {} end", &TOKEN[..44]), &TOKEN[..44]),
            (format!("suffix {} end", &TOKEN[30..]), &TOKEN[30..]),
        ];
        for (text, secret) in &cases {
            assert_gone(&r, text, secret);
        }
        // Base64 of a blob holding the token (and its decoded pair) at each
        // alignment.
        for secret in [TOKEN, decoded] {
            for pad in ["", "x", "xy", "xyz"] {
                let blob = b64(format!("{pad}{{\"a\":\"{secret}\"}} trailing").as_bytes());
                let out = assert_gone(&r, &format!("blob {blob}"), &blob);
                // Only the characters that mix in other bytes may remain.
                let left = out.len() - "blob ".len() - MARKER.len();
                assert!(left <= 40, "{out}");
            }
        }
    }

    #[test]
    fn pull_secret_and_its_auths_in_every_encoding() {
        let auth = b64(b"quay-bot+robot:Pa55w0rd-quay-9876543210");
        let pull = format!(
            r#"{{"auths":{{"cloud.openshift.com":{{"auth":"{TOKEN}","email":"a@b.c"}},"quay.io":{{"auth":"{auth}","email":"a@b.c"}}}}}}"#
        );
        // As the config hands it over: the token, the auths, the text.
        let r = Redactor::new([TOKEN, auth.as_str(), pull.as_str()]);
        let whole = b64(pull.as_bytes());
        assert_gone(&r, &format!("  .dockerconfigjson: {whole}"), &whole[..40]);
        assert_gone(
            &r,
            "robot quay-bot+robot:Pa55w0rd-quay-9876543210 x",
            "Pa55w0rd",
        );
        assert_gone(&r, "pw Pa55w0rd-quay-9876543210 x", "Pa55w0rd");
        // Pretty-printed by another tool: the same secret, re-serialized.
        let pretty: serde_json::Value = serde_json::from_str(&pull).unwrap();
        let pretty = serde_json::to_string_pretty(&pretty).unwrap();
        let (out, _) = redact(&r, &pretty);
        assert!(!out.contains(TOKEN) && !out.contains(&auth), "{out}");
        // The pull secret alone is enough: its auths are found inside it.
        let r = Redactor::new([pull.as_str()]);
        assert_gone(&r, &format!("auth {auth} x"), &auth);
        assert_gone(&r, "pw Pa55w0rd-quay-9876543210 x", "Pa55w0rd");
        // And so is its JSON-escaped form inside a JSON log line.
        let escaped = serde_json::to_string(&pull).unwrap();
        assert_gone(
            &r,
            &format!("{{\"msg\":{escaped}}}"),
            "cloud.openshift.com\\\":{",
        );
    }

    #[test]
    fn hex_and_go_byte_slices_of_every_secret() {
        let pair = "quay-bot+robot:Pa55w0rd-quay-9876543210";
        let auth = b64(pair.as_bytes());
        let pull = format!(
            r#"{{"auths":{{"cloud.openshift.com":{{"auth":"{TOKEN}"}},"quay.io":{{"auth":"{auth}"}}}}}}"#
        );
        let r = Redactor::new([TOKEN, auth.as_str(), pull.as_str()]);
        let token_pair = "e2e-token:S3cr3t-abcdefghijklmnopqrstuvwxyz0123456789";
        for secret in [
            TOKEN,
            auth.as_str(),
            pair,
            "Pa55w0rd-quay-9876543210",
            token_pair,
            &token_pair[10..],
            pull.as_str(),
        ] {
            for encoded in [
                hex(secret.as_bytes(), false),
                hex(secret.as_bytes(), true),
                go_bytes(secret.as_bytes()),
            ] {
                let out = assert_gone(&r, &format!("data=[{encoded}] len=3"), &encoded);
                assert_eq!(out, "data=[[REDACTED]] len=3", "{secret}");
            }
        }
        // Fragments: a hex dump cut short or wrapped, mixed case, a `%v`
        // cut by a logger.
        let hexed = hex(TOKEN.as_bytes(), false);
        assert_gone(&r, &format!("x {} y", &hexed[..44]), &hexed[..44]);
        assert_gone(&r, &format!("x {} y", &hexed[31..]), &hexed[31..]);
        let wrapped: Vec<&str> = (0..hexed.len())
            .step_by(32)
            .map(|i| &hexed[i..hexed.len().min(i + 32)])
            .collect();
        let (out, _) = redact(&r, &format!("dump:\n{}\nend\n", wrapped.join("\n")));
        for piece in &wrapped {
            assert!(!out.contains(piece), "{piece} in {out}");
        }
        let mixed = format!("{}{}", &hexed[..40], hex(&TOKEN.as_bytes()[20..], true));
        assert_gone(&r, &format!("x {mixed} y"), &mixed[..44]);
        let bytes = go_bytes(TOKEN.as_bytes());
        assert_gone(&r, &format!("[{}...", &bytes[7..60]), &bytes[7..60]);
        // Other bytes in the same encodings are left alone.
        let other = format!(
            "sha {} ips [10 0 0 1] {}",
            hex(b"Hello, world! Nothing to see here.", false),
            go_bytes(b"not a secret at all")
        );
        assert_eq!(redact(&r, &other), (other.clone(), 0));
    }

    #[test]
    fn short_fragments_and_look_alikes_are_left_alone() {
        let r = Redactor::new([TOKEN]);
        // The user part of an auth is no secret: it names image paths.
        let auth =
            b64(b"openshift-release-dev+ocm_access_0123456789abcdef:PASSWORDpassword0123456789");
        let r2 = Redactor::new([auth.as_str()]);
        let path = "Pulled image: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:00";
        assert_eq!(redact(&r2, path), (path.to_owned(), 0));
        assert_gone(&r2, "pw PASSWORDpassword0123456789 x", "PASSWORD");
        // Under MIN_FRAGMENT bytes of the token: no secret.
        let text = format!("x {} y", &TOKEN[..MIN_FRAGMENT - 1]);
        assert_eq!(redact(&r, &text), (text.clone(), 0));
        // Case matters for base64.
        let text = format!("x {} y", TOKEN.to_ascii_lowercase());
        assert_eq!(redact(&r, &text).1, 0);
        assert!(Redactor::new(["tiny"]).is_empty());
    }
}
