#![no_main]
//! The bootstrap service records parser (`records`): whatever a record
//! file holds (torn arrays, wrong types, huge numbers, stray bytes), the
//! parse never panics, reads the same however the file arrives (it is
//! streamed), the summary is produced, serializes within its size cap, and
//! its digest stays within its length.

use std::io::Read;

use assisted_boot_reporter::records::{
    parse_entries, parse_reader, Summary, DIGEST_MAX_CHARS, SUMMARY_MAX_BYTES,
};
use libfuzzer_sys::fuzz_target;

/// Hands out at most `size` bytes per read.
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
    let parsed = parse_entries(data);
    let size = 1 + data.first().map_or(0, |&b| usize::from(b) % 64);
    assert_eq!(
        parse_reader(Trickle { data, size }),
        parsed,
        "chunks of {size}"
    );
    if parsed.entries.is_empty() && parsed.problem.is_none() {
        // An empty array is the only clean way to have no entries.
        let text = String::from_utf8_lossy(data);
        assert!(text.contains('['), "no entries and no problem for {text:?}");
    }
    let mut summary = Summary::default();
    summary.add_file("bootkube.json", data);
    // The same file twice, as a restarted service's records look.
    summary.add_file("release-image.json", data);
    summary.finish();
    if let Some(digest) = &summary.digest {
        assert!(digest.chars().count() <= DIGEST_MAX_CHARS, "{digest}");
    }
    serde_json::to_vec(&summary).expect("the summary serializes");
    let json = summary.to_json_within(SUMMARY_MAX_BYTES);
    assert!(
        !json.is_empty() && json.len() <= SUMMARY_MAX_BYTES,
        "{}",
        json.len()
    );
});
