//! Redaction of secrets from everything the agent emits: bundle members and
//! their names, the manifest, `progress_info`, its own log lines and the
//! service's error bodies it quotes.
//!
//! Two kinds of secret are replaced by [`MARKER`]:
//! - the agent's own (the token and pull secret it was handed), in every
//!   form it can take on a host: literal, JSON-escaped (once and twice),
//!   URL-encoded, base64 at each of the three byte alignments (standard and
//!   URL-safe alphabets), base64-decoded (`user:password` and the password
//!   alone), a re-serialized pull secret, and any fragment of at least
//!   [`MIN_FRAGMENT`] bytes of those forms (a token cut short, or split by a
//!   line wrap: the piece on the other side of the wrap goes too);
//! - the host's, recognised by shape: values of secret keys (`psk=`,
//!   `password: …`, `"passwordHash":"…"`, `aws_secret_access_key = …`,
//!   `client-key-data: …`, `--password PW`…), whole `"auths":{…}` objects,
//!   credentials in URLs (`http://user:pass@proxy`), `Authorization:` header
//!   values, bearer tokens, `-p PW` in command lines and PEM private key
//!   blocks (their body, across lines).
//!
//! Three finders point at where to look closer, so that a line with no
//! secret costs two cheap passes: one vectorised search finds the words
//! secret keys are made of and the anchors of the shapes ([`anchors`]); the
//! literal forms are found by sampling a window every few bytes against a set
//! of their windows ([`windows`]), each hit extended against its form; forms
//! too short to be sure of by sampling (a short password) are matched whole
//! by an Aho-Corasick automaton, built only when there are any.
//!
//! Content is bytes (journals are not always UTF-8) and arrives in chunks of
//! any size: [`StreamRedactor`] works line by line, holding back an incomplete
//! last line (and the last complete one, so that a secret split by a line
//! wrap is seen whole), so a secret split across two chunks is still found.
//! A line too long to hold is cut with a margin larger than any literal
//! secret; a secret value that runs past the cut is replaced up to the end of
//! its line. Every replacement is counted; the values themselves are never
//! kept anywhere but in the automaton.

