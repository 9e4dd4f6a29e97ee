//! Redaction of secrets from everything the agent ships.
//!
//! Two kinds of secret are replaced by [`MARKER`]:
//! - the agent's own: the token and pull secret it was handed (literal
//!   strings, matched anywhere);
//! - the host's, recognised by shape: values of secret keys (`psk=`,
//!   `password=`, `wep-key0=`, JSON `"auth":"…"`, `"password":"…"`…), whole
//!   `"auths":{…}` objects, credentials in URLs (`http://user:pass@proxy`),
//!   `Authorization:` header values and bearer tokens.
//!
//! Content is bytes (journals are not always UTF-8) and arrives in chunks of
//! any size: [`StreamRedactor`] works line by line, holding back an incomplete
//! last line, so a secret split across two chunks is still found. A line too
//! long to hold is cut with a margin larger than any literal secret; a secret
//! value that runs past the cut is replaced up to the end of its line.
//! Every replacement is counted; the values themselves are never kept.

use memchr::{memchr, memchr2_iter, memmem, memrchr};

/// What replaces a secret in shipped content.
pub const MARKER: &[u8] = b"[REDACTED]";

/// Secrets shorter than this are not redacted: replacing every "a" or "42"
/// would destroy the logs and protect nothing.
const MIN_SECRET_LEN: usize = 8;
/// Longest incomplete line held back before it is cut.
const MAX_LINE: usize = 256 * 1024;
/// Bytes held back at a cut: more than any secret-shaped match can need to
/// be recognised from its start.
const MIN_HOLD: usize = 8 * 1024;
/// Bearer tokens shorter than this and made of letters only are ordinary
/// words ("bearer authentication").
const MIN_BEARER_WORD: usize = 16;

/// Keys whose value is a secret wherever they appear (compared lowercased,
/// `_` read as `-`).
const SECRET_KEYS: &[&str] = &[
    "psk",
    "password",
    "passwd",
    "passphrase",
    "password-raw",
    "pin",
    "wep-key0",
    "wep-key1",
    "wep-key2",
    "wep-key3",
    "leap-password",
    "private-key-password",
    "phase2-private-key-password",
    "ca-cert-password",
    "client-cert-password",
    "phase2-ca-cert-password",
    "phase2-client-cert-password",
    "preshared-key",
    "client-secret",
    "auth",
    "auths",
    "identitytoken",
    "registrytoken",
    "token",
    "access-token",
    "refresh-token",
    "id-token",
    "api-key",
    "apikey",
    "authorization",
    "proxy-authorization",
    "x-secret-key",
];
/// Key suffixes that make any key secret (`http-proxy-password`).
const SECRET_SUFFIXES: &[&str] = &["-password", "-passwd", "-passphrase", "-psk", "-token"];
/// Keys secret only in NetworkManager keyfiles: elsewhere `private-key=` is
/// as likely a path and `secret=` names a Kubernetes object.
const KEYFILE_SECRET_KEYS: &[&str] = &["private-key", "secret", "secrets", "key"];

/// How to read the content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Logs and command output.
    #[default]
    Text,
    /// A NetworkManager keyfile (INI): values run to the end of the line and
    /// every value in a `[…-secrets]` section is secret.
    Keyfile,
}

#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<Vec<u8>>,
}

impl Redactor {
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let mut list: Vec<Vec<u8>> = Vec::new();
        for secret in secrets
            .into_iter()
            .map(|s| s.as_ref().trim_ascii().to_vec())
        {
            // Content is matched line by line, so a multi-line secret (a
            // pretty-printed pull secret) is matched by each of its lines.
            if memchr(b'\n', &secret).is_some() {
                list.extend(
                    secret
                        .split(|&b| b == b'\n')
                        .map(|l| l.trim_ascii().to_vec())
                        .filter(|l| l.len() >= MIN_SECRET_LEN),
                );
            } else if secret.len() >= MIN_SECRET_LEN {
                list.push(secret);
            }
        }
        // Longest first so that a secret containing another is replaced whole.
        list.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        list.dedup();
        Self { secrets: list }
    }

    /// The longest literal secret.
    pub fn longest_secret(&self) -> usize {
        self.secrets.first().map_or(0, Vec::len)
    }

    /// Whether no literal secret is known (shape rules always apply).
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Redacts a complete buffer; returns how many secrets were replaced.
    pub fn redact(&self, data: &mut Vec<u8>) -> usize {
        self.redact_as(data, Mode::Text)
    }

    pub fn redact_as(&self, data: &mut Vec<u8>, mode: Mode) -> usize {
        let mut out = Vec::with_capacity(data.len());
        let mut stream = self.stream(mode);
        stream.push(data, &mut |b| out.extend_from_slice(b));
        let count = stream.finish(&mut |b| out.extend_from_slice(b));
        *data = out;
        count
    }

    /// A redactor for content that arrives in chunks.
    pub fn stream(&self, mode: Mode) -> StreamRedactor {
        StreamRedactor {
            rules: self.clone(),
            mode,
            pending: Vec::new(),
            swallowing: false,
            secret_section: false,
            count: 0,
            spans: Vec::new(),
            hold: MIN_HOLD.max(self.longest_secret() + 1).min(MAX_LINE / 2),
        }
    }
}

