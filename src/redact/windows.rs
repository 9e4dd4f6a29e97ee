//! Finding the literal forms of the agent's own secrets by sampling: at
//! every `step`th byte of the content the [`WINDOW`] bytes there are looked
//! up in a set of windows of every form, and a hit is checked and extended
//! against its form by the caller. The set holds each form's windows at
//! every `stride`th offset; `step` and `stride` are coprime with
//! `step * stride <= STEP`, so a run of `WINDOW + STEP - 1` bytes of a form
//! holds, at some sampled position, a window of the set whole (the Chinese
//! remainder theorem picks it), and every fragment that long is found.
//! Usually the stride is 1 and a sample is taken every 12 bytes, at the
//! cost of one multiply and one test of two bits in one word (a blocked
//! Bloom filter) per sample, in a loop that reads each sampled window once.
//! Past a few hundred thousand windows (a pull secret of hundreds of
//! auths) the stride grows and the step shrinks: memory stays ~8 bytes
//! per window kept, and the cost moves to the sampling.
//!
//! Windows are compared case-folded (`fold`), so one window stands for hex
//! in either case; the caller checks the exact bytes.

/// Bytes compared at each sample (one `u64`).
pub(super) const WINDOW: usize = 8;
/// Largest distance between samples (at stride 1).
pub(super) const STEP: usize = 12;
/// Shortest run of a form that sampling is sure to find.
pub(super) const SURE: usize = WINDOW + STEP - 1;

/// `(step, stride)` pairs, densest index first: coprime, `step * stride`
/// at most [`STEP`].
const LAYOUTS: [(usize, usize); 4] = [(STEP, 1), (4, 3), (2, 5), (1, 12)];
const _: () = {
    let mut i = 0;
    while i < LAYOUTS.len() {
        assert!(LAYOUTS[i].0 * LAYOUTS[i].1 <= STEP);
        i += 1;
    }
};
/// Windows kept before a sparser layout is chosen: 4 MiB of entries.
const MAX_DENSE_ENTRIES: usize = 512 * 1024;

/// Multiplicative hashing: the top bits of the first product pick a word
/// of the filter and two bits in it (the filter is blocked: one load per
/// sample); the second gives an entry's fingerprint.
const MULTIPLIERS: [u64; 2] = [0x9E37_79B9_7F4A_7C15, 0x1656_67B1_9E37_79F9];
/// Filter bits per window: with two bits in one word, about 1 sample of
/// journal text in 1,000 passes the filter to a lookup (docs/benchmarks.md).
const BITS_PER_WINDOW: usize = 32;
/// A filter this small stays in the core's cache beside the compressor's
/// tables; a larger one makes every sample wait on memory, which costs more
/// than the lookups that fewer bits let through. So a set of a few auths
/// (72,000 windows: 14 bits each, 1 sample in 100 passing) keeps its filter
/// at this size; one that would have fewer than [`MIN_CACHED_BITS_PER_WINDOW`]
/// bits a window in it is sized as before (docs/benchmarks.md, section 10).
const CACHED_BITS: usize = 1 << 20;
const MIN_CACHED_BITS_PER_WINDOW: usize = 8;
/// Filter size bounds: a few cache lines, and 1 MiB (past 260,000 windows
/// more samples pass, each to a directory lookup).
const MIN_BITS: usize = 1 << 12;
const MAX_BITS: usize = 1 << 23;
/// Entries per directory bucket, on average.
const BUCKET: usize = 8;
/// Most forms a sample's window is checked against one by one. A window
/// more forms share is common to that many secrets (the base64 of one user
/// name in each of its robots' auths) or repeats in one (a run of one
/// character): its places are sorted by what follows the window in each,
/// and again by what precedes it, and a sample checks only the two nearest
/// the content's in each order (the one it continues, if any): together
/// they reach as far each way as any place would. Otherwise a sample there
/// would extend a run in each of thousands of forms, and push as many
/// spans. Above the few forms one secret shares a window between (literal,
/// URL-encoded, JSON-escaped, `user:password` and the password).
const MAX_SHARED: usize = 16;
/// Bytes of a continuation (or of what precedes a window) compared.
pub(super) const CONTINUATION: usize = 64;

