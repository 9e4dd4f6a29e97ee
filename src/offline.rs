//! Offline use by a support engineer on the host: `collect -o FILE` writes
//! the very bundle the agent ships, with no service involved, and `inspect
//! FILE` prints what matters in a bundle: the manifest as a table, the
//! records digest, failed units, the bootstrap services' timeline with
//! durations and failures, and the redaction counts.
//!
//! Unlike `run`, these are interactive tools: a runtime failure prints the
//! error chain and exits 1 (usage errors exit 2, from clap).

use std::fmt::Write as _;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;

use crate::bundle::{write_bundle, BundleLimits, BundleMeta, Manifest, MANIFEST_NAME, TOP_DIR};
use crate::bundle_reader;
use crate::collect::{CollectContext, Status};
use crate::config::DEFAULT_KUBELET_HEALTHZ_URL;
use crate::contract;
use crate::diagnose::{Diagnosis, DIAGNOSIS_NAME};
use crate::records::{Outcome, Summary};
use crate::redact::Redactor;

/// Exit code of `collect` and `inspect` when they fail at run time.
pub const EXIT_TOOL_FAILURE: ExitCode = ExitCode::FAILURE;

/// Flags of `collect`.
#[derive(Debug, Clone, Args)]
pub struct CollectArgs {
    /// Where to write the tar.gz (`-` for stdout).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: PathBuf,

    /// Sysroot prefix for every host file read.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,

    /// Discovery contract directory, read only for the host's IDs and the
    /// secrets to scrub [default: <root>/etc/assisted-boot-reporter].
    #[arg(long, value_name = "DIR")]
    pub config_dir: Option<PathBuf>,

    /// Longest a single collector command may run before it is killed.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "60s")]
    pub command_timeout: Duration,

    /// Cap of the bundle's content, e.g. 200MiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "200MiB")]
    pub max_bytes: u64,

    /// Cap of one member, e.g. 64MiB (bigger sources keep their newest part).
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "64MiB")]
    pub member_max_bytes: u64,

    /// kubelet's health endpoint, asked once.
    #[arg(long, value_name = "URL", default_value = DEFAULT_KUBELET_HEALTHZ_URL)]
    pub kubelet_healthz_url: String,
}

/// Flags of `inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    /// A host_boot bundle (tar.gz) made by the agent or by `collect`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// Print one JSON object instead of the report: `findings` (most likely
    /// cause first) and the `manifest` (docs/diagnosis.md).
    #[arg(long)]
    pub json: bool,

    /// Refuse a bundle bigger than this once uncompressed (a gzip bomb is
    /// inflated only this far), e.g. 4GiB.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "1GiB")]
    pub max_uncompressed: u64,
}

fn parse_duration(value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value).map_err(|err| format!("{err} (expected e.g. 10m, 90s, 1h)"))
}

/// `200MiB`, `64M`, `1GiB`, `4096`, `10k`: binary units, case-insensitive.
pub fn parse_size(value: &str) -> Result<u64, String> {
    let value = value.trim();
    let split = value
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{value:?} is not a size (expected e.g. 200MiB, 64M, 4096)"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("unknown size unit {unit:?} (use KiB, MiB or GiB)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{value:?} is too large"))
}

/// `collect`: exit 0 with a bundle written, or print the error chain and exit 1.
pub fn collect_command(args: &CollectArgs) -> ExitCode {
    // Its report quotes the records digest and paths: redacted like the
    // bundle (the rules are installed once the secrets are read).
    match collect(args, &mut crate::redact::log_writer()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = writeln!(crate::redact::log_writer(), "error: {err:#}");
            EXIT_TOOL_FAILURE
        }
    }
}

/// `inspect`: print the report on stdout, or the error chain and exit 1.
pub fn inspect_command(args: &InspectArgs) -> ExitCode {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    match inspect(&args.file, args.json, args.max_uncompressed, &mut out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let _ = out.flush();
            eprintln!("error: {err:#}");
            EXIT_TOOL_FAILURE
        }
    }
}

