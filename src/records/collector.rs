//! The records collector: puts the bootstrap service records into the
//! bundle. The `/var/log/openshift/<service>.json` files that bootkube,
//! release-image, approve-csr and friends write about their own progress,
//! the timeline bootkube leaves as `/opt/openshift/<stage>.done` markers,
//! and `records/summary.json`: the parsed timeline of every service
//! ([`crate::records::Summary`]), always present, whose digest becomes the
//! collector's digest in the manifest.
//!
//! The markers and the summary are written first, each bounded in size, so
//! they always fit the collector's cap; the raw record files follow with
//! what is left (a cap of their own each, at most [`MAX_RECORD_FILES`]).
//!
//! The directory is optional: on a multi-node install the bootstrap host ran
//! these services before it wrote its disk, so after the reboot they are gone.

use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::time::UNIX_EPOCH;

use super::summary::{
    read_record_in, DoneMarker, Summary, MAX_DONE_MARKERS, MAX_RECORD_FILES, RECORDS_DIR,
    SUMMARY_MAX_BYTES,
};
use crate::collect::context::HostFile;
use crate::collect::members::{Members, Opts};

const MARKERS_DIR: &str = "/opt/openshift";
/// One raw record's cap, so that one record cannot take the others' room:
/// records are a few KiB; the newest part of a bigger one (its summary
/// reads it whole, within `PARSE_LIMIT`).
pub(crate) const RAW_RECORD_MAX_BYTES: u64 = 8 * 1024 * 1024;
/// Stale temporaries named in the note.
const STALE_NAMED: usize = 20;

pub(crate) fn collect(m: &mut Members<'_>) -> io::Result<()> {
    let mut summary = Summary::default();
    let mut records = Vec::new();
    match m.ctx().list_files(RECORDS_DIR) {
        Ok(files) => {
            summary.records_dir_present = true;
            let mut stale = Vec::new();
            for file in files {
                let path = Path::new(&file.name);
                // A `.json.tmp` is a rewrite that never got renamed into
                // place: its content is older or torn, and the `.json` beside
                // it is the record. The writer names them in lower case.
                if has_extension(path, "tmp")
                    && has_extension(Path::new(path.file_stem().unwrap_or_default()), "json")
                {
                    stale.push(file.name);
                } else if has_extension(path, "json") {
                    records.push(file);
                }
            }
            if !stale.is_empty() {
                let list = named(&stale);
                m.note(format!(
                    "ignored {} stale temporary record(s): {list}",
                    stale.len()
                ));
                summary.add_problem(&format!(
                    "stale temporary record(s) ignored (an interrupted rewrite): {list}"
                ));
            }
            if records.is_empty() {
                m.note(format!("no *.json records in {RECORDS_DIR}"));
            }
            if records.len() > MAX_RECORD_FILES {
                let more = records.len() - MAX_RECORD_FILES;
                records.truncate(MAX_RECORD_FILES);
                let note = format!(
                    "{more} record file(s) after the first {MAX_RECORD_FILES} by name neither read nor copied (record file cap)"
                );
                summary.add_problem(&note);
                m.note(note);
            }
            summarize(m, &records, &mut summary);
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            let reason = format!("no {RECORDS_DIR} (normal after the bootstrap host rebooted)");
            m.skip("records/*.json", RECORDS_DIR, reason.clone());
            m.note(reason);
        }
        Err(err) => {
            let reason = format!("cannot list {RECORDS_DIR}: {err}");
            summary.add_problem(&reason);
            m.skip("records", RECORDS_DIR, reason);
        }
    }
    summary.done_markers = done_markers(m)?;
    summary.finish();
    m.set_digest(summary.digest.clone());
    let room = usize::try_from(m.budget(Opts::default()).bytes).unwrap_or(usize::MAX);
    let json = summary.to_json_within(room.min(SUMMARY_MAX_BYTES));
    m.generated(
        "records/summary.json",
        "parsed /var/log/openshift/*.json and /opt/openshift/*.done",
        json,
    )?;
    // The raw copies get what the markers and the summary left.
    for (i, file) in records.iter().enumerate() {
        if m.exhausted() {
            m.note(format!(
                "{} record file(s) not copied: the collector's size cap or time limit was reached (all are in records/summary.json)",
                records.len() - i
            ));
            break;
        }
        m.file_with(
            &format!("records/{}", file.name),
            &file.host,
            Opts::max_bytes(RAW_RECORD_MAX_BYTES),
        )?;
    }
    Ok(())
}

