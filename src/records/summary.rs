//! The records of one host summarised: every service's timeline
//! ([`Summary`], written to the bundle as `records/summary.json`), bootkube's
//! `.done` markers, the problems met reading the files, and the digest.
//!
//! [`Summary::digest`] gives the one line a human wants first: the worst
//! finding, e.g. `bootkube: stage cvo-bootstrap failed at 25 main
//! /usr/local/bin/bootkube.sh`. [`summarize_host`] makes the summary straight
//! from a host's files, for the agent's `progress_info`, without a bundle.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use super::parse::{parse_entries, parse_time, service_from_entries, Outcome, Service};

/// Longest digest, in characters (the service's `progress_info` is short).
pub const DIGEST_MAX_CHARS: usize = 200;

/// A bootkube `/opt/openshift/<stage>.done` marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneMarker {
    pub stage: String,
    /// RFC 3339 modification time.
    pub mtime: String,
}

/// `records/summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Whether `/var/log/openshift` exists at all.
    pub records_dir_present: bool,
    pub services: Vec<Service>,
    /// Files that could not be read whole, and stale temporaries: each names
    /// the file and what is wrong with it.
    pub problems: Vec<String>,
    /// bootkube's `.done` markers, oldest first.
    pub done_markers: Vec<DoneMarker>,
    /// [`Summary::digest`], stored for readers of the JSON.
    pub digest: Option<String>,
}

/// Where the bootstrap services write their records on the host.
pub const RECORDS_DIR: &str = "/var/log/openshift";
/// Record files are a few KiB; a bigger one is parsed from its start only.
pub const PARSE_LIMIT: u64 = 16 * 1024 * 1024;

/// Summarizes the records under a sysroot without building a bundle: the
/// agent's `progress_info` must name a failure even when the service refuses
/// the bundle. Done markers are left out (they only add timing).
///
/// Files are read inside the root ([`crate::rootfs`]: FIFOs refused, every
/// symlink resolved inside it) and the reading stops at `time_limit`; the
/// files not read by then are named in the problems. Blocking: callers on
/// the async runtime run it on a blocking thread.
pub fn summarize_host(root: &std::path::Path, time_limit: std::time::Duration) -> Summary {
    let deadline = std::time::Instant::now() + time_limit;
    let mut summary = Summary::default();
    let Ok(entries) = crate::rootfs::read_dir(root, std::path::Path::new(RECORDS_DIR)) else {
        summary.finish();
        return summary;
    };
    summary.records_dir_present = true;
    let names: Vec<String> = entries
        .into_iter()
        .filter_map(|name| name.into_string().ok())
        .filter(|name| {
            std::path::Path::new(name)
                .extension()
                .is_some_and(|ext| ext.eq_ignore_ascii_case("json"))
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            summary.problems.push(format!(
                "time limit reached: {} record file(s) not read",
                names.len() - i
            ));
            break;
        }
        let host = format!("{RECORDS_DIR}/{name}");
        match crate::rootfs::read_limited(root, std::path::Path::new(&host), PARSE_LIMIT, left) {
            Ok(data) => summary.add_file(name, &data),
            Err(err) => summary.problems.push(format!("{name}: cannot read: {err}")),
        }
    }
    summary.finish();
    summary
}

impl Summary {
    /// Adds one record file (`name` like `bootkube.json`).
    pub fn add_file(&mut self, name: &str, data: &[u8]) {
        let parsed = parse_entries(data);
        if let Some(problem) = parsed.problem {
            self.problems.push(format!("{name}: {problem}"));
        }
        if parsed.entries.is_empty() {
            return;
        }
        let service = name.strip_suffix(".json").unwrap_or(name);
        self.services
            .push(service_from_entries(service, name, &parsed.entries));
    }

    /// Fills [`Summary::digest`]; call once everything is added.
    pub fn finish(&mut self) {
        self.digest = self.digest();
    }