/// One replacement: `start..end` of the scanned buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    /// Replaced by `"[REDACTED]"` (a JSON object replaced by a string).
    quoted: bool,
    /// Ends where the buffer ends and may continue past it.
    open: bool,
}

/// Redacts content pushed in chunks, passing redacted bytes to a sink as
/// soon as their lines are complete.
pub struct StreamRedactor {
    rules: Redactor,
    mode: Mode,
    pending: Vec<u8>,
    /// Dropping bytes up to the next newline: the rest of a line whose secret
    /// ran past a cut, or the partial first line after a seek.
    swallowing: bool,
    /// Inside a keyfile `[…-secrets]` section.
    secret_section: bool,
    count: usize,
    spans: Vec<Span>,
    hold: usize,
}

impl StreamRedactor {
    /// The content starts somewhere inside a line (after a seek): that
    /// partial line may hold the end of a secret whose key was cut off, so
    /// it is dropped.
    pub fn start_mid_line(&mut self) {
        self.swallowing = true;
    }

    /// Secrets replaced so far.
    pub fn count(&self) -> usize {
        self.count
    }

    pub fn push(&mut self, data: &[u8], sink: &mut dyn FnMut(&[u8])) {
        self.pending.extend_from_slice(data);
        self.drain(false, sink);
    }

    /// Flushes the last, unterminated line; returns the redaction count.
    pub fn finish(mut self, sink: &mut dyn FnMut(&[u8])) -> usize {
        self.drain(true, sink);
        self.count
    }

    fn drain(&mut self, last: bool, sink: &mut dyn FnMut(&[u8])) {
        let mut offset = 0;
        loop {
            let rest = &self.pending[offset..];
            if self.swallowing {
                if let Some(nl) = memchr(b'\n', rest) {
                    offset += nl;
                    self.swallowing = false;
                } else {
                    offset = self.pending.len();
                    break;
                }
                continue;
            }
            let rest = &self.pending[offset..];
            if let Some(nl) = memrchr(b'\n', rest) {
                let end = offset + nl + 1;
                self.emit_lines(offset, end, sink);
                offset = end;
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
            if rest.len() > MAX_LINE {
                offset = self.cut_long_line(offset, sink);
                continue;
            }
            break;
        }
        self.pending.drain(..offset);
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
                    self.secret_section = section.ends_with(b"-secrets");
                }
                self.spans.clear();
                scan(
                    &self.rules,
                    line,
                    Mode::Keyfile,
                    self.secret_section,
                    false,
                    &mut self.spans,
                );
                self.count += emit_with_spans(line, &self.spans, sink);
                start = end;
            }
            return;
        }
        self.spans.clear();
        let block = &self.pending[from..to];
        scan(
            &self.rules,
            block,
            Mode::Text,
            false,
            false,
            &mut self.spans,
        );
        self.count += emit_with_spans(block, &self.spans, sink);
    }

    /// Emits most of an overlong incomplete line, keeping back enough to
    /// recognise any secret that starts near the cut. Returns the new offset.
    fn cut_long_line(&mut self, offset: usize, sink: &mut dyn FnMut(&[u8])) -> usize {
        let buf = &self.pending[offset..];
        self.spans.clear();
        scan(
            &self.rules,
            buf,
            self.mode,
            self.secret_section,
            true,
            &mut self.spans,
        );
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
                return offset + buf.len();
            }
            cut = span.end;
        }
        let keep = self.spans.iter().take_while(|s| s.end <= cut).count();
        self.count += emit_with_spans(&buf[..cut], &self.spans[..keep], sink);
        offset + cut
    }
}

