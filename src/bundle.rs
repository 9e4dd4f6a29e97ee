//! The `host_boot` bundle: one tar.gz with everything the collectors gather
//! and a `manifest.json` saying what each member is, where it came from and
//! what was cut, skipped, redacted or failed.
//!
//! Members are streamed: each is gathered, already compressed, into bounded
//! chunks in memory (`collect::chunks`), then written out before the next is
//! gathered. The archive is a row of gzip members (RFC 1952 allows any
//! number; gzip, GNU tar, Python's tarfile and Go read them as one stream):
//! tar headers, paddings and small members share gzip members compressed
//! here, a big member's chunks are copied as they are. Nothing touches the
//! disk, the output can be a pipe to the network, and memory holds at most
//! one member's compressed chunks (`chunks::COMPRESSED_CAP`) besides the
//! journal cache of a long-running agent.
//!
//! Caps: 64 MiB per member, 200 MiB in all (below assisted-service's
//! 250 MiB upload limit even before compression), and a cap per collector
//! (`collect::COLLECTORS`). Collectors run in priority order (records,
//! network, mounts, system, systemd, crio, journal) so the bundle cap can
//! only ever cut the journals; the manifest comes last and is never cut.
//! `docs/bundle.md` has the layout, the caps and the redaction rules.

use std::io::{Read, Write};

use crate::collect::chunks::{Content, GZIP_LEVEL};
use crate::gzip::Gzip;

/// Plain tar bytes (headers, small members) compressed together into one
/// gzip member: enough for deflate's window, little memory.
const PENDING_BYTES: usize = 256 << 10;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};

use crate::collect::{
    self, Budget, CollectContext, CollectorReport, Sink, Status, BUNDLE_CAP_REASON,
    MEMBER_CAP_REASON,
};
use crate::diagnose::{self, Diagnosis, Engine, Placement, Scanner, DIAGNOSIS_NAME};

/// Name of the records collector, whose digest the manifest repeats.
pub const RECORDS_COLLECTOR: &str = "records";

/// Top directory of every member.
pub const TOP_DIR: &str = "host_boot";
/// Name of the manifest member, relative to [`TOP_DIR`].
pub const MANIFEST_NAME: &str = "manifest.json";
pub const FORMAT_VERSION: u32 = 1;

const MIB: u64 = 1024 * 1024;

/// Members the manifest lists per collector, and entries of `truncated`:
/// the agent makes a few hundred; a host with thousands of record files or
/// pod logs must not grow the manifest past what `inspect` and the mock
/// read (8 MiB). The rest are counted (`unlisted`, `truncated_unlisted`).
pub const MANIFEST_FILES_PER_LIST: usize = 1000;
/// Bytes of compact JSON one such list may take: with pretty printing,
/// eight lists stay under 4 MiB.
pub const MANIFEST_LIST_BYTES: usize = 384 * 1024;
/// Characters of one reason in the manifest (they quote stderr and name
/// host files).
pub const MANIFEST_REASON_CHARS: usize = 2048;

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if signature
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Who and why, copied into the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleMeta {
    pub agent_version: String,
    pub host_id: String,
    pub infra_env_id: String,
    pub cluster_id: Option<String>,
    pub boot_id: String,
    pub boot_number: u32,
    /// The stage the service reported.
    pub service_stage: Option<String>,
    /// Why this bundle: "first", "interval", "final".
    pub reason: String,
}

/// Size caps on member content (uncompressed). Tar headers and the manifest
/// add a few KiB on top, far inside the margin to the service's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BundleLimits {
    pub total_bytes: u64,
    pub member_bytes: u64,
}

impl Default for BundleLimits {
    /// 200 MiB in all, below assisted-service's 250 MiB upload limit even
    /// before compression; 64 MiB per member, so one journal cannot take it all.
    fn default() -> Self {
        Self {
            total_bytes: 200 * MIB,
            member_bytes: 64 * MIB,
        }
    }
}

/// The `manifest.json` member.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    /// RFC 3339, UTC.
    pub generated_at: String,
    pub meta: BundleMeta,
    pub limits: BundleLimits,
    /// In collection order.
    pub collectors: Vec<CollectorReport>,
    /// Content bytes of every member except the manifest.
    pub total_bytes: u64,
    /// Members cut or left out by a size cap.
    pub truncated: Vec<TruncatedMember>,
    /// Such members past what `truncated` lists (its size is bounded).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub truncated_unlisted: usize,
    /// Secrets replaced in all members.
    #[serde(default)]
    pub redactions: usize,
    /// Bytes written to temporary files while building the bundle: always 0
    /// since members wait compressed in memory (older agents spilled big
    /// members to an unlinked file); kept for the readers of both.
    #[serde(default)]
    pub spill_bytes: u64,
    /// One line naming the worst finding of the bootstrap service records
    /// (see `records::Summary::digest`), for the service's `progress_info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_digest: Option<String>,
    /// The `diagnosis.json` member (`docs/diagnosis.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diagnosis: Option<DiagnosisEntry>,
}

