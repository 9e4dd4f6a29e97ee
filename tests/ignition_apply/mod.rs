//! What Ignition does with the reporter's fragment, for the tests: decode
//! each file's data URL (percent or base64, gzip or not) and lay the files
//! out under a directory with their modes.

#![allow(dead_code)]

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).expect("hex");
            out.push(u8::from_str_radix(hex, 16).expect("hex digit"));
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

pub fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        }
    };
    let clean: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c) << (18 - 6 * i);
        }
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)).to_be_bytes()[3]);
        }
    }
    out
}

/// The bytes Ignition writes for a `storage.files` entry.
pub fn file_bytes(file: &Value) -> Vec<u8> {
    let source = file["contents"]["source"].as_str().expect("source");
    let rest = source.strip_prefix("data:").expect("a data URL");
    let (meta, data) = rest.split_once(',').expect("data URL has a comma");
    let raw = if meta.ends_with(";base64") {
        base64_decode(data)
    } else {
        percent_decode(data)
    };
    match file["contents"]["compression"].as_str() {
        Some("gzip") => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(raw.as_slice())
                .read_to_end(&mut out)
                .expect("gunzip");
            out
        }
        None | Some("") => raw,
        Some(other) => panic!("unexpected compression {other}"),
    }
}

pub fn file_entry<'a>(fragment: &'a Value, path: &str) -> &'a Value {
    fragment["storage"]["files"]
        .as_array()
        .expect("files")
        .iter()
        .find(|f| f["path"] == path)
        .unwrap_or_else(|| panic!("no {path} in the fragment"))
}

/// Writes the fragment's directories, files and units where `place` maps
/// their host paths, with their modes; returns the paths written.
pub fn apply(fragment: &Value, place: &dyn Fn(&str) -> PathBuf) -> Vec<PathBuf> {
    let mut written = Vec::new();
    for dir in fragment["storage"]["directories"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let path = place(dir["path"].as_str().expect("dir path"));
        std::fs::create_dir_all(&path).expect("mkdir");
        set_mode(&path, dir["mode"].as_u64().expect("dir mode"));
    }
    for file in fragment["storage"]["files"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let path = place(file["path"].as_str().expect("file path"));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir parent");
        }
        std::fs::write(&path, file_bytes(file))
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        set_mode(&path, file["mode"].as_u64().expect("file mode"));
        written.push(path);
    }
    for unit in fragment["systemd"]["units"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let name = unit["name"].as_str().expect("unit name");
        let path = place(&format!("/etc/systemd/system/{name}"));
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, unit["contents"].as_str().expect("unit contents"))
            .expect("write unit");
        written.push(path);
    }
    written
}

fn set_mode(path: &Path, mode: u64) {
    let mode = u32::try_from(mode).expect("mode fits");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
