//! `inspect FILE`: what matters in a bundle, read bounded from untrusted
//! input — the findings first, the manifest as a table, the records digest
//! and timeline, failed units, redaction counts; or one JSON object.
//! Several bundles, or a directory of them, are a cluster's report
//! (`cluster.rs`, which also holds the command's entry point).
//!
//! Every string a bundle carries is untrusted: it goes through [`printable`]
//! once, as the bundle is opened (its JSON members through
//! [`printable_json`]), before anything is printed, text or JSON. The one
//! raw line break kept is between the lines of a failed run's excerpt,
//! which the report prints as indented lines.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use crate::bundle::{Manifest, DIAGNOSIS_NAME, MANIFEST_NAME, TOP_DIR};
use crate::collect::Status;
use crate::diagnose::Diagnosis;
use crate::records::{Outcome, Summary};
use bundle_format::reader as bundle_reader;

use super::args::parse_size;

/// Flags of `inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// A host_boot bundle (tar.gz) made by the agent or by `collect`; several
    /// bundles, or a directory holding them (as the service stores them,
    /// `CLUSTER/HOST/host_boot.tar.gz`), make one report per cluster: a line
    /// per host, the causes shared by several hosts, each host's findings.
    #[arg(value_name = "BUNDLE", required = true, num_args = 1..)]
    pub(crate) files: Vec<PathBuf>,

    /// Print one JSON object instead of the report: `findings` (most likely
    /// cause first) and the `manifest` (docs/diagnosis.md).
    #[arg(long)]
    pub(crate) json: bool,

    /// Refuse a bundle bigger than this once uncompressed (a gzip bomb is
    /// inflated only this far), e.g. 4GiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1GiB")]
    pub(crate) max_uncompressed: u64,
}

/// What `inspect` reads from a bundle: the manifest and a few small members.
/// Every string in them is [`printable`]: a bundle is untrusted input, and
/// a control character in a name must not reach the terminal.
#[derive(Debug, Default)]
pub(super) struct Opened {
    pub(super) manifest: Option<Manifest>,
    pub(super) summary: Option<Summary>,
    failed_units: Option<String>,
    pub(super) diagnosis: Option<Diagnosis>,
    /// `crio/crictl-pods.txt`, escaped line by line: the pods tell a
    /// control-plane host.
    pub(super) pods: Option<String>,
    /// Every member with its size, in archive order.
    pub(super) members: Vec<(String, u64)>,
}

const FAILED_UNITS: &str = "systemd/failed-units.txt";
const PODS: &str = "crio/crictl-pods.txt";

/// Small members read whole; anything bigger is only counted.
const READ_LIMIT: u64 = 8 * 1024 * 1024;
/// Members listed; the agent writes a few hundred.
pub const MAX_MEMBERS: usize = 100_000;

pub(super) fn open_bundle(
    file: impl Read,
    path: &Path,
    max_uncompressed: u64,
) -> anyhow::Result<Opened> {
    let mut opened = Opened::default();
    let prefix = format!("{TOP_DIR}/");
    let mut wanted_members = Vec::new();
    let read = bundle_reader::read_members(file, max_uncompressed, |member| {
        if opened.members.len() == MAX_MEMBERS {
            return Err(io::Error::other(format!(
                "more than {MAX_MEMBERS} members: not a bundle of this agent"
            )));
        }
        let name = printable(&member.name).into_owned();
        let inner = name.strip_prefix(&prefix).unwrap_or(&name).to_owned();
        opened.members.push((inner.clone(), member.size));
        let wanted = matches!(
            inner.as_str(),
            MANIFEST_NAME | "records/summary.json" | FAILED_UNITS | PODS | DIAGNOSIS_NAME
        );
        if wanted && member.size <= READ_LIMIT && member.entry_type.is_file() {
            let mut data = Vec::new();
            member.data.take(READ_LIMIT).read_to_end(&mut data)?;
            wanted_members.push((inner, data));
        }
        Ok(bundle_reader::Next::Continue)
    });
    read.with_context(|| format!("reading {}", path.display()))?;
    for (inner, data) in wanted_members {
        match inner.as_str() {
            MANIFEST_NAME => {
                let value: serde_json::Value = serde_json::from_slice(&data)
                    .with_context(|| format!("{TOP_DIR}/{inner} does not parse"))?;
                opened.manifest = Some(
                    serde_json::from_value(printable_json(value, &[]))
                        .with_context(|| format!("{TOP_DIR}/{inner} does not parse"))?,
                );
            }
            "records/summary.json" => {
                // A failed run's excerpt keeps its line breaks: each line
                // is escaped on its own and printed on its own.
                opened.summary = serde_json::from_slice(&data).ok().and_then(|value| {
                    serde_json::from_value(printable_json(value, &["error_message"])).ok()
                });
            }
            DIAGNOSIS_NAME => {
                opened.diagnosis = serde_json::from_slice(&data)
                    .ok()
                    .and_then(|value| serde_json::from_value(printable_json(value, &[])).ok());
            }
            PODS => opened.pods = Some(printable_lines(&String::from_utf8_lossy(&data))),
            _ => opened.failed_units = Some(printable_lines(&String::from_utf8_lossy(&data))),
        }
    }
    Ok(opened)
}

