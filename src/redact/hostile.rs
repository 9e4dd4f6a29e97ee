//! Hostile texts: lines made to cost the redactor and the diagnosis engine
//! as much as a line can. For every anchor and secret key of the redactor,
//! every anchor of the diagnosis engine ([`crate::diagnose::ANCHORS`]) and
//! every shape: the anchor repeated (bare, spaced, as a key with each
//! separator and quoting, as an XML element, an object opened and never
//! closed), long words run together from the key words (`pinpinpin…`), and
//! encodings nested in each other (JSON strings escaped in JSON strings,
//! URL encoding of URL encoding). The hostile-input test runs each at two
//! sizes and holds the work and memory of the redactor (and the memory of
//! the diagnosis engine) to linear growth; the fuzz targets draw from the
//! same texts; the memory-limit test puts them in a journal.

use super::anchors::ANCHORS;
use super::keys::{KEYFILE_SECRET_KEYS, SECRET_KEYS, SECRET_SUFFIXES};

/// Command-line and text shapes the finders start from, as a line shows
/// them (besides the anchors and keys, which are taken from their lists).
const SHAPES: &[&str] = &[
    "ipmitool -P ",
    "ipmitool -Px ",
    "ipmitool ",
    " -P x",
    " -p x",
    "-p -p ",
    "http://u:p@",
    "https://",
    "://@",
    "s3://a:b@",
    "Bearer ",
    "Bearer abcdefghijklmnopqrstu ",
    "-----BEGIN PRIVATE KEY-----",
    "-----BEGIN ",
    "-----END ",
    "{\"auths\":",
    "{\"auths\":{",
    "{",
    "\"",
    "\\\"",
    "'",
    "<",
    "</",
    "@",
    ":",
    "=",
    "AKIA",
    "--creds ",
    "--creds=u:",
    "-u u:",
    "--user ",
    "-w ",
    "-pp",
    "--token ",
    "--token=",
    "htpasswd -b ",
    "htpasswd -b u ",
    "private_key = ",
    "\"privateKey\": \"",
    "\\\\\\\"password\\\\\\\":\\\\\\\"",
    "PGPASSWORD=",
    "[REDACTED]",
    "ldapsearch -w x ",
    "ldap -w ",
    "mysql -px ",
    "mysql -p",
    "-u a:b ",
    "--user a:b ",
    "--user=",
    "htpasswd -b f u p ",
    "htpasswd -nb ",
    "AKIAAAAAAAAAAAAAAAAA ",
    "AKIAAAAAAAAAAAAAAAAAA",
    "--creds a:b ",
    "password=\\\\\\\"",
    "\\\\\\\\\\\\\\\\\"",
    "private_key=/x ",
    "sha256~",
    "sha256~abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG ",
    "tls.key: ",
];

/// Every hostile unit: a name and the text repeated to make a line.
fn units() -> Vec<(String, String)> {
    let mut units = Vec::new();
    let mut add = |name: &str, unit: String| units.push((name.to_owned(), unit));
    let words: Vec<&str> = ANCHORS.iter().map(|&(word, _, _)| word).collect();
    for word in &words {
        for unit in [
            (*word).to_owned(),
            format!("{word} "),
            format!("{word}_"),
            word.to_ascii_uppercase(),
        ] {
            add("redactor anchor", unit);
        }
    }
    let keys = SECRET_KEYS
        .iter()
        .chain(KEYFILE_SECRET_KEYS)
        .map(|&k| k.to_owned())
        .chain(SECRET_SUFFIXES.iter().map(|s| format!("x{s}")));
    for key in keys {
        for unit in [
            format!("{key}="),
            format!("{key}: "),
            format!("{key}=\""),
            format!("{key}='"),
            format!("--{key} "),
            format!("\"{key}\":\""),
            format!("\\\"{key}\\\":\\\""),
            format!("{key}: {{"),
            format!("{key}={{\"a\":"),
            format!("<{key}>"),
            format!("<{key} "),
            format!("{key}={key}"),
        ] {
            add("secret key", unit);
        }
    }
    for shape in SHAPES {
        add("shape", (*shape).to_owned());
    }
    // Long words of key words run together.
    add(
        "key words",
        words
            .iter()
            .filter(|w| w.len() > 2)
            .map(ToString::to_string)
            .collect(),
    );
    add("key words", "PassTokenAuthKeySecret".to_owned());
    for anchor in crate::diagnose::ANCHORS.iter() {
        add("diagnosis anchor", (*anchor).to_owned());
        add("diagnosis anchor", format!("{anchor} "));
    }
    units
}

/// A line of about `size` bytes made of `unit` repeated.
fn repeated(unit: &str, size: usize) -> Vec<u8> {
    let mut line = Vec::with_capacity(size + unit.len() + 1);
    while line.len() < size {
        line.extend_from_slice(unit.as_bytes());
    }
    line.truncate(size.max(unit.len()));
    line.push(b'\n');
    line
}

/// `"password":"x"` inside a JSON string inside a JSON object, again and
/// again, to about `size` bytes (escapes double at each depth).
fn nested_json(size: usize) -> Vec<u8> {
    let mut text = String::from("{\"password\":\"hunter2\",\"auth\":\"eHg6eXk=\"}");
    while text.len() < size {
        let escaped = serde_json::to_string(&text).unwrap_or_default();
        text = format!("{{\"password\":{escaped},\"log\":{escaped}}}");
    }
    let mut line = text.into_bytes();
    line.truncate(size);
    line.push(b'\n');
    line
}

