//! The anchors: fixed byte strings at least one of which every rule needs,
//! and the finder that looks for them in blocks of log lines at the speed of
//! a vectorised scan (aho-corasick's Teddy, with its automaton as fallback).
//! Lines without an anchor are never taken apart; a rule added to a family
//! needs its anchor here (`tests.rs` checks the finder against the
//! automaton).

use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;

use super::grams::COMMON_4GRAMS;
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
        assert!(table
            .iter()
            .all(|(a, _)| (NEEDLE..=MAX_ANCHOR).contains(&a.len())));
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
/// scan. The automaton above has no useful prefilter for this many patterns
/// (its Teddy fingerprint is their first bytes, shared by most log text) and
/// walks every byte at about 100 MB/s; here aho-corasick's packed (Teddy)
/// searcher looks for 4-byte needles that together cover every anchor
/// ([`choose_needles`]), and a needle found is checked against the anchors
/// it was taken from. Teddy holds at most [`NEEDLES_PER_SEARCHER`] needles:
/// past that a second searcher (a second pass over every byte) is built.
pub(super) struct AnchorFinder {
    /// Each searcher with, for each of its needles (pattern id), the
    /// anchors holding it, where, and the rules each dispatches to.
    searchers: Vec<(aho_corasick::packed::Searcher, Owners)>,
    /// No Teddy on this CPU: the automaton searches instead.
    fallback: bool,
}

