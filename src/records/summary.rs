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

use super::parse::{
    parse_entries, parse_reader, parse_time, service_from_entries, Outcome, Parsed, Service,
    CONDENSED_STEPS,
};

/// Longest digest, in characters (the service's `progress_info` is short).
pub const DIGEST_MAX_CHARS: usize = 200;

/// A bootkube `/opt/openshift/<stage>.done` marker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DoneMarker {
    pub(crate) stage: String,
    /// RFC 3339 modification time.
    pub(crate) mtime: String,
}

/// `records/summary.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Whether `/var/log/openshift` exists at all.
    pub(crate) records_dir_present: bool,
    pub services: Vec<Service>,
    /// Files that could not be read whole, and stale temporaries: each names
    /// the file and what is wrong with it.
    pub(crate) problems: Vec<String>,
    /// bootkube's `.done` markers, oldest first.
    pub(crate) done_markers: Vec<DoneMarker>,
    /// [`Summary::digest`], stored for readers of the JSON.
    pub digest: Option<String>,
    /// Services left out whole to keep the summary within its size cap;
    /// `problems` names them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) services_left_out: usize,
    /// What the digest needs of every service added, kept as they go: the
    /// digest stays right when services are condensed or left out.
    #[serde(skip)]
    findings: Findings,
    /// Bytes of the services kept (their pretty JSON).
    #[serde(skip)]
    services_bytes: usize,
    #[serde(skip)]
    left_out_names: Vec<String>,
    #[serde(skip)]
    problems_left_out: usize,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Most bytes of `records/summary.json`: a real host's is a few KiB to tens
/// of KiB. Bounded so that it always fits the records collector's cap ahead
/// of the raw records, and the diagnosis (which reads up to 4 MiB of it)
/// and `inspect` (8 MiB) read it whole.
pub const SUMMARY_MAX_BYTES: usize = 1024 * 1024;
/// Services are kept whole while they take up to this much…
const DETAIL_BYTES: usize = 640 * 1024;
/// …each at most this much (a service of thousands of steps is condensed)…
const SERVICE_DETAIL_MAX: usize = 128 * 1024;
/// …a bigger one keeps its newest steps that fit, or is condensed further
/// ([`Service::condense`]), up to the cap less this, kept for the problems,
/// the markers and the rest; past it services are left out.
const RESERVE_BYTES: usize = 192 * 1024;
/// Problems listed; more are counted.
pub(crate) const MAX_PROBLEMS: usize = 100;
/// Characters of one problem.
const PROBLEM_MAX_CHARS: usize = 512;
/// Services named in the problem that counts those left out.
const LEFT_OUT_NAMED: usize = 20;
/// bootkube's `.done` markers listed (about fifteen on a real host): the
/// newest.
pub(crate) const MAX_DONE_MARKERS: usize = 200;

/// Where the bootstrap services write their records on the host.
pub const RECORDS_DIR: &str = "/var/log/openshift";
/// Record files read (a host has about ten; a unit that writes one per run
/// makes thousands): the first by name; the rest are counted, so the time,
/// the manifest and the member count stay bounded.
pub const MAX_RECORD_FILES: usize = 500;
/// Record files are a few KiB; a bigger one is parsed from its start only
/// (streamed: the limit bounds time, not memory).
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
    if names.len() > MAX_RECORD_FILES {
        summary.add_problem(&format!(
            "{} record file(s) after the first {MAX_RECORD_FILES} by name not read (record file cap)",
            names.len() - MAX_RECORD_FILES
        ));
    }
    let names = &names[..names.len().min(MAX_RECORD_FILES)];
    for (i, name) in names.iter().enumerate() {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            summary.add_problem(&format!(
                "time limit reached: {} record file(s) not read",
                names.len() - i
            ));
            break;
        }
        let host = format!("{RECORDS_DIR}/{name}");
        match read_record(root, &host, left) {
            Ok(parsed) => summary.add_parsed(name, parsed),
            Err(err) => summary.add_problem(&format!("{name}: cannot read: {err}")),
        }
    }
    summary.finish();
    summary
}

/// Parses record file `host` under `root` as it is read (at most
/// [`PARSE_LIMIT`] bytes, within `timeout`: see
/// [`crate::rootfs::open_streamed`]), on the caller's thread: a read that
/// times out keeps what was salvaged before it.
pub fn read_record(
    root: &std::path::Path,
    host: &str,
    timeout: std::time::Duration,
) -> std::io::Result<Parsed> {
    read_record_in(root.into(), host, timeout)
}

/// [`read_record`] under a root whose `/var` may lie elsewhere (an ostree
/// disk's stateroot, `collect::layout`).
pub(crate) fn read_record_in(
    root: crate::rootfs::Sysroot<'_>,
    host: &str,
    timeout: std::time::Duration,
) -> std::io::Result<Parsed> {
    let file = crate::rootfs::open_streamed(root, std::path::Path::new(host), timeout)?;
    Ok(parse_reader(std::io::Read::take(file, PARSE_LIMIT)))
}

