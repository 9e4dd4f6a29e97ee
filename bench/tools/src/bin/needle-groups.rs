//! Writes `src/diagnose/needles.rs`: the needles the diagnosis engine's
//! anchor finder sifts every byte for, and how they are grouped into
//! aho-corasick's Teddy buckets (docs/diagnosis.md, "Dispatch by anchor").
//!
//! Teddy flags a place when, for each of a needle's first 4 bytes, the
//! byte's low and high nibbles are both among the nibbles that the needles
//! of one bucket have at that position; each flag is checked against the
//! bucket's needles, and a needle found is checked against its anchors.
//! What the scan costs is therefore mostly those checks, and they depend on
//! which needles are chosen and which share a bucket, not on how many bytes
//! there are. This tool picks both on sample text:
//!
//! 1. needles: a set cover of the anchors by their 4-byte sequences,
//!    greedily by (occurrences in the samples + `PRIOR` per MiB) / anchors
//!    newly covered: rare sequences, but few enough for two searchers (two
//!    fat ones of 16 buckets, 4 needles a bucket);
//! 2. buckets: each needle, commonest first, to the bucket where it adds
//!    the fewest simulated checks on the samples, then a deterministic
//!    local search moving needles between buckets.
//!
//! Teddy puts pattern `i` into bucket `B - 1 - i % B` (unless an earlier
//! pattern has the same low nibbles in its first bytes: then that one's
//! bucket), so the needles are written in that order; a bucket with fewer
//! needles is padded with a copy of an earlier needle (same bucket as the
//! original, nothing new to flag).
//!
//! Samples: journal-gen's three shapes and the healthy excerpts of the real
//! corpus, which are real text:
//!
//!   for s in generated busy worst; do
//!     target/release/journal-gen --shape $s --bytes 1048576 --seed 7 -o /tmp/$s.log
//!   done
//!   target/release/needle-groups /tmp/generated.log /tmp/busy.log /tmp/worst.log \
//!     tests/fixtures/diagnosis/real/healthy/*.txt > src/diagnose/needles.rs
//!
//! Run it again when anchors change (a test in `src/diagnose/tests.rs`
//! fails while an anchor holds no needle of the table; the engine stays
//! right meanwhile, through a slower searcher for the uncovered anchors).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;

use anyhow::Context as _;
use assisted_boot_reporter::diagnose::ANCHORS;

/// The searchers: buckets each (Teddy's fat AVX2 searcher has 16, the slim
/// one 8) and at most 4 needles a bucket (64 and 32 patterns: Teddy's
/// limit, and about as many as keep its flags rare). Two fat ones: with the
/// catalogue's anchors, 96 needles had to be common 4-byte sequences (a fat
/// and a slim searcher cost more than two fat ones with rarer needles:
/// docs/benchmarks.md, section 3b).
const SEARCHERS: [usize; 2] = [16, 16];

/// The searchers' buckets: [`SEARCHERS`], or `NEEDLE_SEARCHERS` (buckets
/// each, comma-separated: `16,8,8` trades a third pass for rarer needles).
fn searchers() -> Vec<usize> {
    std::env::var("NEEDLE_SEARCHERS")
        .ok()
        .and_then(|v| v.split(',').map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| SEARCHERS.to_vec())
}
const PER_BUCKET: usize = 4;
/// What a bucket's flag costs (instructions, roughly): the flag itself,
/// and each needle of the bucket compared.
const FLAG: f64 = 12.0;
const PER_NEEDLE: f64 = 6.0;
/// A needle found that is not one of its anchors: returning from the
/// search, checking its anchors, starting again.
const FALSE_HIT: f64 = 250.0;
/// Occurrences per MiB of sample added to every needle in the cover: the
/// larger, the fewer needles (`NEEDLE_PRIOR_PER_MIB` overrides it).
const PRIOR_PER_MIB: f64 = 200.0;
const MOVES: usize = 6000;

type Gram = [u8; 4];

/// A count as a float (sample sizes stay far below 2^52).
#[allow(clippy::cast_precision_loss)]
fn float(n: usize) -> f64 {
    n as f64
}

fn float64(n: u64) -> f64 {
    float(usize::try_from(n).unwrap_or(usize::MAX))
}

struct Sample {
    lo: Vec<u8>,
    hi: Vec<u8>,
}

impl Sample {
    /// Places the needles of one bucket flag.
    fn flags(&self, bucket: &[Gram]) -> u64 {
        if bucket.is_empty() {
            return 0;
        }
        let (mut lo, mut hi) = ([0u16; 4], [0u16; 4]);
        for g in bucket {
            for i in 0..4 {
                lo[i] |= 1 << (g[i] & 15);
                hi[i] |= 1 << (g[i] >> 4);
            }
        }
        let n = self.lo.len().saturating_sub(3);
        let mut count = 0;
        'place: for p in 0..n {
            for i in 0..4 {
                if (lo[i] >> self.lo[p + i]) & (hi[i] >> self.hi[p + i]) & 1 == 0 {
                    continue 'place;
                }
            }
            count += 1;
        }
        count
    }
}