/// The places of a window shared by more than [`MAX_SHARED`] forms:
/// `start..end` of the sorted entries, in order of continuation, and where
/// the same places start in [`WindowSet::by_precedent`].
#[derive(Debug, Clone, Copy)]
struct SharedWindow {
    start: u32,
    end: u32,
    by_precedent: u32,
}

#[derive(Debug)]
pub(super) struct WindowSet {
    /// Two bits per window (a Bloom filter): almost every sample stops here.
    filter: Vec<u64>,
    /// Right shift of the product that leaves the filter's bit index (its
    /// word and a first bit; the 6 bits below give the second bit).
    shift: u32,
    /// While the set is built: each window's fingerprint (high half) and
    /// its position in the concatenation of all forms (low half).
    building: Vec<u64>,
    /// Every window kept, sorted by fingerprint: the 8 bits of it after
    /// its bucket's, and its position. 5 bytes a window, where the pairs
    /// above take 8.
    tags: Vec<u8>,
    positions: Vec<u32>,
    /// Where the windows whose fingerprint starts with each `dir_bits`
    /// bits start (and, last, the end).
    directory: Vec<u32>,
    /// Each window shared by more than [`MAX_SHARED`] forms, its entries
    /// sorted by continuation.
    shared: Vec<SharedWindow>,
    /// The positions of each shared window's entries again, sorted by what
    /// precedes the window (read backwards).
    by_precedent: Vec<u32>,
    dir_bits: u32,
    step: usize,
    stride: usize,
}

impl Default for WindowSet {
    fn default() -> Self {
        WindowSet {
            filter: Vec::new(),
            shift: 64,
            building: Vec::new(),
            tags: Vec::new(),
            positions: Vec::new(),
            directory: Vec::new(),
            shared: Vec::new(),
            by_precedent: Vec::new(),
            dir_bits: 0,
            step: LAYOUTS[0].0,
            stride: LAYOUTS[0].1,
        }
    }
}

/// The window at the start of `window`, case-folded: `A`..`Z` and their
/// lower-case letters (and a few symbols) read the same. Hex is matched in
/// either case; the rest is checked exactly after a hit.
#[inline(always)] // the sampling loop's, at opt-level "z"
#[allow(clippy::inline_always)]
pub(super) fn fold(window: &[u8]) -> u64 {
    u64::from_le_bytes(window[..WINDOW].try_into().expect("WINDOW bytes")) | 0x2020_2020_2020_2020
}

/// `(step, stride)` for an index of `windows` windows at stride 1.
pub(super) fn layout(windows: usize) -> (usize, usize) {
    LAYOUTS
        .iter()
        .copied()
        .find(|&(_, stride)| windows / stride <= MAX_DENSE_ENTRIES)
        .unwrap_or(LAYOUTS[LAYOUTS.len() - 1])
}

/// The offsets of a form of `len` bytes whose windows are kept: every
/// `stride`th when its fragments count, else its last `step` (one of them
/// is sampled wherever the form starts; the last, as forms share their
/// starts more than their ends: a registry user's `user:password` pairs).
pub(super) fn offsets(
    len: usize,
    fragments: bool,
    step: usize,
    stride: usize,
) -> impl Iterator<Item = usize> {
    let windows = (len + 1).saturating_sub(WINDOW);
    let (first, count, stride) = if fragments {
        (0, windows.div_ceil(stride), stride)
    } else {
        (windows - windows.min(step), windows.min(step), 1)
    };
    (0..count).map(move |i| first + i * stride)
}