/// Emits `buf` with each span replaced; returns the number of spans.
fn emit_with_spans(buf: &[u8], spans: &[Span], sink: &mut dyn FnMut(&[u8])) -> usize {
    let mut at = 0;
    for span in spans {
        sink(&buf[at..span.start]);
        if span.quoted {
            sink(b"\"");
            sink(MARKER);
            sink(b"\"");
        } else {
            sink(MARKER);
        }
        at = span.end;
    }
    sink(&buf[at..]);
    spans.len()
}

fn section_name(line: &[u8]) -> Option<&[u8]> {
    let line = line.trim_ascii();
    let inner = line.strip_prefix(b"[")?.strip_suffix(b"]")?;
    Some(inner)
}

/// Finds every secret in `buf`; `spans` comes back sorted and disjoint.
fn scan(
    rules: &Redactor,
    buf: &[u8],
    mode: Mode,
    secret_section: bool,
    open_end: bool,
    spans: &mut Vec<Span>,
) {
    let mut found: Vec<Span> = Vec::new();
    for secret in &rules.secrets {
        for start in memmem::find_iter(buf, secret) {
            found.push(Span {
                start,
                end: start + secret.len(),
                quoted: false,
                open: false,
            });
        }
    }
    key_values(buf, mode, secret_section, open_end, &mut found);
    url_credentials(buf, open_end, &mut found);
    bearer_tokens(buf, open_end, &mut found);

    // Earliest first; of two starting together the longer. Overlaps are
    // merged into the earlier span so no fragment of either survives.
    found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    for span in found {
        match spans.last_mut() {
            Some(last) if span.start < last.end => {
                if span.end > last.end {
                    last.end = span.end;
                    last.open = span.open;
                    last.quoted = false;
                }
            }
            _ => spans.push(span),
        }
    }
}

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

fn is_secret_key(key: &[u8], mode: Mode) -> bool {
    if key.is_empty() || key.len() > 64 {
        return false;
    }
    let mut norm = [0u8; 64];
    for (n, &b) in norm.iter_mut().zip(key) {
        *n = if b == b'_' {
            b'-'
        } else {
            b.to_ascii_lowercase()
        };
    }
    let norm = &norm[..key.len()];
    let is = |list: &[&str]| list.iter().any(|k| k.as_bytes() == norm);
    is(SECRET_KEYS)
        || SECRET_SUFFIXES.iter().any(|s| norm.ends_with(s.as_bytes()))
        || (mode == Mode::Keyfile && is(KEYFILE_SECRET_KEYS))
}

fn line_start(buf: &[u8], at: usize) -> usize {
    memrchr(b'\n', &buf[..at]).map_or(0, |i| i + 1)
}

fn line_end(buf: &[u8], at: usize) -> usize {
    let end = memchr(b'\n', &buf[at..]).map_or(buf.len(), |i| at + i);
    if end > at && buf[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

/// `key=value`, `key: value` (headers) and `"key": "value"` (JSON, also
/// with escaped quotes inside a log line).
fn key_values(buf: &[u8], mode: Mode, secret_section: bool, open_end: bool, out: &mut Vec<Span>) {
    for sep in memchr2_iter(b'=', b':', buf) {
        // Key: the identifier right before the separator, perhaps quoted.
        let mut key_end = sep;
        while key_end > 0 && buf[key_end - 1] == b' ' {
            key_end -= 1;
        }
        let mut quoted_key = false;
        if key_end > 0 && buf[key_end - 1] == b'"' {
            quoted_key = true;
            key_end -= 1;
            if key_end > 0 && buf[key_end - 1] == b'\\' {
                key_end -= 1;
            }
        }
        let mut key_start = key_end;
        while key_start > 0 && is_key_byte(buf[key_start - 1]) {
            key_start -= 1;
        }
        let key = &buf[key_start..key_end];
        if key.is_empty() {
            continue;
        }
        let first_on_line = buf[line_start(buf, key_start)..key_start]
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'"' | b'\\'));
        let in_secret_section = mode == Mode::Keyfile && secret_section && buf[sep] == b'=';
        if !in_secret_section && !is_secret_key(key, mode) {
            continue;
        }
        // A colon only separates JSON keys, YAML keys and header names,
        // never `host:port` or a timestamp.
        let mut end = if first_on_line || mode == Mode::Keyfile {
            End::Line
        } else {
            End::Word
        };
        if buf[sep] == b':' && !quoted_key && !first_on_line {
            let lower = key.to_ascii_lowercase();
            if !lower.ends_with(b"authorization") && lower != b"x-secret-key" {
                continue;
            }
            end = End::LineOrQuote;
        }
        let mut v = sep + 1;
        while v < buf.len() && matches!(buf[v], b' ' | b'\t') {
            v += 1;
        }
        if let Some(span) = value_span(buf, v, end, open_end) {
            out.push(span);
        }
    }
}