/// Counts what passes through to the output.
struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Writes one bundle as `args` say and a one-paragraph account to `log`.
pub fn collect(args: &CollectArgs, log: &mut dyn Write) -> anyhow::Result<Manifest> {
    anyhow::ensure!(
        args.member_max_bytes > 0 && args.max_bytes > 0,
        "size caps must be above zero"
    );
    let started = Instant::now();
    let contract = contract::Dir::at(&args.root, args.config_dir.as_deref());
    // Unreadable or missing parts of the contract leave a field empty: this
    // tool must work on a host whose contract is already gone.
    let contract_value = |name: &str| contract.read(name).ok().flatten();
    let mut secrets: Vec<String> = Vec::new();
    let token_sources = [
        std::env::var(contract::env::TOKEN).ok(),
        contract_value(contract::files::PULL_SECRET),
    ];
    for text in token_sources.into_iter().flatten() {
        if let Ok(creds) = contract::parse_credentials(&text) {
            secrets.extend(creds.scrub.iter().map(|s| s.expose().to_owned()));
        }
    }
    let redactor = Redactor::new(secrets);
    crate::redact::install_for_logs(&redactor);
    let mut ctx = CollectContext::new(args.root.clone(), args.command_timeout, redactor);
    ctx.kubelet_healthz_url = Some(args.kubelet_healthz_url.clone());
    let boot_id = ctx
        .read_host_file("/proc/sys/kernel/random/boot_id", 64, args.command_timeout)
        .map(|s| String::from_utf8_lossy(&s).trim().to_owned())
        .unwrap_or_default();
    let meta = BundleMeta {
        agent_version: env!("CARGO_PKG_VERSION").to_owned(),
        host_id: contract_value(contract::files::HOST_ID).unwrap_or_default(),
        infra_env_id: contract_value(contract::files::INFRA_ENV_ID).unwrap_or_default(),
        cluster_id: contract_value(contract::files::CLUSTER_ID),
        boot_id,
        // Not known without the agent's ledger; 0 says so.
        boot_number: 0,
        service_stage: None,
        reason: "offline".into(),
    };
    let limits = BundleLimits {
        total_bytes: args.max_bytes,
        member_bytes: args.member_max_bytes,
    };

    let to_stdout = args.output.as_os_str() == "-";
    let (manifest, compressed) = if to_stdout {
        let out = Counting {
            inner: BufWriter::new(io::stdout().lock()),
            bytes: 0,
        };
        let (manifest, mut out) = write_bundle(out, &ctx, &meta, &limits)?;
        out.flush().context("writing to stdout")?;
        (manifest, out.bytes)
    } else {
        // Written beside the target and renamed at the end, so a failed run
        // never leaves something that looks like a bundle.
        let partial = partial_path(&args.output);
        let file =
            File::create(&partial).with_context(|| format!("creating {}", partial.display()))?;
        let out = Counting {
            inner: BufWriter::new(file),
            bytes: 0,
        };
        let result = write_bundle(out, &ctx, &meta, &limits).and_then(|(manifest, out)| {
            let file = out
                .inner
                .into_inner()
                .map_err(io::IntoInnerError::into_error)
                .with_context(|| format!("writing {}", partial.display()))?;
            file.sync_all()
                .with_context(|| format!("writing {}", partial.display()))?;
            std::fs::rename(&partial, &args.output).with_context(|| {
                format!(
                    "renaming {} to {}",
                    partial.display(),
                    args.output.display()
                )
            })?;
            Ok((manifest, out.bytes))
        });
        if result.is_err() {
            let _ = std::fs::remove_file(&partial);
        }
        result?
    };

    let members: usize = manifest
        .collectors
        .iter()
        .flat_map(|c| &c.files)
        .filter(|f| f.archived)
        .count();
    let _ = writeln!(
        log,
        "wrote {}: {compressed} bytes compressed, {members} members, {} content bytes, \
         {} redactions, {} truncated, peak RSS {} KiB, {:.1}s",
        if to_stdout {
            "stdout".into()
        } else {
            args.output.display().to_string()
        },
        manifest.total_bytes,
        manifest.redactions,
        manifest.truncated.len(),
        peak_rss_kib().map_or_else(|| "?".into(), |k| k.to_string()),
        started.elapsed().as_secs_f64(),
    );
    if let Some(digest) = manifest.digest() {
        let _ = writeln!(log, "records: {digest}");
    }
    Ok(manifest)
}