type Owners = Vec<Vec<(&'static [u8], usize, Dispatch)>>;

const NEEDLE: usize = 4;
/// Longest anchor: a later searcher looks this far past an earlier one's
/// match for an anchor starting at the same place.
const MAX_ANCHOR: usize = 64;
/// Teddy builds for at most this many patterns.
const NEEDLES_PER_SEARCHER: usize = 64;
/// What covering one more anchor is worth against the needle's rarity
/// score ([`commonness`] summed over its bytes).
const COVER_WEIGHT: i64 = 2;

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

/// Whether a 4-byte sequence is among the commonest of a healthy journal.
fn is_common(gram: &[u8]) -> bool {
    let word = u32::from_le_bytes([gram[0], gram[1], gram[2], gram[3]]);
    COMMON_4GRAMS.binary_search(&word).is_ok()
}

/// Needles for the anchors, chosen greedily: each time the 4-byte sequence
/// that best trades anchors covered against rarity (Teddy sifts by the
/// needles' bytes, and a needle common in logs costs a check per
/// occurrence), until every anchor is covered. Past
/// [`NEEDLES_PER_SEARCHER`] needles a second searcher takes the rest: a
/// second pass, but over few and rare needles, cheaper than common ones.
fn choose_needles(table: &[(&'static str, Dispatch)]) -> (Vec<&'static [u8]>, Owners) {
    // Every 4-byte sequence of every anchor, with the anchors holding it.
    let mut grams: Vec<(&'static [u8], usize)> = table
        .iter()
        .enumerate()
        .flat_map(|(i, (anchor, _))| anchor.as_bytes().windows(NEEDLE).map(move |g| (g, i)))
        .collect();
    grams.sort_unstable();
    grams.dedup();
    let mut candidates: Vec<(&'static [u8], Vec<usize>)> = Vec::new();
    for (gram, i) in grams {
        match candidates.last_mut() {
            Some((g, holders)) if *g == gram => holders.push(i),
            _ => candidates.push((gram, vec![i])),
        }
    }
    let mut uncovered: Vec<bool> = vec![true; table.len()];
    let mut needles: Vec<&'static [u8]> = Vec::new();
    let mut owners: Owners = Vec::new();
    while uncovered.iter().any(|&u| u) {
        let best = (0..candidates.len())
            .max_by_key(|&c| {
                let (gram, holders) = &candidates[c];
                let covers = holders.iter().filter(|&&i| uncovered[i]).count();
                let rare = gram.iter().map(|&b| commonness(b)).sum::<u32>();
                // Two anchors covered are worth about one step of rarity (a
                // blank for a capital letter): measured best on the bench
                // journals (docs/diagnosis.md, "What it costs").
                let common = if is_common(gram) { COVER_WEIGHT } else { 0 };
                (
                    i64::try_from(covers)
                        .unwrap_or(i64::MAX)
                        .saturating_mul(COVER_WEIGHT)
                        - i64::from(rare)
                        - common,
                    covers,
                    std::cmp::Reverse(*gram),
                )
            })
            .expect("an uncovered anchor has a gram");
        let (needle, holders) = candidates.swap_remove(best);
        let mut held = Vec::new();
        for i in holders {
            if uncovered[i] {
                let (anchor, dispatch) = table[i];
                let at = memchr::memmem::find(anchor.as_bytes(), needle).expect("held");
                held.push((anchor.as_bytes(), at, dispatch));
                uncovered[i] = false;
            }
        }
        needles.push(needle);
        owners.push(held);
        candidates.retain(|(_, holders)| holders.iter().any(|&i| uncovered[i]));
    }
    (needles, owners)
}

impl AnchorFinder {
    pub(super) fn get() -> &'static AnchorFinder {
        static FINDER: OnceLock<AnchorFinder> = OnceLock::new();
        FINDER.get_or_init(|| {
            let (needles, owners) = choose_needles(anchor_table());
            let mut searchers = Vec::new();
            for (chunk, chunk_owners) in needles
                .chunks(NEEDLES_PER_SEARCHER)
                .zip(owners.chunks(NEEDLES_PER_SEARCHER))
            {
                let built = aho_corasick::packed::Config::new()
                    .builder()
                    .extend(chunk)
                    .build();
                match built {
                    Some(searcher) => searchers.push((searcher, chunk_owners.to_vec())),
                    None => {
                        return AnchorFinder {
                            searchers: Vec::new(),
                            fallback: true,
                        }
                    }
                }
            }
            AnchorFinder {
                searchers,
                fallback: false,
            }
        })
    }

    /// Start of the first anchor in `block[from..]`.
    pub(super) fn find(&self, block: &[u8], from: usize) -> Option<usize> {
        self.find_with(block, from).map(|(at, _)| at)
    }

    /// Start of the first anchor in `block[start_at..]`, and its rules.
    pub(super) fn find_with(&self, block: &[u8], start_at: usize) -> Option<(usize, Dispatch)> {
        if self.fallback {
            // No Teddy on this CPU: the automaton.
            let m = anchors().find(aho_corasick::Input::new(block).span(start_at..block.len()))?;
            return Some((m.start(), anchor_table()[m.pattern().as_usize()].1));
        }
        let mut best: Option<(usize, Dispatch)> = None;
        for (searcher, owners) in &self.searchers {
            // A later searcher only looks as far as an earlier one found.
            let end = best.map_or(block.len(), |(s, _)| (s + MAX_ANCHOR).min(block.len()));
            let mut from = start_at;
            while from < end {
                let Some(m) = searcher.find_in(block, aho_corasick::Span { start: from, end })
                else {
                    break;
                };
                let at = m.start();
                let mut found: Option<(usize, Dispatch)> = None;
                for &(anchor, offset, dispatch) in &owners[m.pattern().as_usize()] {
                    if at >= offset + start_at && block[at - offset..].starts_with(anchor) {
                        let start = at - offset;
                        found = match found {
                            Some((s, d)) if s == start => Some((s, d | dispatch)),
                            Some((s, d)) if s < start => Some((s, d)),
                            _ => Some((start, dispatch)),
                        };
                    }
                }
                if let Some((start, dispatch)) = found {
                    best = match best {
                        Some((s, d)) if s == start => Some((s, d | dispatch)),
                        Some((s, d)) if s < start => Some((s, d)),
                        _ => Some((start, dispatch)),
                    };
                    break;
                }
                // Needles are all NEEDLE bytes long and distinct: the next
                // one may start at the next byte.
                from = at + 1;
            }
        }
        best
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