fn main() -> anyhow::Result<()> {
    let mut text = Vec::new();
    for path in std::env::args().skip(1) {
        text.extend(std::fs::read(&path).with_context(|| format!("reading {path}"))?);
        text.push(b'\n');
    }
    anyhow::ensure!(!text.is_empty(), "usage: needle-groups SAMPLE...");
    let sample = Sample {
        lo: text.iter().map(|b| b & 15).collect(),
        hi: text.iter().map(|b| b >> 4).collect(),
    };
    let anchors: Vec<&[u8]> = ANCHORS.iter().map(|a| a.as_bytes()).collect();
    let mut holders: BTreeMap<Gram, Vec<usize>> = BTreeMap::new();
    for (i, anchor) in anchors.iter().enumerate() {
        for w in anchor.windows(4) {
            let held = holders.entry([w[0], w[1], w[2], w[3]]).or_default();
            if held.last() != Some(&i) {
                held.push(i);
            }
        }
    }
    let mut seen: BTreeMap<Gram, u64> = holders.keys().map(|g| (*g, 0)).collect();
    for w in text.windows(4) {
        if let Some(n) = seen.get_mut(&[w[0], w[1], w[2], w[3]]) {
            *n += 1;
        }
    }

    // 1. The cover.
    let prior_per_mib = std::env::var("NEEDLE_PRIOR_PER_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(PRIOR_PER_MIB);
    let prior = prior_per_mib * float(text.len()) / f64::from(1u32 << 20);
    let mut uncovered: BTreeSet<usize> = (0..anchors.len()).collect();
    let mut needles: Vec<Gram> = Vec::new();
    while !uncovered.is_empty() {
        let (_, best) = holders
            .iter()
            .filter_map(|(g, held)| {
                let new = held.iter().filter(|i| uncovered.contains(i)).count();
                (new > 0).then(|| ((float64(seen[g]) + prior) / float(new), *g))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .context("an anchor shorter than 4 bytes")?;
        for i in &holders[&best] {
            uncovered.remove(i);
        }
        needles.push(best);
    }
    let searchers = searchers();
    let buckets: usize = searchers.iter().sum();
    anyhow::ensure!(
        needles.len() <= buckets * PER_BUCKET,
        "{} needles do not fit {} buckets: raise PRIOR_PER_MIB",
        needles.len(),
        buckets
    );

    // 2. The buckets.
    let cost =
        |bucket: &[Gram], flags: u64| float64(flags) * (FLAG + PER_NEEDLE * float(bucket.len()));
    let mut groups: Vec<Vec<Gram>> = vec![Vec::new(); buckets];
    let mut flags: Vec<u64> = vec![0; buckets];
    let mut order = needles.clone();
    order.sort_by_key(|g| (std::cmp::Reverse(seen[g]), *g));
    for g in order {
        let mut best = (f64::INFINITY, 0, 0);
        for b in 0..buckets {
            if groups[b].len() >= PER_BUCKET {
                continue;
            }
            let mut with = groups[b].clone();
            with.push(g);
            let f = sample.flags(&with);
            let added = cost(&with, f) - cost(&groups[b], flags[b]);
            if added < best.0 {
                best = (added, b, f);
            }
        }
        groups[best.1].push(g);
        flags[best.1] = best.2;
    }
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut pick = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        usize::try_from(state % u64::try_from(n).unwrap_or(1)).unwrap_or(0)
    };
    for _ in 0..MOVES {
        let (from, to) = (pick(buckets), pick(buckets));
        if from == to || groups[from].is_empty() || groups[to].len() >= PER_BUCKET {
            continue;
        }
        let k = pick(groups[from].len());
        let mut a = groups[from].clone();
        let g = a.remove(k);
        let mut b = groups[to].clone();
        b.push(g);
        let (fa, fb) = (sample.flags(&a), sample.flags(&b));
        if cost(&a, fa) + cost(&b, fb)
            < cost(&groups[from], flags[from]) + cost(&groups[to], flags[to])
        {
            groups[from] = a;
            groups[to] = b;
            flags[from] = fa;
            flags[to] = fb;
        }
    }
    let checks: f64 = groups
        .iter()
        .zip(&flags)
        .map(|(g, f)| cost(g, *f))
        .sum::<f64>()
        + needles
            .iter()
            .map(|g| float64(seen[g]) * FALSE_HIT)
            .sum::<f64>();

    // The source, in Teddy's pattern order.
    let mut out = String::new();
    out.push_str(
        "//! The anchor finder's needles, grouped for aho-corasick's Teddy buckets\n\
         //! (one searcher each list, a needle's place decides its bucket; a repeated\n\
         //! needle pads a bucket). Written by `bench/tools` `needle-groups` from\n\
         //! journal-gen's journals and the healthy excerpts of the real corpus:\n\
         //! docs/diagnosis.md, \"Dispatch by anchor\".\n\n",
    );
    let _ = writeln!(
        out,
        "// {} needles for {} anchors; simulated checks {:.2} per sample byte.",
        needles.len(),
        anchors.len(),
        checks / float(text.len())
    );
    out.push_str("#[rustfmt::skip]\npub(super) const NEEDLES: &[&[&str]] = &[\n");
    let mut first = 0;
    for &count in &searchers {
        let mut queues: Vec<VecDeque<Gram>> = groups[first..first + count]
            .iter()
            .map(|g| g.iter().copied().collect())
            .collect();
        first += count;
        let total: usize = queues.iter().map(VecDeque::len).sum();
        let (mut placed, mut i) = (0, 0);
        let mut list: Vec<Gram> = Vec::new();
        while placed < total {
            let b = count - 1 - i % count;
            if let Some(g) = queues[b].pop_front() {
                list.push(g);
                placed += 1;
            } else {
                // An earlier needle again: its own bucket, no new flag.
                let again = *list.first().context("the first bucket is empty")?;
                list.push(again);
            }
            i += 1;
        }
        out.push_str("    &[\n");
        for g in list {
            let _ = writeln!(out, "        {:?},", String::from_utf8_lossy(&g));
        }
        out.push_str("    ],\n");
    }
    out.push_str("];\n");
    print!("{out}");
    Ok(())
}
