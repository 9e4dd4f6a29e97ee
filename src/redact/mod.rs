//! Redaction of secrets from everything the agent emits: bundle members and
//! their names, the manifest, `progress_info`, its own log lines and the
//! service's error bodies it quotes.
//!
//! Two kinds of secret are replaced by [`MARKER`]:
//! - the agent's own (the token and pull secret it was handed), in every
//!   form it can take on a host: literal, JSON-escaped (once and twice),
//!   URL-encoded, hex (either case), Go's `%v` of its bytes, base64 at each
//!   of the three byte alignments (standard and URL-safe alphabets),
//!   base64-decoded (`user:password` and the password alone), a
//!   re-serialized pull secret, and any fragment of at least
//!   [`MIN_FRAGMENT`] bytes of those forms (a token cut short, or split by a
//!   line wrap: the piece on the other side of the wrap goes too);
//! - the host's, recognised by shape: values of secret keys in any case
//!   style (`psk=`, `password: …`, `"passwordHash":"…"`, `clientSecret: …`,
//!   `aws_secret_access_key = …`, `client-key-data: …`, `--password PW`,
//!   `<password>…</password>`…), whole `"auths":{…}` objects, credentials
//!   in URLs (`http://user:p@ss@proxy`), `Authorization:`, `X-Api-Key:` and
//!   cookie header values, bearer tokens, `-p PW` in command lines (`-P PW`
//!   in `ipmitool`'s) and PEM private key blocks (their body, across lines).
//!
//! Three finders point at where to look closer, so that a line with no
//! secret costs two cheap passes: one vectorised search finds the words
//! secret keys are made of and the anchors of the shapes (`anchors.rs`); the
//! literal forms are found by sampling a window every few bytes against a set
//! of their windows (`windows.rs`), each hit checked and extended against its
//! form; forms too short to be sure of by sampling (a short password) are
//! matched whole by an Aho-Corasick automaton, built only when there are any.
//! Forms are never stored, only their sources and encodings (a pull secret
//! of thousands of auths has tens of thousands of forms): ~1.2 KB per auth
//! in all (docs/security.md, "Memory").
//!
//! Content is bytes (journals are not always UTF-8) and arrives in chunks of
//! any size: [`StreamRedactor`] works line by line, holding back an incomplete
//! last line (and the last complete one, so that a secret split by a line
//! wrap is seen whole), so a secret split across two chunks is still found.
//! A line too long to hold is cut with a margin larger than any literal
//! secret; a secret value that runs past the cut is replaced up to the end of
//! its line. Every replacement is counted; the values themselves are never
//! kept anywhere but in the finders.
//!
//! What is redacted, from where, and what is not promised: docs/security.md.
//!
//! The files, by job: `forms.rs` derives the forms of the agent's own
//! secrets, `literals.rs` finds them (over `windows.rs`), `keys.rs` and
//! `shapes.rs` find everyone's by key and by shape (from `anchors.rs`),
//! `scan.rs` runs every finder over one buffer, `stream.rs` feeds it
//! content line by line, `span.rs` is what they all hand back.

use std::borrow::Cow;
use std::io::Write as _;
use std::sync::{Arc, OnceLock, RwLock};

use memchr::memrchr;

use anchors::Anchors;
use forms::{derive_forms, Forms};
use literals::Engine;

pub use keys::Mode;
pub use literals::MIN_FRAGMENT;
pub use scan::Work;
pub use span::MARKER;
pub(crate) use stream::StreamRedactor;

mod anchors;
#[doc(hidden)]
pub mod catalogue;
mod cursor;
mod forms;
#[doc(hidden)]
pub mod hostile;
mod keys;
mod literals;
mod scan;
mod shapes;
mod span;
mod stream;
#[cfg(test)]
mod testing;
mod windows;

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
            engine: Arc::clone(
                SHAPES_ONLY.get_or_init(|| Arc::new(Engine::build(Forms::default()))),
            ),
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
    #[cfg(test)]
    pub(crate) fn longest_secret(&self) -> usize {
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
            "{} forms: {} windows sampled every {} bytes, kept every {} ({} KiB), short forms \
             {short}; {} KiB in all; anchors by {}",
            engine.forms.len(),
            engine.windows.len(),
            engine.windows.step(),
            engine.windows.stride(),
            engine.windows.memory_usage() / 1024,
            engine.memory_usage() / 1024,
            Anchors::get().describe(),
        )
    }

    /// Whether no literal secret is known (shape rules always apply).
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.engine.forms.is_empty()
    }

    /// Redacts a complete buffer; returns how many secrets were replaced.
    pub fn redact(&self, data: &mut Vec<u8>) -> usize {
        self.redact_as(data, Mode::Text)
    }

    pub(crate) fn redact_as(&self, data: &mut Vec<u8>, mode: Mode) -> usize {
        let mut out = Vec::with_capacity(data.len());
        let mut stream = self.stream(mode);
        stream.push(data, &mut |b| out.extend_from_slice(b));
        let count = stream.finish(&mut |b| out.extend_from_slice(b));
        *data = out;
        count
    }

    /// A short text (a member name, a summary, an error reason), redacted.
    /// Borrowed back when nothing was replaced.
    pub(crate) fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut data = text.as_bytes().to_vec();
        if self.redact(&mut data) == 0 {
            return Cow::Borrowed(text);
        }
        Cow::Owned(String::from_utf8_lossy(&data).into_owned())
    }

    /// A redactor for content that arrives in chunks.
    pub fn stream(&self, mode: Mode) -> StreamRedactor {
        StreamRedactor::new(Arc::clone(&self.engine), mode)
    }
}

// ---------------------------------------------------------------------------
// The reporter's own log lines and the texts it quotes

static LOG_REDACTOR: RwLock<Option<Redactor>> = RwLock::new(None);

/// From now on the reporter's log lines (and texts passed to
/// [`scrub_for_logs`]) are redacted with these rules too, not only by shape.
pub(crate) fn install_for_logs(redactor: &Redactor) {
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
pub(crate) fn scrub_for_logs(text: &[u8]) -> Vec<u8> {
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

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use super::*;
    use crate::redact::testing::TOKEN;

    #[test]
    fn replaces_every_occurrence_and_counts_them() {
        let redactor = Redactor::new(["s3cr3t-token"]);
        let mut data = b"a s3cr3t-token b s3cr3t-token".to_vec();
        assert_eq!(redactor.redact(&mut data), 2);
        assert_eq!(data, b"a [REDACTED] b [REDACTED]");
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
    fn redact_str_borrows_when_clean() {
        let r = Redactor::new([TOKEN]);
        assert!(matches!(r.redact_str("var/log/x.log"), Cow::Borrowed(_)));
        assert_eq!(
            r.redact_str(&format!("var/log/openshift/{TOKEN}.log")),
            "var/log/openshift/[REDACTED].log"
        );
    }
}