impl WindowSet {
    /// An empty set of `capacity` windows sampled every `step` bytes, their
    /// forms indexed every `stride` bytes (see [`layout`]).
    pub(super) fn with_capacity(capacity: usize, step: usize, stride: usize) -> WindowSet {
        // A power of two (the filter is indexed by a shift); past 4 Mbit
        // rounded down rather than up when that keeps 3/4 of the bits per
        // window.
        let mut bits = (capacity * BITS_PER_WINDOW).next_power_of_two();
        if bits > 1 << 22 && bits / 2 >= capacity * BITS_PER_WINDOW * 3 / 4 {
            bits /= 2;
        }
        if capacity * MIN_CACHED_BITS_PER_WINDOW <= CACHED_BITS {
            bits = bits.min(CACHED_BITS);
        }
        let bits = bits.clamp(MIN_BITS, MAX_BITS);
        WindowSet {
            filter: vec![0u64; if capacity == 0 { 0 } else { bits / 64 }],
            shift: 64 - bits.trailing_zeros(),
            building: Vec::with_capacity(capacity),
            tags: Vec::new(),
            positions: Vec::new(),
            directory: Vec::new(),
            shared: Vec::new(),
            by_precedent: Vec::new(),
            dir_bits: 0,
            step,
            stride,
        }
    }

    /// Adds a window (its folded key) found at `at` of the concatenation.
    pub(super) fn insert(&mut self, key: u64, at: u32) {
        let (word, bits) = filter_bits(key, self.shift);
        self.filter[word] |= bits;
        self.building
            .push(u64::from(fingerprint(key)) << 32 | u64::from(at));
    }

    /// Sorts the windows, a window shared by more than [`MAX_SHARED`] forms
    /// by what follows it in each (`continuation(at, out)` writes that of
    /// the window at `at`, compared as [`WindowSet::for_each_candidate`]'s
    /// `order` compares content) and again by what precedes it (`precedent`,
    /// read backwards from the window), and indexes them by fingerprint.
    pub(super) fn finish(
        &mut self,
        continuation: impl Fn(u32, &mut Vec<u8>),
        precedent: impl Fn(u32, &mut Vec<u8>),
    ) {
        let mut entries = std::mem::take(&mut self.building);
        entries.sort_unstable();
        let mut i = 0;
        while i < entries.len() {
            let fp = high(entries[i]);
            let same = entries[i..].iter().take_while(|&&e| high(e) == fp).count();
            if same > MAX_SHARED {
                let sorted_by = |context: &dyn Fn(u32, &mut Vec<u8>)| {
                    let mut places: Vec<u64> = entries[i..i + same].to_vec();
                    places.sort_by_cached_key(|&e| {
                        let mut bytes = Vec::with_capacity(CONTINUATION);
                        context(low(e), &mut bytes);
                        bytes
                    });
                    places
                };
                let by_precedent = sorted_by(&precedent);
                let by_continuation = sorted_by(&continuation);
                entries[i..i + same].copy_from_slice(&by_continuation);
                self.shared.push(SharedWindow {
                    start: u32::try_from(i).expect("fewer than 4G windows"),
                    end: u32::try_from(i + same).expect("fewer than 4G windows"),
                    by_precedent: u32::try_from(self.by_precedent.len())
                        .expect("fewer than 4G windows"),
                });
                self.by_precedent.extend(by_precedent.into_iter().map(low));
            }
            i += same;
        }
        self.shared.shrink_to_fit();
        self.by_precedent.shrink_to_fit();
        let n = entries.len();
        self.dir_bits = (n / BUCKET).max(1).ilog2().min(24);
        let buckets = 1usize << self.dir_bits;
        self.directory = Vec::with_capacity(buckets + 1);
        let mut at = 0;
        for bucket in 0..buckets {
            while at < n && self.bucket_of(high(entries[at])) < bucket {
                at += 1;
            }
            self.directory
                .push(u32::try_from(at).expect("fewer than 4G windows"));
        }
        self.directory
            .push(u32::try_from(n).expect("fewer than 4G windows"));
        // Moved over from the end, the pairs shrunk as they go (in place:
        // the allocator splits or remaps the block), so both never take
        // their whole size at once.
        self.tags = Vec::with_capacity(n);
        self.positions = Vec::with_capacity(n);
        while let Some(e) = entries.pop() {
            self.tags.push(self.tag_of(high(e)));
            self.positions.push(low(e));
            if entries.len() % (64 * 1024) == 0 {
                entries.shrink_to_fit();
            }
        }
        self.tags.reverse();
        self.positions.reverse();
    }

