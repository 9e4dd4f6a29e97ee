//! One `host_boot` bundle put together: every collector writes its members
//! into the archive (`bundle`), the diagnosis engine watches them through
//! collect's line hook as they go in, and `diagnosis.json` and
//! `manifest.json` close the archive. The agent's uploads and the `collect`
//! tool both come through here.
//!
//! Collectors run in priority order (records, network, mounts, system,
//! systemd, crio, journal) so the bundle cap can only ever cut the
//! journals; the diagnosis and the manifest come last and are never cut.

use std::any::Any;
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;

use crate::bundle::{
    BundleLimits, BundleMeta, DiagnosisEntry, Manifest, TarWriter, TruncatedMember, DIAGNOSIS_NAME,
    FORMAT_VERSION, MANIFEST_FILES_PER_LIST, MANIFEST_LIST_BYTES, MANIFEST_NAME,
    MANIFEST_REASON_CHARS, RECORDS_COLLECTOR,
};
use crate::collect::{
    self, CollectContext, CollectorReport, LineObserver, Observers, Placement, Status,
};
use crate::diagnose::{self, Diagnosis, Engine, Scanner};

/// Runs every collector and writes one complete tar.gz to `out`.
///
/// Blocking: run it on a blocking thread; `out` may be a pipe to the network,
/// so members are written as they are produced. Returns the manifest (also
/// the archive's last member, `manifest.json`) and `out` after the gzip
/// stream is finished. Fails only if writing to `out` fails.
pub(crate) fn write_bundle<W: Write>(
    out: W,
    ctx: &CollectContext,
    meta: &BundleMeta,
    limits: &BundleLimits,
) -> anyhow::Result<(Manifest, W)> {
    let now = SystemTime::now();
    let mut sink =
        TarWriter::new(out, *limits, now).context("writing the bundle's top directory")?;
    let mut engine = Engine::new();

    let mut collectors = Vec::with_capacity(collect::COLLECTORS.len());
    for spec in collect::COLLECTORS {
        let name = spec.name;
        let report = collect::run(spec, ctx, &mut sink, &mut engine)
            .with_context(|| format!("writing the {name} members of the bundle"))?;
        tracing::debug!(
            collector = name,
            status = ?report.status,
            bytes = report.bytes,
            duration_ms = report.duration_ms,
            "collected"
        );
        collectors.push(report);
    }

    let finish_started = Instant::now();
    let scan_time = engine.scan_time();
    let diagnosis = engine.finish();
    let cpu = scan_time + finish_started.elapsed();
    let diagnosis_entry = write_diagnosis(&mut sink, ctx, &diagnosis, cpu)?;

    let mut truncated: Vec<TruncatedMember> = Vec::new();
    let mut truncated_unlisted = 0usize;
    let mut truncated_bytes = 0usize;
    for f in collectors.iter().flat_map(|c| &c.files) {
        let capped =
            f.status == Status::Skipped && f.reason.as_deref().is_some_and(collect::is_cap_reason);
        if !(f.truncated || capped) {
            continue;
        }
        let mut reason = f.reason.clone().unwrap_or_default();
        collect::report::cut_chars(&mut reason, MANIFEST_REASON_CHARS);
        truncated_bytes += f.path.len() + reason.len();
        if truncated.len() == MANIFEST_FILES_PER_LIST || truncated_bytes > MANIFEST_LIST_BYTES {
            truncated_unlisted += 1;
            continue;
        }
        truncated.push(TruncatedMember {
            path: f.path.clone(),
            reason,
        });
    }
    // Counted before the listings are bounded: every member's redactions.
    let redactions = collectors.iter().map(CollectorReport::redactions).sum();
    for collector in &mut collectors {
        collector.bound_listing(
            MANIFEST_FILES_PER_LIST,
            MANIFEST_LIST_BYTES,
            MANIFEST_REASON_CHARS,
        );
    }
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        generated_at: humantime::format_rfc3339_seconds(now).to_string(),
        meta: meta.clone(),
        limits: *limits,
        total_bytes: sink.used(),
        redactions,
        spill_bytes: 0,
        records_digest: collectors
            .iter()
            .find(|c| c.name == RECORDS_COLLECTOR)
            .and_then(|c| c.digest.clone()),
        collectors,
        truncated,
        truncated_unlisted,
        diagnosis: Some(diagnosis_entry),
        root: Some(ctx.root_report()),
    };
    let mut json = serde_json::to_vec_pretty(&manifest).context("serializing the manifest")?;
    json.push(b'\n');
    // Reasons quote commands' stderr; scrub the manifest like any member.
    ctx.redactor.redact(&mut json);
    sink.append_member(MANIFEST_NAME, json.len() as u64, &mut json.as_slice())
        .context("writing manifest.json")?;

    let out = sink.finish().context("finishing the archive")?;
    Ok((manifest, out))
}