/// `text` with every control character (C0, DEL, C1) and every bidirectional
/// override written as an escape (`\x1b`, `\u{202e}`), so that a name or
/// message taken from a host or a bundle prints as one inert line: no forged
/// line, no terminal title, no reordered text. Borrowed when clean.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    crate::collect::report::escape_controls(text)
}

/// [`printable`] applied to every string (keys included) of a JSON value;
/// the string values of the keys in `multiline` keep their line breaks
/// (`\n`, `\r\n` taken as one), each line escaped on its own.
pub(super) fn printable_json(value: serde_json::Value, multiline: &[&str]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(printable(&s).into_owned()),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| printable_json(v, multiline))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) if multiline.contains(&k.as_str()) => {
                            Value::String(printable_lines(&s))
                        }
                        v => printable_json(v, multiline),
                    };
                    (printable(&k).into_owned(), v)
                })
                .collect(),
        ),
        other => other,
    }
}

/// `text`'s lines, each [`printable`], joined by `\n`.
fn printable_lines(text: &str) -> String {
    let lines: Vec<_> = text.lines().map(printable).collect();
    lines.join("\n")
}

/// `text` cut to at most `max` characters at the last space before the cut,
/// with `…` (a hard cut when the text has no space in its second half).
pub(super) fn cut_at_word(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    let hard = crate::diagnose::shorten_text(text, max);
    if hard == text {
        return std::borrow::Cow::Borrowed(text);
    }
    let head = hard.strip_suffix('…').unwrap_or(&hard);
    let word_end = head
        .rfind(char::is_whitespace)
        .filter(|&at| head[..at].chars().count() >= max / 2);
    match word_end {
        Some(at) => std::borrow::Cow::Owned(format!("{}…", head[..at].trim_end())),
        None => std::borrow::Cow::Owned(hard),
    }
}

/// What the header calls a host: its ID, or why there is none.
pub(super) fn host_name(host_id: &str) -> &str {
    if host_id.is_empty() {
        "unknown (no configuration)"
    } else {
        host_id
    }
}

/// Prints the report of one bundle.
pub fn inspect(
    path: &Path,
    json: bool,
    max_uncompressed: u64,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let compressed = file.metadata().map_or(0, |m| m.len());
    inspect_from(file, path, compressed, json, max_uncompressed, out)
}