use std::borrow::Cow;
use std::io::Write as _;
use std::sync::{Arc, OnceLock, RwLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use base64::Engine as _;
use memchr::{memchr, memmem, memrchr};

use anchors::{Anchor, Anchors};
use windows::WindowSet;

mod anchors;
mod windows;

// Sampling finds every run of `windows::SURE` bytes: the fragment rule
// must not ask for shorter ones.
const _: () = assert!(windows::SURE <= MIN_FRAGMENT);

/// What replaces a secret in shipped content.
pub const MARKER: &[u8] = b"[REDACTED]";

/// Secrets shorter than this are not redacted: replacing every "a" or "42"
/// would destroy the logs and protect nothing. A password shorter than this
/// inside a longer credential is still redacted with the credential.
const MIN_SECRET_LEN: usize = 8;
/// Any run of this many bytes of a known secret (in any of its forms) is
/// redacted wherever it appears: 20 base64 characters are 120 bits, which
/// no log line matches by chance, and a token cut to 20 characters or more
/// still reaches the service.
pub const MIN_FRAGMENT: usize = 20;
/// A piece of a secret on the other side of a line wrap is redacted when it
/// is this long, or all that is left of the secret.
const MIN_WRAPPED_PIECE: usize = 4;
/// Longest incomplete line held back before it is cut.
const MAX_LINE: usize = 256 * 1024;
/// Bytes held back at a cut: more than any secret-shaped match can need to
/// be recognised from its start.
const MIN_HOLD: usize = 8 * 1024;
/// Largest DFA kept for the short forms (see [`Engine::build`]).
const MAX_DFA_BYTES: usize = 8 << 20;
/// Bearer tokens shorter than this and made of letters only are ordinary
/// words ("bearer authentication").
const MIN_BEARER_WORD: usize = 16;

/// Keys whose value is a secret wherever they appear (compared lowercased,
/// `_` read as `-`, leading dashes of a command-line flag dropped; the last
/// dotted component counts too: `802-11-wireless-security.psk`).
const SECRET_KEYS: &[&str] = &[
    "psk",
    "password",
    "passwd",
    "passphrase",
    "password-raw",
    "passwordhash",
    "password-hash",
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
    "client-key-data",
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
    "aws-secret-access-key",
    "secret-access-key",
    "secret-key",
];
/// Key suffixes that make any key secret (`http-proxy-password`).
const SECRET_SUFFIXES: &[&str] = &[
    "-password",
    "-passwd",
    "-passphrase",
    "-psk",
    "-token",
    "-secret-access-key",
];
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

/// One way a secret may appear in content.
#[derive(Debug)]
struct Form {
    bytes: Vec<u8>,
    /// Fragments count (tokens, passwords and base64 text), not only the
    /// whole: false for the lines of a structured secret, whose fragments
    /// are JSON syntax and registry names.
    fragments: bool,
}

#[derive(Debug)]
struct Engine {
    /// Forms of [`windows::SURE`] bytes or more, by sampling.
    windows: WindowSet,
    /// Shorter forms, matched whole (exact case), when there are any.
    short: Option<AhoCorasick>,
    forms: Vec<Form>,
    longest_form: usize,
}

/// The rules: the secrets the agent knows and the shapes of everyone's.
/// Cheap to clone (the automaton is shared).
#[derive(Debug, Clone)]
pub struct Redactor {
    engine: Arc<Engine>,
}

impl Default for Redactor {
    fn default() -> Self {
        static SHAPES_ONLY: OnceLock<Arc<Engine>> = OnceLock::new();
        Self {
            engine: Arc::clone(SHAPES_ONLY.get_or_init(|| Arc::new(Engine::build(Vec::new())))),
        }
    }
}

impl Redactor {
    /// Rules for these secrets (the token, the pull secret and its auths:
    /// their other forms are derived here) and every shape.
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let forms = derive_forms(secrets);
        Self {
            engine: Arc::new(Engine::build(forms)),
        }
    }

    /// The longest form of a literal secret.
    pub fn longest_secret(&self) -> usize {
        self.engine.longest_form
    }

    /// The finders' sizes, for benchmarks and debug logs.
    pub fn describe(&self) -> String {
        let engine = &self.engine;
        let short = engine.short.as_ref().map_or_else(
            || "none".to_owned(),
            |automaton| {
                format!(
                    "{} in a {:?} of {} KiB",
                    automaton.patterns_len(),
                    automaton.kind(),
                    automaton.memory_usage() / 1024
                )
            },
        );
        format!(
            "{} forms: {} windows sampled ({} KiB), short forms {short}; anchors by {}",
            engine.forms.len(),
            engine.windows.len(),
            engine.windows.memory_usage() / 1024,
            Anchors::get().describe(),
        )
    }

    /// Whether no literal secret is known (shape rules always apply).
    pub fn is_empty(&self) -> bool {
        self.engine.forms.is_empty()
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

    /// A short text (a member name, a summary, an error reason), redacted.
    /// Borrowed back when nothing was replaced.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut data = text.as_bytes().to_vec();
        if self.redact(&mut data) == 0 {
            return Cow::Borrowed(text);
        }
        Cow::Owned(String::from_utf8_lossy(&data).into_owned())
    }

    /// A redactor for content that arrives in chunks.
    pub fn stream(&self, mode: Mode) -> StreamRedactor {
        StreamRedactor {
            rules: self.clone(),
            mode,
            pending: Vec::new(),
            swallowing: false,
            behind: 0,
            state: LineState::default(),
            count: 0,
            spans: Vec::new(),
            hold: MIN_HOLD.max(self.longest_secret() + 1).min(MAX_LINE / 2),
        }
    }
}

// ---------------------------------------------------------------------------
// The reporter's own log lines and the texts it quotes

static LOG_REDACTOR: RwLock<Option<Redactor>> = RwLock::new(None);

/// From now on the reporter's log lines (and texts passed to
/// [`scrub_for_logs`]) are redacted with these rules too, not only by shape.
pub fn install_for_logs(redactor: &Redactor) {
    if let Ok(mut slot) = LOG_REDACTOR.write() {
        *slot = Some(redactor.clone());
    }
}

fn log_redactor() -> Redactor {
    LOG_REDACTOR
        .read()
        .ok()
        .and_then(|slot| slot.clone())
        .unwrap_or_default()
}