fn partial_path(output: &Path) -> PathBuf {
    let mut name = output.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".partial-{}", std::process::id()));
    output.with_file_name(name)
}

/// The kernel's high-water mark of this process's resident memory.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// What `inspect` reads from a bundle: the manifest and a few small members.
/// Every string in them is [`printable`]: a bundle is untrusted input, and
/// a control character in a name must not reach the terminal.
#[derive(Debug, Default)]
struct Opened {
    manifest: Option<Manifest>,
    summary: Option<Summary>,
    failed_units: Option<String>,
    diagnosis: Option<Diagnosis>,
    /// Every member with its size, in archive order.
    members: Vec<(String, u64)>,
}

/// Small members read whole; anything bigger is only counted.
const READ_LIMIT: u64 = 8 * 1024 * 1024;
/// Members listed; the agent writes a few hundred.
pub const MAX_MEMBERS: usize = 100_000;

fn open_bundle(file: impl Read, path: &Path, max_uncompressed: u64) -> anyhow::Result<Opened> {
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
            MANIFEST_NAME | "records/summary.json" | "systemd/failed-units.txt" | DIAGNOSIS_NAME
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
                    serde_json::from_value(printable_json(value))
                        .with_context(|| format!("{TOP_DIR}/{inner} does not parse"))?,
                );
            }
            "records/summary.json" => {
                opened.summary = serde_json::from_slice(&data)
                    .ok()
                    .and_then(|value| serde_json::from_value(printable_json(value)).ok());
            }
            DIAGNOSIS_NAME => opened.diagnosis = serde_json::from_slice(&data).ok(),
            _ => {
                let text = String::from_utf8_lossy(&data);
                let lines: Vec<String> = text.lines().map(|l| printable(l).into_owned()).collect();
                opened.failed_units = Some(lines.join("\n"));
            }
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

/// [`printable`] applied to every string (keys included) of a JSON value.
fn printable_json(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(printable(&s).into_owned()),
        Value::Array(items) => Value::Array(items.into_iter().map(printable_json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (printable(&k).into_owned(), printable_json(v)))
                .collect(),
        ),
        other => other,
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
        serde_json::to_writer_pretty(&mut *out, &inspect_json(manifest, &opened))?;
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
        })
    });
    serde_json::json!({
        "inspect_version": INSPECT_JSON_VERSION,
        "findings": findings,
        "diagnosis": diagnosis,
        "manifest": manifest,
    })
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
            "findings: none ({} lines in {} members read)",
            diagnosis.lines_scanned, diagnosis.members_scanned
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
        for e in f.evidence.iter().take(3) {
            let at = e.line.map_or_else(|| "cut".to_owned(), |l| l.to_string());
            let _ = writeln!(
                o,
                "     {}:{at}: {}",
                e.path,
                crate::diagnose::shorten_text(&e.text, 160)
            );
        }
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
        path.display(),
        human(compressed),
        human(manifest.total_bytes)
    );
    let _ = writeln!(
        o,
        "generated {} by agent {} ({}), host {}, boot {}{}",
        manifest.generated_at,
        meta.agent_version,
        meta.reason,
        if meta.host_id.is_empty() {
            "?"
        } else {
            &meta.host_id
        },
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
            service.runs.len(),
            service.entries
        );
        for (i, run) in service.runs.iter().enumerate() {
            let _ = writeln!(
                o,
                "  run {}: {} -> {} ({}) {}",
                i + 1,
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
    fn sizes_parse_in_binary_units() {
        assert_eq!(parse_size("200MiB"), Ok(200 << 20));
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("10 KiB"), Ok(10 << 10));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5TB").unwrap_err().contains("unknown size unit"));
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(10), "10 B");
        assert_eq!(human(1536), "1.5 KiB");
        assert_eq!(human(3 << 20), "3.0 MiB");
    }
}