/// Reads each record for the summary, streaming, within the collector's
/// time; the files not read by its end are named in the problems.
fn summarize(m: &Members<'_>, records: &[HostFile], summary: &mut Summary) {
    for (i, file) in records.iter().enumerate() {
        let timeout = m.time_left().min(m.ctx().command_timeout);
        if timeout.is_zero() {
            summary.add_problem(&format!(
                "time limit reached: {} record file(s) not read",
                records.len() - i
            ));
            return;
        }
        match read_record_in(m.ctx().sysroot(), &file.host, timeout) {
            Ok(parsed) => summary.add_parsed(&file.name, parsed),
            Err(err) => summary.add_problem(&format!("{}: cannot read: {err}", file.name)),
        }
    }
}

/// The first [`STALE_NAMED`] names, and how many more.
fn named(names: &[String]) -> String {
    let mut list = names
        .iter()
        .take(STALE_NAMED)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > STALE_NAMED {
        let _ = write!(list, " and {} more", names.len() - STALE_NAMED);
    }
    list
}

/// bootkube touches `<stage>.done` after each stage; the mtimes say how far
/// it got and how long each stage took. The newest [`MAX_DONE_MARKERS`].
fn done_markers(m: &mut Members<'_>) -> io::Result<Vec<DoneMarker>> {
    let Ok(files) = m.ctx().list_files(MARKERS_DIR) else {
        return Ok(Vec::new());
    };
    let mut markers: Vec<(u64, String)> = files
        .into_iter()
        .filter(|f| has_extension(Path::new(&f.name), "done"))
        .filter_map(|f| {
            let secs = f.mtime?.duration_since(UNIX_EPOCH).ok()?.as_secs();
            Some((secs, f.name))
        })
        .collect();
    if markers.is_empty() {
        return Ok(Vec::new());
    }
    markers.sort();
    let mut listing = String::from("# mtime (UTC)\tmarker\n");
    if markers.len() > MAX_DONE_MARKERS {
        let older = markers.len() - MAX_DONE_MARKERS;
        markers.drain(..older);
        let _ = writeln!(
            listing,
            "# {older} older marker(s) not listed (at most {MAX_DONE_MARKERS})"
        );
    }
    let mut parsed = Vec::new();
    for (secs, name) in markers {
        let when = UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let mtime = humantime::format_rfc3339_seconds(when).to_string();
        let _ = writeln!(listing, "{mtime}\t{name}");
        parsed.push(DoneMarker {
            stage: name.strip_suffix(".done").unwrap_or(&name).to_owned(),
            mtime,
        });
    }
    m.generated(
        "records/done-markers.txt",
        &format!("{MARKERS_DIR}/*.done modification times"),
        listing.into_bytes(),
    )?;
    Ok(parsed)
}

fn has_extension(path: &Path, extension: &str) -> bool {
    path.extension().is_some_and(|e| e == extension)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::testing::{context, MemorySink};
    use crate::collect::{run_collector, Status};

    #[test]
    fn copies_json_records_sorted_and_summarises_them() {
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
        // The markers and the summary first: they always fit.
        assert_eq!(
            paths,
            [
                "records/done-markers.txt",
                "records/summary.json",
                "records/bootkube.json",
                "records/kubelet.json",
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

        let summary: Summary =
            serde_json::from_slice(sink.get("records/summary.json").unwrap()).unwrap();
        assert!(summary.records_dir_present);
        assert_eq!(summary.services.len(), 1);
        assert_eq!(summary.done_markers[0].stage, "cvo-bootstrap");
        assert!(summary
            .problems
            .iter()
            .any(|p| p.contains("bootkube.json.tmp")));
        assert!(summary
            .problems
            .iter()
            .any(|p| p.starts_with("bootkube.json: not a JSON array")));
        assert_eq!(report.digest, summary.digest);
        // kubelet only started: the worst finding is the stale temporary.
        assert!(
            report
                .digest
                .as_deref()
                .unwrap()
                .starts_with("records: stale temporary"),
            "{:?}",
            report.digest
        );
    }

    #[test]
    fn absent_directory_is_skipped_with_the_reason_and_still_summarised() {
        let root = tempfile::tempdir().unwrap();
        let ctx = context(root.path(), None);
        let mut sink = MemorySink::new(1 << 20, u64::MAX);
        let report = run_collector("records", collect, &ctx, &mut sink).unwrap();
        // The records are skipped, not failed; the summary is still made.
        assert_eq!(report.status, Status::Ok);
        assert_eq!(report.files[0].path, "records/*.json");
        assert_eq!(report.files[0].status, Status::Skipped);
        assert_eq!(
            report.reason.as_deref(),
            Some("no /var/log/openshift (normal after the bootstrap host rebooted)")
        );
        let summary: Summary =
            serde_json::from_slice(sink.get("records/summary.json").unwrap()).unwrap();
        assert!(!summary.records_dir_present);
        assert!(summary.services.is_empty());
        assert_eq!(report.digest, None);
        assert_eq!(sink.members.len(), 1);
    }
}
