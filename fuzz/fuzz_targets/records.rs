#![no_main]
//! The bootstrap service records parser (`records`): whatever a record
//! file holds (torn arrays, wrong types, huge numbers, stray bytes), the
//! parse never panics, the summary is produced and serializes, and its
//! digest stays within its length.

use assisted_boot_reporter::records::{parse_entries, Summary, DIGEST_MAX_CHARS};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = parse_entries(data);
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
});
