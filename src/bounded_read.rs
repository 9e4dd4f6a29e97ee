//! The one reader of the files the agent reads for itself: the discovery
//! contract (`service-url`, `host-id`, `infra-env-id`, `cluster-id`,
//! `pull-secret`, `proxy.env`, `reporter.conf`, `ca.crt` or the host's
//! service CA), its state (`ledger.json`) and the kernel's boot ID and
//! uptime. Host logs are `rootfs`'s; this module owns how everything else
//! comes off the disk.
//!
//! These files are read before any deadline of the run exists, so each read
//! is bounded by itself, whatever stands at the path:
//!
//! - **regular files only**: the path is opened `O_PATH` first (no device
//!   driver's `open` runs, no FIFO waits for a writer) and that inode's type
//!   checked; the read open adds `O_NONBLOCK | O_NOCTTY` and the opened
//!   file's own metadata is checked again (same inode, still a regular file),
//!   so a FIFO, socket or device swapped in meanwhile is never read;
//! - **a size cap per kind** ([`Kind::cap`], documented in
//!   docs/discovery-contract.md, "Reading"): refused from the file's size
//!   before reading, and never more than the cap read from files whose size
//!   says nothing (`/proc`);
//! - **a deadline** ([`DEADLINE`]): open and read run on a thread of their
//!   own, abandoned there if the filesystem hangs (a stuck NFS or FUSE mount).

use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use rustix::fs::{Mode, OFlags};

/// How long one file may take to open and read. The largest cap is read in
/// milliseconds from any working disk; a read this slow is a hung one.
pub(crate) const DEADLINE: Duration = Duration::from_secs(5);

/// What a file is, for its size cap and for the messages that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// One value: `service-url`, `host-id`, `infra-env-id`, `cluster-id`,
    /// the kernel's `boot_id` and `uptime`.
    Value,
    /// `pull-secret` (or `--pull-secret-file`).
    PullSecret,
    /// `KEY=VALUE` settings: `proxy.env`, `reporter.conf`.
    Settings,
    /// `ca.crt`, `--cacert`, the host's service CA.
    CaBundle,
    /// The state directory's `ledger.json`.
    Ledger,
}

impl Kind {
    /// The most bytes a file of this kind may hold. Each is far above what
    /// its writer produces and far below what would matter in the unit's
    /// 128 MiB (`MemoryHigh=`).
    pub(crate) const fn cap(self) -> u64 {
        match self {
            // A URL or a UUID; a URL over 4 KiB is refused by most servers.
            Kind::Value => 4 << 10,
            // A NO_PROXY of thousands of entries; a ledger's 16 boots are a
            // few hundred bytes each.
            Kind::Settings | Kind::Ledger => 64 << 10,
            // A pull secret is 3-10 KiB; 1 MiB is thousands of registries,
            // which redaction holds in a few MiB (docs/security.md). The
            // whole Mozilla root bundle is about 220 KiB.
            Kind::PullSecret | Kind::CaBundle => 1 << 20,
        }
    }

    pub(crate) const fn describe(self) -> &'static str {
        match self {
            Kind::Value => "one-value file",
            Kind::PullSecret => "pull secret",
            Kind::Settings => "settings file",
            Kind::CaBundle => "CA bundle",
            Kind::Ledger => "ledger",
        }
    }
}

/// Why a file was not read. Variants other than `Io` and `TimedOut` mean
/// the content is not what any writer of the file leaves there.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{} is {what} (only regular files are read)", .path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error(
        "{} holds more than {cap} bytes, the size cap of a {kind}; refusing to read it",
        .path.display()
    )]
    TooLarge {
        path: PathBuf,
        cap: u64,
        kind: &'static str,
    },
    #[error("{} is not UTF-8 text", .path.display())]
    NotText { path: PathBuf },
    #[error("reading {}: no answer after {}", .path.display(), humantime::format_duration(*.after))]
    TimedOut { path: PathBuf, after: Duration },
    #[error("reading {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl ReadError {
    /// True when what stands at the path is no file the agent's writers
    /// leave (a FIFO, a device, too large, not text), as opposed to a disk
    /// that failed to answer.
    pub(crate) fn is_bad_content(&self) -> bool {
        matches!(
            self,
            ReadError::NotRegular { .. } | ReadError::TooLarge { .. } | ReadError::NotText { .. }
        )
    }
}

/// A file's bytes and the permission bits of the inode they were read from.
#[derive(Debug)]
pub(crate) struct Contents {
    pub(crate) bytes: Vec<u8>,
    pub(crate) mode: u32,
}

/// A text file, a leading UTF-8 byte order mark removed (editors on other
/// systems write one; it is not part of any value).
#[derive(Debug)]
pub(crate) struct Text {
    pub(crate) text: String,
    pub(crate) mode: u32,
}