/// Where an unquoted value ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// At whitespace or punctuation (`key=value` inside a log line).
    Word,
    /// At the end of the line (config files, keyfiles).
    Line,
    /// At the end of the line or a quote (a header inside a quoted argument).
    LineOrQuote,
}

/// The extent of the value starting at `v`.
fn value_span(buf: &[u8], v: usize, end_at: End, open_end: bool) -> Option<Span> {
    let rest = &buf[v..];
    let span = |start: usize, end: usize, quoted: bool, open: bool| {
        (end > start && &buf[start..end] != MARKER).then_some(Span {
            start,
            end,
            quoted,
            open,
        })
    };
    if rest.is_empty() {
        return None;
    }
    // A JSON string, escaped inside a log line or plain.
    if let Some(after) = rest.strip_prefix(b"\\\"") {
        let start = v + 2;
        return match memmem::find(after, b"\\\"") {
            Some(len) => span(start, start + len, false, false),
            None => span(start, line_end(buf, start), false, open_end),
        };
    }
    if rest[0] == b'"' || rest[0] == b'\'' {
        let quote = rest[0];
        let start = v + 1;
        let mut i = start;
        while i < buf.len() && buf[i] != quote && buf[i] != b'\n' {
            i += if buf[i] == b'\\' { 2 } else { 1 };
        }
        let i = i.min(buf.len());
        let open = i >= buf.len() && open_end;
        return span(start, i, false, open);
    }
    if rest[0] == b'{' {
        // `"auths": {...}`: the whole object, when it closes on this line;
        // otherwise its inner `"auth"` values are found one by one.
        return balanced_object(buf, v).and_then(|end| span(v, end, true, false));
    }
    let eol = line_end(buf, v);
    let end = match end_at {
        End::Line => eol,
        End::LineOrQuote => buf[v..eol]
            .iter()
            .position(|&b| matches!(b, b'"' | b'\''))
            .map_or(eol, |i| v + i),
        End::Word => rest
            .iter()
            .position(|&b| {
                b.is_ascii_whitespace()
                    || matches!(b, b'"' | b'\'' | b',' | b';' | b'&' | b'}' | b')')
            })
            .map_or(buf.len(), |i| v + i),
    };
    span(v, end, false, end == buf.len() && open_end)
}

/// End (exclusive) of the JSON object starting at `start`, if it closes
/// before the end of the line.
fn balanced_object(buf: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = start;
    while i < buf.len() {
        let b = buf[i];
        if b == b'\n' {
            return None;
        }
        if in_string {
            if b == b'\\' {
                i += 1;
            } else if b == b'"' {
                in_string = false;
            }
        } else if b == b'"' {
            in_string = true;
        } else if b == b'{' {
            depth += 1;
        } else if b == b'}' {
            depth -= 1;
            if depth == 0 {
                return Some(i + 1);
            }
        }
        i += 1;
    }
    None
}

