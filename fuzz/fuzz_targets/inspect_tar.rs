#![no_main]
//! `inspect`'s reading of a bundle (`tools::inspect_from` over the bounded
//! reader in `bundle-format`): whatever the archive holds (torn headers, GNU
//! long names and pax records of any size, members claiming any size, a
//! manifest of any shape), inspect never panics, never inflates more than its
//! cap, and never prints a control character other than a newline.
//!
//! The first byte picks the input's form: raw bytes as the gzip stream
//! itself, or (the usual case, so the fuzzer spends its time on tar
//! headers) the bytes gzipped here first.

use std::io::Write as _;
use std::path::Path;

use bundle_format::reader::{read_members, Next, MAX_NAME_BYTES};
use assisted_boot_reporter::tools::inspect_from;
use libfuzzer_sys::fuzz_target;

/// Small, so that a bomb costs little per run.
const CAP: u64 = 4 << 20;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let gz = if mode & 1 == 0 {
        let mut enc =
            flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(rest).expect("in memory");
        enc.finish().expect("in memory")
    } else {
        rest.to_vec()
    };

    let mut inflated = 0u64;
    let _ = read_members(gz.as_slice(), CAP, |member| {
        assert!(member.name.len() as u64 <= MAX_NAME_BYTES * 3, "{}", member.name.len());
        inflated += std::io::copy(member.data, &mut std::io::sink())?;
        Ok(Next::Continue)
    });
    assert!(inflated <= CAP);

    for json in [false, true] {
        let mut out = Vec::new();
        if inspect_from(gz.as_slice(), Path::new("fuzz.tar.gz"), gz.len() as u64, json, CAP, &mut out).is_ok() && !json {
            let text = String::from_utf8(out).expect("the report is UTF-8");
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "control character in the report: {text:?}"
            );
        }
    }
});
