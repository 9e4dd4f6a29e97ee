//! Reading a bundle tar.gz that nobody vouches for (`inspect` on a file a
//! customer attached, the mock service on an upload) in bounded memory and
//! CPU, whatever its headers claim.
//!
//! - The uncompressed stream is counted and reading stops with
//!   [`BundleError::TooBig`] as soon as it passes the caller's cap: a gzip
//!   bomb costs at most the cap's worth of inflating.
//! - Member names are taken from the plain header, a GNU long-name entry or a
//!   pax `path` record, each read only after its size was checked: a name
//!   over [`MAX_NAME_BYTES`] is [`BundleError::NameTooLong`], never
//!   allocated. pax records are read up to [`MAX_PAX_BYTES`].
//! - The tar crate's own long-name and pax handling (which reads them whole,
//!   at any size) is bypassed by reading the archive's raw entries.

use std::fmt;
use std::io::{self, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Longest member name read (Linux's `PATH_MAX`); the agent's are < 300.
pub const MAX_NAME_BYTES: u64 = 4096;
/// Largest pax extended header read; ours carry one path at most.
pub const MAX_PAX_BYTES: u64 = 64 * 1024;

/// Why a bundle was refused.
#[derive(Debug)]
pub enum BundleError {
    /// More than `cap` bytes once uncompressed.
    TooBig { cap: u64 },
    /// A member name (GNU long name or pax path) of `bytes` bytes.
    NameTooLong { bytes: u64 },
    /// A pax header of `bytes` bytes.
    PaxTooBig { bytes: u64 },
    /// Not a gzip tar, or a broken one.
    Malformed(io::Error),
}

impl fmt::Display for BundleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BundleError::TooBig { cap } => write!(
                f,
                "refused: more than {cap} bytes uncompressed (the cap; a bundle is at most a few hundred MiB)"
            ),
            BundleError::NameTooLong { bytes } => write!(
                f,
                "refused: a member name of {bytes} bytes (names over {MAX_NAME_BYTES} bytes are not read)"
            ),
            BundleError::PaxTooBig { bytes } => write!(
                f,
                "refused: a pax header of {bytes} bytes (over {MAX_PAX_BYTES} bytes are not read)"
            ),
            BundleError::Malformed(err) => write!(f, "not a readable tar.gz: {err}"),
        }
    }
}

impl std::error::Error for BundleError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BundleError::Malformed(err) => Some(err),
            _ => None,
        }
    }
}

/// Counts the bytes coming out of the decompressor; past the cap, reading
/// fails and `tripped` tells why (the tar crate rewraps errors).
struct Capped<R> {
    inner: R,
    read: u64,
    cap: u64,
    tripped: Arc<AtomicBool>,
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = self.cap.saturating_sub(self.read).saturating_add(1);
        let want = usize::try_from(room).unwrap_or(usize::MAX).min(buf.len());
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        if self.read > self.cap {
            self.tripped.store(true, Ordering::Relaxed);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "uncompressed size cap reached",
            ));
        }
        Ok(n)
    }
}

/// One member as [`read_members`] hands it over.
pub struct Member<'a> {
    /// The member's name, lossily UTF-8 (raw bytes are not kept).
    pub name: String,
    pub size: u64,
    pub entry_type: tar::EntryType,
    /// The member's data (at most `size` bytes).
    pub data: &'a mut dyn Read,
}

/// Whether [`read_members`] goes on after a member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Continue,
    Stop,
}