impl Summary {
    /// Adds one record file (`name` like `bootkube.json`).
    pub fn add_file(&mut self, name: &str, data: &[u8]) {
        self.add_parsed(name, parse_entries(data));
    }

    /// Adds one record file already parsed. Its service is kept whole,
    /// condensed or left out by the size cap ([`SUMMARY_MAX_BYTES`]); the
    /// digest sees it whole either way.
    pub(crate) fn add_parsed(&mut self, name: &str, parsed: Parsed) {
        if let Some(problem) = parsed.problem {
            self.add_problem(&format!("{name}: {problem}"));
        }
        if parsed.entries.is_empty() {
            return;
        }
        let service = name.strip_suffix(".json").unwrap_or(name);
        let mut service = service_from_entries(service, name, parsed.entries);
        self.findings.add(&service);
        let mut size = pretty_len(&service);
        let room = SERVICE_DETAIL_MAX.min(DETAIL_BYTES.saturating_sub(self.services_bytes));
        if size > room {
            // The newest steps that fit what is left for detail, by the
            // service's own bytes per step; then the fewest if even that is
            // too much.
            let fit = (room / 10 * 9).saturating_mul(service.step_count()) / size.max(1);
            service.condense(fit);
            size = pretty_len(&service);
            if size > room {
                service.condense(CONDENSED_STEPS);
                size = pretty_len(&service);
            }
        }
        if self.services_bytes + size > SUMMARY_MAX_BYTES - RESERVE_BYTES {
            self.leave_out(service.service);
            return;
        }
        self.services_bytes += size;
        self.services.push(service);
    }

    /// Adds a problem, cut to one bounded line; past [`MAX_PROBLEMS`] they
    /// are only counted.
    pub(crate) fn add_problem(&mut self, problem: &str) {
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(shorten(problem, PROBLEM_MAX_CHARS));
        } else {
            self.problems_left_out += 1;
        }
    }

    fn leave_out(&mut self, service: String) {
        self.services_left_out += 1;
        if self.left_out_names.len() < LEFT_OUT_NAMED {
            self.left_out_names.push(service);
        }
    }

    /// Fills [`Summary::digest`] and names what the size caps left out;
    /// call once everything is added.
    pub fn finish(&mut self) {
        self.digest = self.digest();
        if self.services_left_out > 0 {
            let more = self.services_left_out - self.left_out_names.len();
            let mut names = self.left_out_names.join(", ");
            if more > 0 {
                use std::fmt::Write as _;
                let _ = write!(names, " and {more} more");
            }
            self.problems.push(format!(
                "{} service(s) left out of the summary (its {} KiB size cap): {names}",
                self.services_left_out,
                SUMMARY_MAX_BYTES >> 10
            ));
        }
        if self.problems_left_out > 0 {
            self.problems.push(format!(
                "{} more problem(s) not listed (at most {MAX_PROBLEMS})",
                self.problems_left_out
            ));
            self.problems_left_out = 0;
        }
        self.left_out_names.clear();
    }

    /// The summary as pretty JSON of at most `max` bytes (a line end
    /// included): services are condensed, then left out from the last, until
    /// it fits. Empty when not even the bare summary does.
    pub fn to_json_within(&mut self, max: usize) -> Vec<u8> {
        loop {
            let mut json = serde_json::to_vec_pretty(self).unwrap_or_default();
            json.push(b'\n');
            if json.len() <= max {
                return json;
            }
            if let Some(i) = self
                .services
                .iter()
                .position(|s| s.step_count() > CONDENSED_STEPS || s.condensed.is_none())
            {
                self.services[i].condense(CONDENSED_STEPS);
            } else if self.services.pop().is_some() {
                // Counted in `services_left_out`, which the JSON carries.
                self.services_left_out += 1;
            } else if self.problems.len() > 1 || !self.done_markers.is_empty() {
                self.problems.truncate(1);
                self.done_markers.clear();
            } else {
                return Vec::new();
            }
        }
    }

    /// One line (at most [`DIGEST_MAX_CHARS`]) naming the worst finding:
    /// a failure in a service's last run (the earliest such, the likely
    /// cause), else a killed or still running step, else failures that a
    /// restart got past, else a record file that could not be read. `None`
    /// when there is no record at all or every service succeeded.
    pub(crate) fn digest(&self) -> Option<String> {
        let folded;
        let findings = if self.findings.services > 0 {
            &self.findings
        } else {
            // Read back from JSON: fold the services it holds.
            let mut findings = Findings::default();
            for service in &self.services {
                findings.add(service);
            }
            folded = findings;
            &folded
        };
        let line = findings
            .last_run_failure
            .as_ref()
            .map(|(_, line)| line.clone())
            .or_else(|| findings.unfinished_step.clone())
            .or_else(|| findings.killed_runs.clone())
            .or_else(|| findings.recovered.clone())
            .or_else(|| self.problems.first().map(|p| format!("records: {p}")))?;
        Some(shorten(&line, DIGEST_MAX_CHARS))
    }
}

/// Bytes of `service` as pretty JSON.
fn pretty_len(service: &Service) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer_pretty(&mut count, service);
    count.0
}

