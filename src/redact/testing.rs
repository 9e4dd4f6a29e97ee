//! What the redactor's unit tests share: redacting a text whole or pushed
//! in chunks, an agent token, and checks that no run of a secret survived.

use base64::Engine as _;
use memchr::memmem;

use super::{Mode, Redactor, MIN_FRAGMENT};

pub(super) fn redact(r: &Redactor, text: &str) -> (String, usize) {
    let mut data = text.as_bytes().to_vec();
    let n = r.redact(&mut data);
    (String::from_utf8(data).unwrap(), n)
}

/// Pushes `text` in chunks of `size` bytes.
pub(super) fn chunked(r: &Redactor, text: &[u8], size: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut s = r.stream(Mode::Text);
    for chunk in text.chunks(size) {
        s.push(chunk, &mut |b| out.extend_from_slice(b));
    }
    let n = s.finish(&mut |b| out.extend_from_slice(b));
    (out, n)
}

pub(super) const TOKEN: &str =
    "ZTJlLXRva2VuOlMzY3IzdC1hYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAxMjM0NTY3ODk=";

pub(super) fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

pub(super) fn assert_gone(r: &Redactor, text: &str, secret: &str) -> String {
    let (out, n) = redact(r, text);
    assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
    assert!(n >= 1, "nothing counted for {text:?}");
    out
}

/// No run of MIN_FRAGMENT bytes of `secret` in `out`.
pub(super) fn assert_no_run(out: &[u8], secret: &[u8], what: &str) {
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
pub(super) fn distinct_secret(len: usize, seed: u64) -> String {
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

/// Hex of `data`, as Go's `%x` / `%X` print it.
pub(super) fn hex(data: &[u8], upper: bool) -> String {
    data.iter()
        .map(|b| {
            if upper {
                format!("{b:02X}")
            } else {
                format!("{b:02x}")
            }
        })
        .collect()
}

/// Go's `%v` of a byte slice, without its brackets: `104 117 110`.
pub(super) fn go_bytes(data: &[u8]) -> String {
    data.iter().map(u8::to_string).collect::<Vec<_>>().join(" ")
}

/// A pull secret of `n` registries, each auth base64 of a robot and a
/// 32-character password of its own; and each auth's `(auth, password)`.
pub(super) fn many_auths(n: usize) -> (String, Vec<(String, String)>) {
    let auths: Vec<(String, String)> = (0..n)
        .map(|i| {
            let password = distinct_secret(32, 1000 + i as u64);
            (
                b64(format!("mirror+robot{i:05}:{password}").as_bytes()),
                password,
            )
        })
        .collect();
    let entries: Vec<String> = auths
        .iter()
        .enumerate()
        .map(|(i, (auth, _))| {
            format!(r#""mirror-{i:05}.registry.example.com:5000":{{"auth":"{auth}","email":"ops@example.com"}}"#)
        })
        .collect();
    (format!(r#"{{"auths":{{{}}}}}"#, entries.join(",")), auths)
}

/// Bytes the redactor's literal finders hold for their forms.
pub(super) fn engine_bytes(r: &Redactor) -> usize {
    r.engine.memory_usage()
}