/// Reads the gzip tar `compressed`, handing each member to `visit` in archive
/// order, and stops at the end (the whole gzip stream read and checked),
/// when `visit` says so, or at the first error.
/// Errors `visit` returns are passed through as [`BundleError::Malformed`].
pub fn read_members<R: Read>(
    compressed: R,
    max_uncompressed: u64,
    mut visit: impl FnMut(Member<'_>) -> io::Result<Next>,
) -> Result<(), BundleError> {
    let tripped = Arc::new(AtomicBool::new(false));
    let capped = Capped {
        inner: flate2::read::MultiGzDecoder::new(BufReader::new(compressed)),
        read: 0,
        cap: max_uncompressed,
        tripped: Arc::clone(&tripped),
    };
    let classify = |err: io::Error| {
        if tripped.load(Ordering::Relaxed) {
            BundleError::TooBig {
                cap: max_uncompressed,
            }
        } else {
            BundleError::Malformed(err)
        }
    };
    let mut archive = tar::Archive::new(capped);
    let entries = archive.entries().map_err(classify)?.raw(true);
    let mut long_name: Option<Vec<u8>> = None;
    let mut pax_path: Option<Vec<u8>> = None;
    for entry in entries {
        let mut entry = entry.map_err(classify)?;
        let entry_type = entry.header().entry_type();
        let size = entry.size();
        if entry_type.is_gnu_longname() || entry_type.is_gnu_longlink() {
            if size > MAX_NAME_BYTES {
                return Err(BundleError::NameTooLong { bytes: size });
            }
            let mut name = Vec::new();
            entry.read_to_end(&mut name).map_err(classify)?;
            while name.last() == Some(&0) {
                name.pop();
            }
            if entry_type.is_gnu_longname() {
                long_name = Some(name);
            }
            continue;
        }
        if entry_type.is_pax_local_extensions() || entry_type.is_pax_global_extensions() {
            if size > MAX_PAX_BYTES {
                return Err(BundleError::PaxTooBig { bytes: size });
            }
            let mut data = Vec::new();
            entry.read_to_end(&mut data).map_err(classify)?;
            if entry_type.is_pax_local_extensions() {
                for record in tar::PaxExtensions::new(&data) {
                    let record = record.map_err(BundleError::Malformed)?;
                    if record.key_bytes() == b"path" {
                        let value = record.value_bytes();
                        if value.len() as u64 > MAX_NAME_BYTES {
                            return Err(BundleError::NameTooLong {
                                bytes: value.len() as u64,
                            });
                        }
                        pax_path = Some(value.to_vec());
                    }
                }
            }
            continue;
        }
        let name_bytes = match (pax_path.take(), long_name.take()) {
            (Some(name), _) | (None, Some(name)) => name,
            (None, None) => entry.header().path_bytes().into_owned(),
        };
        let name = String::from_utf8_lossy(&name_bytes).into_owned();
        let next = visit(Member {
            name,
            size,
            entry_type,
            data: &mut entry,
        })
        .map_err(classify)?;
        if next == Next::Stop {
            return Ok(());
        }
    }
    // Past the end-of-archive blocks: the rest of the gzip stream must still
    // inflate (and check its CRC) for the bundle to count as complete.
    io::copy(&mut archive.into_inner(), &mut io::sink()).map_err(classify)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::write::GzEncoder;
    use std::io::Write as _;

    fn gzip(data: &[u8]) -> Vec<u8> {
        let mut enc = GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    }

    fn names(data: &[u8], cap: u64) -> Result<Vec<(String, u64)>, BundleError> {
        let mut out = Vec::new();
        read_members(data, cap, |m| {
            out.push((m.name, m.size));
            Ok(Next::Continue)
        })?;
        Ok(out)
    }

    fn header(name: &[u8], size: u64, kind: tar::EntryType) -> [u8; 512] {
        let mut h = tar::Header::new_gnu();
        h.as_old_mut().name[..name.len()].copy_from_slice(name);
        h.set_size(size);
        h.set_mode(0o644);
        h.set_entry_type(kind);
        h.set_cksum();
        *h.as_bytes()
    }

    #[test]
    fn names_long_and_short_are_read() {
        let mut builder = tar::Builder::new(Vec::new());
        let long = format!("host_boot/{}/x.log", "d".repeat(300));
        for name in ["host_boot/manifest.json", long.as_str()] {
            let mut h = tar::Header::new_gnu();
            h.set_size(3);
            h.set_mode(0o644);
            builder.append_data(&mut h, name, &b"abc"[..]).unwrap();
        }
        let data = gzip(&builder.into_inner().unwrap());
        let got = names(&data, 1 << 20).unwrap();
        assert_eq!(got, [("host_boot/manifest.json".into(), 3), (long, 3)]);
    }

    #[test]
    fn oversized_long_name_is_refused_before_it_is_read() {
        let mut tar = Vec::new();
        tar.extend_from_slice(&header(
            b"././@LongLink",
            1 << 40,
            tar::EntryType::GNULongName,
        ));
        tar.extend_from_slice(&[b'a'; 8192]);
        let err = names(&gzip(&tar), u64::MAX).unwrap_err();
        assert!(
            matches!(err, BundleError::NameTooLong { bytes } if bytes == 1 << 40),
            "{err}"
        );
    }

    #[test]
    fn gzip_bomb_stops_at_the_cap() {
        let mut tar = Vec::new();
        tar.extend_from_slice(&header(b"zeros", 64 << 20, tar::EntryType::Regular));
        tar.resize(512 + (64 << 20), 0);
        let data = gzip(&tar);
        let err = names(&data, 1 << 20).unwrap_err();
        assert!(
            matches!(err, BundleError::TooBig { cap } if cap == 1 << 20),
            "{err}"
        );
        assert!(err.to_string().contains("1048576 bytes uncompressed"));
    }
}
