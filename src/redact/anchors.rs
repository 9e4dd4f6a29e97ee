//! Where the shape rules look: the words secret keys are made of (any case)
//! and the anchors of the other shapes (`://`, `bearer`, `-----BEGIN`,
//! `-p `, `ipmitool`, `-u `, `--user`, `-w `, `mysql`, `AKIA`, `sha256~`), found in one
//! vectorised pass.
//!
//! An Aho-Corasick automaton matching them case-insensitively has no
//! prefilter (aho-corasick builds none for ASCII case folding) and walks
//! every byte. Here the packed (Teddy) searcher of the same crate looks for
//! their first three bytes in every case instead, and each hit is checked
//! against the whole word. Teddy puts patterns whose bytes share their low
//! nibbles in one bucket; the case variants of a prefix differ only in a high
//! nibble (0x20), so each prefix gets a bucket of its own and the bucket test
//! is exactly a case-insensitive match: a line with none of the words costs
//! the vector scan and nothing else. (Slim Teddy, 8 buckets and 32 bytes a
//! step, was measured on journals: the candidates of shared buckets cost
//! more to verify than the wider step saves: more instructions, not fewer
//! (docs/benchmarks.md, section 10, 2026-11-28).)

use std::sync::OnceLock;

use aho_corasick::{packed, AhoCorasick, AhoCorasickKind, Input, MatchKind};

/// What a hit is the start of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Anchor {
    /// A word secret keys are made of.
    KeyWord,
    /// `://`: credentials in a URL.
    Url,
    /// `bearer`
    Bearer,
    /// `-----BEGIN`
    PemBegin,
    /// `-p `
    ShortPasswordFlag,
    /// `ipmitool` (its `-P PW`)
    Ipmitool,
    /// `-u ` and `--user`: curl's and wget's `USER:PW`
    UserFlag,
    /// `-w `: an LDAP client's bind password
    LdapPassword,
    /// `mysql` (its `-pPW`)
    Mysql,
    /// `AKIA`: an AWS access key id
    AwsKeyId,
    /// `sha256~`: an OpenShift OAuth access token
    OpenshiftToken,
}

/// Each anchor: the word (matched case-insensitively when `any_case`) and
/// what it starts. Every secret key holds one of the key words.
pub(super) const ANCHORS: &[(&str, bool, Anchor)] = &[
    ("pass", true, Anchor::KeyWord),
    ("psk", true, Anchor::KeyWord),
    ("pin", true, Anchor::KeyWord),
    ("secret", true, Anchor::KeyWord),
    ("token", true, Anchor::KeyWord),
    ("auth", true, Anchor::KeyWord),
    ("key", true, Anchor::KeyWord),
    ("cookie", true, Anchor::KeyWord),
    ("bearer", true, Anchor::Bearer),
    ("://", false, Anchor::Url),
    ("-----BEGIN", false, Anchor::PemBegin),
    ("-p ", false, Anchor::ShortPasswordFlag),
    ("ipmitool", false, Anchor::Ipmitool),
    ("cred", true, Anchor::KeyWord),
    ("-u ", false, Anchor::UserFlag),
    ("--user", false, Anchor::UserFlag),
    ("-w ", false, Anchor::LdapPassword),
    ("mysql", false, Anchor::Mysql),
    ("AKIA", false, Anchor::AwsKeyId),
    ("sha256~", false, Anchor::OpenshiftToken),
];
/// Bytes of each anchor the searcher looks for.
const PREFIX: usize = 3;
// Distinct prefixes: at most one anchor starts at any position. Past 16
// prefixes (Fat Teddy's buckets) some share a bucket: their candidates are
// checked against both, still exactly; the cost shows in the redaction
// benchmark, not in what is found.
const _: () = assert!(ANCHORS.len() <= 20, "a bucket for most anchors");

enum Searcher {
    Packed(packed::Searcher),
    /// Where Teddy is unavailable (no SSSE3/NEON): the same prefixes in an
    /// automaton.
    Automaton(AhoCorasick),
}

pub(super) struct Anchors {
    searcher: Searcher,
    /// Pattern id to its anchor's index in [`ANCHORS`].
    anchor_of: Vec<usize>,
}