/// What the digest takes from each service, folded service by service in
/// the order they are added: the earliest failure of a last run, the first
/// step still running or killed, the first service with killed runs, the
/// first that recovered from failures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Findings {
    services: usize,
    last_run_failure: Option<(Option<SystemTime>, String)>,
    unfinished_step: Option<String>,
    killed_runs: Option<String>,
    recovered: Option<String>,
}

impl Findings {
    fn add(&mut self, service: &Service) {
        self.services += 1;
        if let Some((when, line)) = last_run_failure(service) {
            let earlier = match &self.last_run_failure {
                None => true,
                Some((w, _)) => matches!((when, w), (Some(a), Some(b)) if a < *b),
            };
            if earlier {
                self.last_run_failure = Some((when, line));
            }
        }
        if self.unfinished_step.is_none() {
            self.unfinished_step = unfinished_step(service);
        }
        if self.killed_runs.is_none() {
            self.killed_runs = killed_runs(service);
        }
        if self.recovered.is_none() {
            self.recovered = recovered(service);
        }
    }
}

/// The failure in `service`'s last run, with when it happened.
fn last_run_failure(service: &Service) -> Option<(Option<SystemTime>, String)> {
    let run = service.last_run()?;
    if run.result != Outcome::Failure && !run.steps.iter().any(|s| s.result == Outcome::Failure) {
        return None;
    }
    // The failed step says more than the service end it caused.
    let (what, at, error_line) = match run.steps.iter().find(|s| s.result == Outcome::Failure) {
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
    Some((parse_time(at), line))
}

/// A step of `service`'s last run still running or killed.
fn unfinished_step(service: &Service) -> Option<String> {
    let run = service.last_run()?;
    let step = run
        .steps
        .iter()
        .find(|s| matches!(s.result, Outcome::Killed | Outcome::Running))?;
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
    Some(format!(
        "{}: {} {} {verb}{since}",
        service.service,
        step.kind.as_str(),
        step.name
    ))
}

/// Whole runs of `service` killed without a step in flight.
fn killed_runs(service: &Service) -> Option<String> {
    let killed = service
        .runs
        .iter()
        .filter(|r| r.result == Outcome::Killed)
        .count();
    (killed > 0).then(|| {
        format!(
            "{}: {killed} run(s) killed before their end",
            service.service
        )
    })
}

/// `service` failed before and recovered.
fn recovered(service: &Service) -> Option<String> {
    let first = service.failures.first()?;
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

    #[test]
    fn the_summary_stays_within_its_cap_and_its_digest_sees_everything() {
        use std::fmt::Write as _;
        // 3,000 services of 30 steps each, the earliest failure in the last.
        let mut summary = Summary::default();
        let mut unbounded_lines = 0usize;
        for i in 0..3_000 {
            let mut data =
                String::from(r#"[{"timestamp":"2026-01-01T10:00:00Z","phase":"service start"}"#);
            for step in 0..30 {
                let _ = write!(
                    data,
                    r#",{{"timestamp":"2026-01-01T10:00:01Z","phase":"stage start","stage":"step-{step}"}},{{"timestamp":"2026-01-01T10:00:02Z","phase":"stage end","stage":"step-{step}","result":"success"}}"#
                );
            }
            let when = if i == 2_999 {
                "2026-01-01T09:00:00Z"
            } else {
                "2026-01-01T11:00:00Z"
            };
            let _ = write!(
                data,
                r#",{{"timestamp":"{when}","phase":"service end","result":"failure","errorLine":"{i} main"}}]"#
            );
            unbounded_lines += data.len();
            summary.add_file(&format!("svc-{i:04}.json"), data.as_bytes());
        }
        summary.finish();
        assert!(unbounded_lines > 8 * SUMMARY_MAX_BYTES);
        assert_eq!(
            summary.digest.as_deref(),
            Some("svc-2999: failed at 2999 main")
        );
        let json = summary.to_json_within(SUMMARY_MAX_BYTES);
        assert!(
            !json.is_empty() && json.len() <= SUMMARY_MAX_BYTES,
            "{}",
            json.len()
        );
        let back: Summary = serde_json::from_slice(&json).unwrap();
        assert!(back.services.iter().any(|s| s.condensed.is_some()));
        assert!(back.services_left_out > 0);
        assert_eq!(back.services.len() + back.services_left_out, 3_000);
        assert!(back
            .problems
            .iter()
            .any(|p| p.contains("service(s) left out of the summary")));
        // A smaller room: condensed and cut further, never over it.
        let json = summary.to_json_within(64 * 1024);
        assert!(json.len() <= 64 * 1024 && !json.is_empty());
        // Problems are listed up to their cap, then counted.
        let mut summary = Summary::default();
        for i in 0..(MAX_PROBLEMS + 5) {
            summary.add_file(&format!("bad-{i}.json"), b"");
        }
        summary.finish();
        assert_eq!(summary.problems.len(), MAX_PROBLEMS + 1);
        assert_eq!(
            summary.problems.last().map(String::as_str),
            Some("5 more problem(s) not listed (at most 100)")
        );
    }
}
