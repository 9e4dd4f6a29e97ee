//! The anchors: fixed byte strings at least one of which every rule needs,
//! and the finder that looks for them in blocks of log lines at the speed of
//! a vectorised scan (aho-corasick's Teddy, with its automaton as fallback).
//! Lines without an anchor are never taken apart; a rule added to a family
//! needs its anchor here (`tests.rs` checks the finder against the
//! automaton).

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;

/// Byte strings at least one of which every rule needs; lines without any
/// are not looked at further. Case-sensitive: these are fixed texts of the
/// programs that print them.
pub const ANCHORS: &[&str] = &[
    "lookup ",
    "resolve host",
    "name resolution",
    "Name or service not known",
    "proxyconnect",
    "Proxy Authentication",
    "from proxy",
    ":6443",
    ":22623",
    "GET result: OK",
    "Unable to connect to the server",
    "Successfully registered node",
    "Link is ",
    "link disconnected",
    "link connected",
    "network is unreachable",
    "no route to host",
    "x509",
    "certificate is not trusted",
    "local issuer certificate",
    "signed certificate in certificate chain",
    "System clock wrong",
    "of NTP time",
    "Can't synchronise",
    "unauthorized",
    "Unauthorized",
    "resource is denied",
    "invalid username/password",
    "Mirrors also failed",
    "registries.conf",
    "manifest unknown",
    "exec format error",
    "does not match",
    "no image found in manifest list",
    "no space left on device",
    "fdatasync",
    "took too long",
    "slow disk",
    "sync duration of",
    "layer not known",
    "image not known",
    "overlay mount",
    "storage corruption",
    "storage/overlay",
    "not signed",
    "Pending",
    "avc:  denied",
    ".service: Failed with result",
    ".service: Deactivated successfully",
    ".service: Succeeded",
];

pub(super) fn anchors() -> &'static AhoCorasick {
    static ANCHORS_AC: OnceLock<AhoCorasick> = OnceLock::new();
    // A contiguous NFA: a few KiB where the default DFA takes about 1 MiB
    // of the agent's RSS; the SIMD prefilter does the searching either way.
    ANCHORS_AC.get_or_init(|| {
        aho_corasick::AhoCorasickBuilder::new()
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(ANCHORS)
            .expect("fixed patterns build")
    })
}

/// Finds the next anchor in a block of lines at the speed of a vectorised
/// scan. The automaton above has no useful prefilter for 50 patterns (its
/// Teddy fingerprint is their first bytes, shared by most log text) and
/// walks every byte at about 100 MB/s; here aho-corasick's packed (Teddy)
/// searcher looks for one 4-byte needle of each anchor, the one made of the
/// bytes least common in logs, and a needle found is checked against the
/// anchors it was taken from.
pub(super) struct AnchorFinder {
    searcher: Option<aho_corasick::packed::Searcher>,
    /// For each needle (pattern id): the anchors holding it and where.
    owners: Vec<Vec<(&'static [u8], usize)>>,
}

const NEEDLE: usize = 4;

/// How common a byte is in log text, roughly: needles avoid blanks, the
/// most frequent letters, digits and the punctuation of timestamps.
fn commonness(b: u8) -> u32 {
    match b {
        b' ' => 10,
        b'e' | b't' | b'a' | b'o' | b'i' | b'n' | b's' | b'r' => 9,
        b'a'..=b'z' => 7,
        b'0'..=b'9' | b'-' | b'.' | b'/' | b':' | b'=' | b'"' => 6,
        b'A'..=b'Z' => 3,
        _ => 2,
    }
}

impl AnchorFinder {
    pub(super) fn get() -> &'static AnchorFinder {
        static FINDER: OnceLock<AnchorFinder> = OnceLock::new();
        FINDER.get_or_init(|| {
            let mut needles: Vec<&'static [u8]> = Vec::new();
            let mut owners: Vec<Vec<(&'static [u8], usize)>> = Vec::new();
            for anchor in ANCHORS {
                let anchor = anchor.as_bytes();
                let at = (0..=anchor.len() - NEEDLE)
                    .min_by_key(|&i| {
                        anchor[i..i + NEEDLE]
                            .iter()
                            .map(|&b| commonness(b))
                            .sum::<u32>()
                    })
                    .expect("anchors are at least a needle long");
                let needle = &anchor[at..at + NEEDLE];
                if let Some(id) = needles.iter().position(|n| *n == needle) {
                    owners[id].push((anchor, at));
                } else {
                    needles.push(needle);
                    owners.push(vec![(anchor, at)]);
                }
            }
            let searcher = aho_corasick::packed::Config::new()
                .heuristic_pattern_limits(false)
                .builder()
                .extend(&needles)
                .build();
            AnchorFinder { searcher, owners }
        })
    }

    /// Start of the first anchor in `block[from..]`.
    pub(super) fn find(&self, block: &[u8], mut from: usize) -> Option<usize> {
        let Some(searcher) = &self.searcher else {
            // No Teddy on this CPU: the automaton.
            let m = anchors().find(aho_corasick::Input::new(block).span(from..block.len()))?;
            return Some(m.start());
        };
        loop {
            let m = searcher.find_in(
                block,
                aho_corasick::Span {
                    start: from,
                    end: block.len(),
                },
            )?;
            let at = m.start();
            for &(anchor, offset) in &self.owners[m.pattern().as_usize()] {
                if at >= offset && block[at - offset..].starts_with(anchor) {
                    return Some(at - offset);
                }
            }
            // Needles are all NEEDLE bytes long and distinct: the next one
            // may start at the next byte.
            from = at + 1;
        }
    }
}
