//! The `host_boot` archive: the tar.gz writer and the manifest's types.
//!
//! The archive is a row of gzip members (RFC 1952 allows any number; gzip,
//! GNU tar, Python's tarfile and Go read them as one stream): tar headers,
//! paddings and small members share gzip members compressed here, a big
//! member's chunks (`collect::chunks`, compressed as they were gathered)
//! are copied as they are. Nothing touches the disk, the output can be a
//! pipe to the network, and memory holds at most one member's compressed
//! chunks (`chunks::COMPRESSED_CAP`) besides the journal cache of a
//! long-running agent.
//!
//! Caps: 64 MiB per member, 200 MiB in all (below assisted-service's
//! 250 MiB upload limit even before compression); the writer tells each
//! member its budget ([`Sink::budget`]). What goes in, and in which order,
//! is `assemble`'s business; this file writes what it is given and nothing
//! else. `docs/bundle.md` has the layout, the caps and the redaction rules.

use std::io::{Read, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::collect::chunks::{Content, GZIP_LEVEL};
use crate::collect::{Budget, CollectorReport, Sink, BUNDLE_CAP_REASON, MEMBER_CAP_REASON};
use crate::gzip::Gzip;

/// Plain tar bytes (headers, small members) compressed together into one
/// gzip member: enough for deflate's window, little memory.
const PENDING_BYTES: usize = 256 << 10;

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

/// The archive being written: a row of gzip members holding one tar stream.
/// Members are checked against the bundle's caps ([`Sink::budget`]); names
/// and content come as they are to be stored.
pub struct TarWriter<W: Write> {
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
}

impl<W: Write> TarWriter<W> {
    /// An archive on `out` whose members are dated `now`, its top
    /// directory written.
    pub fn new(out: W, limits: BundleLimits, now: SystemTime) -> std::io::Result<Self> {
        let mut writer = Self {
            out,
            pending: Vec::new(),
            gzip: Gzip::new(GZIP_LEVEL),
            headers: tar::Builder::new(Vec::new()),
            limits,
            used: 0,
            mtime: now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        };
        writer.append_dir()?;
        Ok(writer)
    }

    /// Content bytes of the collectors' members so far.
    pub fn used(&self) -> u64 {
        self.used
    }

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
        let name = format!("{TOP_DIR}/{path}");
        let bytes = self.header_bytes(&mut header, &name)?;
        self.plain(&bytes)
    }

    /// A small member outside the caps (diagnosis, manifest): exactly
    /// `size` bytes of `data`.
    pub fn append_member(
        &mut self,
        path: &str,
        size: u64,
        data: &mut dyn Read,
    ) -> std::io::Result<()> {
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
    pub fn finish(mut self) -> std::io::Result<W> {
        self.plain(&[0u8; 1024])?;
        self.flush_pending()?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Sink for TarWriter<W> {
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
