//! Bootstrap service records: the `/var/log/openshift/<service>.json` files
//! that bootkube, release-image, approve-csr and friends write about their
//! own progress, copied raw (a later parser summarises them), plus the
//! timeline bootkube leaves as `/opt/openshift/<stage>.done` markers.
//!
//! The directory is optional: on a multi-node install the bootstrap host ran
//! these services before it wrote its disk, so after the reboot they are gone.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::UNIX_EPOCH;

use super::Members;

const RECORDS_DIR: &str = "/var/log/openshift";
const MARKERS_DIR: &str = "/opt/openshift";

pub fn collect(m: &mut Members<'_>) -> io::Result<()> {
    let dir = m.ctx().host_path(Path::new(RECORDS_DIR));
    match std::fs::read_dir(&dir) {
        Ok(entries) => {
            let mut records = Vec::new();
            let mut stale = Vec::new();
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let path = Path::new(&name);
                // A `.json.tmp` is a rewrite that never got renamed into
                // place: its content is older or torn, and the `.json` beside
                // it is the record. The writer names them in lower case.
                if has_extension(path, "tmp")
                    && has_extension(Path::new(path.file_stem().unwrap_or_default()), "json")
                {
                    stale.push(name);
                } else if has_extension(path, "json")
                    && entry
                        .file_type()
                        .is_ok_and(|t| t.is_file() || t.is_symlink())
                {
                    records.push(name);
                }
            }
            records.sort();
            stale.sort();
            if !stale.is_empty() {
                m.note(format!(
                    "ignored {} stale temporary record(s): {}",
                    stale.len(),
                    stale.join(", ")
                ));
            }
            if records.is_empty() {
                m.note(format!("no *.json records in {RECORDS_DIR}"));
            }
            for name in records {
                m.file(&format!("records/{name}"), &format!("{RECORDS_DIR}/{name}"))?;
            }
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            m.note(format!(
                "no {RECORDS_DIR} (normal after the bootstrap host rebooted)"
            ));
        }
        Err(err) => {
            m.skip(
                "records",
                &dir.display().to_string(),
                format!("cannot list {RECORDS_DIR}: {err}"),
            );
        }
    }
    done_markers(m)
}

/// bootkube touches `<stage>.done` after each stage; the mtimes say how far
/// it got and how long each stage took.
fn done_markers(m: &mut Members<'_>) -> io::Result<()> {
    let dir = m.ctx().host_path(Path::new(MARKERS_DIR));
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(());
    };
    let mut markers: Vec<(u64, String)> = entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !has_extension(Path::new(&name), "done") {
                return None;
            }
            let mtime = entry.metadata().ok()?.modified().ok()?;
            let secs = mtime.duration_since(UNIX_EPOCH).ok()?.as_secs();
            Some((secs, name))
        })
        .collect();
    if markers.is_empty() {
        return Ok(());
    }
    markers.sort();
    let mut listing = String::from("# mtime (UTC)\tmarker\n");
    for (secs, name) in markers {
        let when = UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let _ = writeln!(
            listing,
            "{}\t{name}",
            humantime::format_rfc3339_seconds(when)
        );
    }
    m.generated(
        "records/done-markers.txt",
        &format!("{MARKERS_DIR}/*.done modification times"),
        listing.into_bytes(),
    )
}

fn has_extension(path: &Path, extension: &str) -> bool {
    path.extension().is_some_and(|e| e == extension)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{context, MemorySink};
    use super::super::{run_collector, Status};
    use super::*;

    #[test]
    fn copies_json_records_sorted_and_notes_stale_temporaries() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("var/log/openshift");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("kubelet.json"), b"[{\"phase\":\"service start\"}]").unwrap();
        std::fs::write(dir.join("bootkube.json"), b"not even json \xff").unwrap();
        std::fs::write(dir.join("bootkube.json.tmp"), b"[").unwrap();
        std::fs::write(dir.join("notes.txt"), b"x").unwrap();
        let markers = root.path().join("opt/openshift");
        std::fs::create_dir_all(&markers).unwrap();
        std::fs::write(markers.join("cvo-bootstrap.done"), b"").unwrap();

        let ctx = context(root.path(), None);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("records", collect, &ctx, &mut sink).unwrap();

        let paths: Vec<&str> = report.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "records/bootkube.json",
                "records/kubelet.json",
                "records/done-markers.txt"
            ]
        );
        assert_eq!(report.status, Status::Ok);
        assert!(report.reason.unwrap().contains("bootkube.json.tmp"));
        // Raw copy: even a file that does not parse goes in unchanged.
        assert_eq!(
            sink.get("records/bootkube.json").unwrap(),
            b"not even json \xff"
        );
        let listing =
            String::from_utf8(sink.get("records/done-markers.txt").unwrap().to_vec()).unwrap();
        assert!(listing.contains("Z\tcvo-bootstrap.done\n"), "{listing}");
    }

    #[test]
    fn absent_directory_is_skipped_with_the_reason() {
        let root = tempfile::tempdir().unwrap();
        let ctx = context(root.path(), None);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("records", collect, &ctx, &mut sink).unwrap();
        assert_eq!(report.status, Status::Skipped);
        assert_eq!(
            report.reason.as_deref(),
            Some("no /var/log/openshift (normal after the bootstrap host rebooted)")
        );
        assert!(report.files.is_empty());
        assert!(sink.members.is_empty());
    }
}