    /// The 8 bits of a fingerprint after its bucket's.
    fn tag_of(&self, fingerprint: u32) -> u8 {
        (fingerprint << self.dir_bits).to_be_bytes()[0]
    }

    fn bucket_of(&self, fingerprint: u32) -> usize {
        usize::try_from(u64::from(fingerprint) >> (32 - self.dir_bits)).expect("24 bits")
    }

    pub(super) fn len(&self) -> usize {
        self.positions.len()
    }

    pub(super) fn step(&self) -> usize {
        self.step
    }

    pub(super) fn stride(&self) -> usize {
        self.stride
    }

    pub(super) fn memory_usage(&self) -> usize {
        self.filter.capacity() * 8
            + self.tags.capacity()
            + self.positions.capacity() * 4
            + self.directory.capacity() * 4
            + self.shared.capacity() * std::mem::size_of::<SharedWindow>()
            + self.by_precedent.capacity() * 4
    }

    /// Calls `found(pos, at)` for every sampled position `pos` of `buf`
    /// (`0, step, 2 step…`) whose window, case-folded, may be the window
    /// at `at` of the concatenation of all forms (the caller checks). Of a
    /// window many forms share, only those two whose continuation `order`
    /// (comparing the one at `at` with the content after the window) puts
    /// around the content's, and those two whose precedent `order_back`
    /// (comparing what precedes the one at `at` with the content before
    /// `pos`) puts around the content's: a run of a form through the
    /// sample reaches no further forwards than the first pair's runs, nor
    /// further backwards than the second's.
    pub(super) fn for_each_candidate(
        &self,
        buf: &[u8],
        mut found: impl FnMut(usize, u32),
        order: impl Fn(u32, &[u8]) -> std::cmp::Ordering,
        order_back: impl Fn(u32, &[u8]) -> std::cmp::Ordering,
    ) {
        if self.positions.is_empty() {
            return;
        }
        let mut candidates = |pos: usize, k: u64| {
            let fp = fingerprint(k);
            let bucket = self.bucket_of(fp);
            let tag = self.tag_of(fp);
            let mut i = self.directory[bucket] as usize;
            let to = self.directory[bucket + 1] as usize;
            while i < to {
                if self.tags[i] != tag {
                    i += 1;
                    continue;
                }
                let group = self
                    .shared
                    .binary_search_by_key(&i, |shared| shared.start as usize);
                let Ok(group) = group else {
                    found(pos, self.positions[i]);
                    i += 1;
                    continue;
                };
                let shared = self.shared[group];
                let end = shared.end as usize;
                let nearest =
                    |places: &[u32],
                     content: &[u8],
                     order: &dyn Fn(u32, &[u8]) -> std::cmp::Ordering| {
                        let next = places
                            .partition_point(|&at| order(at, content) == std::cmp::Ordering::Less);
                        next.saturating_sub(1)..(next + 1).min(places.len())
                    };
                let places = &self.positions[i..end];
                for j in nearest(places, &buf[pos + WINDOW..], &order) {
                    found(pos, places[j]);
                }
                let from = shared.by_precedent as usize;
                let places = &self.by_precedent[from..from + (end - i)];
                for j in nearest(places, &buf[..pos], &order_back) {
                    found(pos, places[j]);
                }
                i = end;
            }
        };
        let (filter, shift) = (self.filter.as_slice(), self.shift);
        // The usual layout: the window at the start of each STEP bytes, each
        // read once, a multiply and one filter word per sample; a last
        // window that fits in the remainder too.
        if self.step == STEP {
            let mut pos = 0;
            let mut blocks = buf.chunks_exact(STEP);
            for block in &mut blocks {
                let k = fold(block);
                if may_pass(filter, shift, k) {
                    candidates(pos, k);
                }
                pos += STEP;
            }
            if blocks.remainder().len() >= WINDOW {
                let k = fold(blocks.remainder());
                if may_pass(filter, shift, k) {
                    candidates(pos, k);
                }
            }
            return;
        }
        let mut pos = 0;
        while pos + WINDOW <= buf.len() {
            let k = fold(&buf[pos..]);
            if may_pass(filter, shift, k) {
                candidates(pos, k);
            }
            pos += self.step;
        }
    }
}

