//! One record file parsed: the JSON entries a bootstrap service wrote about
//! itself (`bootstrap-service-record.sh`), salvaged whatever state the file
//! is in, then folded into that service's runs and steps ([`Service`]) with
//! how each ended ([`Outcome`]). `docs/bundle.md` (Records summary) says
//! what a reader of the bundle gets.
//!
//! Each file is one JSON array of entries (`timestamp`, `phase`, `stage`,
//! `preCommand`, `postCommand`, `result`, `errorLine`, `errorMessage`). Real
//! hosts leave worse: empty files, arrays cut mid-entry by a reboot, starts
//! with no end (a killed service), and many repeated `service start`s from
//! `Restart=on-failure`. The parser never fails: it salvages every complete
//! entry before a break and names each problem.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Entries kept per record file: the newest ones, which hold the last run.
/// A real file has tens to a few hundred (each restart adds about ten); the
/// cap keeps the summary (and `records/summary.json`) bounded whatever a
/// host wrote, while every entry is still parsed, in linear time.
pub const MAX_ENTRIES: usize = 10_000;

/// One entry of a service's record file, as written by
/// `bootstrap-service-record.sh`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    #[serde(default)]
    pub timestamp: Option<String>,
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub stage: Option<String>,
    #[serde(default)]
    pub pre_command: Option<String>,
    #[serde(default)]
    pub post_command: Option<String>,
    #[serde(default)]
    pub result: Option<String>,
    #[serde(default)]
    pub error_line: Option<String>,
    #[serde(default)]
    pub error_message: Option<String>,
}

/// Longest field of an entry kept, in bytes: stage names and error
/// messages are short; a giant one must not blow up the summary (cut on a
/// character boundary, marked with `…`).
pub const MAX_FIELD_BYTES: usize = 4096;

impl Entry {
    fn shorten_fields(&mut self) {
        for field in [
            &mut self.timestamp,
            &mut self.phase,
            &mut self.stage,
            &mut self.pre_command,
            &mut self.post_command,
            &mut self.result,
            &mut self.error_line,
            &mut self.error_message,
        ]
        .into_iter()
        .flatten()
        {
            if field.len() > MAX_FIELD_BYTES {
                let mut cut = MAX_FIELD_BYTES;
                while !field.is_char_boundary(cut) {
                    cut -= 1;
                }
                field.truncate(cut);
                field.push('…');
            }
        }
    }
}

/// How a step (a stage, a pre/post-command, or the service run) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Success,
    Failure,
    /// Started, no end recorded, and nothing came after: may still run.
    Running,
    /// Started, no end recorded, but the service started again afterwards:
    /// the run was killed (or the host rebooted).
    Killed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::Failure => "failure",
            Outcome::Running => "running",
            Outcome::Killed => "killed",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    Stage,
    PreCommand,
    PostCommand,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StepKind::Stage => "stage",
            StepKind::PreCommand => "pre-command",
            StepKind::PostCommand => "post-command",
        }
    }
}

/// A stage or pre/post-command within one run of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    pub kind: StepKind,
    pub name: String,
    pub start: Option<String>,
    pub end: Option<String>,
    pub duration_secs: Option<i64>,
    pub result: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
}

/// One `service start` … `service end` of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub start: Option<String>,
    pub end: Option<String>,
    pub duration_secs: Option<i64>,
    pub result: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    pub steps: Vec<Step>,
}

/// A failed step or run, for the failures list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// 1-based run of the service.
    pub run: usize,
    /// `service`, or the step kind and name (`stage cvo-bootstrap`).
    pub what: String,
    pub at: Option<String>,
    pub error_line: Option<String>,
    pub error_message: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    pub service: String,
    /// Record file name, e.g. `bootkube.json`.
    pub file: String,
    /// The outcome of the last run.
    pub status: Outcome,
    pub runs: Vec<Run>,
    pub failures: Vec<Failure>,
    /// Entries salvaged from the file.
    pub entries: usize,
}

impl Service {
    pub fn last_run(&self) -> Option<&Run> {
        self.runs.last()
    }

    /// `service start`s beyond the first.
    pub fn restarts(&self) -> usize {
        self.runs.len().saturating_sub(1)
    }
}

