//! The anchors: fixed byte strings at least one of which every rule needs,
//! and the finder that looks for them in blocks of log lines at the speed of
//! a vectorised scan (aho-corasick's Teddy, with its automaton as fallback).
//! Lines without an anchor are never taken apart; a rule added to a family
//! needs its anchor here (`tests.rs` checks the finder against the
//! automaton).

use std::sync::{LazyLock, OnceLock};

use aho_corasick::AhoCorasick;

use super::catalogue::{Catalogue, CATALOGUE_BIT};
use super::grams::is_common;
use super::needles::NEEDLES;
use super::rules::{Dispatch, RULES, UNIT_EVENT_ANCHORS, UNIT_EVENT_BIT, UNIT_OK_ANCHORS};

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
        let mut index: std::collections::HashMap<&'static str, usize> =
            std::collections::HashMap::new();
        let mut add = |anchor: &'static str, bit: Dispatch| {
            if let Some(&i) = index.get(anchor) {
                table[i].1 |= bit;
            } else {
                index.insert(anchor, table.len());
                table.push((anchor, bit));
            }
        };
        for (i, rule) in RULES.iter().enumerate() {
            for anchor in rule.anchors {
                add(anchor, 1 << i);
            }
        }
        for anchor in UNIT_EVENT_ANCHORS.iter().chain(UNIT_OK_ANCHORS) {
            add(anchor, UNIT_EVENT_BIT);
        }
        // The catalogue's: a line holding one is put to the entries whose
        // anchors it holds (`catalogue.rs`). The finder looks for the
        // first MAX_ANCHOR bytes of a longer one.
        for anchor in Catalogue::get().anchors() {
            add(truncate(anchor, MAX_ANCHOR), CATALOGUE_BIT);
        }
        assert!(table
            .iter()
            .all(|(a, _)| (NEEDLE..=MAX_ANCHOR).contains(&a.len())));
        table
    })
}

/// The first `max` bytes of `text` at most, cut at a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
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
    searchers: Vec<(aho_corasick::packed::Searcher, Vec<Vec<Owner>>)>,
    /// No Teddy on this CPU: the automaton searches instead.
    fallback: bool,
}

/// For each needle: the anchors holding it (bytes, where the needle sits
/// in it, its rules, its index in the anchor table).
type Owners = Vec<Vec<(&'static [u8], usize, Dispatch, usize)>>;

/// An anchor holding a needle, as the search checks it: most needles
/// found belong to none of their anchors, and two of the anchor's bytes
/// around the needle (`probes`: where in the anchor, which byte) rule most
/// owners out before a whole comparison.
#[derive(Debug, Clone, Copy)]
struct Owner {
    anchor: &'static [u8],
    /// Where the needle sits in the anchor.
    offset: usize,
    dispatch: Dispatch,
    index: usize,
    probes: [(usize, u8); 2],
}

impl Owner {
    fn new((anchor, offset, dispatch, index): (&'static [u8], usize, Dispatch, usize)) -> Owner {
        let last = anchor.len() - 1;
        // The byte before the needle (after it, for an anchor that opens
        // with it), then the one on its other side (or an end).
        let (first, second) = if offset > 0 {
            (offset - 1, (offset + NEEDLE).min(last))
        } else {
            (NEEDLE.min(last), last)
        };
        Owner {
            anchor,
            offset,
            dispatch,
            index,
            probes: [(first, anchor[first]), (second, anchor[second])],
        }
    }
}

/// An anchor found: where it starts, the rules of every anchor starting
/// there, and which anchor (the first in the table's order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) start: usize,
    pub(super) dispatch: Dispatch,
    pub(super) anchor: usize,
}

impl Found {
    /// The earlier of two finds; at the same place, both anchors' rules.
    fn first(a: Option<Found>, b: Found) -> Found {
        match a {
            Some(a) if a.start == b.start => Found {
                start: a.start,
                dispatch: a.dispatch | b.dispatch,
                anchor: a.anchor.min(b.anchor),
            },
            Some(a) if a.start < b.start => a,
            _ => b,
        }
    }
}

/// What each searcher of an [`AnchorFinder`] found last in a block.
#[derive(Debug, Clone, Default)]
pub(super) struct Memo(Vec<Option<Seen>>);

/// One searcher's last search: from where, to where, and the needle match
/// (where) and anchor it found.
#[derive(Debug, Clone, Copy)]
struct Seen {
    from: usize,
    end: usize,
    hit: Option<(usize, Found)>,
}

/// The anchors of facts a host logs again and again while nothing changes
/// (a container's crash-loop back-off at every pod sync, each DHCP renewal
/// of the same address): a line whose key was read is counted without
/// being read again (`known.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Repeating {
    CrashLoop,
    Lease,
}