    /// One line (at most [`DIGEST_MAX_CHARS`]) naming the worst finding:
    /// a failure in a service's last run (the earliest such, the likely
    /// cause), else a killed or still running step, else failures that a
    /// restart got past, else a record file that could not be read. `None`
    /// when there is no record at all or every service succeeded.
    pub fn digest(&self) -> Option<String> {
        let line = self
            .last_run_failure()
            .or_else(|| self.unfinished())
            .or_else(|| self.recovered())
            .or_else(|| self.problems.first().map(|p| format!("records: {p}")))?;
        Some(shorten(&line, DIGEST_MAX_CHARS))
    }

    fn last_run_failure(&self) -> Option<String> {
        let mut worst: Option<(Option<SystemTime>, String)> = None;
        for service in &self.services {
            let Some(run) = service.last_run() else {
                continue;
            };
            if run.result != Outcome::Failure
                && !run.steps.iter().any(|s| s.result == Outcome::Failure)
            {
                continue;
            }
            // The failed step says more than the service end it caused.
            let (what, at, error_line) =
                match run.steps.iter().find(|s| s.result == Outcome::Failure) {
                    Some(step) => (
                        format!("{} {} failed", step.kind.as_str(), step.name),
                        step.end.as_deref(),
                        step.error_line.as_deref().or(run.error_line.as_deref()),
                    ),
                    None => (
                        "failed".to_owned(),
                        run.end.as_deref(),
                        run.error_line.as_deref(),
                    ),
                };
            let mut line = format!("{}: {what}", service.service);
            if let Some(error_line) = error_line.filter(|l| !l.trim().is_empty()) {
                line.push_str(" at ");
                line.push_str(error_line.trim());
            }
            if service.restarts() > 0 {
                use std::fmt::Write as _;
                let _ = write!(line, " (after {} restart(s))", service.restarts());
            }
            let when = parse_time(at);
            let earlier = match &worst {
                None => true,
                Some((w, _)) => matches!((when, w), (Some(a), Some(b)) if a < *b),
            };
            if earlier {
                worst = Some((when, line));
            }
        }
        worst.map(|(_, line)| line)
    }

    fn unfinished(&self) -> Option<String> {
        for service in &self.services {
            let Some(run) = service.last_run() else {
                continue;
            };
            let step = run
                .steps
                .iter()
                .find(|s| matches!(s.result, Outcome::Killed | Outcome::Running));
            if let Some(step) = step {
                let verb = if step.result == Outcome::Killed {
                    "never ended (killed)"
                } else {
                    "still running"
                };
                let since = step
                    .start
                    .as_deref()
                    .map(|s| format!(" since {s}"))
                    .unwrap_or_default();
                return Some(format!(
                    "{}: {} {} {verb}{since}",
                    service.service,
                    step.kind.as_str(),
                    step.name
                ));
            }
        }
        // Whole runs killed without a step in flight.
        for service in &self.services {
            let killed = service
                .runs
                .iter()
                .filter(|r| r.result == Outcome::Killed)
                .count();
            if killed > 0 {
                return Some(format!(
                    "{}: {killed} run(s) killed before their end",
                    service.service
                ));
            }
        }
        None
    }

    fn recovered(&self) -> Option<String> {
        let service = self.services.iter().find(|s| !s.failures.is_empty())?;
        let first = &service.failures[0];
        let mut line = format!(
            "{}: recovered after {} failed run(s); first: {} failed",
            service.service,
            service
                .failures
                .iter()
                .map(|f| f.run)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            first.what
        );
        if let Some(error_line) = first.error_line.as_deref() {
            line.push_str(" at ");
            line.push_str(error_line.trim());
        }
        Some(line)
    }
}