impl Anchors {
    pub(super) fn get() -> &'static Anchors {
        static ANCHORS_FINDER: OnceLock<Anchors> = OnceLock::new();
        ANCHORS_FINDER.get_or_init(Anchors::build)
    }

    fn build() -> Anchors {
        // Every case variant of each prefix; the first variant of every
        // anchor comes first, as Teddy gives a bucket to each new low-nibble
        // prefix by pattern id (distinct ids mod 16: distinct buckets).
        let variants: Vec<Vec<Vec<u8>>> = ANCHORS
            .iter()
            .map(|&(word, any_case, _)| case_variants(&word.as_bytes()[..PREFIX], any_case))
            .collect();
        let mut patterns = Vec::new();
        let mut anchor_of = Vec::new();
        let most = variants.iter().map(Vec::len).max().unwrap_or(0);
        for round in 0..most {
            for (anchor, forms) in variants.iter().enumerate() {
                if let Some(form) = forms.get(round) {
                    patterns.push(form.clone());
                    anchor_of.push(anchor);
                }
            }
        }
        let packed = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            // 75 patterns: more than its heuristic takes, but the buckets
            // above keep the candidates exact.
            .heuristic_pattern_limits(false)
            .builder()
            .extend(&patterns)
            .build();
        let searcher = match packed {
            Some(searcher) => Searcher::Packed(searcher),
            None => Searcher::Automaton(
                AhoCorasick::builder()
                    .match_kind(MatchKind::LeftmostFirst)
                    .kind(Some(AhoCorasickKind::DFA))
                    .build(&patterns)
                    .expect("a few short patterns"),
            ),
        };
        Anchors {
            searcher,
            anchor_of,
        }
    }

    /// Every anchor in `buf`, in order: its kind and where it starts.
    pub(super) fn find_iter<'a>(
        &'a self,
        buf: &'a [u8],
    ) -> impl Iterator<Item = (Anchor, usize)> + 'a {
        let mut from = 0;
        std::iter::from_fn(move || {
            while from < buf.len() {
                let (start, id) = match &self.searcher {
                    Searcher::Packed(s) => {
                        let m = s.find_in(buf, packed_span(from, buf.len()))?;
                        (m.start(), m.pattern().as_usize())
                    }
                    Searcher::Automaton(ac) => {
                        let m = ac.find(Input::new(buf).range(from..))?;
                        (m.start(), m.pattern().as_usize())
                    }
                };
                // Prefixes are distinct, so no other anchor starts here; the
                // next may start inside this one.
                from = start + 1;
                let (word, any_case, anchor) = ANCHORS[self.anchor_of[id]];
                let rest = &buf[start..];
                let whole = rest.len() >= word.len()
                    && if any_case {
                        rest[..word.len()].eq_ignore_ascii_case(word.as_bytes())
                    } else {
                        &rest[..word.len()] == word.as_bytes()
                    };
                if whole {
                    return Some((anchor, start));
                }
            }
            None
        })
    }

    pub(super) fn describe(&self) -> &'static str {
        match self.searcher {
            Searcher::Packed(_) => "Teddy",
            Searcher::Automaton(_) => "DFA",
        }
    }
}

fn packed_span(start: usize, end: usize) -> aho_corasick::Span {
    aho_corasick::Span { start, end }
}

/// `word` in every combination of upper and lower case letters (only as
/// written when `any_case` is false).
fn case_variants(word: &[u8], any_case: bool) -> Vec<Vec<u8>> {
    let mut variants = vec![Vec::new()];
    for &b in word {
        let cases: &[u8] = if any_case && b.is_ascii_alphabetic() {
            &[b.to_ascii_lowercase(), b.to_ascii_uppercase()]
        } else {
            std::slice::from_ref(&b)
        };
        variants = variants
            .into_iter()
            .flat_map(|v| {
                cases.iter().map(move |&c| {
                    let mut next = v.clone();
                    next.push(c);
                    next
                })
            })
            .collect();
    }
    variants
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(Anchor, usize)> {
        Anchors::get().find_iter(text.as_bytes()).collect()
    }

    #[test]
    fn words_in_any_case_and_anchors_as_written() {
        assert_eq!(
            found("x PassWord=1 TOKEN: b BeArEr c"),
            vec![
                (Anchor::KeyWord, 2),
                (Anchor::KeyWord, 13),
                (Anchor::Bearer, 22)
            ]
        );
        assert_eq!(found("https://u:p@h"), vec![(Anchor::Url, 5)]);
        assert_eq!(found("-p x -P y"), vec![(Anchor::ShortPasswordFlag, 0)]);
        assert_eq!(found("-----begin x"), vec![]);
        // A prefix that is no anchor, and one that starts inside another
        // candidate.
        assert_eq!(found("past pas bear key"), vec![(Anchor::KeyWord, 14)]);
        assert_eq!(found("------BEGIN"), vec![(Anchor::PemBegin, 1)]);
        assert_eq!(found("pspsk"), vec![(Anchor::KeyWord, 2)]);
    }

    #[test]
    fn long_haystacks_agree_with_a_naive_search() {
        // Past Teddy's minimum length, at every offset of a block.
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&"x".repeat(i % 37));
            text.push_str(["Auth", "pin", "-p ", "s3cret", "Secret", "://", "tok"][i % 7]);
        }
        let naive: Vec<usize> = (0..text.len())
            .filter(|&i| {
                let rest = text[i..].to_ascii_lowercase();
                ["auth", "pin", "secret", "://"]
                    .iter()
                    .any(|w| rest.starts_with(w))
                    || text[i..].starts_with("-p ")
            })
            .collect();
        let fast: Vec<usize> = found(&text).into_iter().map(|(_, at)| at).collect();
        assert_eq!(fast, naive);
    }
}