/// The result of parsing one file: what was salvaged and what went wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub entries: Vec<Entry>,
    pub problem: Option<String>,
}

/// Parses one record file, salvaging the complete entries before any break.
pub fn parse_entries(data: &[u8]) -> Parsed {
    let text_start = data
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(data.len());
    if text_start == data.len() {
        return Parsed {
            entries: Vec::new(),
            problem: Some("empty file".into()),
        };
    }
    let mut entries = std::collections::VecDeque::new();
    let mut skipped_non_objects = 0usize;
    let mut dropped = 0usize;
    let mut push = |value: Value| {
        let entry = match value {
            Value::Object(_) => serde_json::from_value::<Entry>(value).ok(),
            _ => None,
        };
        let Some(mut entry) = entry else {
            skipped_non_objects += 1;
            return;
        };
        entry.shorten_fields();
        if entries.len() == MAX_ENTRIES {
            entries.pop_front();
            dropped += 1;
        }
        entries.push_back(entry);
    };
    let problem = if data[text_start] == b'[' {
        parse_array(&data[text_start + 1..], text_start + 1, &mut push)
    } else {
        // Not an array: perhaps entries one after another (a hand-made file).
        let mut stream = serde_json::Deserializer::from_slice(data).into_iter::<Value>();
        let mut problem = None;
        for item in stream.by_ref() {
            match item {
                Ok(Value::Array(items)) => items.into_iter().for_each(&mut push),
                Ok(value) => push(value),
                Err(err) => {
                    problem = Some(format!("not a JSON array; stopped at {err}"));
                    break;
                }
            }
        }
        problem.or_else(|| Some("not a JSON array".into()))
    };
    let mut problem = problem;
    if dropped > 0 {
        let note = format!(
            "{} entries: only the newest {MAX_ENTRIES} kept (entry cap)",
            dropped + entries.len()
        );
        problem = Some(problem.map_or(note.clone(), |p| format!("{p}; {note}")));
    }
    if skipped_non_objects > 0 {
        let note = format!("{skipped_non_objects} entries are not record objects");
        problem = Some(problem.map_or(note.clone(), |p| format!("{p}; {note}")));
    }
    if let Some(p) = &mut problem {
        if entries.is_empty() {
            p.push_str("; nothing salvaged");
        } else {
            use std::fmt::Write as _;
            let _ = write!(p, "; salvaged {} complete entries", entries.len());
        }
    }
    Parsed {
        entries: entries.into(),
        problem,
    }
}

/// Reads `[ value, value, … ]` after the `[`; returns what broke it, if
/// anything. `base` is the offset of `data` in the file, for messages.
fn parse_array(data: &[u8], base: usize, push: &mut impl FnMut(Value)) -> Option<String> {
    let mut at = 0;
    let skip_ws = |at: &mut usize| {
        while *at < data.len() && data[*at].is_ascii_whitespace() {
            *at += 1;
        }
    };
    let mut first = true;
    loop {
        skip_ws(&mut at);
        if at >= data.len() {
            return Some(format!(
                "truncated JSON: the array ends at byte {} without `]`",
                base + at
            ));
        }
        if data[at] == b']' {
            let rest = &data[at + 1..];
            return rest
                .iter()
                .any(|b| !b.is_ascii_whitespace())
                .then(|| format!("trailing data after the array at byte {}", base + at + 1));
        }
        if !first {
            if data[at] != b',' {
                return Some(format!(
                    "invalid JSON at byte {}: expected `,` or `]`",
                    base + at
                ));
            }
            at += 1;
            skip_ws(&mut at);
        }
        first = false;
        if data.get(at) != Some(&b'{') {
            // Not an entry: skipped without building it (millions of tiny
            // non-objects must not cost an error message each).
            let mut stream = serde_json::Deserializer::from_slice(&data[at..])
                .into_iter::<serde::de::IgnoredAny>();
            match stream.next() {
                Some(Ok(_)) => {
                    at += stream.byte_offset();
                    push(Value::Null);
                    continue;
                }
                Some(Err(err)) => return Some(entry_problem(Some(&err), base + at)),
                None => return Some(entry_problem(None, base + at)),
            }
        }
        let mut stream = serde_json::Deserializer::from_slice(&data[at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(value)) => {
                at += stream.byte_offset();
                push(value);
            }
            Some(Err(err)) => return Some(entry_problem(Some(&err), base + at)),
            None => return Some(entry_problem(None, base + at)),
        }
    }
}