const REPEATING_ANCHORS: &[(&str, Repeating)] = &[
    ("CrashLoopBackOff", Repeating::CrashLoop),
    ("new lease, address=", Repeating::Lease),
];

/// Which [`Repeating`] anchor `index` is, if one.
pub(super) fn repeating(index: usize) -> Option<Repeating> {
    static REPEATING: OnceLock<Vec<Option<Repeating>>> = OnceLock::new();
    REPEATING
        .get_or_init(|| {
            anchor_table()
                .iter()
                .map(|(a, _)| {
                    REPEATING_ANCHORS
                        .iter()
                        .find(|(r, _)| r == a)
                        .map(|&(_, kind)| kind)
                })
                .collect()
        })
        .get(index)
        .copied()
        .flatten()
}

/// The rules anchor `index` alone dispatches to.
pub(super) fn dispatch_of(index: usize) -> Dispatch {
    anchor_table().get(index).map_or(0, |&(_, d)| d)
}

/// How many anchors there are (their indexes in [`Found::anchor`]).
pub(super) fn anchor_count() -> usize {
    anchor_table().len()
}

/// Whether anchor `index` says a unit ended well. Asked for every line an
/// anchor stops: a table by index, not a comparison of strings.
pub(super) fn is_unit_ok(index: usize) -> bool {
    static UNIT_OK: OnceLock<Vec<bool>> = OnceLock::new();
    UNIT_OK
        .get_or_init(|| {
            anchor_table()
                .iter()
                .map(|(a, _)| UNIT_OK_ANCHORS.contains(a))
                .collect()
        })
        .get(index)
        .copied()
        .unwrap_or(false)
}

const NEEDLE: usize = 4;
/// Longest anchor: a later searcher looks this far past an earlier one's
/// match for an anchor starting at the same place.
const MAX_ANCHOR: usize = 64;
/// Teddy builds for at most this many patterns.
const NEEDLES_PER_SEARCHER: usize = 64;
/// Teddy is slim (8 buckets, 32 bytes a step with AVX2) up to this many
/// patterns, fat (16 buckets, 16 bytes a step) past it.
const SLIM_TEDDY: usize = 32;
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

