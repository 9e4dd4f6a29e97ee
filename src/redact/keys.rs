//! Secret keys and their values: which keys are secret (everywhere, and in
//! NetworkManager keyfiles only: [`Mode`]), and the extent of the value
//! after one in each form it takes: `key=value`, `key: value` (headers,
//! YAML, mid-line in logs), `"key": "value"` (JSON, also escaped inside a
//! log line), `--key value` (a command line), and a whole `"auths":{…}`
//! object.

use memchr::{memmem, memrchr};

use super::span::{line_end, line_start, Span, MARKER};

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

fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

pub(super) fn word_len(rest: &[u8]) -> usize {
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

/// The value of the key that ends at `key_end`, if it is a secret key:
/// `key=value`, `key: value` (headers, YAML, and mid-line in logs), `"key":
/// "value"` (JSON, also with escaped quotes inside a log line) and
/// `--key value` (a command line).
pub(super) fn key_value(
    buf: &[u8],
    key_end: usize,
    mode: Mode,
    open_end: bool,
    out: &mut Vec<Span>,
) {
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
pub(super) enum End {
    /// At whitespace or punctuation (`key=value` inside a log line).
    Word,
    /// At the end of the line (config files, keyfiles).
    Line,
    /// At the end of the line or a quote (a header inside a quoted argument).
    LineOrQuote,
}

/// The extent of the value starting at `v`.
pub(super) fn value_span(buf: &[u8], v: usize, end_at: End, open_end: bool) -> Option<Span> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::testing::redact;
    use crate::redact::Redactor;

    fn keyfile(text: &str) -> (String, usize) {
        let mut data = text.as_bytes().to_vec();
        let n = Redactor::default().redact_as(&mut data, Mode::Keyfile);
        (String::from_utf8(data).unwrap(), n)
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
}