/// A text the reporter is about to log or quote (a service's error body).
pub fn scrub_for_logs(text: &[u8]) -> Vec<u8> {
    let mut data = text.to_vec();
    log_redactor().redact(&mut data);
    data
}

/// Standard error, through the log redactor, a line at a time: tracing
/// formats an event into one buffer and writes it whole, so each event is
/// redacted as one text.
pub fn log_writer() -> LogWriter {
    LogWriter { buf: Vec::new() }
}

pub struct LogWriter {
    buf: Vec<u8>,
}

impl LogWriter {
    fn write_out(&mut self, upto: usize) -> std::io::Result<()> {
        let mut data: Vec<u8> = self.buf.drain(..upto).collect();
        log_redactor().redact(&mut data);
        std::io::stderr().lock().write_all(&data)
    }
}

impl std::io::Write for LogWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        if let Some(nl) = memrchr(b'\n', &self.buf) {
            self.write_out(nl + 1)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.write_out(self.buf.len())
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

// ---------------------------------------------------------------------------
// The forms of a secret

/// Structured text (a pull secret): its fragments are JSON syntax.
fn is_structured(secret: &[u8]) -> bool {
    secret
        .iter()
        .any(|&b| b.is_ascii_whitespace() || matches!(b, b'{' | b'"'))
}

fn derive_forms<I, S>(secrets: I) -> Vec<Form>
where
    I: IntoIterator<Item = S>,
    S: AsRef<[u8]>,
{
    let mut atomic: Vec<Vec<u8>> = Vec::new();
    let mut structured: Vec<Vec<u8>> = Vec::new();
    for secret in secrets {
        let secret = secret.as_ref().trim_ascii();
        if secret.len() < MIN_SECRET_LEN {
            continue;
        }
        if !is_structured(secret) {
            atomic.push(secret.to_vec());
            continue;
        }
        structured.push(secret.to_vec());
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(secret) {
            // The same pull secret serialized again (a `.dockerconfigjson`
            // written by another tool), and each credential inside it.
            if let Ok(compact) = serde_json::to_vec(&value) {
                structured.push(compact);
            }
            credentials_in(&value, &mut atomic);
        }
    }
    // `auth` is base64 of `user:password`: both the pair and the password
    // leak as often as the auth itself (a registry login, a proxy URL).
    // The pair is matched whole only: its user part (`openshift-release-
    // dev+ocm_access_…`) names an organisation in every image path, and a
    // fragment of it is no secret. The password's fragments count.
    let mut pairs: Vec<Vec<u8>> = Vec::new();
    for i in 0..atomic.len() {
        if let Some(decoded) = decode_base64(&atomic[i]) {
            if let Some(colon) = memchr(b':', &decoded) {
                let password = decoded[colon + 1..].to_vec();
                atomic.push(password);
                pairs.push(decoded);
            } else {
                atomic.push(decoded);
            }
        }
    }
    atomic.retain(|s| s.len() >= MIN_SECRET_LEN);

    let mut forms: Vec<Form> = Vec::new();
    let mut add = |bytes: Vec<u8>, fragments: bool| {
        if bytes.len() >= MIN_SECRET_LEN {
            forms.push(Form { bytes, fragments });
        }
    };
    for secret in &atomic {
        for form in text_forms(secret) {
            add(form, true);
        }
        for form in base64_forms(secret) {
            add(form, true);
        }
    }
    for pair in &pairs {
        for form in text_forms(pair).into_iter().chain(base64_forms(pair)) {
            add(form, false);
        }
    }
    for secret in &structured {
        // Content is matched line by line, so a multi-line secret (a
        // pretty-printed pull secret) is matched by each of its lines.
        for line in secret.split(|&b| b == b'\n') {
            add(line.trim_ascii().to_vec(), false);
        }
        for form in text_forms(secret).into_iter().skip(1) {
            add(form, false);
        }
        for form in base64_forms(secret) {
            add(form, true);
        }
    }
    // One entry per form; fragments count if they count for any source.
    forms.sort_by(|a, b| a.bytes.cmp(&b.bytes).then(b.fragments.cmp(&a.fragments)));
    forms.dedup_by(|b, a| a.bytes == b.bytes);
    forms
}

/// String values of credential keys anywhere in a JSON document.
fn credentials_in(value: &serde_json::Value, out: &mut Vec<Vec<u8>>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                if let serde_json::Value::String(text) = value {
                    let key = key.to_ascii_lowercase();
                    if matches!(
                        key.as_str(),
                        "auth" | "password" | "identitytoken" | "registrytoken"
                    ) {
                        out.push(text.trim().as_bytes().to_vec());
                    }
                } else {
                    credentials_in(value, out);
                }
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                credentials_in(item, out);
            }
        }
        _ => {}
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

