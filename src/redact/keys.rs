//! Secret keys and their values: which keys are secret (everywhere, and in
//! NetworkManager keyfiles only: [`Mode`]; snake, kebab and camel case
//! alike), and the extent of the value after one in each form it takes:
//! `key=value`, `key: value` (headers, YAML, mid-line in logs), `"key":
//! "value"` (JSON, also escaped inside a log line), `--key value` (a
//! command line), `<key>value</key>` (XML), and a whole `"auths":{…}`
//! object.

use memchr::{memmem, memrchr};

use super::cursor::{Cursor, Needle};
use super::span::{Span, MARKER};

/// Keys whose value is a secret wherever they appear (compared lowercased,
/// `_` read as `-`, leading dashes of a command-line flag dropped; the last
/// dotted component counts too: `802-11-wireless-security.psk`).
pub(super) const SECRET_KEYS: &[&str] = &[
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
    "x-api-key",
    "authorization",
    "proxy-authorization",
    "x-secret-key",
    "cookie",
    "set-cookie",
    "aws-secret-access-key",
    "secret-access-key",
    "secret-key",
    // Registry credentials of podman, skopeo and buildah (`--creds
    // USER:PW`, `--src-creds`, `--dest-creds`) and cloud credentials.
    "creds",
    "cred",
    "credential",
    "credentials",
    // Azure storage connection strings (`AccountKey=…;`,
    // `SharedAccessKey=…`).
    "account-key",
    "accountkey",
    "shared-access-key",
    "sharedaccesskey",
    "auth-token",
    "bind-pw",
    "bindpw",
    "private-key",
    "privatekey",
    // The data keys of Kubernetes Secrets of the built-in types
    // `kubernetes.io/tls` and `…/ssh-auth`, as a Secret dumped in a pod
    // log shows them.
    "tls.key",
    "ssh-privatekey",
];
/// Key suffixes that make any key secret (`http-proxy-password`).
pub(super) const SECRET_SUFFIXES: &[&str] = &[
    "-password",
    "-passwd",
    "-passphrase",
    "-psk",
    "-token",
    "-secret-access-key",
    "-creds",
    "-credentials",
    "-client-secret",
    "-secret-key",
    "-api-key",
    "-private-key",
    // Run together with what names them: `PGPASSWORD`, `dbpassword`.
    "password",
    "passwd",
];
/// Keys secret only in NetworkManager keyfiles: elsewhere `private-key=` is
/// as likely a path and `secret=` names a Kubernetes object.
pub(super) const KEYFILE_SECRET_KEYS: &[&str] = &["private-key", "secret", "secrets", "key"];
/// Keys whose value is as often a path to the secret as the secret: a path
/// (`private_key = /etc/pki/x.key`, `credentials: ~/.aws/credentials`) is
/// kept, anything else is redacted.
const PATH_OR_SECRET_KEYS: &[&str] = &[
    "private-key",
    "privatekey",
    "credential",
    "credentials",
    "cred",
    "creds",
];
/// Headers whose value inside a command line runs to its quote, not to the
/// first blank (`curl -H 'Cookie: a=b; c=d'`).
const HEADERS: &[&[u8]] = &[
    b"authorization",
    b"proxy-authorization",
    b"x-secret-key",
    b"x-api-key",
    b"cookie",
    b"set-cookie",
];

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

#[inline]
fn is_key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
}

#[inline]
pub(super) fn word_len(rest: &[u8]) -> usize {
    rest.iter()
        .position(|&b| !is_key_byte(b))
        .unwrap_or(rest.len())
}

/// What a key says of its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyKind {
    No,
    Secret,
    /// Secret unless its value is a path ([`PATH_OR_SECRET_KEYS`]).
    SecretUnlessPath,
    /// `secret` outside a keyfile: a secret as a YAML or JSON key or an XML
    /// element, a Kubernetes object's name in `secret=` and prose
    /// (`failed to get secret: …`).
    BareSecret,
}