pub(super) fn parse_time(ts: Option<&str>) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(ts?.trim_end_matches('Z')).ok()
}

fn duration(start: Option<&str>, end: Option<&str>) -> Option<i64> {
    let (s, e) = (parse_time(start)?, parse_time(end)?);
    Some(match e.duration_since(s) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(back) => -i64::try_from(back.duration().as_secs()).unwrap_or(i64::MAX),
    })
}

fn outcome(result: Option<&str>) -> Outcome {
    match result {
        Some(r) if r.eq_ignore_ascii_case("success") => Outcome::Success,
        _ => Outcome::Failure,
    }
}

/// Builds a service's runs from its entries.
pub fn service_from_entries(service: &str, file: &str, entries: &[Entry]) -> Service {
    let mut runs: Vec<Run> = Vec::new();
    // Steps of the last run still waiting for their end, by kind and name
    // (indices into its `steps`, innermost last): an end finds its start
    // in constant time, however many steps the run has.
    let mut open_steps: std::collections::HashMap<(StepKind, String), Vec<usize>> =
        std::collections::HashMap::new();
    let new_run = |start: Option<String>| Run {
        start,
        end: None,
        duration_secs: None,
        result: Outcome::Running,
        error_line: None,
        error_message: None,
        steps: Vec::new(),
    };
    for entry in entries {
        let phase = entry.phase.as_deref().unwrap_or("").trim();
        let ts = entry.timestamp.clone();
        let (kind, name) = if let Some(c) = &entry.pre_command {
            (StepKind::PreCommand, c.clone())
        } else if let Some(c) = &entry.post_command {
            (StepKind::PostCommand, c.clone())
        } else {
            (StepKind::Stage, entry.stage.clone().unwrap_or_default())
        };
        match phase {
            "service start" => {
                open_steps.clear();
                runs.push(new_run(ts));
            }
            "service end" => {
                if runs.last().is_none_or(|r| r.result != Outcome::Running) {
                    // An end without its start (the start was cut off).
                    open_steps.clear();
                    runs.push(new_run(None));
                }
                let run = runs.last_mut().expect("pushed above");
                run.end = ts;
                run.result = outcome(entry.result.as_deref());
                run.error_line.clone_from(&entry.error_line);
                run.error_message.clone_from(&entry.error_message);
                run.duration_secs = duration(run.start.as_deref(), run.end.as_deref());
            }
            "stage start" | "pre-command start" | "post-command start" => {
                if runs.last().is_none_or(|r| r.result != Outcome::Running) {
                    open_steps.clear();
                    runs.push(new_run(None));
                }
                let run = runs.last_mut().expect("pushed above");
                // A step starting while the previous one never ended: that
                // one was abandoned (the script does not nest steps).
                open_steps
                    .entry((kind, name.clone()))
                    .or_default()
                    .push(run.steps.len());
                run.steps.push(Step {
                    kind,
                    name,
                    start: ts,
                    end: None,
                    duration_secs: None,
                    result: Outcome::Running,
                    error_line: None,
                    error_message: None,
                });
            }
            "stage end" | "pre-command end" | "post-command end" => {
                if runs.last().is_none_or(|r| r.result != Outcome::Running) {
                    open_steps.clear();
                    runs.push(new_run(None));
                }
                let run = runs.last_mut().expect("pushed above");
                let open = open_steps.get_mut(&(kind, name.clone())).and_then(Vec::pop);
                let step = if let Some(i) = open {
                    &mut run.steps[i]
                } else {
                    run.steps.push(Step {
                        kind,
                        name,
                        start: None,
                        end: None,
                        duration_secs: None,
                        result: Outcome::Running,
                        error_line: None,
                        error_message: None,
                    });
                    run.steps.last_mut().expect("pushed above")
                };
                step.end = ts;
                step.result = outcome(entry.result.as_deref());
                step.error_line.clone_from(&entry.error_line);
                step.error_message.clone_from(&entry.error_message);
                step.duration_secs = duration(step.start.as_deref(), step.end.as_deref());
            }
            _ => {}
        }
    }
    // Runs without an end: the last may still be going; earlier ones were
    // killed, since the service started again.
    let last = runs.len().saturating_sub(1);
    for (i, run) in runs.iter_mut().enumerate() {
        let unfinished = if i == last {
            Outcome::Running
        } else {
            Outcome::Killed
        };
        // `result` is `Running` until an end entry (timestamped or not) is seen.
        let run_ended = run.result != Outcome::Running;
        if !run_ended {
            run.result = unfinished;
        }
        for step in &mut run.steps {
            if step.result == Outcome::Running {
                step.result = if run_ended {
                    Outcome::Killed
                } else {
                    unfinished
                };
            }
        }
    }
    let mut failures = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        for step in &run.steps {
            if step.result == Outcome::Failure {
                failures.push(Failure {
                    run: i + 1,
                    what: format!("{} {}", step.kind.as_str(), step.name),
                    at: step.end.clone(),
                    error_line: step.error_line.clone(),
                    error_message: step.error_message.clone(),
                });
            }
        }
        if run.result == Outcome::Failure {
            failures.push(Failure {
                run: i + 1,
                what: "service".into(),
                at: run.end.clone(),
                error_line: run.error_line.clone(),
                error_message: run.error_message.clone(),
            });
        }
    }
    Service {
        service: service.to_owned(),
        file: file.to_owned(),
        status: runs.last().map_or(Outcome::Running, |r| r.result),
        runs,
        failures,
        entries: entries.len(),
    }
}

