//! The anchors: fixed byte strings at least one of which every rule needs,
//! and the finder that looks for them in blocks of log lines at the speed of
//! a vectorised scan (aho-corasick's Teddy, with its automaton as fallback).
//! Lines without an anchor are never taken apart; a rule added to a family
//! needs its anchor here (`tests.rs` checks the finder against the
//! automaton).

use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;

use super::rules::{Dispatch, RULES, UNIT_EVENT_ANCHORS, UNIT_EVENT_BIT};

/// Byte strings at least one of which every rule needs; lines without any
/// are not looked at further: the union of the rules' own anchors
/// (`rules::RULES`) and the unit events', each once, with the rules that
/// need it.
pub static ANCHORS: LazyLock<Vec<&'static str>> =
    LazyLock::new(|| anchor_table().iter().map(|(a, _)| *a).collect());

/// Each anchor with the rules it dispatches to.
fn anchor_table() -> &'static [(&'static str, Dispatch)] {
    static TABLE: OnceLock<Vec<(&'static str, Dispatch)>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table: Vec<(&'static str, Dispatch)> = Vec::new();
        let mut add = |anchor: &'static str, bit: Dispatch| match table
            .iter_mut()
            .find(|(a, _)| *a == anchor)
        {
            Some((_, bits)) => *bits |= bit,
            None => table.push((anchor, bit)),
        };
        for (i, rule) in RULES.iter().enumerate() {
            for anchor in rule.anchors {
                add(anchor, 1 << i);
            }
        }
        for anchor in UNIT_EVENT_ANCHORS {
            add(anchor, UNIT_EVENT_BIT);
        }
        table
    })
}

pub(super) fn anchors() -> &'static AhoCorasick {
    static ANCHORS_AC: OnceLock<AhoCorasick> = OnceLock::new();
    // A contiguous NFA: a few KiB where the default DFA takes about 1 MiB
    // of the agent's RSS; the SIMD prefilter does the searching either way.
    ANCHORS_AC.get_or_init(|| {
        aho_corasick::AhoCorasickBuilder::new()
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(anchor_table().iter().map(|(a, _)| a))
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
    /// For each needle (pattern id): the anchors holding it, where, and the
    /// rules each dispatches to.
    owners: Vec<Vec<(&'static [u8], usize, Dispatch)>>,
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
            let mut owners: Vec<Vec<(&'static [u8], usize, Dispatch)>> = Vec::new();
            for &(anchor, dispatch) in anchor_table() {
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
                    owners[id].push((anchor, at, dispatch));
                } else {
                    needles.push(needle);
                    owners.push(vec![(anchor, at, dispatch)]);
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
    pub(super) fn find(&self, block: &[u8], from: usize) -> Option<usize> {
        self.find_with(block, from).map(|(at, _)| at)
    }

    /// Start of the first anchor in `block[from..]`, and its rules.
    pub(super) fn find_with(&self, block: &[u8], start_at: usize) -> Option<(usize, Dispatch)> {
        let mut from = start_at;
        let Some(searcher) = &self.searcher else {
            // No Teddy on this CPU: the automaton.
            let m = anchors().find(aho_corasick::Input::new(block).span(start_at..block.len()))?;
            return Some((m.start(), anchor_table()[m.pattern().as_usize()].1));
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
            let mut found: Option<(usize, Dispatch)> = None;
            for &(anchor, offset, dispatch) in &self.owners[m.pattern().as_usize()] {
                if at >= offset + start_at && block[at - offset..].starts_with(anchor) {
                    let start = at - offset;
                    found = match found {
                        Some((s, d)) if s == start => Some((s, d | dispatch)),
                        Some((s, d)) if s < start => Some((s, d)),
                        _ => Some((start, dispatch)),
                    };
                }
            }
            if found.is_some() {
                return found;
            }
            // Needles are all NEEDLE bytes long and distinct: the next one
            // may start at the next byte.
            from = at + 1;
        }
    }

    /// The rules of every anchor in `text[from..]` (one line: a few needles).
    pub(super) fn dispatch(&self, text: &[u8], mut from: usize) -> Dispatch {
        let mut bits = 0;
        while let Some((at, dispatch)) = self.find_with(text, from) {
            bits |= dispatch;
            from = at + 1;
        }
        bits
    }
}