/// What a normalized key (or its last dotted component) says of its value.
fn secret_kind(norm: &[u8], mode: Mode) -> KeyKind {
    let is = |list: &[&str], key: &[u8]| list.iter().any(|k| k.as_bytes() == key);
    let secret = |key: &[u8]| {
        // sudoers' `NOPASSWD:` tag says there is none.
        !matches!(key, b"nopasswd" | b"nopassword")
            && (is(SECRET_KEYS, key)
                || SECRET_SUFFIXES.iter().any(|s| key.ends_with(s.as_bytes()))
                || (mode == Mode::Keyfile && is(KEYFILE_SECRET_KEYS, key)))
    };
    let last = memrchr(b'.', norm).map_or(norm, |dot| &norm[dot + 1..]);
    if !(secret(norm) || secret(last)) {
        return KeyKind::No;
    }
    let path_or_secret = |key: &[u8]| {
        is(PATH_OR_SECRET_KEYS, key)
            || key.ends_with(b"-private-key")
            || key.ends_with(b"-credentials")
    };
    if mode == Mode::Text && (path_or_secret(norm) || path_or_secret(last)) {
        KeyKind::SecretUnlessPath
    } else {
        KeyKind::Secret
    }
}

/// Whether a value names a file rather than holding a secret.
fn is_path(value: &[u8]) -> bool {
    value.starts_with(b"/")
        || value.starts_with(b"~/")
        || value.starts_with(b"./")
        || value.starts_with(b"../")
        || value.starts_with(b"file:")
        || value.starts_with(b"$")
}

/// Whether a word of camel case starts at `key[i]`: an upper-case letter
/// after a lower-case one or a digit, or before a lower-case one after an
/// acronym (`AWSSecret`).
fn starts_word(key: &[u8], i: usize) -> bool {
    i > 0
        && key[i].is_ascii_uppercase()
        && (key[i - 1].is_ascii_lowercase()
            || key[i - 1].is_ascii_digit()
            || (key[i - 1].is_ascii_uppercase()
                && key.get(i + 1).is_some_and(u8::is_ascii_lowercase)))
}

/// What `key` says of its value: compared lowercased, `_` read as `-`,
/// leading dashes of a flag dropped, and again with `-` between the words
/// of camel case (`clientSecret`, `AWSSecretAccessKey`).
fn key_kind(key: &[u8], mode: Mode) -> KeyKind {
    let key = key.trim_ascii_start();
    let key = &key[key.iter().take_while(|&&b| b == b'-').count()..];
    if key.is_empty() || key.len() > 64 {
        return KeyKind::No;
    }
    let lower = |b: u8| {
        if b == b'_' {
            b'-'
        } else {
            b.to_ascii_lowercase()
        }
    };
    let mut norm = [0u8; 64];
    for (n, &b) in norm.iter_mut().zip(key) {
        *n = lower(b);
    }
    let norm = &norm[..key.len()];
    let kind = secret_kind(norm, mode);
    if kind != KeyKind::No {
        return kind;
    }
    if (1..key.len()).any(|i| starts_word(key, i)) {
        let mut camel = [0u8; 128];
        let mut n = 0;
        for (i, &b) in key.iter().enumerate() {
            if starts_word(key, i) {
                camel[n] = b'-';
                n += 1;
            }
            camel[n] = lower(b);
            n += 1;
        }
        let kind = secret_kind(&camel[..n], mode);
        if kind != KeyKind::No {
            return kind;
        }
    }
    if norm == b"secret" {
        KeyKind::BareSecret
    } else {
        KeyKind::No
    }
}