/// The filter word of a folded window and its two bits there: the top bits
/// of one product (`shift` leaves the word and the first bit's index), the
/// 6 bits below them the second bit.
fn filter_bits(key: u64, shift: u32) -> (usize, u64) {
    let product = key.wrapping_mul(MULTIPLIERS[0]);
    let h = product >> shift;
    let second = (product >> (shift - 6)) & 63;
    let word = usize::try_from(h >> 6).expect("shift leaves at most 17 bits");
    (word, 1 << (h & 63) | 1 << second)
}

/// Whether both of a folded window's bits ([`filter_bits`]) are set: the
/// test every sample makes, inlined into the sampling loop.
#[inline(always)] // at opt-level "z" a call per sample
#[allow(clippy::inline_always)]
fn may_pass(filter: &[u64], shift: u32, key: u64) -> bool {
    let product = key.wrapping_mul(MULTIPLIERS[0]);
    let h = product >> shift;
    let word = filter[usize::try_from(h >> 6).expect("shift leaves at most 17 bits")];
    (word >> (h & 63)) & (word >> ((product >> (shift - 6)) & 63)) & 1 != 0
}

fn fingerprint(key: u64) -> u32 {
    high(key.wrapping_mul(MULTIPLIERS[1]))
}

/// An entry's fingerprint.
#[allow(clippy::cast_possible_truncation)] // the high half of a u64
fn high(entry: u64) -> u32 {
    (entry >> 32) as u32
}