/// A URL whose password is a URL-encoded URL with a password, nested.
fn nested_urls(size: usize) -> Vec<u8> {
    let mut text = String::from("https://u:p@h/");
    while text.len() < size {
        let encoded: String = text
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        text = format!("https://u:{encoded}@h/?next={encoded}");
    }
    let mut line = text.into_bytes();
    line.truncate(size);
    line.push(b'\n');
    line
}

/// Every hostile text at about `size` bytes (one line each), named.
#[doc(hidden)]
#[must_use]
pub fn hostile_lines(size: usize) -> Vec<(String, Vec<u8>)> {
    let mut lines: Vec<(String, Vec<u8>)> = units()
        .into_iter()
        .map(|(name, unit)| {
            let line = repeated(&unit, size);
            (format!("{name} {unit:?}"), line)
        })
        .collect();
    lines.push(("nested JSON strings".to_owned(), nested_json(size)));
    lines.push(("nested URL encodings".to_owned(), nested_urls(size)));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::scan::MAX_SPANS_PER_LINE;
    use crate::redact::testing::TOKEN;
    use crate::redact::{Mode, Redactor, Work};

    const SMALL: usize = 8 * 1024;
    const LARGE: usize = 64 * 1024;
    /// Linear growth is 8x from SMALL to LARGE (quadratic 64x); half as
    /// much again for the constants.
    const MAX_RATIO: usize = 12;
    /// Bytes examined per byte of a line, at most, whatever the line.
    const MAX_WORK_PER_BYTE: usize = 24;

    fn work(redactor: &Redactor, text: &[u8], mode: Mode) -> Work {
        let mut stream = redactor.stream(mode);
        let mut out = 0;
        // In pieces, as a journal arrives.
        for piece in text.chunks(16 * 1024) {
            stream.push(piece, &mut |b| out += b.len());
        }
        let (_, work) = stream.finish_with_work(&mut |b| out += b.len());
        assert!(out > 0);
        work
    }

    #[test]
    fn redaction_work_and_memory_grow_linearly_on_hostile_lines() {
        let small = hostile_lines(SMALL);
        let large = hostile_lines(LARGE);
        assert_eq!(small.len(), large.len());
        // Shapes only, and with a known secret (the literal finders run too:
        // they hold a span per occurrence of the secret, linear in the line).
        let redactors = [(Redactor::default(), true), (Redactor::new([TOKEN]), false)];
        let mut failures = Vec::new();
        for ((name, small), (_, large)) in small.iter().zip(&large) {
            for (redactor, capped) in &redactors {
                for mode in [Mode::Text, Mode::Keyfile] {
                    let a = work(redactor, small, mode);
                    let b = work(redactor, large, mode);
                    // Small figures ride on constants: the ratio is taken
                    // above a floor of a few bytes per byte.
                    let floor = |w: usize, len: usize| w.max(2 * len);
                    let superlinear =
                        floor(b.examined, large.len()) > MAX_RATIO * floor(a.examined, small.len());
                    if superlinear || b.examined > MAX_WORK_PER_BYTE * large.len() {
                        failures.push(format!(
                            "{name} ({mode:?}): work {} -> {} bytes examined",
                            a.examined, b.examined
                        ));
                    }
                    let superlinear = b.peak_spans.max(16) > MAX_RATIO * a.peak_spans.max(16);
                    if (*capped && b.peak_spans > MAX_SPANS_PER_LINE + 4) || superlinear {
                        failures.push(format!(
                            "{name} ({mode:?}): {} -> {} spans held",
                            a.peak_spans, b.peak_spans
                        ));
                    }
                }
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn diagnosis_memory_grows_linearly_on_hostile_lines() {
        // The engine keeps no work counter; what it holds after a line is
        // measured by its state's size (every vector and string of it shows
        // in its Debug form).
        let held = |text: &[u8]| {
            let mut scanner = crate::diagnose::Scanner::for_member("journal/journal.log")
                .expect("a journal member is read");
            scanner.feed(text);
            scanner.feed(text);
            scanner.finish();
            format!("{scanner:?}").len()
        };
        let mut failures = Vec::new();
        for ((name, small), (_, large)) in hostile_lines(SMALL).iter().zip(&hostile_lines(LARGE)) {
            let (a, b) = (held(small), held(large));
            if b > MAX_RATIO * a.max(SMALL) {
                failures.push(format!("{name}: {a} -> {b} bytes held"));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn a_line_of_more_secrets_than_the_cap_goes_whole_from_the_first() {
        let r = Redactor::default();
        let mut line = b"head ".to_vec();
        for i in 0..(MAX_SPANS_PER_LINE * 3) {
            line.extend_from_slice(format!("ipmitool -P pw{i} ").as_bytes());
        }
        line.extend_from_slice(b"\nnext password=x y\n");
        let mut data = line.clone();
        let n = r.redact(&mut data);
        let text = String::from_utf8(data).unwrap();
        assert_eq!(
            text,
            "head ipmitool -P [REDACTED]\nnext password=[REDACTED] y\n"
        );
        // The line replaced whole is one redaction, as the manifest counts.
        assert_eq!(n, 2);
    }
}
