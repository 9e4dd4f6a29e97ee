//! The bootstrap-records timeline the page draws for a `host_boot` bundle:
//! each service's runs, stages and pre/post commands as spans with start,
//! end, duration and result, and its failures with `errorLine` and
//! `errorMessage`.
//!
//! Built from the raw `/var/log/openshift/<service>.json` records the agent
//! ships (one JSON array of entries per service; see the host facts), which
//! are messy in the wild: services restart and write `service start` again,
//! a start may have no end (killed), files may be empty or not parse. Each
//! of those ends up visible in the timeline rather than failing it.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Entries read per service file; a bootkube that restarted all night writes
/// a few thousand at most.
const MAX_ENTRIES: usize = 10_000;
/// Failures kept per service, newest last; a crash loop repeats the same one.
const MAX_FAILURES: usize = 50;

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Timeline {
    /// Where the timeline came from: `records` (raw files) or `summary.json`.
    pub source: &'static str,
    pub start: Option<String>,
    pub end: Option<String>,
    pub services: Vec<Service>,
    /// Files that could not be read whole, as the summary names them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The summary's one-line worst finding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Default)]
pub struct Service {
    pub name: String,
    /// `success`, `failure`, `running` (no end yet) or `unknown` (unreadable).
    pub result: String,
    /// Why the file could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// One per `service start`: restarts show as several runs.
    pub runs: Vec<Span>,
    /// Stages and pre/post commands, in the order they started.
    pub spans: Vec<Span>,
    pub failures: Vec<Failure>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Span {
    /// `service`, `stage`, `pre-command` or `post-command`.
    pub kind: &'static str,
    pub name: String,
    pub start: Option<String>,
    pub end: Option<String>,
    /// Seconds, when both ends are known.
    pub duration: Option<u64>,
    /// `success`, `failure`, `running` (no end) or `killed` (the
    /// service started again before this ended).
    pub result: String,
    #[serde(rename = "errorLine", skip_serializing_if = "Option::is_none")]
    pub error_line: Option<String>,
    #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Failure {
    pub at: Option<String>,
    /// The phase that failed, e.g. `stage end`.
    pub phase: String,
    /// The stage or command, empty for the service itself.
    pub name: String,
    #[serde(rename = "errorLine", skip_serializing_if = "Option::is_none")]
    pub error_line: Option<String>,
    #[serde(rename = "errorMessage", skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

fn parse_time(s: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(s.trim_end_matches('Z')).ok()
}

fn seconds_between(start: Option<&str>, end: Option<&str>) -> Option<u64> {
    let (a, b) = (parse_time(start?)?, parse_time(end?)?);
    Some(b.duration_since(a).unwrap_or(Duration::ZERO).as_secs())
}

fn field(entry: &Value, name: &str) -> Option<String> {
    entry
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// The span kind and name an entry is about, from its phase.
fn subject(entry: &Value, phase: &str) -> Option<(&'static str, String)> {
    let (kind, key) = if phase.starts_with("stage ") {
        ("stage", "stage")
    } else if phase.starts_with("pre-command ") {
        ("pre-command", "preCommand")
    } else if phase.starts_with("post-command ") {
        ("post-command", "postCommand")
    } else {
        return None;
    };
    Some((kind, field(entry, key).unwrap_or_default()))
}

fn close(span: &mut Span, entry: &Value, at: Option<String>) {
    span.duration = seconds_between(span.start.as_deref(), at.as_deref());
    span.end = at;
    span.result = field(entry, "result").unwrap_or_else(|| "unknown".to_owned());
    span.error_line = field(entry, "errorLine");
    span.error_message = field(entry, "errorMessage");
}

fn open(kind: &'static str, name: String, at: Option<String>) -> Span {
    Span {
        kind,
        name,
        start: at,
        end: None,
        duration: None,
        result: "running".to_owned(),
        error_line: None,
        error_message: None,
    }
}

/// Marks what a restart cut short.
fn interrupt(spans: &mut [Span], at: Option<&str>) {
    for span in spans.iter_mut().filter(|s| s.result == "running") {
        span.end = at.map(str::to_owned);
        span.duration = seconds_between(span.start.as_deref(), at);
        "killed".clone_into(&mut span.result);
    }
}

/// One service's records file, already read (and capped) by the caller.
pub fn service_from_records(name: &str, bytes: &[u8]) -> Service {
    let mut service = Service {
        name: name.to_owned(),
        ..Service::default()
    };
    let entries = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Array(entries)) => entries,
        Ok(_) => {
            service.result = "unknown".into();
            service.error = Some("not a JSON array".into());
            return service;
        }
        Err(e) => {
            service.result = "unknown".into();
            service.error = Some(if bytes.iter().all(u8::is_ascii_whitespace) {
                "empty file".into()
            } else {
                format!("does not parse: {e}")
            });
            return service;
        }
    };
    let mut last_end_result: Option<String> = None;
    for entry in entries.iter().take(MAX_ENTRIES) {
        let Some(phase) = field(entry, "phase") else {
            continue;
        };
        let at = field(entry, "timestamp");
        if field(entry, "result").as_deref() == Some("failure") {
            if service.failures.len() == MAX_FAILURES {
                service.failures.remove(0);
            }
            service.failures.push(Failure {
                at: at.clone(),
                phase: phase.clone(),
                name: subject(entry, &phase).map(|(_, n)| n).unwrap_or_default(),
                error_line: field(entry, "errorLine"),
                error_message: field(entry, "errorMessage"),
            });
        }
        match phase.as_str() {
            "service start" => {
                interrupt(&mut service.spans, at.as_deref());
                interrupt(&mut service.runs, at.as_deref());
                service.runs.push(open("service", name.to_owned(), at));
                last_end_result = None;
            }
            "service end" => {
                if service.runs.last().is_none_or(|r| r.result != "running") {
                    service
                        .runs
                        .push(open("service", name.to_owned(), at.clone()));
                }
                let run = service.runs.last_mut().expect("pushed above");
                close(run, entry, at);
                last_end_result = Some(run.result.clone());
            }
            p if p.ends_with(" start") => {
                if let Some((kind, n)) = subject(entry, p) {
                    service.spans.push(open(kind, n, at));
                }
            }
            p if p.ends_with(" end") => {
                let Some((kind, n)) = subject(entry, p) else {
                    continue;
                };
                let found = service
                    .spans
                    .iter()
                    .rposition(|s| s.kind == kind && s.name == n && s.result == "running");
                let idx = found.unwrap_or_else(|| {
                    // An end without its start: show it as an instant.
                    service.spans.push(open(kind, n, at.clone()));
                    service.spans.len() - 1
                });
                close(&mut service.spans[idx], entry, at);
                if kind == "post-command" {
                    last_end_result = Some(service.spans[idx].result.clone());
                }
            }
            _ => {}
        }
    }
    // "Successful when its last entry is a successful service end (or
    // post-command end)"; a failed end is a failure even if nothing follows.
    let last_phase = entries
        .iter()
        .take(MAX_ENTRIES)
        .rev()
        .find_map(|e| field(e, "phase"));
    service.result = match (last_end_result.as_deref(), last_phase.as_deref()) {
        (Some("success"), Some("service end" | "post-command end")) => "success".into(),
        (Some("failure"), _) => "failure".into(),
        _ if service.runs.is_empty() && service.spans.is_empty() => "unknown".into(),
        _ if service.spans.iter().any(|s| s.result == "failure")
            && !service.spans.iter().any(|s| s.result == "running") =>
        {
            "failure".into()
        }
        _ => "running".into(),
    };
    service
}

/// The timeline of a set of services, with the overall time range.
pub fn timeline(source: &'static str, mut services: Vec<Service>) -> Timeline {
    services.sort_by(|a, b| {
        first_start(a)
            .cmp(&first_start(b))
            .then(a.name.cmp(&b.name))
    });
    let mut times: Vec<(SystemTime, &str)> = Vec::new();
    for s in &services {
        for span in s.runs.iter().chain(&s.spans) {
            for t in [&span.start, &span.end].into_iter().flatten() {
                if let Some(parsed) = parse_time(t) {
                    times.push((parsed, t));
                }
            }
        }
    }
    let start = times.iter().min().map(|(_, t)| (*t).to_owned());
    let end = times.iter().max().map(|(_, t)| (*t).to_owned());
    Timeline {
        source,
        start,
        end,
        services,
        problems: Vec::new(),
        digest: None,
    }
}

/// The agent's `records/summary.json` (its `records` module), read the way
/// any consumer of the bundle would: only the fields drawn, all optional.
#[derive(Deserialize)]
struct SummaryDoc {
    services: Vec<SummaryService>,
    #[serde(default)]
    problems: Vec<String>,
    #[serde(default)]
    digest: Option<String>,
}

#[derive(Deserialize)]
struct SummaryService {
    service: String,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    runs: Vec<SummaryRun>,
    #[serde(default)]
    failures: Vec<SummaryFailure>,
}

#[derive(Deserialize)]
struct SummaryRun {
    #[serde(flatten)]
    span: SummaryStep,
    #[serde(default)]
    steps: Vec<SummaryStep>,
}

#[derive(Deserialize)]
struct SummaryStep {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    start: Option<String>,
    #[serde(default)]
    end: Option<String>,
    #[serde(default)]
    duration_secs: Option<i64>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    error_line: Option<String>,
    #[serde(default)]
    error_message: Option<String>,
}

#[derive(Deserialize)]
struct SummaryFailure {
    /// `service`, or a step's kind and name: `stage cvo-bootstrap`.
    what: String,
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    error_line: Option<String>,
    #[serde(default)]
    error_message: Option<String>,
}

impl SummaryStep {
    fn span(self, kind: &'static str, name: String, cut_at: Option<&str>) -> Span {
        let result = self.result.unwrap_or_else(|| "running".into());
        // A killed step has no end of its own: it ended when its service
        // started again, which is where the chart should stop its bar.
        let end = self.end.or_else(|| {
            (result == "killed")
                .then(|| cut_at.map(str::to_owned))
                .flatten()
        });
        let duration = self
            .duration_secs
            .and_then(|d| u64::try_from(d).ok())
            .or_else(|| seconds_between(self.start.as_deref(), end.as_deref()));
        Span {
            kind,
            name,
            start: self.start,
            end,
            duration,
            result,
            error_line: self.error_line,
            error_message: self.error_message,
        }
    }
}

fn step_kind(kind: Option<&str>) -> &'static str {
    match kind {
        Some("pre-command") => "pre-command",
        Some("post-command") => "post-command",
        _ => "stage",
    }
}

/// The timeline from the agent's `records/summary.json`; `None` when it
/// does not parse as one, so the caller falls back to the raw records that
/// ship beside it.
pub fn from_summary(summary: &Value) -> Option<Timeline> {
    let doc = SummaryDoc::deserialize(summary).ok()?;
    let mut services = Vec::new();
    for svc in doc.services.into_iter().take(MAX_SERVICES_IN_SUMMARY) {
        let mut service = Service {
            name: svc.service.clone(),
            result: svc.status.unwrap_or_else(|| "unknown".into()),
            ..Service::default()
        };
        let starts: Vec<Option<String>> = svc.runs.iter().map(|r| r.span.start.clone()).collect();
        for (i, run) in svc.runs.into_iter().enumerate() {
            let next_start = starts.get(i + 1).cloned().flatten();
            for step in run.steps.into_iter().take(MAX_ENTRIES) {
                let kind = step_kind(step.kind.as_deref());
                let name = step.name.clone().unwrap_or_default();
                service
                    .spans
                    .push(step.span(kind, name, next_start.as_deref()));
            }
            service.runs.push(
                run.span
                    .span("service", svc.service.clone(), next_start.as_deref()),
            );
        }
        for f in svc.failures.iter().rev().take(MAX_FAILURES).rev() {
            let (phase, name) = match f.what.split_once(' ') {
                Some((kind, name)) => (format!("{kind} end"), name.to_owned()),
                None => ("service end".to_owned(), String::new()),
            };
            service.failures.push(Failure {
                at: f.at.clone(),
                phase,
                name,
                error_line: f.error_line.clone(),
                error_message: f.error_message.clone(),
            });
        }
        services.push(service);
    }
    let mut t = timeline("summary.json", services);
    t.problems = doc.problems;
    t.digest = doc.digest;
    Some(t)
}

const MAX_SERVICES_IN_SUMMARY: usize = 64;

/// Services without any timestamp sort last; the rest by first activity.
fn first_start(s: &Service) -> (bool, Option<SystemTime>) {
    let t = s
        .runs
        .iter()
        .chain(&s.spans)
        .filter_map(|x| x.start.as_deref().and_then(parse_time))
        .min();
    (t.is_none(), t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOOTKUBE: &[u8] =
        include_bytes!("../../tests/fixtures/root/var/log/openshift/bootkube.json");
    const RELEASE_IMAGE: &[u8] =
        include_bytes!("../../tests/fixtures/root/var/log/openshift/release-image.json");

    #[test]
    fn fixture_bootkube_failure_is_a_red_stage_with_its_error() {
        let s = service_from_records("bootkube", BOOTKUBE);
        // It failed at mco-bootstrap, restarted and then got through.
        assert_eq!(s.result, "success");
        assert_eq!(s.runs.len(), 2);
        assert_eq!(
            (s.runs[0].result.as_str(), s.runs[1].result.as_str()),
            ("failure", "success")
        );
        let failed: Vec<&Span> = s.spans.iter().filter(|x| x.result == "failure").collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].name, "mco-bootstrap");
        assert_eq!(
            failed[0].error_line.as_deref(),
            Some("147 main /usr/local/bin/bootkube.sh")
        );
        assert!(failed[0]
            .error_message
            .as_deref()
            .unwrap()
            .contains("server misbehaving"));
        let first = &s.spans[0];
        assert_eq!(
            (first.name.as_str(), first.duration, first.result.as_str()),
            ("openshift-manifests", Some(8), "success")
        );
        // The stage failure and the service end failure.
        assert_eq!(s.failures.len(), 2);
    }

    #[test]
    fn restart_after_failure_ends_in_success_with_two_runs() {
        let s = service_from_records("release-image", RELEASE_IMAGE);
        assert_eq!(s.result, "success");
        assert_eq!(s.runs.len(), 2);
        assert_eq!(s.runs[0].result, "failure");
        assert_eq!(s.spans.len(), 2);
        assert_eq!(s.spans[1].duration, Some(37));
        assert_eq!(s.failures.len(), 2);
    }

    #[test]
    fn messy_files_stay_visible() {
        let killed = service_from_records(
            "approve-csr",
            br#"[{"timestamp":"2025-02-03T10:00:00Z","phase":"service start"},
                {"timestamp":"2025-02-03T10:00:01Z","phase":"stage start","stage":"a"},
                {"timestamp":"2025-02-03T10:00:09Z","phase":"service start"},
                {"timestamp":"2025-02-03T10:00:10Z","phase":"stage end","stage":"b","result":"success"}]"#,
        );
        assert_eq!(killed.result, "running");
        assert_eq!(killed.spans[0].result, "killed");
        assert_eq!(killed.spans[0].duration, Some(8));
        assert_eq!(killed.runs[0].result, "killed");
        // An end without a start is an instant.
        assert_eq!(
            (killed.spans[1].start.as_deref(), killed.spans[1].duration),
            (Some("2025-02-03T10:00:10Z"), Some(0))
        );
        let empty = service_from_records("progress", b"  \n");
        assert_eq!(
            (empty.result.as_str(), empty.error.as_deref()),
            ("unknown", Some("empty file"))
        );
        let torn = service_from_records("crio-configure", b"[{\"phase\":");
        assert!(torn.error.unwrap().starts_with("does not parse"));
    }

    /// The agent's own `records/summary.json` of the fixture root, taken
    /// from a bundle it uploaded.
    const SUMMARY: &[u8] = include_bytes!("../../tests/fixtures/records-summary.json");

    #[test]
    fn summary_and_raw_records_draw_the_same_timeline() {
        let summary: Value = serde_json::from_slice(SUMMARY).unwrap();
        let from_summary = from_summary(&summary).unwrap();
        assert_eq!(from_summary.source, "summary.json");
        assert!(from_summary
            .digest
            .as_deref()
            .unwrap()
            .contains("mco-bootstrap"));
        let kubelet: &[u8] =
            include_bytes!("../../tests/fixtures/root/var/log/openshift/kubelet.json");
        let raw = timeline(
            "records",
            vec![
                service_from_records("bootkube", BOOTKUBE),
                service_from_records("kubelet", kubelet),
                service_from_records("release-image", RELEASE_IMAGE),
            ],
        );
        assert_eq!(from_summary.services, raw.services);
        assert_eq!((from_summary.start, from_summary.end), (raw.start, raw.end));
    }

    #[test]
    fn summary_killed_steps_end_where_the_next_run_starts() {
        let summary = serde_json::json!({"services": [{
            "service": "approve-csr",
            "status": "running",
            "runs": [
                {"start": "2025-02-03T10:00:00Z", "result": "killed",
                 "steps": [{"kind": "stage", "name": "a", "start": "2025-02-03T10:00:01Z", "result": "killed"}]},
                {"start": "2025-02-03T10:00:09Z", "result": "running", "steps": []}
            ],
            "failures": []
        }], "problems": ["approve-csr.json: cut mid-entry"]});
        let t = from_summary(&summary).unwrap();
        let a = &t.services[0].spans[0];
        assert_eq!(
            (a.end.as_deref(), a.duration),
            (Some("2025-02-03T10:00:09Z"), Some(8))
        );
        assert_eq!(t.services[0].runs[1].end, None);
        assert_eq!(t.problems, ["approve-csr.json: cut mid-entry"]);
        assert!(from_summary(&serde_json::json!({"version": 1})).is_none());
    }

    #[test]
    fn timeline_orders_services_and_spans_the_range() {
        let t = timeline(
            "records",
            vec![
                service_from_records("bootkube", BOOTKUBE),
                service_from_records("broken", b"x"),
                service_from_records("release-image", RELEASE_IMAGE),
            ],
        );
        let names: Vec<&str> = t.services.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["release-image", "bootkube", "broken"]);
        assert_eq!(t.start.as_deref(), Some("2025-02-03T09:57:02Z"));
        assert_eq!(t.end.as_deref(), Some("2025-02-03T10:27:40Z"));
    }
}