/// An entry's position.
#[allow(clippy::cast_possible_truncation)] // the low half, on purpose
fn low(entry: u64) -> u32 {
    entry as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set of `forms` (bytes, fragments) at this layout; positions are
    /// `1000 * form + offset`.
    fn set_of(forms: &[(&[u8], bool)], step: usize, stride: usize) -> WindowSet {
        let mut set = WindowSet::with_capacity(64, step, stride);
        for (i, (bytes, fragments)) in forms.iter().enumerate() {
            for at in offsets(bytes.len(), *fragments, step, stride) {
                set.insert(fold(&bytes[at..]), u32::try_from(1000 * i + at).unwrap());
            }
        }
        set.finish(|_, _| {}, |_, _| {});
        set
    }

    /// Candidates whose window is the form's, as `(form, offset, pos)`.
    fn hits(set: &WindowSet, forms: &[(&[u8], bool)], buf: &[u8]) -> Vec<(usize, usize, usize)> {
        let mut hits = Vec::new();
        set.for_each_candidate(
            buf,
            |pos, at| {
                let (form, offset) = (at as usize / 1000, at as usize % 1000);
                if forms[form].0[offset..offset + WINDOW] == buf[pos..pos + WINDOW] {
                    hits.push((form, offset, pos));
                }
            },
            |_, _| std::cmp::Ordering::Less,
            |_, _| std::cmp::Ordering::Less,
        );
        hits
    }

    #[test]
    fn every_run_of_sure_bytes_holds_a_sampled_window_in_every_layout() {
        let form: Vec<u8> = (0..60u8).map(|i| b'A' + i % 26 + (i / 26) * 6).collect();
        let forms = [(form.as_slice(), true)];
        for (step, stride) in LAYOUTS {
            let set = set_of(&forms, step, stride);
            assert_eq!(set.len(), (form.len() - WINDOW) / stride + 1);
            // A run of SURE bytes of the form at every offset modulo STEP,
            // and of every part of the form.
            for lead in 0..2 * STEP {
                for from in 0..=form.len() - SURE {
                    let mut buf = vec![b'.'; lead];
                    buf.extend_from_slice(&form[from..from + SURE]);
                    buf.extend_from_slice(b"....");
                    let hits = hits(&set, &forms, &buf);
                    assert!(
                        !hits.is_empty(),
                        "step {step}, stride {stride}: lead {lead}, run from {from}"
                    );
                    for (_, offset, pos) in hits {
                        assert_eq!(pos % step, 0);
                        assert_eq!(offset % stride, 0);
                    }
                }
            }
        }
    }

    #[test]
    fn a_window_shared_by_forms_is_reported_for_each_and_case_is_folded() {
        let a = b"0123456789abcdefghij".as_slice();
        let b = b"xx0123456789ABCDEFGH".as_slice();
        let forms = [(a, true), (b, true)];
        let set = set_of(&forms, 12, 1);
        let mut found = Vec::new();
        let order = |_, _: &[u8]| std::cmp::Ordering::Less;
        set.for_each_candidate(b"0123456789", |pos, at| found.push((pos, at)), order, order);
        assert_eq!(found, vec![(0, 0), (0, 1002)]);
        let mut found = Vec::new();
        set.for_each_candidate(
            b"456789AbCdEf",
            |pos, at| found.push((pos, at)),
            order,
            order,
        );
        assert_eq!(found, vec![(0, 4), (0, 1006)]);
        assert_eq!(hits(&WindowSet::default(), &forms, b"0123456789"), vec![]);
        assert_eq!(hits(&set, &forms, b"short"), vec![]);
    }

    #[test]
    fn a_form_matched_whole_is_sampled_wherever_it_starts() {
        let form: Vec<u8> = (0..40u8).map(|i| b'!' + i).collect();
        let forms = [(form.as_slice(), false)];
        for (step, stride) in LAYOUTS {
            let set = set_of(&forms, step, stride);
            assert_eq!(set.len(), step);
            for lead in 0..3 * STEP {
                let mut buf = vec![b' '; lead];
                buf.extend_from_slice(&form);
                let found = hits(&set, &forms, &buf);
                assert_eq!(found.len(), 1, "lead {lead}");
                assert_eq!(found[0].2 - found[0].1, lead);
            }
        }
    }

    #[test]
    fn the_filter_stays_cache_sized_while_it_keeps_enough_bits_a_window() {
        let bytes = |windows| WindowSet::with_capacity(windows, STEP, 1).filter.len() * 8;
        assert_eq!(bytes(1000), 4 << 10);
        // A realistic pull secret's forms: held to 128 KiB, 14 bits each.
        assert_eq!(bytes(72_022), 128 << 10);
        assert_eq!(bytes(CACHED_BITS / MIN_CACHED_BITS_PER_WINDOW), 128 << 10);
        // Past that, as many bits as before: the filter no longer fits.
        assert_eq!(
            bytes(CACHED_BITS / MIN_CACHED_BITS_PER_WINDOW + 1),
            512 << 10
        );
        assert_eq!(bytes(571_184), 1 << 20);
    }

    #[test]
    fn layouts_thin_out_as_windows_grow() {
        assert_eq!(layout(1000), (12, 1));
        assert_eq!(layout(MAX_DENSE_ENTRIES), (12, 1));
        assert_eq!(layout(MAX_DENSE_ENTRIES + 1), (4, 3));
        assert_eq!(layout(100 * MAX_DENSE_ENTRIES), (1, 12));
        // Many windows: a directory of several buckets, each found.
        let forms: Vec<Vec<u8>> = (0..300u32)
            .map(|i| format!("form-{i:04}-{}", i * 7919).into_bytes())
            .collect();
        let refs: Vec<(&[u8], bool)> = forms.iter().map(|f| (f.as_slice(), true)).collect();
        let set = set_of(&refs, 12, 1);
        assert!(set.dir_bits > 4);
        for (i, form) in forms.iter().enumerate() {
            assert!(
                hits(&set, &refs, form).iter().any(|h| h.0 == i),
                "{}",
                String::from_utf8_lossy(form)
            );
        }
    }
}