/// The secret as text: literal first, then JSON-escaped (once, as a string
/// value, and twice, as JSON quoted in a JSON log line) and URL-encoded
/// (upper- and lower-case hex).
fn text_forms(secret: &[u8]) -> Vec<Vec<u8>> {
    let mut forms = vec![secret.to_vec()];
    if let Ok(text) = std::str::from_utf8(secret) {
        let once = json_escape(text);
        let twice = json_escape(&once);
        forms.push(once.into_bytes());
        forms.push(twice.into_bytes());
    }
    forms.push(url_encode(secret, b"0123456789ABCDEF"));
    forms.push(url_encode(secret, b"0123456789abcdef"));
    forms.dedup();
    forms
}

fn json_escape(text: &str) -> String {
    let quoted = serde_json::to_string(text).unwrap_or_default();
    quoted[1..quoted.len() - 1].to_owned()
}

fn url_encode(data: &[u8], hex: &[u8; 16]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() * 3);
    for &b in data {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', hex[usize::from(b >> 4)], hex[usize::from(b & 15)]]);
        }
    }
    out
}

/// Base64 of the secret as part of a larger blob that puts it at each of
/// the three byte alignments, in both alphabets: the characters that depend
/// on the secret's bytes only.
fn base64_forms(secret: &[u8]) -> Vec<Vec<u8>> {
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let mut forms = Vec::new();
    for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
        for align in 0..3 {
            let mut blob = vec![0u8; align];
            blob.extend_from_slice(secret);
            let encoded = engine.encode(&blob).into_bytes();
            let start = (8 * align).div_ceil(6);
            let end = 8 * (align + secret.len()) / 6;
            if end > start {
                forms.push(encoded[start..end].to_vec());
            }
        }
    }
    forms.dedup();
    forms
}

impl Engine {
    fn build(forms: Vec<Form>) -> Engine {
        let sampled = forms
            .iter()
            .enumerate()
            .filter(|(_, form)| form.bytes.len() >= windows::SURE)
            .map(|(i, form)| (form_id(i), form.bytes.as_slice(), form.fragments));
        let windows = WindowSet::new(sampled);
        // The rest are few and short (a password of under 19 bytes and its
        // encodings). A DFA: it is walked over every byte shipped; past
        // MAX_DFA_BYTES the contiguous NFA keeps the memory flat.
        // Forms are distinct (derive_forms dedups them).
        let patterns: Vec<&[u8]> = forms
            .iter()
            .filter(|f| f.bytes.len() < windows::SURE)
            .map(|f| f.bytes.as_slice())
            .collect();
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
        let longest_form = forms.iter().map(|f| f.bytes.len()).max().unwrap_or(0);
        Engine {
            windows,
            short,
            forms,
            longest_form,
        }
    }
}

fn form_id(index: usize) -> u32 {
    u32::try_from(index).expect("fewer than 4G forms")
}

// ---------------------------------------------------------------------------
// Streaming

/// One replacement: `start..end` of the scanned buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: usize,
    end: usize,
    /// Replaced by `"[REDACTED]"` (a JSON object replaced by a string).
    quoted: bool,
    /// Ends where the buffer ends and may continue past it.
    open: bool,
    /// Counted as a redaction and shown as [`MARKER`]; false for the rest
    /// of a PEM block whose marker was emitted with its start.
    counted: bool,
}

impl Span {
    fn new(start: usize, end: usize) -> Span {
        Span {
            start,
            end,
            quoted: false,
            open: false,
            counted: true,
        }
    }
}

