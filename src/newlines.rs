//! Counting newlines: the followed journal's lines, each sealed chunk's
//! and the diagnosis scanner's line numbers all come from here.

/// The newlines in `data`. Journal lines run to a few hundred bytes, and a
/// vector search for each newline reads them at a fraction of the cost of
/// memchr's count, which tallies every 32 bytes with a popcount (a software
/// one in the agent's build: POPCNT is not in its x86-64 baseline). A block
/// of short lines is counted whole, so neither way costs much more than the
/// other at worst.
pub(crate) fn count(data: &[u8]) -> u64 {
    /// Bytes looked at one way or the other at a time.
    const BLOCK: usize = 4096;
    /// Newlines of a block found one at a time before it is counted whole.
    const MOST_FOUND: u64 = 32;
    let mut count = 0;
    for block in data.chunks(BLOCK) {
        let (mut found, mut at) = (0, 0);
        while let Some(i) = memchr::memchr(b'\n', &block[at..]) {
            found += 1;
            at += i + 1;
            if found > MOST_FOUND {
                break;
            }
        }
        count += if found > MOST_FOUND {
            memchr::memchr_iter(b'\n', block).count() as u64
        } else {
            found
        };
    }
    count
}

#[cfg(test)]
mod tests {
    use super::count;

    #[test]
    fn newlines_are_counted_in_lines_of_any_length() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for line_max in [1usize, 2, 40, 130, 4000, 20_000] {
            let mut data = Vec::new();
            while data.len() < 3 * 4096 + 17 {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let len = usize::try_from(rng % line_max as u64).unwrap();
                data.extend(std::iter::repeat_n(b'x', len));
                data.push(b'\n');
            }
            for cut in [0, 1, 4095, 4096, 4097, data.len()] {
                let part = &data[..cut.min(data.len())];
                let expected = memchr::memchr_iter(b'\n', part).count() as u64;
                assert_eq!(count(part), expected, "{line_max} {cut}");
            }
        }
    }
}
