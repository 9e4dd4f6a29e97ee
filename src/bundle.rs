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

use crate::collect::chunks::{Content, GZIP_LEVEL};
use crate::collect::{Budget, Sink, BUNDLE_CAP_REASON, MEMBER_CAP_REASON};
use crate::gzip::Gzip;

/// Plain tar bytes (headers, small members) compressed together into one
/// gzip member: enough for deflate's window, little memory.
const PENDING_BYTES: usize = 256 << 10;

// The format's names and the manifest's types, written here and read by
// `inspect` and the mock service alike.
pub(crate) use bundle_format::{
    BundleLimits, BundleMeta, DiagnosisEntry, Manifest, TruncatedMember, DIAGNOSIS_NAME,
    FORMAT_VERSION, MANIFEST_FILES_PER_LIST, MANIFEST_LIST_BYTES, MANIFEST_NAME,
    MANIFEST_REASON_CHARS, RECORDS_COLLECTOR, TOP_DIR,
};

/// The archive being written: a row of gzip members holding one tar stream.
/// Members are checked against the bundle's caps ([`Sink::budget`]); names
/// and content come as they are to be stored.
pub(crate) struct TarWriter<W: Write> {
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
    pub(crate) fn new(out: W, limits: BundleLimits, now: SystemTime) -> std::io::Result<Self> {
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
    pub(crate) fn used(&self) -> u64 {
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
    pub(crate) fn append_member(
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
    pub(crate) fn finish(mut self) -> std::io::Result<W> {
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
