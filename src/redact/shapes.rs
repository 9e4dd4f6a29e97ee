//! Secrets recognised by their shape where no secret key names them:
//! credentials in URLs (`http://user:pass@proxy`), bearer tokens, `-p PW`
//! on a command line, `ipmitool … -P PW`, and PEM private key blocks (their
//! body, across lines). Each finder starts at an anchor found by
//! [`super::anchors`].

use memchr::memmem;

use super::cursor::{Cursor, Needle};
use super::forms::MIN_SECRET_LEN;
use super::keys::{value_span, End};
use super::span::{Span, MARKER};

/// Bearer tokens shorter than this and made of letters only are ordinary
/// words ("bearer authentication").
const MIN_BEARER_WORD: usize = 16;

/// `scheme://user:password@host` at `at` (the `://`): the password (or a
/// lone token used as user name) is replaced, the user name kept. The user
/// information ends at the last `@` of the authority, as curl and the
/// proxies read it: a password may hold an `@` (`p@ss`).
/// The scan stops at a `/`, so it never runs into the next URL's `://`.
pub(super) fn url_credentials(
    buf: &[u8],
    at: usize,
    open_end: bool,
    cur: &mut Cursor,
    out: &mut Vec<Span>,
) {
    let start = at + 3;
    let mut i = start;
    let mut colon = None;
    let mut last_at = None;
    while i < buf.len() {
        let b = buf[i];
        if b.is_ascii_whitespace()
            || matches!(b, b'/' | b'?' | b'#' | b'"' | b'\'' | b'<' | b'>' | b'\\')
        {
            break;
        }
        if b == b'@' {
            last_at = Some(i);
        } else if b == b':' && colon.is_none() {
            colon = Some(i);
        }
        i += 1;
    }
    cur.work += i - start + 1;
    // The user's colon, not the port's.
    let colon = colon.filter(|&c| last_at.is_some_and(|a| c < a));
    if i >= buf.len() && open_end {
        // The authority may go on past the buffer, and another `@` with it.
        out.push(Span {
            open: true,
            ..Span::new(colon.map_or(start, |c| c + 1), buf.len())
        });
        return;
    }
    let Some(end) = last_at else {
        return;
    };
    // A bare user name (`git@`) is no secret; a long one is a token.
    if colon.is_none() && end - start < MIN_SECRET_LEN {
        return;
    }
    let secret_start = colon.map_or(start, |c| c + 1);
    if end > secret_start && &buf[secret_start..end] != MARKER {
        out.push(Span::new(secret_start, end));
    }
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

/// `Bearer <token>` at `at` (also outside an `Authorization:` header). The
/// token ends at a blank, so it never runs into the next `bearer `.
pub(super) fn bearer_token(
    buf: &[u8],
    at: usize,
    open_end: bool,
    cur: &mut Cursor,
    out: &mut Vec<Span>,
) {
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
    cur.work += start - at + len;
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
pub(super) fn pem_block(buf: &[u8], at: usize, cur: &mut Cursor) -> Option<Span> {
    let eol = cur.line_end(buf, at);
    // The header's closing dashes come before the next `-----BEGIN`.
    let dashes = memmem::find(&buf[at + 10..eol], b"-----");
    cur.work += dashes.unwrap_or(eol - at - 10) + 1;
    let header_len = dashes? + 15;
    let header = &buf[at..at + header_len];
    memmem::find(header, b"PRIVATE KEY")?;
    let body = at + header_len;
    let end = pem_end(buf, body, cur);
    Some(Span {
        open: end.is_none(),
        ..Span::new(body, end.unwrap_or(buf.len()))
    })
}

/// Where the `-----END` marker of a PEM block is, searching from `from`.
pub(super) fn pem_end(buf: &[u8], from: usize, cur: &mut Cursor) -> Option<usize> {
    cur.next(buf, from, Needle::PemEnd)
}

/// `-p PW` in a command line (`podman login -u user -p PW`, `mysql -p PW`,
/// `sshpass -p PW`). Not a path (`mkdir -p /var/lib/x`), a port or a port
/// mapping (`ssh -p 22`, `podman run -p 8080:80`), a variable or a flag.
pub(super) fn short_password_flag(
    buf: &[u8],
    at: usize,
    open_end: bool,
    cur: &mut Cursor,
    out: &mut Vec<Span>,
) {
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
    // The word ends at a blank, before the next `-p `.
    let len = word
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(word.len());
    cur.work += len + 1;
    if word[..len]
        .iter()
        .all(|b| b.is_ascii_digit() || matches!(b, b':' | b'.' | b'/' | b'-'))
    {
        return;
    }
    if let Some(span) = value_span(buf, v, End::Word, open_end, cur) {
        out.push(span);
    }
}

/// A tool whose password is given by a short flag on its command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tool {
    /// `ipmitool … -P PW` (or `-PPW`): its BMC password. Elsewhere `-P` is
    /// a port, a Perl regex, a flag.
    Ipmitool,
    /// `mysql … -pPW` (`mysqldump`, `mysqladmin` too): only attached, as
    /// `-p db` names a database and prompts for the password.
    Mysql,
}

/// The password flags of a `tool` command line whose name starts at `at`.
/// The rest of the line is searched once, whatever the number of the
/// tool's names on it: the flags after a later one were found from the
/// first. More than `limit` passwords: the search stops and says so (the
/// caller replaces the line whole).
pub(super) fn tool_password(
    buf: &[u8],
    at: usize,
    tool: Tool,
    open_end: bool,
    limit: usize,
    cur: &mut Cursor,
    out: &mut Vec<Span>,
) -> bool {
    let (name, flag_bytes, searched): (&[u8], &[u8], usize) = match tool {
        Tool::Ipmitool => (b"ipmitool", b"-P", cur.ipmitool_searched),
        Tool::Mysql => (b"mysql", b"-p", cur.mysql_searched),
    };
    let eol = cur.line_end(buf, at);
    let line = &buf[..eol];
    let mut from = (at + name.len()).max(searched);
    let mut found = 0;
    let mut overflow = false;
    while let Some(i) = memmem::find(&line[from.min(eol)..], flag_bytes) {
        let flag = from + i;
        cur.work += i + 2;
        from = flag + 2;
        if !matches!(line[flag - 1], b' ' | b'\t' | b'"' | b'\'') {
            continue;
        }
        let mut v = flag + 2;
        if tool == Tool::Ipmitool {
            while v < eol && line[v] == b' ' {
                v += 1;
            }
        }
        cur.work += v - flag;
        if v >= eol || line[v].is_ascii_whitespace() || line[v] == b'-' {
            continue;
        }
        if let Some(span) = value_span(buf, v, End::Word, open_end, cur) {
            from = span.end.max(from);
            out.push(span);
            found += 1;
            if found > limit {
                overflow = true;
                break;
            }
        }
    }
    cur.work += eol.saturating_sub(from);
    match tool {
        Tool::Ipmitool => cur.ipmitool_searched = cur.ipmitool_searched.max(eol),
        Tool::Mysql => cur.mysql_searched = cur.mysql_searched.max(eol),
    }
    overflow
}

/// `-u USER:PW` and `--user USER:PW` (`--user=…`) at `at`: curl's and
/// wget's credentials, the password after the first colon. A user alone
/// (`podman login -u bob`) or a `UID:GID` (`podman run -u 0:0`) is kept.
pub(super) fn user_flag(
    buf: &[u8],
    at: usize,
    open_end: bool,
    cur: &mut Cursor,
    out: &mut Vec<Span>,
) {
    if at > 0 && !matches!(buf[at - 1], b' ' | b'\t' | b'"' | b'\'') {
        return;
    }
    let v = if buf[at + 1] == b'u' {
        at + 3
    } else {
        match buf.get(at + 6) {
            Some(b' ' | b'=') => at + 7,
            _ => return,
        }
    };
    let Some(span) = value_span(buf, v, End::Word, open_end, cur) else {
        return;
    };
    let value = &buf[span.start..span.end];
    cur.work += value.len() + 1;
    let Some(colon) = memchr::memchr(b':', value) else {
        return;
    };
    if value.iter().all(|b| b.is_ascii_digit() || *b == b':') {
        return;
    }
    if span.start + colon + 1 < span.end || span.open {
        out.push(Span {
            start: span.start + colon + 1,
            ..span
        });
    }
}

/// `-w PW` at `at` on the command line of an LDAP client (`ldapsearch`,
/// `ldapmodify`, …): its bind password. Elsewhere `-w` is a word match, a
/// wait, a width.
pub(super) fn ldap_password(
    buf: &[u8],
    at: usize,
    open_end: bool,
    cur: &mut Cursor,
    out: &mut Vec<Span>,
) {
    if at == 0 || !matches!(buf[at - 1], b' ' | b'\t' | b'"' | b'\'') {
        return;
    }
    let v = at + 3;
    if matches!(buf.get(v), None | Some(b'-' | b' ' | b'\n' | b'\r')) || !cur.ldap_before(buf, at) {
        return;
    }
    if let Some(span) = value_span(buf, v, End::Word, open_end, cur) {
        out.push(span);
    }
}

/// An OpenShift OAuth access token (`sha256~` and 43 of `A-Za-z0-9_-`) at
/// `at`, as a word (`oc whoami -t`, a kubeconfig). Image digests are
/// `sha256:`.
pub(super) fn openshift_token(buf: &[u8], at: usize, cur: &mut Cursor, out: &mut Vec<Span>) {
    const LEN: usize = 7 + 43;
    cur.work += LEN;
    let token_byte = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-');
    let Some(token) = buf.get(at + 7..at + LEN) else {
        return;
    };
    if token.iter().all(token_byte) && !buf.get(at + LEN).is_some_and(token_byte) {
        out.push(Span::new(at, at + LEN));
    }
}

/// An AWS access key id (`AKIA` and 16 of `A-Z2-7`) at `at`, as a word.
pub(super) fn aws_key_id(buf: &[u8], at: usize, cur: &mut Cursor, out: &mut Vec<Span>) {
    const LEN: usize = 20;
    cur.work += LEN;
    let Some(id) = buf.get(at..at + LEN) else {
        return;
    };
    let word = |b: Option<&u8>| b.is_some_and(u8::is_ascii_alphanumeric);
    if id[4..]
        .iter()
        .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(b))
        && !word(at.checked_sub(1).and_then(|i| buf.get(i)))
        && !word(buf.get(at + LEN))
    {
        out.push(Span::new(at, at + LEN));
    }
}