/// Reads the regular file at `path` (symlinks followed), at most
/// `kind.cap()` bytes, within [`DEADLINE`]. `None` when nothing is there.
pub(crate) fn read(path: &Path, kind: Kind) -> Result<Option<Contents>, ReadError> {
    let owned = path.to_owned();
    let (done, result) = mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("read-own-file".into())
        .spawn(move || {
            let _ = done.send(open_and_read(&owned, kind));
        });
    if let Err(source) = spawned {
        return Err(ReadError::Io {
            path: path.to_owned(),
            source,
        });
    }
    match result.recv_timeout(DEADLINE) {
        Ok(read) => read,
        // The thread stays blocked in the kernel; the process exits anyway.
        Err(mpsc::RecvTimeoutError::Timeout) => Err(ReadError::TimedOut {
            path: path.to_owned(),
            after: DEADLINE,
        }),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(ReadError::Io {
            path: path.to_owned(),
            source: io::Error::other("the reading thread died"),
        }),
    }
}

/// [`read`], as UTF-8 text.
pub(crate) fn read_text(path: &Path, kind: Kind) -> Result<Option<Text>, ReadError> {
    let Some(Contents { bytes, mode }) = read(path, kind)? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|_| ReadError::NotText {
        path: path.to_owned(),
    })?;
    Ok(Some(Text {
        text: strip_bom(&text).to_owned(),
        mode,
    }))
}

/// `text` without a leading UTF-8 byte order mark.
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

fn open_and_read(path: &Path, kind: Kind) -> Result<Option<Contents>, ReadError> {
    let io_error = |source: io::Error| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let not_regular = |meta: &Metadata| ReadError::NotRegular {
        path: path.to_owned(),
        what: kind_name(meta),
    };
    // O_PATH opens no device and waits for no FIFO writer: the type is
    // known before anything is opened for reading.
    let handle = match rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => File::from(fd),
        Err(err) if err == rustix::io::Errno::NOENT => return Ok(None),
        Err(err) => return Err(io_error(err.into())),
    };
    let before = handle.metadata().map_err(io_error)?;
    if !before.is_file() {
        return Err(not_regular(&before));
    }
    let too_large = || ReadError::TooLarge {
        path: path.to_owned(),
        cap: kind.cap(),
        kind: kind.describe(),
    };
    if before.len() > kind.cap() {
        return Err(too_large());
    }
    let file = match rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => File::from(fd),
        // Removed between the two opens: as absent as before the first.
        Err(err) if err == rustix::io::Errno::NOENT => return Ok(None),
        Err(err) => return Err(io_error(err.into())),
    };
    let meta = file.metadata().map_err(io_error)?;
    if !meta.is_file() {
        return Err(not_regular(&meta));
    }
    if meta.dev() != before.dev() || meta.ino() != before.ino() {
        return Err(io_error(io::Error::other("replaced while being opened")));
    }
    let mut bytes = Vec::new();
    file.take(kind.cap() + 1)
        .read_to_end(&mut bytes)
        .map_err(io_error)?;
    // `/proc` files report size 0: only the bytes read tell.
    if bytes.len() as u64 > kind.cap() {
        return Err(too_large());
    }
    Ok(Some(Contents {
        bytes,
        mode: meta.permissions().mode() & 0o7777,
    }))
}

/// Names what an inode is when it is not a regular file: the host
/// files' wording (`rootfs`), and directories, which the contract never
/// holds.
fn kind_name(meta: &Metadata) -> &'static str {
    if meta.is_dir() {
        "a directory"
    } else {
        crate::rootfs::kind_name(meta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_regular_files_within_their_cap_and_strips_a_bom() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host-id");
        assert!(read(&path, Kind::Value).unwrap().is_none());
        std::fs::write(&path, "\u{feff}abc\n").unwrap();
        assert_eq!(
            read_text(&path, Kind::Value).unwrap().unwrap().text,
            "abc\n"
        );
        std::fs::write(&path, vec![b'x'; 4097]).unwrap();
        let err = read(&path, Kind::Value).unwrap_err();
        assert!(err.is_bad_content());
        assert!(err.to_string().contains("more than 4096 bytes"), "{err}");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert!(matches!(
            read_text(&path, Kind::Value),
            Err(ReadError::NotText { .. })
        ));
    }

    #[test]
    fn fifos_devices_and_directories_are_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = read(&fifo, Kind::Value).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = read(&zero, Kind::Ledger).unwrap_err();
        assert!(err.to_string().contains("a character device"), "{err}");
        let err = read(dir.path(), Kind::Value).unwrap_err();
        assert!(err.to_string().contains("a directory"), "{err}");
    }

    #[test]
    fn proc_files_report_size_zero_and_are_still_read() {
        let uptime = read_text(Path::new("/proc/uptime"), Kind::Value)
            .unwrap()
            .unwrap();
        assert!(!uptime.text.is_empty());
    }
}
