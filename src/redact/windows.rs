//! Finding the literal forms of the agent's own secrets by sampling: at
//! every [`STEP`]th byte of the content the [`WINDOW`] bytes there are looked
//! up in a set of every window of every form (at every offset), and a hit is
//! extended against its form by the caller. Any run of `WINDOW + STEP - 1`
//! bytes of a form holds a sampled window whole, so every fragment that long
//! is found, at the cost of two multiplies and two bit tests (a Bloom filter)
//! per `STEP` bytes of content, with memory linear in the forms (an
//! automaton of the same windows walks every byte, and past a few thousand
//! windows its DFA no longer fits the memory budget).

/// Bytes compared at each sample (one `u64`).
pub(super) const WINDOW: usize = 8;
/// Distance between samples.
pub(super) const STEP: usize = 12;
/// Shortest run of a form that sampling is sure to find.
pub(super) const SURE: usize = WINDOW + STEP - 1;

/// Multiplicative hashing: the top bits of each product index the filter.
const MULTIPLIERS: [u64; 2] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F];
/// Filter bits per distinct window: with two hashes, about 1 sample of
/// ordinary text in 250 passes the filter to a binary search.
const BITS_PER_WINDOW: usize = 32;
/// Filter size bounds: a few cache lines, and 2 MiB.
const MIN_BITS: usize = 1 << 12;
const MAX_BITS: usize = 1 << 24;

#[derive(Debug, Default)]
pub(super) struct WindowSet {
    /// Two bits per window (a Bloom filter): almost every sample stops here.
    filter: Vec<u64>,
    /// Right shift of the product that leaves the filter's bit index.
    shift: u32,
    /// Every window: (key, form, offset in the form), sorted by key.
    entries: Vec<(u64, u32, u32)>,
}

/// A sampled position whose window is `form[at..at + WINDOW]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Hit {
    pub form: u32,
    pub at: usize,
    pub pos: usize,
}

fn key(window: &[u8]) -> u64 {
    u64::from_le_bytes(window.try_into().expect("WINDOW bytes"))
}

impl WindowSet {
    /// The windows of `forms`: form id, bytes (at least [`SURE`] long) and
    /// whether its fragments count. A form matched whole only needs its
    /// first `STEP` windows: one of them is sampled wherever it starts.
    pub(super) fn new<'a>(forms: impl IntoIterator<Item = (u32, &'a [u8], bool)>) -> WindowSet {
        let mut entries = Vec::new();
        for (form, bytes, fragments) in forms {
            let offsets = if fragments { usize::MAX } else { STEP };
            for (at, window) in bytes.windows(WINDOW).enumerate().take(offsets) {
                entries.push((key(window), form, u32::try_from(at).expect("short forms")));
            }
        }
        if entries.is_empty() {
            return WindowSet::default();
        }
        entries.sort_unstable();
        let distinct = 1 + entries.windows(2).filter(|w| w[0].0 != w[1].0).count();
        let bits = (distinct * BITS_PER_WINDOW)
            .next_power_of_two()
            .clamp(MIN_BITS, MAX_BITS);
        let mut filter = vec![0u64; bits / 64];
        let shift = 64 - bits.trailing_zeros();
        for &(k, ..) in &entries {
            for multiplier in MULTIPLIERS {
                let h = hash(k, multiplier, shift);
                filter[h >> 6] |= 1 << (h & 63);
            }
        }
        WindowSet {
            filter,
            shift,
            entries,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn memory_usage(&self) -> usize {
        self.filter.len() * 8 + self.entries.len() * std::mem::size_of::<(u64, u32, u32)>()
    }

    /// Calls `found` with every sampled position of `buf` (`0, STEP,
    /// 2 STEP…`) whose window is one of a form, once for each form and
    /// offset it is found at.
    pub(super) fn for_each_hit(&self, buf: &[u8], mut found: impl FnMut(Hit)) {
        if self.entries.is_empty() {
            return;
        }
        let mut pos = 0;
        while pos + WINDOW <= buf.len() {
            let k = key(&buf[pos..pos + WINDOW]);
            if self.may_hold(k) {
                let first = self.entries.partition_point(|e| e.0 < k);
                for &(_, form, at) in self.entries[first..].iter().take_while(|e| e.0 == k) {
                    found(Hit {
                        form,
                        at: at as usize,
                        pos,
                    });
                }
            }
            pos += STEP;
        }
    }

    fn may_hold(&self, k: u64) -> bool {
        MULTIPLIERS.iter().all(|&multiplier| {
            let h = hash(k, multiplier, self.shift);
            self.filter[h >> 6] & (1 << (h & 63)) != 0
        })
    }
}

fn hash(key: u64, multiplier: u64, shift: u32) -> usize {
    usize::try_from(key.wrapping_mul(multiplier) >> shift).expect("shift leaves at most 32 bits")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(set: &WindowSet, buf: &[u8]) -> Vec<Hit> {
        let mut hits = Vec::new();
        set.for_each_hit(buf, |hit| hits.push(hit));
        hits
    }

    #[test]
    fn every_run_of_sure_bytes_holds_a_sampled_window() {
        let form: Vec<u8> = (0..60u8).map(|i| b'A' + i % 26 + (i / 26) * 6).collect();
        let set = WindowSet::new([(0, form.as_slice(), true)]);
        assert_eq!(set.len(), form.len() - WINDOW + 1);
        // A run of SURE bytes of the form at every offset modulo STEP, and
        // of every part of the form.
        for lead in 0..2 * STEP {
            for from in 0..=form.len() - SURE {
                let mut buf = vec![b'.'; lead];
                buf.extend_from_slice(&form[from..from + SURE]);
                buf.extend_from_slice(b"....");
                let hits = hits(&set, &buf);
                assert!(!hits.is_empty(), "lead {lead}, run from {from}");
                for hit in hits {
                    assert_eq!(hit.pos % STEP, 0);
                    assert_eq!(
                        &buf[hit.pos..hit.pos + WINDOW],
                        &form[hit.at..hit.at + WINDOW]
                    );
                }
            }
        }
    }

    #[test]
    fn a_window_shared_by_forms_is_reported_for_each() {
        let a = b"0123456789abcdefghij".as_slice();
        let b = b"xx0123456789abcdefgh".as_slice();
        let set = WindowSet::new([(0, a, true), (1, b, true)]);
        let found = hits(&set, b"0123456789");
        assert_eq!(
            found,
            vec![
                Hit {
                    form: 0,
                    at: 0,
                    pos: 0
                },
                Hit {
                    form: 1,
                    at: 2,
                    pos: 0
                }
            ]
        );
        assert_eq!(hits(&WindowSet::new([]), b"0123456789"), vec![]);
        assert_eq!(hits(&set, b"short"), vec![]);
    }

    #[test]
    fn a_form_matched_whole_is_sampled_wherever_it_starts() {
        let form: Vec<u8> = (0..40u8).map(|i| b'!' + i).collect();
        let set = WindowSet::new([(3, form.as_slice(), false)]);
        assert_eq!(set.len(), STEP);
        for lead in 0..3 * STEP {
            let mut buf = vec![b' '; lead];
            buf.extend_from_slice(&form);
            let found = hits(&set, &buf);
            assert_eq!(found.len(), 1, "lead {lead}");
            assert_eq!(found[0].pos - found[0].at, lead);
        }
    }
}