#[cfg(test)]
mod tests {
    use crate::redact::testing::{chunked, redact};
    use crate::redact::Redactor;

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
    fn ipmitool_passwords_and_url_passwords_holding_an_at() {
        let r = Redactor::default();
        let cases = [
            (
                "+ ipmitool -I lanplus -H 10.0.0.5 -U admin -P s3cr3tPW chassis power status",
                "+ ipmitool -I lanplus -H 10.0.0.5 -U admin -P [REDACTED] chassis power status",
            ),
            (
                "ipmitool -H bmc -U root -P 'two words' power on",
                "ipmitool -H bmc -U root -P '[REDACTED]' power on",
            ),
            (
                "/usr/bin/ipmitool -H bmc -Ps3cr3tPW sel list",
                "/usr/bin/ipmitool -H bmc -P[REDACTED] sel list",
            ),
            // The user information ends at the last `@` before the host.
            (
                "proxy: http://user:p@ss@proxy.example.com:3128/ ok",
                "proxy: http://user:[REDACTED]@proxy.example.com:3128/ ok",
            ),
            (
                "HTTPS_PROXY=https://u:a@b@c@proxy:3128 next",
                "HTTPS_PROXY=https://u:[REDACTED]@proxy:3128 next",
            ),
            (
                "see http://quay.io/repo@sha256:0123 and http://x/?m=a@b",
                "see http://quay.io/repo@sha256:0123 and http://x/?m=a@b",
            ),
        ];
        for (input, want) in cases {
            let (out, _) = redact(&r, input);
            assert_eq!(out, want, "input {input}");
        }
        // `-P` of other tools is no password: a Perl regex, a port, a flag.
        for text in [
            "grep -P 'x\\d+' /var/log/messages",
            "scp -P 2222 a host:",
            "cp -P src dst",
            "ipmitool -I lanplus -H bmc -U root -E power status",
        ] {
            assert_eq!(redact(&r, text), (text.to_owned(), 0), "{text}");
        }
    }