/// The manifest's entry for `diagnosis.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiagnosisEntry {
    /// Member path, relative to the top directory.
    pub path: String,
    pub bytes: u64,
    /// Findings by severity.
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
    /// The worst finding in one line (also sent as `progress_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<String>,
    /// Time the engine took (line scan, absorbing, correlation), in
    /// milliseconds: its cost figure (docs/diagnosis.md, bench/run).
    pub cpu_ms: u64,
    /// Lines the engine read.
    #[serde(default)]
    pub lines_scanned: u64,
    /// Lines with an anchor the engine's read budget left unread.
    #[serde(default)]
    pub lines_unread: u64,
}

impl Manifest {
    pub fn collector(&self, name: &str) -> Option<&CollectorReport> {
        self.collectors.iter().find(|c| c.name == name)
    }

    /// The records digest: one line (at most 200 characters) naming the
    /// worst finding of the bootstrap services, `None` when all is well or
    /// there are no records.
    pub fn digest(&self) -> Option<&str> {
        self.records_digest.as_deref()
    }

    /// The bundle's worst finding in one line, for `progress_info`.
    pub fn diagnosis_headline(&self) -> Option<&str> {
        self.diagnosis.as_ref()?.headline.as_deref()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TruncatedMember {
    pub path: String,
    pub reason: String,
}

/// Runs every collector and writes one complete tar.gz to `out`.
///
/// Blocking: run it on a blocking thread; `out` may be a pipe to the network,
/// so members are written as they are produced. Returns the manifest (also
/// the archive's last member, `manifest.json`) and `out` after the gzip
/// stream is finished. Fails only if writing to `out` fails.
pub fn write_bundle<W: Write>(
    out: W,
    ctx: &CollectContext,
    meta: &BundleMeta,
    limits: &BundleLimits,
) -> anyhow::Result<(Manifest, W)> {
    let now = SystemTime::now();
    let mut sink = TarSink {
        out,
        pending: Vec::new(),
        gzip: Gzip::new(GZIP_LEVEL),
        headers: tar::Builder::new(Vec::new()),
        limits: *limits,
        used: 0,
        mtime: now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        names: ctx.redactor.clone(),
        engine: Engine::new(),
        scan_cpu: std::time::Duration::ZERO,
    };
    sink.append_dir()
        .context("writing the bundle's top directory")?;

    let mut collectors = Vec::with_capacity(collect::COLLECTORS.len());
    for spec in collect::COLLECTORS {
        let name = spec.name;
        let report = collect::run(spec, ctx, &mut sink)
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

    let finish_started = std::time::Instant::now();
    sink.scan_cpu += sink.engine.scan_time();
    let diagnosis = std::mem::take(&mut sink.engine).finish();
    let diagnosis_entry = write_diagnosis(&mut sink, ctx, &diagnosis, finish_started.elapsed())?;

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
        total_bytes: sink.used,
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
    sink: &mut TarSink<W>,
    ctx: &CollectContext,
    diagnosis: &Diagnosis,
    finish_time: std::time::Duration,
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
    let cpu = sink.scan_cpu + finish_time;
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

struct TarSink<W: Write> {
    out: W,
    /// Tar bytes (headers, paddings, small members) waiting to be
    /// compressed together into the next gzip member.
    pending: Vec<u8>,
    /// Compresses `pending` (the same compressor as the chunks').
    gzip: Gzip,
    /// Formats headers (GNU long names included) into its buffer.
    headers: tar::Builder<Vec<u8>>,
    limits: BundleLimits,
    used: u64,
    mtime: u64,
    /// Member names come from host file names: redacted like their content.
    names: crate::redact::Redactor,
    /// The diagnosis, fed by every member's scanner.
    engine: Engine,
    /// Time spent absorbing scanners, then plus the scanners' own.
    scan_cpu: std::time::Duration,
}

impl<W: Write> TarSink<W> {
    fn header(&self, size: u64, mode: u32, kind: tar::EntryType) -> tar::Header {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(kind);
        header.set_size(size);
        header.set_mode(mode);
        header.set_mtime(self.mtime);
        header.set_uid(0);
        header.set_gid(0);
        header
    }

    /// The header (and GNU long-name entry) of member `name`.
    fn header_bytes(&mut self, header: &mut tar::Header, name: &str) -> std::io::Result<Vec<u8>> {
        self.headers.append_data(header, name, std::io::empty())?;
        Ok(std::mem::take(self.headers.get_mut()))
    }

    /// Tar bytes to compress with the next gzip member.
    fn plain(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        // In pieces: a member's plain head or tail (up to a chunk) must not
        // grow the buffer past its size.
        while !bytes.is_empty() {
            let room = PENDING_BYTES.saturating_sub(self.pending.len()).max(1);
            let take = bytes.len().min(room);
            self.pending.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
            if self.pending.len() >= PENDING_BYTES {
                self.flush_pending()?;
            }
        }
        Ok(())
    }

    /// Compresses what is pending into one gzip member.
    fn flush_pending(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.out.write_all(self.gzip.member(&self.pending))?;
        self.pending.clear();
        Ok(())
    }

    fn padding(&mut self, size: u64) -> std::io::Result<()> {
        let rest = usize::try_from(size % 512).unwrap_or(0);
        if rest > 0 {
            self.plain(&[0u8; 512][rest..])?;
        }
        Ok(())
    }

    fn append_dir(&mut self) -> std::io::Result<()> {
        let mut header = self.header(0, 0o755, tar::EntryType::Directory);
        let bytes = self.header_bytes(&mut header, &format!("{TOP_DIR}/"))?;
        self.plain(&bytes)
    }

    fn member_header(&mut self, path: &str, size: u64) -> std::io::Result<()> {
        let mut header = self.header(size, 0o644, tar::EntryType::Regular);
        let name = format!("{TOP_DIR}/{}", self.names.redact_str(path));
        let bytes = self.header_bytes(&mut header, &name)?;
        self.plain(&bytes)
    }

    /// A small member the bundle writes itself (diagnosis, manifest).
    fn append_member(&mut self, path: &str, size: u64, data: &mut dyn Read) -> std::io::Result<()> {
        self.member_header(path, size)?;
        // tar pads to the size in the header; a short read would shift every
        // later member, so insist on exactly `size` bytes.
        let mut exact = ExactReader {
            inner: data.take(size),
            left: size,
        };
        let mut buf = vec![0u8; 64 << 10];
        loop {
            let n = exact.read(&mut buf)?;
            if n == 0 {
                break;
            }
            self.plain(&buf[..n])?;
        }
        self.padding(size)
    }

    /// The end-of-archive blocks, the last gzip member, and `out` back.
    fn finish(mut self) -> std::io::Result<W> {
        self.plain(&[0u8; 1024])?;
        self.flush_pending()?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Sink for TarSink<W> {
    fn budget(&self) -> Budget {
        let remaining = self.limits.total_bytes.saturating_sub(self.used);
        if remaining < self.limits.member_bytes {
            Budget {
                bytes: remaining,
                reason: BUNDLE_CAP_REASON,
            }
        } else {
            Budget {
                bytes: self.limits.member_bytes,
                reason: MEMBER_CAP_REASON,
            }
        }
    }

    fn append(&mut self, path: &str, size: u64, data: &mut dyn Read) -> std::io::Result<()> {
        self.append_member(path, size, data)?;
        self.used += size;
        Ok(())
    }

    /// Header and plain parts compressed here, sealed chunks copied as
    /// they are: each is a complete gzip member already.
    fn append_content(&mut self, path: &str, content: &Content) -> std::io::Result<()> {
        let size = content.len();
        self.member_header(path, size)?;
        self.plain(&content.head)?;
        for chunk in &content.sealed {
            self.flush_pending()?;
            self.out.write_all(&chunk.gz)?;
        }
        self.plain(&content.tail)?;
        self.padding(size)?;
        self.used += size;
        Ok(())
    }

    fn scanner(&mut self, path: &str) -> Option<Scanner> {
        self.engine.scanner(path)
    }

    fn scanned(&mut self, scanner: Scanner, placement: Placement) {
        let started = std::time::Instant::now();
        self.engine.absorb(scanner, placement);
        self.scan_cpu += started.elapsed();
    }
}

struct ExactReader<R> {
    inner: R,
    left: u64,
}

impl<R: Read> Read for ExactReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && self.left > 0 && !buf.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("member content ended {} bytes early", self.left),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::testing::{context, fixture_path, fixtures_bin, script};

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