/// Why reading an entry at byte `offset` stopped: cut off, invalid, or the
/// array's end missing (`None`: no entry and no `]`).
fn entry_problem(err: Option<&serde_json::Error>, offset: usize) -> String {
    match err {
        Some(err) if err.is_eof() => {
            format!("truncated JSON: an entry at byte {offset} is cut off")
        }
        Some(err) => format!("invalid JSON in the entry at byte {offset}: {err}"),
        None => format!("truncated JSON: the array ends at byte {offset} without `]`"),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::records::summary::Summary;

    const FIXTURES: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/root/var/log/openshift"
    );

    /// A record file of the test fixture root, by name.
    pub(in crate::records) fn fixture(name: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
    }

    #[test]
    fn truncated_file_keeps_complete_entries_and_names_the_break() {
        let whole = fixture("bootkube.json");
        // Cut in the middle of the 6th entry.
        let mut cut = 0;
        let mut seen = 0;
        for (i, &b) in whole.iter().enumerate() {
            if b == b'}' {
                seen += 1;
                if seen == 5 {
                    cut = i + 20;
                    break;
                }
            }
        }
        let parsed = parse_entries(&whole[..cut]);
        assert_eq!(parsed.entries.len(), 5);
        let problem = parsed.problem.unwrap();
        assert!(problem.starts_with("truncated JSON"), "{problem}");
        assert!(
            problem.ends_with("salvaged 5 complete entries"),
            "{problem}"
        );

        let mut summary = Summary::default();
        summary.add_file("bootkube.json", &whole[..cut]);
        summary.finish();
        assert_eq!(summary.services.len(), 1);
        assert!(summary.problems[0].starts_with("bootkube.json: truncated JSON"));
        // Nothing failed in what was salvaged: the break itself is the finding.
        assert_eq!(
            summary.digest.as_deref(),
            Some("records: bootkube.json: truncated JSON: an entry at byte 569 is cut off; salvaged 5 complete entries")
        );
        // Cut right after a stage start: that stage reads as running.
        let cut = whole
            .windows(b"\"etcd-bootstrap\"".len())
            .position(|w| w == b"\"etcd-bootstrap\"")
            .unwrap()
            + 40;
        let mut summary = Summary::default();
        summary.add_file("bootkube.json", &whole[..cut]);
        assert_eq!(
            summary.digest().as_deref(),
            Some("bootkube: stage etcd-bootstrap still running since 2025-02-03T10:02:31Z")
        );
    }
}
