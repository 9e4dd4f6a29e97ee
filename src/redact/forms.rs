//! The forms the agent's own secrets take in content, derived once from
//! the secrets it was handed: literal, JSON-escaped (once and twice),
//! URL-encoded, base64 at each byte alignment in both alphabets, a pull
//! secret's credentials, their decoded `user:password` and the password
//! alone, the pull secret re-serialized and line by line. The literal
//! finders ([`super::literals`]) are built from them.

use base64::Engine as _;
use memchr::memchr;

/// Secrets shorter than this are not redacted: replacing every "a" or "42"
/// would destroy the logs and protect nothing. A password shorter than this
/// inside a longer credential is still redacted with the credential.
pub(super) const MIN_SECRET_LEN: usize = 8;

/// One way a secret may appear in content.
#[derive(Debug)]
pub(super) struct Form {
    pub(super) bytes: Vec<u8>,
    /// Fragments count (tokens, passwords and base64 text), not only the
    /// whole: false for the lines of a structured secret, whose fragments
    /// are JSON syntax and registry names.
    pub(super) fragments: bool,
}

/// Structured text (a pull secret): its fragments are JSON syntax.
fn is_structured(secret: &[u8]) -> bool {
    secret
        .iter()
        .any(|&b| b.is_ascii_whitespace() || matches!(b, b'{' | b'"'))
}

pub(super) fn derive_forms<I, S>(secrets: I) -> Vec<Form>
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

#[cfg(test)]
mod tests {
    use crate::redact::testing::{assert_gone, b64, redact, TOKEN};
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