/// What one line leaves for the next.
#[derive(Debug, Clone, Copy, Default)]
struct LineState {
    /// Inside the body of a PEM private key block.
    in_pem: bool,
    /// Inside a keyfile `[…-secrets]` section.
    secret_section: bool,
}

/// Redacts content pushed in chunks, passing redacted bytes to a sink as
/// soon as their lines are complete (all but the last complete line, which
/// waits for the next one in case a secret continues on it).
pub struct StreamRedactor {
    rules: Redactor,
    mode: Mode,
    pending: Vec<u8>,
    /// Dropping bytes up to the next newline: the rest of a line whose secret
    /// ran past a cut, or the partial first line after a seek.
    swallowing: bool,
    /// Bytes at the start of `pending` already emitted: the last line, kept
    /// as context (the start of a secret wrapped onto the next line).
    behind: usize,
    state: LineState,
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

    /// Flushes the last lines; returns the redaction count.
    pub fn finish(mut self, sink: &mut dyn FnMut(&[u8])) -> usize {
        self.drain(true, sink);
        self.count
    }

    fn drain(&mut self, last: bool, sink: &mut dyn FnMut(&[u8])) {
        let mut offset = self.behind;
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
                scan(
                    &self.rules.engine,
                    line,
                    (0, line.len()),
                    Mode::Keyfile,
                    &mut self.state,
                    false,
                    &mut self.spans,
                );
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
        scan(
            &self.rules.engine,
            context,
            (from - start, to - start),
            Mode::Text,
            &mut self.state,
            false,
            &mut self.spans,
        );
        self.count += emit_with_spans(&self.pending[from..to], &self.spans, sink);
    }