    #[test]
    fn already_redacted_content_is_left_alone() {
        let r = Redactor::default();
        let (out, n) = redact(&r, "x password=[REDACTED] http://u:[REDACTED]@h");
        assert_eq!(out, "x password=[REDACTED] http://u:[REDACTED]@h");
        assert_eq!(n, 0);
    }

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
    fn catalogue_shapes_are_redacted() {
        let r = Redactor::default();
        for (name, line) in crate::redact::catalogue::CATALOGUE {
            let (out, n) = redact(&r, line);
            assert!(!out.contains("PLANTED"), "{name}: {out}");
            assert!(n >= 1, "{name}");
        }
        // What names them, and their look-alikes, stay.
        for text in [
            "podman login -u bob -p [REDACTED] quay.io",
            "podman run -u 0:0 img",
            "grep -w word /var/log/messages",
            "private_key = /etc/pki/tls/private/x.key",
            "credentials: ~/.aws/credentials",
            "%wheel ALL=(ALL) NOPASSWD: ALL",
            "AKIAlowercase12345678 is no key id",
        ] {
            assert_eq!(redact(&r, text), (text.to_owned(), 0), "{text}");
        }
        let (out, _) = redact(&r, "curl -u admin:PLANTED https://x");
        assert_eq!(out, "curl -u admin:[REDACTED] https://x");
    }
}