/// `scheme://user:password@host`: the password (or a lone token used as
/// user name) is replaced, the user name kept.
fn url_credentials(buf: &[u8], open_end: bool, out: &mut Vec<Span>) {
    for at in memmem::find_iter(buf, b"://") {
        let start = at + 3;
        let mut i = start;
        let mut colon = None;
        while i < buf.len() {
            let b = buf[i];
            if b == b'@' {
                break;
            }
            if b.is_ascii_whitespace()
                || matches!(b, b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'\\')
            {
                i = usize::MAX;
                break;
            }
            if b == b':' && colon.is_none() {
                colon = Some(i);
            }
            i += 1;
        }
        if i == usize::MAX {
            continue;
        }
        if i >= buf.len() {
            if open_end {
                out.push(Span {
                    start,
                    end: buf.len(),
                    quoted: false,
                    open: true,
                });
            }
            continue;
        }
        // A bare user name (`git@`) is no secret; a long one is a token.
        if colon.is_none() && i - start < MIN_SECRET_LEN {
            continue;
        }
        let secret_start = colon.map_or(start, |c| c + 1);
        if i > secret_start && &buf[secret_start..i] != MARKER {
            out.push(Span {
                start: secret_start,
                end: i,
                quoted: false,
                open: false,
            });
        }
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// `Bearer <token>` anywhere (also outside an `Authorization:` header).
fn bearer_tokens(buf: &[u8], open_end: bool, out: &mut Vec<Span>) {
    for at in memmem::find_iter(buf, b"earer") {
        if at == 0 || !matches!(buf[at - 1], b'B' | b'b') {
            continue;
        }
        let mut start = at + 5;
        if start >= buf.len() || buf[start] != b' ' {
            continue;
        }
        while start < buf.len() && buf[start] == b' ' {
            start += 1;
        }
        let len = buf[start..]
            .iter()
            .position(|&b| !is_token_byte(b))
            .unwrap_or(buf.len() - start);
        let token = &buf[start..start + len];
        let wordlike = token.iter().all(u8::is_ascii_alphabetic) && len < MIN_BEARER_WORD;
        if len < MIN_SECRET_LEN || wordlike {
            continue;
        }
        out.push(Span {
            start,
            end: start + len,
            quoted: false,
            open: open_end && start + len == buf.len(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redact(r: &Redactor, text: &str) -> (String, usize) {
        let mut data = text.as_bytes().to_vec();
        let n = r.redact(&mut data);
        (String::from_utf8(data).unwrap(), n)
    }

    fn keyfile(text: &str) -> (String, usize) {
        let mut data = text.as_bytes().to_vec();
        let n = Redactor::default().redact_as(&mut data, Mode::Keyfile);
        (String::from_utf8(data).unwrap(), n)
    }

    #[test]
    fn replaces_every_occurrence_and_counts_them() {
        let redactor = Redactor::new(["s3cr3t-token"]);
        let mut data = b"a s3cr3t-token b s3cr3t-token".to_vec();
        assert_eq!(redactor.redact(&mut data), 2);
        assert_eq!(data, b"a [REDACTED] b [REDACTED]");
    }

    #[test]
    fn longer_secret_wins_over_its_prefix() {
        let redactor = Redactor::new(["abcdefgh", "abcdefghijkl"]);
        let mut data = b"xabcdefghijklx".to_vec();
        assert_eq!(redactor.redact(&mut data), 1);
        assert_eq!(data, b"x[REDACTED]x");
    }

    #[test]
    fn short_secrets_are_ignored_and_invalid_utf8_survives() {
        let redactor = Redactor::new(["abc"]);
        assert!(redactor.is_empty());
        let redactor = Redactor::new(["tokentoken"]);
        let mut data = vec![
            0xff, 0xfe, b't', b'o', b'k', b'e', b'n', b't', b'o', b'k', b'e', b'n', 0x80,
        ];
        assert_eq!(redactor.redact(&mut data), 1);
        assert_eq!(data[..2], [0xff, 0xfe]);
        assert_eq!(*data.last().unwrap(), 0x80);
    }

    #[test]
    fn multi_line_secret_is_matched_line_by_line() {
        let secret = "{\n  \"auths\": {\n    \"x\": {\"auth\": \"QUJDREVGR0hJSks=\"}\n  }\n}";
        let r = Redactor::new([secret]);
        assert!(r.longest_secret() > 8);
        let (out, _) = redact(&r, &format!("dump:\n{secret}\n"));
        assert!(!out.contains("QUJDREVGR0hJSks"), "{out}");
    }

    #[test]
    fn network_manager_keyfile_secrets() {
        let text = "[connection]\nid=corp wifi\nuuid=1234\n\n[wifi-security]\nkey-mgmt=wpa-psk\npsk=correct horse battery\n\
                    [802-1x]\npassword=hunter2hunter2\nprivate-key-password=pkpass\nprivate-key=/etc/pki/key.pem\n\
                    [gsm]\npin=1234\n[wifi]\nwep-key0=abcdef\n[vpn]\nservice-type=openvpn\n[vpn-secrets]\ncert-pass=foo bar\n[ipv4]\nmethod=auto\n";
        let (out, n) = keyfile(text);
        for gone in [
            "correct horse",
            "hunter2",
            "pkpass",
            "/etc/pki/key.pem",
            "1234\n[wifi]",
            "abcdef",
            "foo bar",
        ] {
            assert!(!out.contains(gone), "{gone} in {out}");
        }
        assert!(out.contains("psk=[REDACTED]\n"), "{out}");
        assert!(out.contains("cert-pass=[REDACTED]\n"));
        assert!(out.contains("id=corp wifi\nuuid=1234\n"));
        assert!(out.contains("key-mgmt=wpa-psk\n"));
        assert!(out.contains("method=auto\n"));
        assert_eq!(n, 7);
    }

    #[test]
    fn text_mode_shapes() {
        let r = Redactor::default();
        let cases = [
            (
                "proxy: http://user:p4ss@proxy.example.com:3128/ ok",
                "proxy: http://user:[REDACTED]@proxy.example.com:3128/ ok",
            ),
            (
                "git https://ghp_abcdefgh@github.com/x",
                "git https://[REDACTED]@github.com/x",
            ),
            (
                "no creds https://quay.io:443/v2/ here",
                "no creds https://quay.io:443/v2/ here",
            ),
            (
                "Authorization: Bearer eyJhbGciOi.x.y trailing",
                "Authorization: [REDACTED]",
            ),
            (
                "curl -H 'authorization: Basic dXNlcjpwYXNz' https://x",
                "curl -H 'authorization: [REDACTED]' https://x",
            ),
            (
                "got bearer abcdef0123456789xyz from",
                "got bearer [REDACTED] from",
            ),
            (
                "uses bearer authentication here",
                "uses bearer authentication here",
            ),
            (
                r#"{"auths":{"quay.io":{"auth":"eHg6eXk=","email":"a@b"}},"x":1}"#,
                r#"{"auths":"[REDACTED]","x":1}"#,
            ),
            (
                r#"msg="pull {\"auths\":{\"q\":{\"auth\":\"c2VjcmV0\"}}}""#,
                r#"msg="pull {\"auths\":{\"q\":{\"auth\":\"[REDACTED]\"}}}""#,
            ),
            (
                "level=info password=hunter2 user=bob",
                "level=info password=[REDACTED] user=bob",
            ),
            (
                "HTTP_PROXY_PASSWORD=\"two words\" next",
                "HTTP_PROXY_PASSWORD=\"[REDACTED]\" next",
            ),
            (
                "time=10:00:01 host=a:b secret=\"openshift-config/pull-secret\"",
                "time=10:00:01 host=a:b secret=\"openshift-config/pull-secret\"",
            ),
            ("X-Secret-Key: abcdefghij", "X-Secret-Key: [REDACTED]"),
        ];
        for (input, want) in cases {
            let (out, _) = redact(&r, input);
            assert_eq!(out, want, "input {input}");
        }
        // Pretty-printed JSON: each auth on its own line.
        let (out, n) = redact(
            &r,
            "{\n \"auths\": {\n  \"quay.io\": {\n   \"auth\": \"eHg6eXk=\",\n   \"email\": \"a@b\"\n  }\n }\n}\n",
        );
        assert!(out.contains("\"auth\": \"[REDACTED]\",\n"), "{out}");
        assert_eq!(n, 1);
    }

    #[test]
    fn already_redacted_content_is_left_alone() {
        let r = Redactor::default();
        let (out, n) = redact(&r, "x password=[REDACTED] http://u:[REDACTED]@h");
        assert_eq!(out, "x password=[REDACTED] http://u:[REDACTED]@h");
        assert_eq!(n, 0);
    }

    /// Pushes `text` in chunks of `size` bytes.
    fn chunked(r: &Redactor, text: &[u8], size: usize) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let mut s = r.stream(Mode::Text);
        for chunk in text.chunks(size) {
            s.push(chunk, &mut |b| out.extend_from_slice(b));
        }
        let n = s.finish(&mut |b| out.extend_from_slice(b));
        (out, n)
    }

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
}