    /// Emits most of an overlong incomplete line, keeping back enough to
    /// recognise any secret that starts near the cut. Returns the new offset.
    fn cut_long_line(&mut self, offset: usize, sink: &mut dyn FnMut(&[u8])) -> usize {
        let buf = &self.pending[offset..];
        self.spans.clear();
        let mut state = self.state;
        scan(
            &self.rules.engine,
            buf,
            (0, buf.len()),
            self.mode,
            &mut state,
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

// ---------------------------------------------------------------------------
// Scanning

/// Finds every secret in `buf[block.0..block.1]`, the rest of `buf` being
/// context; `spans` comes back relative to the block, sorted and disjoint.
/// `state` is the state at the start of the block, and becomes the state at
/// its end.
#[allow(clippy::too_many_arguments)]
fn scan(
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

/// The sampled windows of the forms in `buf`, extended to the longest run
/// of their form around them: a fragment when it is long enough (or the
/// whole form), with the pieces of it wrapped onto the lines around.
fn literal_forms(engine: &Engine, buf: &[u8], found: &mut Vec<Span>) {
    // Runs already extended, as (form, where the form would start, end of
    // the run): every later sample inside one gives the same run again.
    let mut recent: [(u32, usize, usize); 8] = [(u32::MAX, 0, 0); 8];
    let mut next_slot = 0;
    engine.windows.for_each_hit(buf, |hit| {
        let origin = hit.pos.wrapping_sub(hit.at);
        let seen = recent.iter().any(|&(form, at, end)| {
            form == hit.form && at == origin && hit.pos + windows::WINDOW <= end
        });
        if seen {
            return;
        }
        let form = &engine.forms[hit.form as usize];
        let run = extend(buf, hit.pos, &form.bytes, hit.at);
        recent[next_slot] = (hit.form, origin, run.end);
        next_slot = (next_slot + 1) % recent.len();
        let len = run.form_end - run.form_start;
        let whole = len == form.bytes.len();
        if whole || (form.fragments && len >= MIN_FRAGMENT) {
            let span = Span::new(run.start, run.end);
            if form.fragments {
                wrapped_pieces(buf, &span, &form.bytes, run.form_start, run.form_end, found);
            }
            found.push(span);
        }
    });
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
fn extend(buf: &[u8], pos: usize, form: &[u8], at: usize) -> Run {
    let end = pos + windows::WINDOW;
    let before = buf[..pos]
        .iter()
        .rev()
        .zip(form[..at].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let after = buf[end..]
        .iter()
        .zip(&form[at + windows::WINDOW..])
        .take_while(|(a, b)| a == b)
        .count();
    Run {
        start: pos - before,
        end: end + after,
        form_start: at - before,
        form_end: at + windows::WINDOW + after,
    }
}

/// The rest of a secret on the lines around a fragment that ends (starts)
/// at a line break: a token wrapped by a terminal, `base64`, or a logger.
fn wrapped_pieces(
    buf: &[u8],
    span: &Span,
    form: &[u8],
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
            .take_while(|(a, b)| a == b)
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
            .take_while(|(a, b)| a == b)
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

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

fn word_len(rest: &[u8]) -> usize {
    rest.iter()
        .position(|&b| !is_key_byte(b))
        .unwrap_or(rest.len())
}

fn is_secret_key(key: &[u8], mode: Mode) -> bool {
    let key = key.trim_ascii_start();
    let key = &key[key.iter().take_while(|&&b| b == b'-').count()..];
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
    let last = memrchr(b'.', norm).map_or(norm, |dot| &norm[dot + 1..]);
    let is = |list: &[&str], key: &[u8]| list.iter().any(|k| k.as_bytes() == key);
    let secret = |key: &[u8]| {
        is(SECRET_KEYS, key)
            || SECRET_SUFFIXES.iter().any(|s| key.ends_with(s.as_bytes()))
            || (mode == Mode::Keyfile && is(KEYFILE_SECRET_KEYS, key))
    };
    secret(norm) || secret(last)
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

/// The value of the key that ends at `key_end`, if it is a secret key:
/// `key=value`, `key: value` (headers, YAML, and mid-line in logs), `"key":
/// "value"` (JSON, also with escaped quotes inside a log line) and
/// `--key value` (a command line).
fn key_value(buf: &[u8], key_end: usize, mode: Mode, open_end: bool, out: &mut Vec<Span>) {
    let mut key_start = key_end;
    while key_start > 0 && is_key_byte(buf[key_start - 1]) {
        key_start -= 1;
    }
    let key = &buf[key_start..key_end];
    // After the key: a closing quote (perhaps escaped), blanks, separator.
    // Checked first: most words found are no key at all.
    let mut sep = key_end;
    let mut quoted_key = false;
    if buf[sep..].starts_with(b"\\\"") {
        quoted_key = true;
        sep += 2;
    } else if buf.get(sep) == Some(&b'"') {
        quoted_key = true;
        sep += 1;
    }
    while sep < buf.len() && buf[sep] == b' ' {
        sep += 1;
    }
    let is_separator = matches!(buf.get(sep), Some(b'=' | b':'));
    let is_flag = key.starts_with(b"-") && !quoted_key && sep == key_end + 1;
    if !(is_separator || is_flag) || !is_secret_key(key, mode) {
        return;
    }
    let first_on_line = buf[line_start(buf, key_start)..key_start]
        .iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'"' | b'\\'));
    if !is_separator {
        // `--password PW`: a flag, one blank, a value that is no flag.
        if sep < buf.len() && !matches!(buf[sep], b'-' | b'\n' | b'\r') {
            if let Some(span) = value_span(buf, sep, End::Word, open_end) {
                out.push(span);
            }
        }
        return;
    }
    let mut end = if first_on_line || mode == Mode::Keyfile {
        End::Line
    } else {
        End::Word
    };
    if buf[sep] == b':' && !quoted_key && !first_on_line {
        // A header quoted inside a command line runs to its quote.
        let lower = key.to_ascii_lowercase();
        if lower.ends_with(b"authorization") || lower == b"x-secret-key" {
            end = End::LineOrQuote;
        }
    }
    let mut v = sep + 1;
    // `scheme://`: the colon of a URL, not a separator.
    if buf[sep] == b':' && buf[v..].starts_with(b"//") {
        return;
    }
    while v < buf.len() && matches!(buf[v], b' ' | b'\t') {
        v += 1;
    }
    if let Some(span) = value_span(buf, v, end, open_end) {
        out.push(span);
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
            quoted,
            open,
            ..Span::new(start, end)
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
    if rest[0] == b'\n' || rest[0] == b'\r' {
        return None;
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

/// `scheme://user:password@host` at `at` (the `://`): the password (or a
/// lone token used as user name) is replaced, the user name kept.
fn url_credentials(buf: &[u8], at: usize, open_end: bool, out: &mut Vec<Span>) {
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
            return;
        }
        if b == b':' && colon.is_none() {
            colon = Some(i);
        }
        i += 1;
    }
    if i >= buf.len() {
        if open_end {
            out.push(Span {
                open: true,
                ..Span::new(start, buf.len())
            });
        }
        return;
    }
    // A bare user name (`git@`) is no secret; a long one is a token.
    if colon.is_none() && i - start < MIN_SECRET_LEN {
        return;
    }
    let secret_start = colon.map_or(start, |c| c + 1);
    if i > secret_start && &buf[secret_start..i] != MARKER {
        out.push(Span::new(secret_start, i));
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// `Bearer <token>` at `at` (also outside an `Authorization:` header).
fn bearer_token(buf: &[u8], at: usize, open_end: bool, out: &mut Vec<Span>) {
    let mut start = at + b"bearer".len();
    if start >= buf.len() || buf[start] != b' ' {
        return;
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
    if len < MIN_SECRET_LEN || wordlike || token == MARKER {
        return;
    }
    out.push(Span {
        open: open_end && start + len == buf.len(),
        ..Span::new(start, start + len)
    });
}

/// The body of a PEM private key block whose header starts at `at`: from
/// after the header to the `-----END` line (a key pasted in a JSON string
/// with `\n` escapes ends on the same line). Open when the end is not in
/// `buf`: the block goes on in the next one.
fn pem_block(buf: &[u8], at: usize) -> Option<Span> {
    let eol = line_end(buf, at);
    let header_len = memmem::find(&buf[at + 10..eol], b"-----")? + 15;
    let header = &buf[at..at + header_len];
    memmem::find(header, b"PRIVATE KEY")?;
    let body = at + header_len;
    let end = pem_end(buf, body);
    Some(Span {
        open: end.is_none(),
        ..Span::new(body, end.unwrap_or(buf.len()))
    })
}

/// Where the `-----END` marker of a PEM block is, searching from `from`.
fn pem_end(buf: &[u8], from: usize) -> Option<usize> {
    memmem::find(&buf[from..], b"-----END").map(|i| from + i)
}

/// `-p PW` in a command line (`podman login -u user -p PW`, `mysql -p PW`,
/// `sshpass -p PW`). Not a path (`mkdir -p /var/lib/x`), a port or a port
/// mapping (`ssh -p 22`, `podman run -p 8080:80`), a variable or a flag.
fn short_password_flag(buf: &[u8], at: usize, open_end: bool, out: &mut Vec<Span>) {
    if at > 0 && !matches!(buf[at - 1], b' ' | b'\t' | b'"' | b'\'') {
        return;
    }
    if buf[at + 1] != b'p' {
        return; // `-P `: another flag
    }
    let v = at + 3;
    let Some(&first) = buf.get(v) else {
        return;
    };
    if matches!(
        first,
        b'/' | b'.' | b'~' | b'$' | b'-' | b' ' | b'\n' | b'\r'
    ) {
        return;
    }
    let word = &buf[v..];
    let len = word
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(word.len());
    if word[..len]
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b':' | b'.' | b'/' | b'-'))
    {
        return;
    }
    if let Some(span) = value_span(buf, v, End::Word, open_end) {
        out.push(span);
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

    // ---- encoded forms of the agent's own secrets

    const TOKEN: &str = "ZTJlLXRva2VuOlMzY3IzdC1hYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk=";

    fn b64(data: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(data)
    }

    fn assert_gone(r: &Redactor, text: &str, secret: &str) -> String {
        let (out, n) = redact(r, text);
        assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
        assert!(n >= 1, "nothing counted for {text:?}");
        out
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

    // ---- sampling of the literal forms (windows::STEP)

    /// No run of MIN_FRAGMENT bytes of `secret` in `out`.
    fn assert_no_run(out: &[u8], secret: &[u8], what: &str) {
        for run in secret.windows(MIN_FRAGMENT) {
            assert!(
                memmem::find(out, run).is_none(),
                "{what}: {:?} survived in {:?}",
                String::from_utf8_lossy(run),
                String::from_utf8_lossy(out)
            );
        }
    }

    /// A secret with no repeated window, so a run of it is found where it is.
    fn distinct_secret(len: usize, seed: u64) -> String {
        let mut state = seed;
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                char::from(alphabet[usize::try_from(state >> 33).unwrap() % alphabet.len()])
            })
            .collect()
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

    // ---- shapes

    #[test]
    fn pem_private_keys_are_redacted_across_lines_and_chunks() {
        let r = Redactor::default();
        for kind in [
            "RSA PRIVATE KEY",
            "EC PRIVATE KEY",
            "OPENSSH PRIVATE KEY",
            "PRIVATE KEY",
        ] {
            let text = format!(
                "before\n-----BEGIN {kind}-----\nMIIEpAIBAAKCAQEA1\nb3BlbnNzaC1rZXktdjE2\n-----END {kind}-----\nafter\n"
            );
            for size in [1, 3, 16, text.len()] {
                let (out, n) = chunked(&r, text.as_bytes(), size);
                let out = String::from_utf8(out).unwrap();
                assert_eq!(
                    out,
                    format!(
                        "before\n-----BEGIN {kind}-----[REDACTED]-----END {kind}-----\nafter\n"
                    ),
                    "chunk {size}"
                );
                assert_eq!(n, 1);
            }
        }
        // Inside a JSON string (an ignition file's contents).
        let (out, _) = redact(
            &r,
            r#"{"contents":"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB\n-----END EC PRIVATE KEY-----\n"}"#,
        );
        assert!(!out.contains("MHcCAQEEIB"), "{out}");
        // Certificates and public keys are not secret.
        let cert = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n";
        assert_eq!(redact(&r, cert), (cert.to_owned(), 0));
        // A block that never ends: everything after its header goes.
        let (out, _) = redact(&r, "-----BEGIN PRIVATE KEY-----\nAAAA\nBBBB\n");
        assert_eq!(out, "-----BEGIN PRIVATE KEY-----[REDACTED]");
    }

    #[test]
    fn secret_key_shapes() {
        let r = Redactor::default();
        let cases = [
            (
                "    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQo=",
                "    client-key-data: [REDACTED]",
            ),
            (
                "    token: sha256~abcdefghijklmnop",
                "    token: [REDACTED]",
            ),
            (
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "aws_secret_access_key = [REDACTED]",
            ),
            (
                r#"{"name":"core","passwordHash":"$6$rounds=4096$abc$def"}"#,
                r#"{"name":"core","passwordHash":"[REDACTED]"}"#,
            ),
            (
                "level=info msg=login password: hunter2hunter2 user=bob",
                "level=info msg=login password: [REDACTED] user=bob",
            ),
            ("x wifi-sec.psk=abcdefgh y", "x wifi-sec.psk=[REDACTED] y"),
            (
                "podman login -u bob -p s3cr3tpw quay.io",
                "podman login -u bob -p [REDACTED] quay.io",
            ),
            (
                "run --password s3cr3tpw --user bob",
                "run --password [REDACTED] --user bob",
            ),
            ("run --password=s3cr3tpw x", "run --password=[REDACTED] x"),
            (
                "podman login --password-stdin quay.io",
                "podman login --password-stdin quay.io",
            ),
            (
                "mkdir -p /var/lib/x && ssh -p 22 h",
                "mkdir -p /var/lib/x && ssh -p 22 h",
            ),
            ("podman run -p 8080:80 img", "podman run -p 8080:80 img"),
            (
                "PING 10.0.0.1: skipping pinned keys",
                "PING 10.0.0.1: skipping pinned keys",
            ),
            (
                "see https://oauth.example.com:6443/x",
                "see https://oauth.example.com:6443/x",
            ),
        ];
        for (input, want) in cases {
            let (out, _) = redact(&r, input);
            assert_eq!(out, want, "input {input}");
        }
    }

    #[test]
    fn redact_str_borrows_when_clean() {
        let r = Redactor::new([TOKEN]);
        assert!(matches!(r.redact_str("var/log/x.log"), Cow::Borrowed(_)));
        assert_eq!(
            r.redact_str(&format!("var/log/openshift/{TOKEN}.log")),
            "var/log/openshift/[REDACTED].log"
        );
    }
}