/// Cuts `text` to `max` characters on one line, marking the cut.
fn shorten(text: &str, max: usize) -> String {
    let one_line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max - 1).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::parse::tests::fixture;
    use crate::records::parse::StepKind;

    #[test]
    fn fixture_records_make_a_timeline() {
        let mut summary = Summary::default();
        for name in ["bootkube.json", "kubelet.json", "release-image.json"] {
            summary.add_file(name, &fixture(name));
        }
        summary.finish();
        assert!(summary.problems.is_empty(), "{:?}", summary.problems);
        let bootkube = &summary.services[0];
        assert_eq!(bootkube.service, "bootkube");
        assert_eq!(bootkube.status, Outcome::Success);
        // mco-bootstrap failed, the unit restarted and went through.
        assert_eq!(bootkube.runs.len(), 2);
        assert_eq!(bootkube.runs[0].result, Outcome::Failure);
        assert_eq!(bootkube.runs[0].duration_secs, Some(111));
        assert_eq!(bootkube.last_run().unwrap().steps.len(), 6);
        let cvo = bootkube.runs[0]
            .steps
            .iter()
            .find(|s| s.name == "cvo-bootstrap")
            .unwrap();
        assert_eq!(cvo.duration_secs, Some(12));
        assert_eq!(cvo.result, Outcome::Success);

        let kubelet = &summary.services[1];
        assert_eq!(kubelet.status, Outcome::Running);
        assert_eq!(
            kubelet.last_run().unwrap().steps[0].kind,
            StepKind::PreCommand
        );
        assert_eq!(
            kubelet.last_run().unwrap().steps[0].result,
            Outcome::Success
        );

        let release = &summary.services[2];
        assert_eq!(release.runs.len(), 2);
        assert_eq!(release.status, Outcome::Success);
        assert_eq!(release.failures.len(), 2);
        assert_eq!(release.failures[0].what, "stage pull-release-image");
        assert_eq!(
            release.failures[0].error_line.as_deref(),
            Some("25 main /usr/local/bin/release-image-download.sh")
        );
        // No failure in any last run; kubelet has no step in flight and its
        // run has no end (it runs for good): a recovery is the worst finding.
        assert_eq!(
            summary.digest.as_deref(),
            Some("bootkube: recovered after 1 failed run(s); first: stage mco-bootstrap failed at 147 main /usr/local/bin/bootkube.sh")
        );
    }

    #[test]
    fn failed_stage_in_the_last_run_is_the_digest() {
        let data = br#"[
 {"timestamp":"2025-02-03T10:00:00Z","phase":"service start"},
 {"timestamp":"2025-02-03T10:00:00Z","phase":"stage start","stage":"openshift-manifests"},
 {"timestamp":"2025-02-03T10:00:05Z","phase":"stage end","stage":"openshift-manifests","result":"success"},
 {"timestamp":"2025-02-03T10:00:05Z","phase":"stage start","stage":"cvo-bootstrap"},
 {"timestamp":"2025-02-03T10:00:09Z","phase":"stage end","stage":"cvo-bootstrap","result":"failure","errorLine":"25 main /usr/local/bin/bootkube.sh","errorMessage":"a\nb\nc"},
 {"timestamp":"2025-02-03T10:00:09Z","phase":"service end","result":"failure","errorLine":"25 main /usr/local/bin/bootkube.sh"}
]"#;
        let mut summary = Summary::default();
        summary.add_file("bootkube.json", data);
        summary.add_file("kubelet.json", &fixture("kubelet.json"));
        assert_eq!(
            summary.digest().as_deref(),
            Some("bootkube: stage cvo-bootstrap failed at 25 main /usr/local/bin/bootkube.sh")
        );
        let service = &summary.services[0];
        assert_eq!(service.status, Outcome::Failure);
        assert_eq!(service.failures.len(), 2);
        assert_eq!(
            service.failures[0].error_message.as_deref(),
            Some("a\nb\nc")
        );
    }

    #[test]
    fn empty_garbage_and_odd_files_are_named_not_fatal() {
        for (data, want) in [
            (&b""[..], "x.json: empty file"),
            (b"  \n", "x.json: empty file"),
            (b"not json \xff", "x.json: not a JSON array; stopped at"),
            (
                b"[",
                "x.json: truncated JSON: the array ends at byte 1 without `]`; nothing salvaged",
            ),
            (
                b"[1, {\"phase\":\"service start\"}]",
                "x.json: 1 entries are not record objects; salvaged 1 complete entries",
            ),
            (
                b"[{\"phase\":\"service start\"}] x",
                "x.json: trailing data after the array at byte 27; salvaged 1 complete entries",
            ),
        ] {
            let mut summary = Summary::default();
            summary.add_file("x.json", data);
            assert!(
                summary.problems[0].starts_with(want),
                "{:?}: {:?}",
                String::from_utf8_lossy(data),
                summary.problems
            );
            assert!(
                summary.digest().unwrap().starts_with("records: x.json: ")
                    || !summary.services.is_empty()
            );
        }
    }

    #[test]
    fn restarts_without_ends_are_killed_runs() {
        let data = br#"[
 {"timestamp":"2025-02-03T10:00:00Z","phase":"service start"},
 {"timestamp":"2025-02-03T10:00:01Z","phase":"stage start","stage":"wait-for-etcd"},
 {"timestamp":"2025-02-03T10:05:00Z","phase":"service start"},
 {"timestamp":"2025-02-03T10:05:01Z","phase":"stage start","stage":"wait-for-etcd"},
 {"timestamp":"2025-02-03T10:06:01Z","phase":"stage end","stage":"wait-for-etcd","result":"success"},
 {"timestamp":"2025-02-03T10:06:02Z","phase":"service end","result":"success"}
]"#;
        let mut summary = Summary::default();
        summary.add_file("bootkube.json", data);
        let service = &summary.services[0];
        assert_eq!(service.runs[0].result, Outcome::Killed);
        assert_eq!(service.runs[0].steps[0].result, Outcome::Killed);
        assert_eq!(service.runs[1].duration_secs, Some(62));
        assert_eq!(service.status, Outcome::Success);
        assert_eq!(
            summary.digest().as_deref(),
            Some("bootkube: 1 run(s) killed before their end")
        );
    }

    #[test]
    fn all_good_has_no_digest_and_long_digests_are_cut() {
        let mut summary = Summary::default();
        summary.add_file(
            "approve-csr.json",
            br#"[{"timestamp":"2025-02-03T10:00:00Z","phase":"service start"},
                 {"timestamp":"2025-02-03T10:00:00Z","phase":"stage start","stage":"approve"},
                 {"timestamp":"2025-02-03T10:00:03Z","phase":"stage end","stage":"approve","result":"success"},
                 {"timestamp":"2025-02-03T10:00:03Z","phase":"service end","result":"success"}]"#,
        );
        assert_eq!(summary.services[0].runs[0].duration_secs, Some(3));
        assert_eq!(summary.digest(), None);
        assert_eq!(Summary::default().digest(), None);

        let long = format!(
            r#"[{{"phase":"service start"}},{{"phase":"service end","result":"failure","errorLine":"{}"}}]"#,
            "x".repeat(500)
        );
        let mut summary = Summary::default();
        summary.add_file("svc.json", long.as_bytes());
        let digest = summary.digest().unwrap();
        assert_eq!(digest.chars().count(), DIGEST_MAX_CHARS);
        assert!(digest.starts_with("svc: failed at xxx"));
        assert!(digest.ends_with('…'));
    }

    #[test]
    fn summarize_host_reads_records_under_a_root_and_ignores_stale_rewrites() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("var/log/openshift");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("bootkube.json"),
            r#"[{"timestamp":"2026-02-03T10:00:00Z","phase":"service start"},
                {"timestamp":"2026-02-03T10:00:01Z","phase":"stage start","stage":"cvo-bootstrap"},
                {"timestamp":"2026-02-03T10:00:09Z","phase":"stage end","stage":"cvo-bootstrap","result":"failure",
                 "errorLine":"25 main /usr/local/bin/bootkube.sh","errorMessage":"boom"},
                {"timestamp":"2026-02-03T10:00:09Z","phase":"service end","result":"failure",
                 "errorLine":"25 main /usr/local/bin/bootkube.sh","errorMessage":"boom"}]"#,
        )
        .unwrap();
        std::fs::write(dir.join("bootkube.json.tmp"), "[{").unwrap();
        let summary = summarize_host(root.path(), std::time::Duration::from_secs(30));
        assert!(summary.records_dir_present);
        let digest = summary.digest.unwrap();
        assert!(
            digest.starts_with("bootkube:") && digest.contains("cvo-bootstrap"),
            "{digest}"
        );

        let empty = tempfile::tempdir().unwrap();
        let summary = summarize_host(empty.path(), std::time::Duration::from_secs(30));
        assert!(!summary.records_dir_present);
        assert_eq!(summary.digest, None);
    }
}
