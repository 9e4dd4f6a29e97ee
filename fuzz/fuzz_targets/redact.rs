#![no_main]
//! The redactor (`redact`): a random secret, in one of the forms it takes on
//! a host (literal, JSON-escaped, URL-encoded, base64 of a blob holding it
//! at any alignment in either alphabet, the decoded `user:password` of an
//! auth and the password alone, a long prefix, hex in either case, Go's
//! `%v` of its bytes, one of many auths of the same user whose forms share
//! their windows), embedded in random text pushed in random chunks: no run
//! of `MIN_FRAGMENT` bytes of it (the whole of it when shorter) survives,
//! nothing panics, and the finders examine at most a constant times the
//! bytes pushed. A quarter of the inputs put the secret inside a hostile
//! line (`redact::hostile`: an anchor, a key or a shape repeated, key words
//! run together, nested encodings) instead of the random text.

use std::sync::OnceLock;

use assisted_boot_reporter::redact::hostile::hostile_lines;
use assisted_boot_reporter::redact::{Mode, Redactor, MIN_FRAGMENT};
use base64::Engine as _;
use libfuzzer_sys::fuzz_target;

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_.~:";

struct Input<'a> {
    data: &'a [u8],
}

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.data.split_first().unwrap_or((&0, &[]));
        self.data = rest;
        b
    }

    fn bytes(&mut self, n: usize) -> &[u8] {
        let n = n.min(self.data.len());
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        head
    }

    /// `len` characters of the secret alphabet.
    fn word(&mut self, len: usize, alphabet: &[u8]) -> String {
        (0..len)
            .map(|_| alphabet[usize::from(self.byte()) % alphabet.len()] as char)
            .collect()
    }
}

/// The hostile lines at a size a fuzzer runs quickly, made once.
fn hostile() -> &'static [(String, Vec<u8>)] {
    static LINES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    LINES.get_or_init(|| hostile_lines(4096))
}

fn url_encode(data: &[u8]) -> String {
    let mut out = String::new();
    for &b in data {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input { data };
    let kind = input.byte() % 13;
    let len = 8 + usize::from(input.byte()) % 90;
    // Secrets the redactor is given besides the one embedded.
    let mut others: Vec<String> = Vec::new();
    // What the redactor is given, and what must not come out.
    let (given, needle, embedded): (String, String, Vec<u8>) = match kind {
        0 => {
            let s = input.word(len, ALPHABET);
            (s.clone(), s.clone(), s.into_bytes())
        }
        1 => {
            // A backslash inside, as JSON shows it (doubled).
            let s = input.word(len, ALPHABET);
            let secret = format!("{}\\{}", &s[..len / 2], &s[len / 2..]);
            let escaped = serde_json::to_string(&secret).unwrap();
            let escaped = escaped[1..escaped.len() - 1].to_owned();
            (secret, escaped.clone(), escaped.into_bytes())
        }
        2 => {
            let s = input.word(len, ALPHABET);
            let url = url_encode(s.as_bytes());
            (s, url.clone(), url.into_bytes())
        }
        3 | 4 => {
            let s = input.word(len, ALPHABET);
            let before = usize::from(input.byte()) % 7;
            let mut blob = input.bytes(before).to_vec();
            blob.resize(before, b'x');
            blob.extend_from_slice(s.as_bytes());
            blob.extend_from_slice(b"\"}");
            let encoded = if kind == 3 {
                base64::engine::general_purpose::STANDARD.encode(&blob)
            } else {
                base64::engine::general_purpose::URL_SAFE.encode(&blob)
            };
            let start = (8 * before).div_ceil(6);
            let end = 8 * (before + s.len()) / 6;
            let needle = encoded[start..end].to_owned();
            (s, needle, encoded.into_bytes())
        }
        5 | 6 => {
            // A registry auth: base64 of user:password.
            let user = input.word(1 + len % 12, b"abcdefghijklmnopqrstuvwxyz-_.+");
            let password = input.word(
                len,
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~!",
            );
            let pair = format!("{user}:{password}");
            let auth = base64::engine::general_purpose::STANDARD.encode(pair.as_bytes());
            let needle = if kind == 5 { pair } else { password };
            (auth, needle.clone(), needle.into_bytes())
        }
        9 | 10 => {
            let s = input.word(len, ALPHABET);
            let hex: String = s
                .bytes()
                .map(|b| {
                    if kind == 9 {
                        format!("{b:02x}")
                    } else {
                        format!("{b:02X}")
                    }
                })
                .collect();
            (s, hex.clone(), hex.into_bytes())
        }
        11 => {
            let s = input.word(len, ALPHABET);
            let bytes = s
                .bytes()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(" ");
            (s, bytes.clone(), format!("[{bytes}]").into_bytes())
        }
        12 => {
            // One of more auths of one user than a window is checked
            // against one by one: their forms share the user's windows.
            let n = 17 + usize::from(input.byte()) % 24;
            let which = usize::from(input.byte()) % n;
            let password = input.word(
                len,
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
            );
            let auths: Vec<String> = (0..n)
                .map(|i| {
                    base64::engine::general_purpose::STANDARD
                        .encode(format!("mirror+robot{i:03}:{password}{i:03}"))
                })
                .collect();
            let auth = auths[which].clone();
            others = auths;
            (auth.clone(), auth.clone(), auth.into_bytes())
        }
        _ => {
            // A long prefix of the secret, cut short.
            let s = input.word(len.max(MIN_FRAGMENT + 1), ALPHABET);
            let cut = MIN_FRAGMENT + usize::from(input.byte()) % (s.len() - MIN_FRAGMENT);
            let prefix = s[..cut].to_owned();
            (s, prefix.clone(), prefix.into_bytes())
        }
    };
    if needle.len() < 8 {
        return;
    }
    let chunk = 1 + usize::from(input.byte()) % 64;
    let split = usize::from(input.byte());
    let pick = usize::from(input.byte()) | usize::from(input.byte()) << 8;
    let rest = if pick % 4 == 0 {
        let lines = hostile();
        lines[(pick / 4) % lines.len()].1.as_slice()
    } else {
        input.data
    };
    let split = split.min(rest.len());
    let mut text = rest[..split].to_vec();
    text.extend_from_slice(&embedded);
    text.extend_from_slice(&rest[split..]);

    others.push(given);
    let redactor = Redactor::new(&others);
    let mut out = Vec::new();
    let mut stream = redactor.stream(Mode::Text);
    for piece in text.chunks(chunk) {
        stream.push(piece, &mut |b| out.extend_from_slice(b));
    }
    let (_, work) = stream.finish_with_work(&mut |b| out.extend_from_slice(b));
    assert!(
        work.examined <= 32 * text.len() + 4096,
        "{} bytes examined for {} (kind {kind})",
        work.examined,
        text.len()
    );

    let run = needle.len().min(MIN_FRAGMENT);
    for window in needle.as_bytes().windows(run) {
        assert!(
            memchr::memmem::find(&out, window).is_none(),
            "{:?} of {needle:?} (kind {kind}) survived in {:?}",
            String::from_utf8_lossy(window),
            String::from_utf8_lossy(&out)
        );
    }
});