/// [`inspect`] on a bundle read from `file` (`path` names it in the report
/// and in errors): the fuzz target's way in.
pub fn inspect_from(
    file: impl Read,
    path: &Path,
    compressed: u64,
    json: bool,
    max_uncompressed: u64,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let opened = open_bundle(file, path, max_uncompressed)?;
    let Some(manifest) = &opened.manifest else {
        anyhow::bail!(
            "{} has no {TOP_DIR}/{MANIFEST_NAME}: the bundle is incomplete ({} members read)",
            path.display(),
            opened.members.len()
        );
    };
    if json {
        // Strings are escaped as the bundle was opened; escaping again
        // changes nothing and keeps C1 codes and bidi overrides, which JSON
        // writers leave raw, out of this output by construction.
        let value = printable_json(inspect_json(manifest, &opened), &[]);
        serde_json::to_writer_pretty(&mut *out, &value)?;
        writeln!(out)?;
        return Ok(());
    }
    let text = render(path, compressed, manifest, &opened);
    out.write_all(text.as_bytes())
        .context("writing the report")?;
    Ok(())
}

/// Version of `inspect --json`'s object (docs/diagnosis.md).
pub const INSPECT_JSON_VERSION: u32 = 1;

/// `inspect --json`: one object, findings first (most likely root cause
/// first), the manifest under `manifest`. A bundle from before diagnosis
/// has `"diagnosis": null` and no findings.
fn inspect_json(manifest: &Manifest, opened: &Opened) -> serde_json::Value {
    let findings = opened.diagnosis.as_ref().map_or_else(
        || serde_json::Value::Array(Vec::new()),
        |d| serde_json::to_value(&d.findings).unwrap_or_default(),
    );
    let diagnosis = opened.diagnosis.as_ref().map(|d| {
        serde_json::json!({
            "format_version": d.format_version,
            "members_scanned": d.members_scanned,
            "lines_scanned": d.lines_scanned,
            "lines_unread": d.lines_unread,
        })
    });
    serde_json::json!({
        "inspect_version": INSPECT_JSON_VERSION,
        "findings": findings,
        "diagnosis": diagnosis,
        "manifest": manifest,
    })
}

/// Evidence lines shown per finding.
pub(super) const EVIDENCE_SHOWN: usize = 3;
/// Characters of an evidence line shown.
pub(super) const EVIDENCE_CHARS: usize = 160;

/// One evidence line as the report prints it: `path:line: text`.
pub(super) fn evidence_line(e: &crate::diagnose::Evidence) -> String {
    let at = e.line.map_or_else(|| "cut".to_owned(), |l| l.to_string());
    format!("{}:{at}: {}", e.path, cut_at_word(&e.text, EVIDENCE_CHARS))
}

/// The findings block that opens the report.
fn render_findings(o: &mut String, diagnosis: Option<&Diagnosis>) {
    let Some(diagnosis) = diagnosis else {
        let _ = writeln!(
            o,
            "findings: no {DIAGNOSIS_NAME} in the bundle (made before diagnosis)"
        );
        return;
    };
    if diagnosis.findings.is_empty() {
        let _ = writeln!(
            o,
            "findings: none ({} lines in {} members read{})",
            diagnosis.lines_scanned,
            diagnosis.members_scanned,
            if diagnosis.lines_unread > 0 {
                format!(
                    "; {} lines with an anchor past the read budget",
                    diagnosis.lines_unread
                )
            } else {
                String::new()
            }
        );
        return;
    }
    let _ = writeln!(o, "findings (most likely cause first):");
    for (i, f) in diagnosis.findings.iter().enumerate() {
        let _ = writeln!(
            o,
            "  {}. {:<7} {}: {}",
            i + 1,
            f.severity.as_str(),
            f.category.as_str(),
            f.summary
        );
        let _ = writeln!(o, "     hint: {}", f.hint);
        for e in f.evidence.iter().take(EVIDENCE_SHOWN) {
            let _ = writeln!(o, "     {}", evidence_line(e));
        }
    }
    if diagnosis.lines_unread > 0 {
        let _ = writeln!(
            o,
            "  ({} lines with an anchor were past the engine's read budget and not read)",
            diagnosis.lines_unread
        );
    }
}

fn human(bytes: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // display only
    let b = bytes as f64;
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KiB", b / 1024.0)
    } else if bytes < 1024 * 1024 * 1024 {
        format!("{:.1} MiB", b / 1024.0 / 1024.0)
    } else {
        format!("{:.2} GiB", b / 1024.0 / 1024.0 / 1024.0)
    }
}

