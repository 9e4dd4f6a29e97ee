//! Redaction of the agent's own secrets from everything it ships.
//!
//! The token and pull secret are the only credentials this agent holds, and the
//! one leak it could cause itself (the discovery agent's journal lines, a
//! command echoing its environment). Broader scrubbing of host secrets lives in
//! the collectors that read them.

/// What replaces a secret in shipped content.
pub const MARKER: &[u8] = b"[REDACTED]";

/// Secrets shorter than this are not redacted: replacing every "a" or "42"
/// would destroy the logs and protect nothing.
const MIN_SECRET_LEN: usize = 8;

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
        let mut secrets: Vec<Vec<u8>> = secrets
            .into_iter()
            .map(|s| s.as_ref().to_vec())
            .filter(|s| s.len() >= MIN_SECRET_LEN)
            .collect();
        // Longest first so that a secret containing another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// The longest secret, so streaming users know how much overlap to keep
    /// between chunks.
    pub fn longest_secret(&self) -> usize {
        self.secrets.first().map_or(0, Vec::len)
    }

    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Replaces every occurrence of every secret in `data`; returns how many.
    pub fn redact(&self, data: &mut Vec<u8>) -> usize {
        let mut count = 0;
        for secret in &self.secrets {
            if data.len() < secret.len() {
                continue;
            }
            let mut out = Vec::with_capacity(data.len());
            let mut start = 0;
            let mut replaced = 0;
            while let Some(pos) = find(&data[start..], secret) {
                out.extend_from_slice(&data[start..start + pos]);
                out.extend_from_slice(MARKER);
                start += pos + secret.len();
                replaced += 1;
            }
            if replaced > 0 {
                out.extend_from_slice(&data[start..]);
                *data = out;
                count += replaced;
            }
        }
        count
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || haystack.len() < needle.len() {
        return None;
    }
    let first = needle[0];
    let mut offset = 0;
    while offset + needle.len() <= haystack.len() {
        let pos = haystack[offset..=haystack.len() - needle.len()]
            .iter()
            .position(|&b| b == first)?;
        let at = offset + pos;
        if &haystack[at..at + needle.len()] == needle {
            return Some(at);
        }
        offset = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