/// The value of the key that ends at `key_end`, if it is a secret key:
/// `key=value`, `key: value` (headers, YAML, and mid-line in logs), `"key":
/// "value"` (JSON, also with escaped quotes inside a log line) and
/// `--key value` (a command line). Called once per word (the caller skips
/// the key words inside one already seen), so walking back to the word's
/// start examines each byte once.
pub(super) fn key_value(
    buf: &[u8],
    key_end: usize,
    mode: Mode,
    open_end: bool,
    cur: &mut Cursor,
    out: &mut Vec<Span>,
) {
    let mut key_start = key_end;
    while key_start > 0 && is_key_byte(buf[key_start - 1]) {
        key_start -= 1;
    }
    cur.work += key_end - key_start + 1;
    let key = &buf[key_start..key_end];
    if key_start > 0 && buf[key_start - 1] == b'<' {
        xml_element(buf, key_end, key_kind(key, mode), cur, out);
        return;
    }
    // After the key: a closing quote (perhaps escaped), blanks, separator.
    // Checked first: most words found are no key at all.
    let mut sep = key_end;
    // A closing quote escaped at any depth (`\"`, `\\\"`, …).
    let escapes = escape_run(&buf[sep..]);
    let quoted_key = buf.get(sep + escapes) == Some(&b'"');
    if quoted_key {
        sep += escapes + 1;
    }
    while sep < buf.len() && buf[sep] == b' ' {
        sep += 1;
    }
    cur.work += sep - key_end;
    let is_separator = matches!(buf.get(sep), Some(b'=' | b':'));
    let is_flag = key.starts_with(b"-") && !quoted_key && sep == key_end + 1;
    if !(is_separator || is_flag) {
        if key.eq_ignore_ascii_case(b"htpasswd") && sep == key_end + 1 {
            htpasswd_password(buf, sep, open_end, cur, out);
        }
        return;
    }
    let kind = key_kind(key, mode);
    if kind == KeyKind::No {
        return;
    }
    let first_on_line = cur.first_on_line(buf, key_start);
    // `secret` is a key in YAML (`secret: …` first on its line) and JSON,
    // with a scalar value (`"secret":{"secretName":…}` names an object).
    let bare_secret = kind == KeyKind::BareSecret;
    if bare_secret
        && (buf.get(sep) != Some(&b':')
            || !(quoted_key || first_on_line)
            || buf[sep + 1..]
                .iter()
                .find(|b| !matches!(b, b' ' | b'\t'))
                .is_some_and(|b| matches!(b, b'{' | b'[')))
    {
        return;
    }
    if !is_separator {
        // `--password PW`: a flag, one blank, a value that is no flag.
        if sep < buf.len() && !matches!(buf[sep], b'-' | b'\n' | b'\r') {
            if let Some(span) = value_span(buf, sep, End::Word, open_end, cur) {
                push_unless_path(buf, span, kind, out);
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
        if HEADERS.contains(&lower.as_slice()) {
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
    cur.work += v - sep;
    if let Some(span) = value_span(buf, v, end, open_end, cur) {
        push_unless_path(buf, span, kind, out);
    }
}

fn push_unless_path(buf: &[u8], span: Span, kind: KeyKind, out: &mut Vec<Span>) {
    if kind == KeyKind::SecretUnlessPath && is_path(&buf[span.start..span.end]) {
        return;
    }
    out.push(span);
}

/// Backslashes at the start of `rest`, up to a depth of escaping no log
/// nests further (a quote escaped four times over is 15 of them).
fn escape_run(rest: &[u8]) -> usize {
    rest.iter().take(16).take_while(|&&b| b == b'\\').count()
}

/// `htpasswd -b[…] [FILE] USER PW` (`-n` without FILE): the password given
/// on the command line, after the flag at `at`.
fn htpasswd_password(buf: &[u8], at: usize, open_end: bool, cur: &mut Cursor, out: &mut Vec<Span>) {
    let eol = cur.line_end(buf, at);
    let mut words = Vec::with_capacity(4);
    let mut i = at;
    // The flag, then at most three words: all on one line.
    while words.len() < 4 && i < eol {
        while i < eol && buf[i] == b' ' {
            i += 1;
        }
        let start = i;
        while i < eol && !buf[i].is_ascii_whitespace() {
            i += 1;
        }
        if i > start {
            words.push(start);
        }
    }
    cur.work += i - at + 1;
    let Some(&flag) = words.first() else {
        return;
    };
    let flags = &buf[flag..];
    let flags = &flags[..flags
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(flags.len())];
    if !flags.starts_with(b"-") || !flags.contains(&b'b') {
        return;
    }
    let password = if flags.contains(&b'n') { 2 } else { 3 };
    if let Some(&v) = words.get(password) {
        if let Some(span) = value_span(buf, v, End::Word, open_end, cur) {
            out.push(span);
        }
    }
}

/// The content of `<key>…</key>` (or `<key attr=…>…</key>`) on one line,
/// `key_end` being the end of the element's name. Without its closing tag
/// it is no element but a placeholder (`--password <password> quay.io`).
fn xml_element(buf: &[u8], key_end: usize, kind: KeyKind, cur: &mut Cursor, out: &mut Vec<Span>) {
    if kind == KeyKind::No {
        return;
    }
    let eol = cur.line_end(buf, key_end);
    let Some(close) = cur
        .next(buf, key_end, Needle::TagEnd)
        .filter(|&at| at < eol)
    else {
        return;
    };
    let attributes = &buf[key_end..close];
    if attributes.ends_with(b"/") || attributes.first().is_some_and(|b| !b.is_ascii_whitespace()) {
        return; // `<password/>`
    }
    let start = close + 1;
    let Some(end) = cur
        .next(buf, start, Needle::CloseTag)
        .filter(|&at| at <= eol)
    else {
        return;
    };
    let value = &buf[start..end];
    if value.iter().all(u8::is_ascii_whitespace) || value.contains(&b'<') || value == MARKER {
        return;
    }
    cur.work += end - start;
    out.push(Span::new(start, end));
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

/// The extent of the value starting at `v`. Each search is bounded by the
/// next value of the same kind: an unquoted value ends at the next blank or
/// punctuation ([`Needle::WordEnd`], remembered by the cursor); a quoted
/// one at its quote, and the opening quote of any later value of the same
/// quote stands after a separator or a blank, never after a backslash, so
/// the scan of an earlier one stops there; an object is measured once
/// (nested ones are inside it).
pub(super) fn value_span(
    buf: &[u8],
    v: usize,
    end_at: End,
    open_end: bool,
    cur: &mut Cursor,
) -> Option<Span> {
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
    // A JSON string escaped inside a log line (at any depth: a JSON
    // document in a string of a JSON log line is `\\\"…\\\"`), or plain.
    let escapes = escape_run(rest);
    if escapes > 0 && rest.get(escapes) == Some(&b'"') {
        let start = v + escapes + 1;
        let eol = cur.line_end(buf, start);
        let close = if escapes == 1 {
            cur.next(buf, start, Needle::EscapedQuote)
        } else {
            // The next value escaped as deep opens with the same run, so
            // the searches at one depth never overlap.
            let found = memmem::find(&buf[start..eol], &rest[..=escapes]);
            cur.work += found.unwrap_or(eol - start) + 1;
            found.map(|i| start + i)
        };
        return match close {
            Some(end) if end <= eol => span(start, end, false, false),
            _ => span(start, eol, false, open_end),
        };
    }
    if rest[0] == b'"' || rest[0] == b'\'' {
        let quote = rest[0];
        let start = v + 1;
        let mut i = start;
        while i < buf.len() && buf[i] != quote && buf[i] != b'\n' {
            i += if buf[i] == b'\\' { 2 } else { 1 };
        }
        cur.work += i - v;
        let i = i.min(buf.len());
        let open = i >= buf.len() && open_end;
        return span(start, i, false, open);
    }
    if rest[0] == b'{' {
        // `"auths": {...}`: the whole object, when it closes on this line;
        // otherwise its inner `"auth"` values are found one by one.
        if v < cur.objects_until {
            return None;
        }
        let end = balanced_object(buf, v, cur);
        return end.and_then(|end| span(v, end, true, false));
    }
    if rest[0] == b'\n' || rest[0] == b'\r' {
        return None;
    }
    let eol = cur.line_end(buf, v);
    let end = match end_at {
        End::Line => eol,
        End::LineOrQuote => cur
            .next(buf, v, Needle::Quote)
            .map_or(eol, |at| at.min(eol)),
        End::Word => cur.next(buf, v, Needle::WordEnd).unwrap_or(buf.len()),
    };
    span(v, end, false, end == buf.len() && open_end)
}

/// End (exclusive) of the JSON object starting at `start`, if it closes
/// before the end of the line. Either way no object starting before where
/// the scan stopped is measured again.
fn balanced_object(buf: &[u8], start: usize, cur: &mut Cursor) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut i = start;
    let mut end = None;
    while i < buf.len() {
        let b = buf[i];
        if b == b'\n' {
            break;
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
                end = Some(i + 1);
                break;
            }
        }
        i += 1;
    }
    cur.work += i - start + 1;
    cur.objects_until = i.max(start + 1);
    end
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

    #[test]
    fn camel_case_keys_headers_and_xml_elements() {
        let r = Redactor::default();
        let cases = [
            // camelCase forms of the keys above (Kubernetes, AWS, OAuth).
            (
                "    clientSecret: 0a1b2c3d4e5f6a7b8c9d",
                "    clientSecret: [REDACTED]",
            ),
            (
                r#"{"accessKeyId":"AKIAIOSFODNN7","secretAccessKey":"wJalrXUtnFEMI/K7MDENG"}"#,
                r#"{"accessKeyId":"AKIAIOSFODNN7","secretAccessKey":"[REDACTED]"}"#,
            ),
            (
                "  bearerToken: eyJhbGciOiJSUzI1NiJ9.e30.c2ln",
                "  bearerToken: [REDACTED]",
            ),
            (
                r#"{"clientKeyData":"LS0tLS1CRUdJTiBSU0E=","clientCertificateData":"LS0t"}"#,
                r#"{"clientKeyData":"[REDACTED]","clientCertificateData":"LS0t"}"#,
            ),
            (
                "env AWSSecretAccessKey=wJalrXUtnFEMI/K7MDENG x",
                "env AWSSecretAccessKey=[REDACTED] x",
            ),
            (
                r#"{"apiKey":"AIzaSyD-abcdef","refreshToken":"1//0gabc","privateKeyPassword":"pk"}"#,
                r#"{"apiKey":"[REDACTED]","refreshToken":"[REDACTED]","privateKeyPassword":"[REDACTED]"}"#,
            ),
            ("  wepKey0: 0123456789", "  wepKey0: [REDACTED]"),
            // `secret` as a key: YAML at line start, JSON.
            ("  secret: hunter2hunter2", "  secret: [REDACTED]"),
            // ... also first in a pod log's or the journal's message.
            (
                "2026-11-24T10:15:00.1+00:00 stdout F   secret: hunter2 x",
                "2026-11-24T10:15:00.1+00:00 stdout F   secret: [REDACTED]",
            ),
            (
                "2026-11-24T10:15:00.1+0000 master-0 app[12]: secret: hunter2",
                "2026-11-24T10:15:00.1+0000 master-0 app[12]: secret: [REDACTED]",
            ),
            (
                r#"{"name":"x","secret":"hunter2hunter2"}"#,
                r#"{"name":"x","secret":"[REDACTED]"}"#,
            ),
            // Headers.
            ("X-Api-Key: 0123456789abcdef", "X-Api-Key: [REDACTED]"),
            (
                "curl -H 'x-api-key: abc def' https://x",
                "curl -H 'x-api-key: [REDACTED]' https://x",
            ),
            (
                "Cookie: theme=dark; session=0123456789abcdef",
                "Cookie: [REDACTED]",
            ),
            (
                "< Set-Cookie: sid=0123456789; Path=/; HttpOnly",
                "< Set-Cookie: [REDACTED]",
            ),
            (
                "curl -H \"Cookie: a=b; c=d\" https://x",
                "curl -H \"Cookie: [REDACTED]\" https://x",
            ),
            // XML elements.
            (
                "<user><name>admin</name><password>hunter2 hunter2</password></user>",
                "<user><name>admin</name><password>[REDACTED]</password></user>",
            ),
            ("  <secret>s3cr3t</secret>", "  <secret>[REDACTED]</secret>"),
            (
                "<token>abcdefgh</token><Passphrase>x y</Passphrase>",
                "<token>[REDACTED]</token><Passphrase>[REDACTED]</Passphrase>",
            ),
        ];
        for (input, want) in cases {
            let (out, _) = redact(&r, input);
            assert_eq!(out, want, "input {input}");
        }
        // Look-alikes: names, references, paths and prose stay.
        for text in [
            r#"{"secretName":"pull-secret","tokenEndpoint":"https://oauth/token"}"#,
            "  publicKey: ssh-ed25519 AAAAC3Nza",
            r#"{"passwordFile":"/etc/pw","secretRef":{"name":"x"}}"#,
            "E1122 kubelet: failed to sync secret: cache not synced",
            "2026-11-24T10:15:00.1+0000 m kubelet[9]: E1122 failed to get secret: not found",
            "2026-11-24T10:15:00.1+00:00 stderr F failed to get secret: not found",
            "2026 notes secret: plain prose after a date",
            "time=10:00:01 secret=\"openshift-config/pull-secret\"",
            "<secret ephemeral='no' private='yes'>",
            "<password/> <token></token>",
            "  secret:",
            "- secret: {secretName: etcd-certs}",
            "oc create --secret ",
        ] {
            assert_eq!(redact(&r, text), (text.to_owned(), 0), "{text}");
        }
    }
}
