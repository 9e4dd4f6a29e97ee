//! The agent's one compressor: every gzip member it writes comes from here
//! (a journal's sealed chunks, the archive's shared members of tar headers
//! and small members, the ignition fragment's copy of the binary), and all
//! of them from whole buffers in memory, libdeflate's model: no streaming
//! state, no window sliding.
//!
//! libdeflate (C, built by the `cc` crate with each target's C compiler)
//! was chosen by figures over zlib-rs: docs/benchmarks.md, section 2.
//! Reading gzip (inspect, the bundle reader, rotated host logs, a cut
//! chunk) stays on flate2's inflate, which streams.

use libdeflater::{CompressionLvl, Compressor};

/// The bundle's level: docs/benchmarks.md, section 2, has the sweep it was
/// chosen from.
pub(crate) const BUNDLE_LEVEL: i32 = 6;
/// libdeflate's best (near-optimal parsing): for the fragment's copy of the
/// binary, compressed once per `ignition` run.
pub(crate) const BEST_LEVEL: i32 = 12;

/// A compressor and its output buffer, reused from member to member: a
/// fresh one per member would churn a few hundred KiB of allocations.
pub(crate) struct Gzip {
    compressor: Compressor,
    out: Vec<u8>,
}

impl std::fmt::Debug for Gzip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gzip").finish_non_exhaustive()
    }
}

impl Gzip {
    /// `level` is libdeflate's, 0 to 12.
    pub(crate) fn new(level: i32) -> Self {
        let level = CompressionLvl::new(level).unwrap_or_default();
        Self {
            compressor: Compressor::new(level),
            out: Vec::new(),
        }
    }

    /// `data` as one complete gzip member (RFC 1952), valid until the next
    /// call.
    pub(crate) fn member(&mut self, data: &[u8]) -> &[u8] {
        let bound = self.compressor.gzip_compress_bound(data.len());
        if self.out.len() < bound {
            // calloc skips or vectorises the zeroing; a resize wrote the
            // ~1 MiB bound byte by byte at the release opt-level "z".
            self.out = vec![0; bound];
        }
        let len = self
            .compressor
            .gzip_compress(data, &mut self.out)
            .expect("the bound libdeflate gives is always enough");
        &self.out[..len]
    }
}

/// `data` as one gzip member, at `level`.
pub(crate) fn gzip(data: &[u8], level: i32) -> Vec<u8> {
    Gzip::new(level).member(data).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read as _;

    fn gunzip(gz: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(gz)
            .read_to_end(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn members_round_trip_through_flate2() {
        let mut gzip = Gzip::new(BUNDLE_LEVEL);
        let text = b"kubelet: node not ready\n".repeat(10_000);
        let first = gzip.member(&text).to_vec();
        assert!(first.len() < text.len() / 20, "{}", first.len());
        assert_eq!(gunzip(&first), text);
        // The buffer is reused; an empty member is a valid one too.
        assert_eq!(gunzip(gzip.member(b"")), b"");
        let mut noise = vec![0u8; 300_000];
        fastrand::Rng::with_seed(7).fill(&mut noise);
        assert_eq!(gunzip(gzip.member(&noise)), noise);
        assert_eq!(gunzip(&super::gzip(&text, BEST_LEVEL)), text);
    }
}