/// Needles for the anchors, chosen greedily: each time the 4-byte sequence
/// that best trades anchors covered against rarity (Teddy sifts by the
/// needles' bytes, and a needle common in logs costs a check per
/// occurrence), until every anchor is covered. Past
/// [`NEEDLES_PER_SEARCHER`] needles a second searcher takes the rest: a
/// second pass, but over few and rare needles, cheaper than common ones.
fn choose_needles(table: &[(&'static str, Dispatch)]) -> (Vec<&'static [u8]>, Owners) {
    // Every 4-byte sequence of every anchor, packed into one word to sort
    // cheaply: the gram, the anchor holding it, where.
    let mut keys: Vec<u64> = Vec::with_capacity(table.iter().map(|(a, _)| a.len()).sum());
    for (i, (anchor, _)) in table.iter().enumerate() {
        for (at, g) in anchor.as_bytes().windows(NEEDLE).enumerate() {
            let word = u32::from_le_bytes([g[0], g[1], g[2], g[3]]);
            keys.push(u64::from(word) << 32 | (i as u64) << 8 | at as u64);
        }
    }
    keys.sort_unstable();
    // Candidates: the gram, its fixed score (rarity), the anchors holding
    // it, and how many of those are still uncovered.
    let mut candidates: Vec<(&'static [u8], i64, Vec<usize>, i64)> = Vec::new();
    let mut previous: Option<u32> = None;
    for key in keys {
        let word = (key >> 32) as u32;
        let i = (key >> 8 & 0xff_ffff) as usize;
        let at = (key & 0xff) as usize;
        if previous == Some(word) {
            if let Some(last) = candidates.last_mut() {
                if last.2.last() != Some(&i) {
                    last.2.push(i);
                    last.3 += 1;
                }
            }
            continue;
        }
        previous = Some(word);
        let gram = &table[i].0.as_bytes()[at..at + NEEDLE];
        let rare = gram.iter().map(|&b| i64::from(commonness(b))).sum::<i64>();
        // Two anchors covered are worth about one step of rarity (a blank
        // for a capital letter): measured best on the bench journals
        // (docs/diagnosis.md, "What it costs").
        let common = if is_common(gram) { COVER_WEIGHT } else { 0 };
        candidates.push((gram, -rare - common, vec![i], 1));
    }
    // Which candidates hold each anchor, to update the counts as anchors
    // are covered.
    let mut held_by: Vec<Vec<usize>> = vec![Vec::new(); table.len()];
    for (c, (_, _, holders, _)) in candidates.iter().enumerate() {
        for &i in holders {
            held_by[i].push(c);
        }
    }
    let mut uncovered: Vec<bool> = vec![true; table.len()];
    let mut left = table.len();
    let mut needles: Vec<&'static [u8]> = Vec::new();
    let mut owners: Owners = Vec::new();
    let mut live: Vec<usize> = (0..candidates.len()).collect();
    while left > 0 {
        live.retain(|&c| candidates[c].3 > 0);
        let best = live
            .iter()
            .copied()
            .max_by_key(|&c| {
                let (gram, score, _, covers) = &candidates[c];
                (
                    covers * COVER_WEIGHT + score,
                    *covers,
                    std::cmp::Reverse(*gram),
                )
            })
            .expect("an uncovered anchor has a gram");
        let needle = candidates[best].0;
        let mut held = Vec::new();
        for k in 0..candidates[best].2.len() {
            let i = candidates[best].2[k];
            if !uncovered[i] {
                continue;
            }
            let (anchor, dispatch) = table[i];
            let at = memchr::memmem::find(anchor.as_bytes(), needle).expect("held");
            held.push((anchor.as_bytes(), at, dispatch, i));
            uncovered[i] = false;
            left -= 1;
            for &c in &held_by[i] {
                candidates[c].3 -= 1;
            }
        }
        needles.push(needle);
        owners.push(held);
    }
    (needles, owners)
}

impl AnchorFinder {
    pub(super) fn get() -> &'static AnchorFinder {
        static FINDER: OnceLock<AnchorFinder> = OnceLock::new();
        FINDER.get_or_init(|| AnchorFinder::build(anchor_table(), NEEDLES))
    }

    /// The finder for `table`: the needles of `table_needles` (one
    /// searcher each list, as `needles.rs` holds them), and for the
    /// anchors holding none of them, needles of their own.
    fn build(
        table: &[(&'static str, Dispatch)],
        table_needles: &[&[&'static str]],
    ) -> AnchorFinder {
        let mut lists: Vec<(Vec<&'static [u8]>, Owners)> = Vec::new();
        // Every 4-byte sequence of every anchor, where it first sits, in
        // the anchors' order: a needle's anchors are looked up, not searched
        // for in each anchor (this is built at every start of the agent).
        // Packed into one word each (gram, anchor, place: the order of the
        // triple), which sorts several times faster than the triples.
        let mut packed: Vec<u64> = Vec::new();
        for (i, (anchor, _)) in table.iter().enumerate() {
            for (at, g) in anchor.as_bytes().windows(NEEDLE).enumerate() {
                let gram = u32::from_le_bytes([g[0], g[1], g[2], g[3]]);
                packed.push(u64::from(gram) << 32 | (i as u64) << 8 | at as u64);
            }
        }
        packed.sort_unstable();
        // Each gram once per anchor (its first place): the key without
        // the place is the gram and the anchor. Kept packed: a copy as
        // triples would triple the start-up's peak memory.
        packed.dedup_by_key(|k| *k >> 8);
        let unpack = |k: u64| {
            (
                (k >> 32) as u32,
                (k >> 8 & 0xff_ffff) as usize,
                (k & 0xff) as usize,
            )
        };
        // The needles chosen and grouped offline (`needles.rs`): each
        // anchor belongs to the first needle it holds.
        let mut covered = vec![false; table.len()];
        for list in table_needles {
            let needles: Vec<&'static [u8]> = list.iter().map(|n| n.as_bytes()).collect();
            let mut owners: Owners = vec![Vec::new(); needles.len()];
            for (p, needle) in needles.iter().enumerate() {
                if let Some(q) = needles[..p].iter().position(|n| n == needle) {
                    // A copy padding a bucket: the original's anchors.
                    let original = owners[q].clone();
                    owners[p] = original;
                    continue;
                }
                let Ok(word) = <[u8; NEEDLE]>::try_from(*needle).map(u32::from_le_bytes) else {
                    continue;
                };
                let first = packed.partition_point(|&k| ((k >> 32) as u32) < word);
                for (_, i, at) in packed[first..]
                    .iter()
                    .map(|&k| unpack(k))
                    .take_while(|&(g, _, _)| g == word)
                {
                    if !covered[i] {
                        let (anchor, dispatch) = table[i];
                        owners[p].push((anchor.as_bytes(), at, dispatch, i));
                        covered[i] = true;
                    }
                }
            }
            lists.push((needles, owners));
        }
        // Anchors added since the table was written, and the catalogue's
        // that hold none of its needles: needles of their own, first in the
        // room the table's searchers have left (no extra pass over the
        // bytes), then in searchers after those.
        let rest: Vec<usize> = (0..table.len()).filter(|&i| !covered[i]).collect();
        if !rest.is_empty() {
            let sub: Vec<(&'static str, Dispatch)> = rest.iter().map(|&i| table[i]).collect();
            let (needles, mut owners) = choose_needles(&sub);
            for held in &mut owners {
                for owner in held.iter_mut() {
                    owner.3 = rest[owner.3];
                }
            }
            let mut chosen = needles.into_iter().zip(owners);
            for (list, list_owners) in &mut lists {
                // Past SLIM_TEDDY needles Teddy turns fat (16 buckets, half
                // the bytes a step): a slim searcher is filled to that.
                let room = if list.len() <= SLIM_TEDDY {
                    SLIM_TEDDY
                } else {
                    NEEDLES_PER_SEARCHER
                };
                while list.len() < room {
                    let Some((needle, held)) = chosen.next() else {
                        break;
                    };
                    list.push(needle);
                    list_owners.push(held);
                }
            }
            let left: Vec<_> = chosen.collect();
            for chunk in left.chunks(NEEDLES_PER_SEARCHER) {
                lists.push(chunk.iter().cloned().unzip());
            }
        }
        let mut searchers = Vec::new();
        for (needles, owners) in lists {
            let built = aho_corasick::packed::Config::new()
                .builder()
                .extend(&needles)
                .build();
            match built {
                Some(searcher) => searchers.push((
                    searcher,
                    owners
                        .into_iter()
                        .map(|held| held.into_iter().map(Owner::new).collect())
                        .collect(),
                )),
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
    }

    /// A finder from other needle lists than `needles.rs` (tests: the path
    /// of anchors that hold none of the table's needles).
    #[cfg(test)]
    pub(super) fn built_with(table_needles: &[&[&'static str]]) -> AnchorFinder {
        AnchorFinder::build(anchor_table(), table_needles)
    }

    /// A finder for `extra` anchors beside the table's (tests: where the
    /// needles of anchors outside `needles.rs` go).
    #[cfg(test)]
    pub(super) fn built_with_extra(extra: &[&'static str]) -> AnchorFinder {
        let mut table = anchor_table().to_vec();
        table.extend(extra.iter().map(|&a| (a, CATALOGUE_BIT)));
        AnchorFinder::build(&table, NEEDLES)
    }

    /// The anchors, the rules' and the catalogue's, that hold no needle of
    /// the table written offline (`needles.rs`): the start-up gives them
    /// needles of their own, which costs a searcher (one more pass over
    /// every byte) once the table's have no room left, so the table should
    /// be written again.
    #[cfg(test)]
    pub(super) fn anchors_without_a_table_needle() -> Vec<&'static str> {
        anchor_table()
            .iter()
            .map(|(a, _)| *a)
            .filter(|a| !NEEDLES.iter().flat_map(|l| l.iter()).any(|n| a.contains(n)))
            .collect()
    }

    /// How many needles each searcher holds (one pass over the bytes each).
    #[cfg(test)]
    pub(super) fn searcher_sizes(&self) -> Vec<usize> {
        self.searchers
            .iter()
            .map(|(_, owners)| owners.len())
            .collect()
    }

    /// Start of the first anchor in `block[from..]`.
    pub(super) fn find(&self, block: &[u8], from: usize) -> Option<usize> {
        self.find_with(block, from).map(|f| f.start)
    }

    /// The first anchor in `block[start_at..]`.
    pub(super) fn find_with(&self, block: &[u8], start_at: usize) -> Option<Found> {
        self.find_memo(block, start_at, &mut Memo::default())
    }

    /// [`AnchorFinder::find_with`] going on through one block: `memo` keeps
    /// what each searcher found last in it, so the bytes a searcher passed
    /// on its way to a needle beyond another searcher's nearer find are not
    /// scanned again by the next search. A memo serves one block only.
    pub(super) fn find_memo(
        &self,
        block: &[u8],
        start_at: usize,
        memo: &mut Memo,
    ) -> Option<Found> {
        if self.fallback {
            // No Teddy on this CPU: the automaton.
            let m = anchors().find(aho_corasick::Input::new(block).span(start_at..block.len()))?;
            let anchor = m.pattern().as_usize();
            return Some(Found {
                start: m.start(),
                dispatch: anchor_table()[anchor].1,
                anchor,
            });
        }
        if memo.0.len() != self.searchers.len() {
            memo.0 = vec![None; self.searchers.len()];
        }
        let mut best: Option<Found> = None;
        for ((searcher, owners), last) in self.searchers.iter().zip(memo.0.iter_mut()) {
            // A later searcher only looks as far as an earlier one found.
            let end = best.map_or(block.len(), |f| (f.start + MAX_ANCHOR).min(block.len()));
            let mut from = start_at;
            // What this searcher found last, from at most `start_at`: a
            // needle match before its find held no anchor starting at or
            // after `start_at`, nor did one before the end it searched to.
            if let Some(seen) = last.filter(|seen| seen.from <= start_at) {
                match seen.hit {
                    Some((at, found)) if at + NEEDLE <= end && found.start >= start_at => {
                        best = Some(Found::first(best, found));
                        continue;
                    }
                    Some((at, _)) if at + NEEDLE <= end => from = from.max(at),
                    // Its find lies past `end`: nothing before it.
                    Some(_) => continue,
                    None if end <= seen.end => continue,
                    None => from = from.max(seen.end.saturating_sub(NEEDLE - 1)),
                }
            }
            let mut hit = None;
            while from < end {
                let Some(m) = searcher.find_in(block, aho_corasick::Span { start: from, end })
                else {
                    break;
                };
                let at = m.start();
                let mut found: Option<Found> = None;
                for owner in &owners[m.pattern().as_usize()] {
                    let Some(start) = at.checked_sub(owner.offset).filter(|&s| s >= start_at)
                    else {
                        continue;
                    };
                    let Some(window) = block.get(start..start + owner.anchor.len()) else {
                        continue;
                    };
                    let [(p, byte), (q, other)] = owner.probes;
                    if window[p] == byte && window[q] == other && window == owner.anchor {
                        let here = Found {
                            start,
                            dispatch: owner.dispatch,
                            anchor: owner.index,
                        };
                        found = Some(Found::first(found, here));
                    }
                }
                if let Some(here) = found {
                    best = Some(Found::first(best, here));
                    hit = Some((at, here));
                    break;
                }
                // Needles are all NEEDLE bytes long and distinct: the next
                // one may start at the next byte.
                from = at + 1;
            }
            *last = Some(Seen {
                from: start_at,
                end,
                hit,
            });
        }
        best
    }

    /// The rules of every anchor in `block[start..end]` (one line) whose
    /// needle lies at or after `from`, each needle found checked against
    /// all of its anchors. [`Self::find_memo`] stops at a needle's first
    /// anchor, so an anchor starting at or before one found, its needle
    /// further on in the same searcher, would be passed over by a search
    /// going on past that find. An anchor whose needle lies before the
    /// line's first find ends before it, and would have been found first:
    /// the scanner starts at that find.
    pub(super) fn line_dispatch(
        &self,
        block: &[u8],
        (start, from): (usize, usize),
        end: usize,
    ) -> Dispatch {
        let mut bits = 0;
        if self.fallback {
            for m in anchors().find_overlapping_iter(&block[start..end]) {
                bits |= anchor_table()[m.pattern().as_usize()].1;
            }
            return bits;
        }
        for (searcher, owners) in &self.searchers {
            let mut from = from;
            while from < end {
                let Some(m) = searcher.find_in(block, aho_corasick::Span { start: from, end })
                else {
                    break;
                };
                let at = m.start();
                for owner in &owners[m.pattern().as_usize()] {
                    let Some(first) = at.checked_sub(owner.offset).filter(|&s| s >= start) else {
                        continue;
                    };
                    let Some(window) = block.get(first..first + owner.anchor.len()) else {
                        continue;
                    };
                    let [(p, byte), (q, other)] = owner.probes;
                    if window[p] == byte && window[q] == other && window == owner.anchor {
                        bits |= owner.dispatch;
                    }
                }
                from = at + 1;
            }
        }
        bits
    }

    /// The rules of every anchor in `text[from..]` (one line: a few needles).
    pub(super) fn dispatch(&self, text: &[u8], from: usize) -> Dispatch {
        self.line_dispatch(text, (from, from), text.len())
    }
}