/// Writes `diagnosis.json` (never cut: it is small and bounded).
fn write_diagnosis<W: Write>(
    sink: &mut TarWriter<W>,
    ctx: &CollectContext,
    diagnosis: &Diagnosis,
    cpu: Duration,
) -> anyhow::Result<DiagnosisEntry> {
    let mut json = serde_json::to_vec_pretty(diagnosis).context("serializing the diagnosis")?;
    json.push(b'\n');
    // Evidence lines were redacted on their way in; scrub the whole anyway.
    ctx.redactor.redact(&mut json);
    sink.append_member(DIAGNOSIS_NAME, json.len() as u64, &mut json.as_slice())
        .context("writing diagnosis.json")?;
    let count = |s: diagnose::Severity| {
        diagnosis
            .findings
            .iter()
            .filter(|f| f.severity == s)
            .count()
    };
    Ok(DiagnosisEntry {
        path: DIAGNOSIS_NAME.to_owned(),
        bytes: json.len() as u64,
        errors: count(diagnose::Severity::Error),
        warnings: count(diagnose::Severity::Warning),
        infos: count(diagnose::Severity::Info),
        headline: diagnosis.headline().map(|h| {
            let mut bytes = h.into_bytes();
            ctx.redactor.redact(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        }),
        cpu_ms: u64::try_from(cpu.as_millis()).unwrap_or(u64::MAX),
        lines_scanned: diagnosis.lines_scanned,
        lines_unread: diagnosis.lines_unread,
    })
}

/// The engine watches the members it reads through collect's line hook.
impl Observers for Engine {
    fn observer(&mut self, path: &str) -> Option<Box<dyn LineObserver>> {
        Scanner::for_member(path).map(|scanner| Box::new(scanner) as Box<dyn LineObserver>)
    }

    fn observed(&mut self, observer: Box<dyn LineObserver>, placement: Placement) {
        // Every observer this hook hands out is a scanner.
        if let Ok(scanner) = observer.into_any().downcast::<Scanner>() {
            let placement = diagnose::Placement {
                archived: placement.archived,
                dropped_bytes: placement.dropped_bytes,
                member_lines: placement.member_lines,
            };
            self.absorb(*scanner, placement);
        }
    }
}

impl LineObserver for Scanner {
    fn feed(&mut self, data: &[u8]) {
        Scanner::feed(self, data);
    }

    fn lines(&self) -> u64 {
        Scanner::lines(self)
    }

    fn resumed(&self) -> Box<dyn LineObserver> {
        Box::new(Scanner::resumed(self))
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::testing::{context, fixture_path, fixtures_bin, script};
    use std::io::Read as _;

    use std::path::Path;

    fn meta() -> BundleMeta {
        BundleMeta {
            agent_version: "0.1.0".into(),
            host_id: "b7e0c1a2-0000-4000-8000-000000000001".into(),
            infra_env_id: "b7e0c1a2-0000-4000-8000-000000000002".into(),
            cluster_id: None,
            boot_id: "8f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".into(),
            boot_number: 2,
            service_stage: Some("Rebooting".into()),
            reason: "first".into(),
        }
    }

    /// A sysroot with the files the precious collectors read.
    fn fake_root() -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let p = root.path();
        for dir in [
            "etc",
            "var/log/openshift",
            "proc/self",
            "proc/sys/kernel/random",
        ] {
            std::fs::create_dir_all(p.join(dir)).unwrap();
        }
        std::fs::write(p.join("etc/resolv.conf"), b"nameserver 192.168.122.1\n").unwrap();
        std::fs::write(p.join("etc/hostname"), b"master-0\n").unwrap();
        std::fs::write(
            p.join("var/log/openshift/bootkube.json"),
            br#"[{"timestamp":"2026-11-22T10:00:00Z","phase":"service start"}]"#,
        )
        .unwrap();
        std::fs::write(
            p.join("proc/self/mountinfo"),
            b"22 1 252:4 / / rw - xfs /dev/vda4 rw\n",
        )
        .unwrap();
        std::fs::write(p.join("proc/sys/kernel/random/boot_id"), b"8f1e2d3c\n").unwrap();
        root
    }

    /// A journalctl that runs the fixture with extra environment.
    fn journal_wrapper(env: &str) -> tempfile::TempDir {
        let bin = tempfile::tempdir().unwrap();
        script(
            bin.path(),
            "journalctl",
            &format!(
                "{env} exec '{}/journalctl' \"$@\"",
                fixtures_bin().display()
            ),
        );
        bin
    }

    fn unpack(gz: &[u8]) -> Vec<(String, tar::Header, Vec<u8>)> {
        let mut archive = tar::Archive::new(flate2::read::MultiGzDecoder::new(gz));
        archive
            .entries()
            .unwrap()
            .map(|entry| {
                let mut entry = entry.unwrap();
                let path = entry.path().unwrap().to_string_lossy().into_owned();
                let header = entry.header().clone();
                let mut data = Vec::new();
                entry.read_to_end(&mut data).unwrap();
                (path, header, data)
            })
            .collect()
    }

    #[test]
    fn bundle_round_trips_with_a_complete_manifest() {
        let root = fake_root();
        let bin = journal_wrapper("FAKE_JOURNAL_EXTRA='token=sekrit-token-1234567890' ");
        let ctx = context(root.path(), Some(fixture_path(Some(bin.path()))));
        let (manifest, gz) =
            write_bundle(Vec::new(), &ctx, &meta(), &BundleLimits::default()).unwrap();

        let members = unpack(&gz);
        let (last, _, json) = members.last().unwrap();
        assert_eq!(last, "host_boot/manifest.json");
        let parsed: Manifest = serde_json::from_slice(json).unwrap();
        assert_eq!(parsed, manifest);
        assert_eq!(parsed.format_version, 1);
        assert_eq!(parsed.meta, meta());
        assert!(humantime::parse_rfc3339(&parsed.generated_at).is_ok());
        let names: Vec<&str> = parsed.collectors.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            ["records", "network", "mounts", "system", "systemd", "crio", "journal"]
        );

        // Every archived file in the manifest is in the tar with its size,
        // and every tar member but the directory and manifest is in the manifest.
        let files: Vec<_> = parsed.collectors.iter().flat_map(|c| &c.files).collect();
        for file in files.iter().filter(|f| f.archived) {
            let name = format!("host_boot/{}", file.path);
            let (_, header, data) = members.iter().find(|(p, _, _)| *p == name).expect(&name);
            assert_eq!(data.len() as u64, file.bytes);
            assert_eq!(header.mode().unwrap(), 0o644);
            assert_eq!(header.uid().unwrap(), 0);
        }
        // The top directory, diagnosis.json and the manifest.
        assert_eq!(
            members.len(),
            files.iter().filter(|f| f.archived).count() + 3
        );
        let sum: u64 = files.iter().map(|f| f.bytes).sum();
        assert_eq!(parsed.total_bytes, sum);

        let get = |p: &str| &members.iter().find(|(n, _, _)| n == p).unwrap().2;
        assert_eq!(
            get("host_boot/records/bootkube.json"),
            br#"[{"timestamp":"2026-11-22T10:00:00Z","phase":"service start"}]"#
        );
        assert_eq!(
            get("host_boot/network/resolv.conf"),
            b"nameserver 192.168.122.1\n"
        );
        assert_eq!(
            get("host_boot/mounts/mountinfo"),
            b"22 1 252:4 / / rw - xfs /dev/vda4 rw\n"
        );

        // The token never reaches the archive, and each redaction is counted.
        let journal = parsed.collector("journal").unwrap();
        let redacted: usize = journal.files.iter().map(|f| f.redactions).sum();
        let with_output = journal
            .files
            .iter()
            .filter(|f| f.path != "journal/list-boots.txt" && f.path != "journal/storage.txt")
            .count();
        assert_eq!(redacted, with_output);
        let mut plain = Vec::new();
        flate2::read::MultiGzDecoder::new(gz.as_slice())
            .read_to_end(&mut plain)
            .unwrap();
        assert!(!String::from_utf8_lossy(&plain).contains("sekrit-token"));
    }

    #[test]
    fn total_cap_cuts_the_journals_and_keeps_the_precious_members() {
        let root = fake_root();
        let bin = journal_wrapper("FAKE_JOURNAL_BYTES=1000000 ");
        let ctx = context(root.path(), Some(fixture_path(Some(bin.path()))));
        let limits = BundleLimits {
            total_bytes: 96 * 1024,
            member_bytes: 32 * 1024,
        };
        let (manifest, gz) = write_bundle(Vec::new(), &ctx, &meta(), &limits).unwrap();
        let members = unpack(&gz);

        let content: u64 = members
            .iter()
            // Like the manifest, diagnosis.json is outside the content cap
            // (bounded: at most 32 findings of 8 evidence lines).
            .filter(|(p, _, _)| p != "host_boot/manifest.json" && p != "host_boot/diagnosis.json")
            .map(|(_, _, d)| d.len() as u64)
            .sum();
        assert!(content <= limits.total_bytes, "{content}");
        assert_eq!(content, manifest.total_bytes);
        for precious in [
            "host_boot/records/bootkube.json",
            "host_boot/network/resolv.conf",
            "host_boot/network/ip-addr.txt",
            "host_boot/mounts/mountinfo",
            "host_boot/system/summary.json",
        ] {
            assert!(members.iter().any(|(p, _, _)| p == precious), "{precious}");
        }
        let journal = manifest.collector("journal").unwrap();
        let this_boot = journal
            .files
            .iter()
            .find(|f| f.path == "journal/this-boot.log")
            .unwrap();
        assert!(
            this_boot
                .reason
                .as_deref()
                .unwrap()
                .contains("bundle size cap"),
            "{this_boot:?}"
        );
        let cut = journal.files.iter().find(|f| f.truncated).unwrap();
        assert!(cut.bytes <= limits.member_bytes);
        // The tail is kept: the journal's last filler line ends the member.
        let (_, _, data) = members
            .iter()
            .find(|(p, _, _)| *p == format!("host_boot/{}", cut.path))
            .unwrap();
        assert!(data.ends_with(b"filler[1]: xxxxxxxxxxxxxxx\n"));
        assert!(manifest
            .truncated
            .iter()
            .any(|t| t.path == "journal/previous-boot.log" && t.reason == "bundle size cap"));
    }

    /// Accepts `limit` bytes, then fails like a closed connection.
    #[derive(Debug)]
    struct BrokenPipe {
        limit: usize,
        written: usize,
    }

    impl Write for BrokenPipe {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.written + buf.len() > self.limit {
                return Err(std::io::ErrorKind::BrokenPipe.into());
            }
            self.written += buf.len();
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn write_failure_is_the_only_error() {
        let root = fake_root();
        let ctx = context(root.path(), Some(fixture_path(None)));
        let out = BrokenPipe {
            limit: 0,
            written: 0,
        };
        let err = write_bundle(out, &ctx, &meta(), &BundleLimits::default()).unwrap_err();
        assert!(
            format!("{err:#}").to_lowercase().contains("broken pipe"),
            "{err:#}"
        );

        // Nothing on PATH at all still makes a complete bundle.
        let empty = tempfile::tempdir().unwrap();
        let ctx = context(Path::new("/nonexistent-root"), Some(empty.path().into()));
        let (manifest, gz) =
            write_bundle(Vec::new(), &ctx, &meta(), &BundleLimits::default()).unwrap();
        let journal = manifest.collector("journal").unwrap();
        assert_eq!(
            journal.files[0].reason.as_deref(),
            Some("journalctl not found on PATH")
        );
        assert!(journal
            .files
            .iter()
            .filter(|f| f.path != "journal/storage.txt")
            .all(|f| f.status == Status::Skipped));
        assert_eq!(unpack(&gz).last().unwrap().0, "host_boot/manifest.json");
    }
}