fn secs(ms: u64) -> String {
    #[allow(clippy::cast_precision_loss)] // display only
    let s = ms as f64 / 1000.0;
    format!("{s:.1}s")
}

fn duration_text(secs: Option<i64>) -> String {
    match secs {
        None => "-".into(),
        Some(s) if s < 0 => format!("{s}s"),
        Some(s) => humantime::format_duration(Duration::from_secs(s.unsigned_abs())).to_string(),
    }
}

fn render(path: &Path, compressed: u64, manifest: &Manifest, opened: &Opened) -> String {
    let mut o = String::new();
    render_findings(&mut o, opened.diagnosis.as_ref());
    o.push('\n');
    let meta = &manifest.meta;
    let _ = writeln!(
        o,
        "bundle {} ({} compressed, {} content)",
        printable(&path.display().to_string()),
        human(compressed),
        human(manifest.total_bytes)
    );
    let _ = writeln!(
        o,
        "generated {} by agent {} ({}), host {}, boot {}{}",
        manifest.generated_at,
        meta.agent_version,
        meta.reason,
        host_name(&meta.host_id),
        if meta.boot_id.is_empty() {
            "?"
        } else {
            &meta.boot_id
        },
        if meta.boot_number > 0 {
            format!(" (#{} from disk)", meta.boot_number)
        } else {
            String::new()
        },
    );
    if let Some(stage) = &meta.service_stage {
        let _ = writeln!(o, "service stage: {stage}");
    }
    let _ = writeln!(
        o,
        "records: {}",
        manifest.digest().unwrap_or("no failure recorded")
    );

    let _ = writeln!(o, "\n== collectors");
    let _ = writeln!(
        o,
        "{:<10} {:<9} {:>10} {:>8} {:>7}  notes",
        "collector", "status", "bytes", "time", "files"
    );
    for c in &manifest.collectors {
        let archived = c.files.iter().filter(|f| f.archived).count();
        let truncated = c.files.iter().filter(|f| f.truncated).count();
        let mut notes = Vec::new();
        if truncated > 0 {
            notes.push(format!("{truncated} truncated"));
        }
        if let Some(reason) = &c.reason {
            notes.push(reason.clone());
        }
        let _ = writeln!(
            o,
            "{:<10} {:<9} {:>10} {:>8} {:>7}  {}",
            c.name,
            c.status.as_str(),
            human(c.bytes),
            secs(c.duration_ms),
            format!("{archived}/{}", c.files.len()),
            notes.join("; ")
        );
    }

    let not_ok: Vec<_> = manifest
        .collectors
        .iter()
        .flat_map(|c| &c.files)
        .filter(|f| !matches!(f.status, Status::Ok | Status::Skipped))
        .collect();
    if !not_ok.is_empty() {
        let _ = writeln!(o, "\n== members not ok");
        for f in not_ok {
            let _ = writeln!(
                o,
                "{:<44} {:<9} {}",
                f.path,
                f.status.as_str(),
                f.reason.as_deref().unwrap_or("")
            );
        }
    }
    if !manifest.truncated.is_empty() {
        let _ = writeln!(o, "\n== truncated or left out by a size cap");
        for t in &manifest.truncated {
            let _ = writeln!(o, "{:<44} {}", t.path, t.reason);
        }
    }

    let _ = writeln!(o, "\n== failed units");
    match &opened.failed_units {
        Some(text) => {
            let units: Vec<&str> = text
                .lines()
                .filter(|l| l.split_whitespace().next().is_some_and(|u| u.contains('.')))
                .filter(|l| l.contains(" failed"))
                .collect();
            if units.is_empty() {
                let _ = writeln!(o, "none");
            }
            for line in units {
                let _ = writeln!(o, "{}", line.trim());
            }
        }
        None => {
            let _ = writeln!(o, "unknown (no systemd/failed-units.txt in the bundle)");
        }
    }

    let _ = writeln!(o, "\n== bootstrap service records");
    match &opened.summary {
        None => {
            let _ = writeln!(o, "no records/summary.json in the bundle");
        }
        Some(summary) => render_summary(&mut o, summary),
    }

    let _ = writeln!(o, "\n== redactions: {} in all", manifest.redactions);
    for f in manifest
        .collectors
        .iter()
        .flat_map(|c| &c.files)
        .filter(|f| f.redactions > 0)
    {
        let _ = writeln!(o, "{:<60} {}", f.path, f.redactions);
    }
    o
}

