#![no_main]
//! What a host file becomes before it is shipped (`collect::text`, issue
//! 25): a gzip file inflated within bounds, a plain file read, both checked
//! as text. Whatever the bytes, nothing panics; never more than the bound
//! is inflated or handed on; a bound crossed or a file that is not text
//! hands on nothing more; and the text check counts the same however the
//! bytes are chunked.
//!
//! The first byte picks the input's form: the bytes as the host file itself
//! (gzip when they start with its magic), the bytes gzipped here first (so
//! the fuzzer works on what is inflated), or gzipped twice (a gzip inside a
//! gzip); its high bits pick the chunk size of the reader.

use std::io::{Read, Write as _};

use assisted_boot_reporter::collect::text::{
    count_not_text, gunzip, read_text, Bounds, End, TextCheck,
};
use libfuzzer_sys::fuzz_target;

/// Small bounds, so that a bomb costs little per run.
const BOUNDS: Bounds = Bounds {
    max_inflated: 1 << 20,
    max_ratio: 100,
    ratio_slack: 64 << 10,
};

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).expect("in memory");
    enc.finish().expect("in memory")
}

/// Hands out at most `size` bytes per read, as a slow file would.
struct Trickle<'a> {
    data: &'a [u8],
    size: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.size.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let file = match mode % 3 {
        0 => rest.to_vec(),
        1 => gzip(rest),
        _ => gzip(&gzip(rest)),
    };
    let size = 1 + usize::from(mode >> 2) * 37;

    // The check counts the same in chunks as over the whole.
    let mut check = TextCheck::default();
    for chunk in rest.chunks(size) {
        check.feed(chunk);
    }
    check.finish();
    assert_eq!(check.bad(), count_not_text(rest));

    let reader = Trickle { data: &file, size };
    let mut out = Vec::new();
    let end = if file.starts_with(&[0x1f, 0x8b]) {
        let skip = u64::from(mode & 0x70) * 16;
        let (got, end) = gunzip(reader, skip, BOUNDS, &mut |b| out.extend_from_slice(b));
        assert!(got.inflated <= BOUNDS.max_inflated, "{got:?}");
        assert!(
            got.skipped <= skip && got.skipped <= got.inflated,
            "{got:?}"
        );
        // `inflated` counts only the chunks within the bounds: nothing of a
        // chunk that crossed one was handed on.
        assert!(out.len() as u64 <= got.inflated - got.skipped, "{got:?}");
        if matches!(end, End::Complete) {
            assert!(
                got.inflated <= BOUNDS.max_ratio * got.compressed + BOUNDS.ratio_slack,
                "{got:?}"
            );
        }
        end
    } else {
        let (read, end) = read_text(reader, 1 << 20, &mut |b| out.extend_from_slice(b));
        assert!(read <= 1 << 20 && out.len() as u64 <= read);
        if matches!(end, End::Complete) {
            assert_eq!(out.len() as u64, read);
        }
        end
    };
    if matches!(end, End::Complete) {
        // What was handed on is text within the tolerance.
        let mut whole = TextCheck::default();
        whole.feed(&out);
        whole.finish();
        assert!(whole.is_text(), "{} of {}", whole.bad(), whole.seen());
    }
});