fn render_summary(o: &mut String, summary: &Summary) {
    if !summary.records_dir_present {
        let _ = writeln!(
            o,
            "no /var/log/openshift on the host (normal after the bootstrap host rebooted)"
        );
    }
    for service in &summary.services {
        let _ = writeln!(
            o,
            "{} ({}): {}, {} run(s), {} entries",
            service.service,
            service.file,
            service.status.as_str(),
            service.run_count(),
            service.entries
        );
        if let Some(condensed) = &service.condensed {
            let _ = writeln!(o, "  {condensed}");
        }
        for (i, run) in service.runs.iter().enumerate() {
            let _ = writeln!(
                o,
                "  run {}: {} -> {} ({}) {}",
                i + 1 + service.runs_left_out,
                run.start.as_deref().unwrap_or("?"),
                run.end.as_deref().unwrap_or("…"),
                duration_text(run.duration_secs),
                run.result.as_str()
            );
            for step in &run.steps {
                let _ = writeln!(
                    o,
                    "    {:<12} {:<36} {} ({}) {}",
                    step.kind.as_str(),
                    step.name,
                    step.start.as_deref().unwrap_or("?"),
                    duration_text(step.duration_secs),
                    step.result.as_str()
                );
            }
        }
        for failure in &service.failures {
            let _ = writeln!(
                o,
                "  FAILED run {}: {} at {}{}",
                failure.run,
                failure.what,
                failure.at.as_deref().unwrap_or("?"),
                failure
                    .error_line
                    .as_deref()
                    .map(|l| format!(", line {l}"))
                    .unwrap_or_default()
            );
            // Escaped line by line as the bundle was opened.
            for line in failure.error_message.as_deref().unwrap_or("").lines() {
                let _ = writeln!(o, "    | {line}");
            }
        }
        if service.status == Outcome::Running {
            let _ = writeln!(
                o,
                "  (no end recorded: still running, or killed by a reboot)"
            );
        }
    }
    if !summary.done_markers.is_empty() {
        let _ = writeln!(o, "bootkube .done markers:");
        for marker in &summary.done_markers {
            let _ = writeln!(o, "  {}  {}", marker.mtime, marker.stage);
        }
    }
    if !summary.problems.is_empty() {
        let _ = writeln!(o, "problems:");
        for p in &summary.problems {
            let _ = writeln!(o, "  {p}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_sizes() {
        assert_eq!(human(10), "10 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(3 << 20), "3.0 MiB");
    }

    #[test]
    fn evidence_is_cut_at_a_word() {
        assert_eq!(cut_at_word("short line", 160), "short line");
        let exact = "a".repeat(10);
        assert_eq!(cut_at_word(&exact, 10), exact.as_str());
        assert_eq!(
            cut_at_word("pulling quay.io/openshift failed: unauthorized", 30),
            "pulling quay.io/openshift…"
        );
        // No space in the second half: a hard cut, still within the limit.
        let long = format!("ab {}", "x".repeat(40));
        let cut = cut_at_word(&long, 20);
        assert_eq!(cut.chars().count(), 20);
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn excerpts_keep_their_lines_and_lose_their_controls() {
        let value = serde_json::json!({
            "error_message": "first\r\nsecond \u{1b}]0;t\u{7}\nthird\rx",
            "what": "a\nb",
        });
        let value = printable_json(value, &["error_message"]);
        assert_eq!(
            value["error_message"],
            "first\nsecond \\x1b]0;t\\x07\nthird\\x0dx"
        );
        assert_eq!(value["what"], "a\\x0ab");
    }
}
