//! Where a member's content waits between its source and the archive: tar
//! needs a member's size before its first byte, and a journal's size is only
//! known once journalctl is done.
//!
//! A [`Spool`] keeps the newest `cap` bytes of whatever is written to it.
//! Small content stays in memory; past [`MEMORY_LIMIT`] it moves to a ring of
//! at most `cap` bytes in an unlinked temporary file, so memory stays flat
//! however big the source is, and the disk holds at most one member cap per
//! member being collected (one at a time). When no temporary file can be made
//! (read-only or full disk) the ring stays in memory but shrinks to
//! [`FALLBACK_CAP`], and the manifest says so.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

/// Content up to this size never touches the disk.
pub const MEMORY_LIMIT: usize = 256 * 1024;
/// Ring size in memory when the spill file cannot be used.
pub const FALLBACK_CAP: usize = 4 * 1024 * 1024;

#[derive(Debug)]
enum Store {
    /// A ring in memory (small caps, small content so far, or no disk).
    Memory(VecDeque<u8>, usize),
    /// A ring of `cap` bytes in an unlinked file; logical byte `n` lives at
    /// offset `n % cap`.
    File(File),
}

#[derive(Debug)]
pub struct Spool {
    cap: u64,
    store: Store,
    /// Bytes written so far.
    seen: u64,
    /// Bytes written to the spill file.
    spilled: u64,
    spill_dir: PathBuf,
    /// Second choice when `spill_dir` cannot be used.
    fallback_dir: Option<PathBuf>,
    /// Why the spill file could not be used, for the manifest.
    problem: Option<String>,
}

impl Spool {
    pub fn new(cap: u64, spill_dir: &Path) -> Self {
        let ring = usize::try_from(cap).unwrap_or(usize::MAX).min(MEMORY_LIMIT);
        Self {
            cap,
            store: Store::Memory(VecDeque::new(), ring),
            seen: 0,
            spilled: 0,
            spill_dir: spill_dir.to_path_buf(),
            fallback_dir: Some(std::env::temp_dir()).filter(|t| t != spill_dir),
            problem: None,
        }
    }

    /// Bytes written in all.
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Bytes the spool holds: the newest `min(seen, cap)`.
    pub fn len(&self) -> u64 {
        match &self.store {
            Store::Memory(buf, _) => buf.len() as u64,
            Store::File(_) => self.seen.min(self.cap),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether older bytes were dropped.
    pub fn truncated(&self) -> bool {
        self.seen > self.len()
    }

    /// Bytes written to the temporary file.
    pub fn spilled(&self) -> u64 {
        self.spilled
    }

    /// Why less than the cap was kept, if the disk let us down.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    pub fn write(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        if let Store::Memory(buf, ring) = &mut self.store {
            let fits = buf.len() + data.len() <= *ring;
            let no_disk = self.cap <= *ring as u64 || self.problem.is_some();
            if fits || no_disk {
                push_ring(buf, *ring, data);
                self.seen += data.len() as u64;
                return;
            }
            // Outgrew memory: move what we have to a file ring.
            let held: Vec<u8> = buf.iter().copied().collect();
            match self.open_spill() {
                Ok(file) => {
                    self.store = Store::File(file);
                    // `held` is the whole stream so far (it never wrapped,
                    // the file ring is larger), so logical offsets hold.
                    let start = self.seen - held.len() as u64;
                    debug_assert_eq!(start, 0);
                    if let Err(err) = self.write_file(start, &held) {
                        self.fall_back(&held, &err);
                    }
                }
                Err(err) => self.fall_back(&held, &err),
            }
        }
        match &self.store {
            Store::Memory(..) => self.write(data),
            Store::File(_) => {
                let at = self.seen;
                if let Err(err) = self.write_file(at, data) {
                    let tail = self.read_tail(FALLBACK_CAP);
                    self.fall_back(&tail, &err);
                    // The chunk that failed is the newest: keep it.
                    self.write(data);
                    self.seen -= data.len() as u64;
                }
                self.seen += data.len() as u64;
            }
        }
    }

    /// Writes `data` as logical bytes `at..`, wrapping around the ring.
    fn write_file(&mut self, at: u64, data: &[u8]) -> io::Result<()> {
        let Store::File(file) = &self.store else {
            return Ok(());
        };
        let cap = self.cap;
        // Only the newest `cap` bytes of a huge chunk can survive.
        let skip = (data.len() as u64).saturating_sub(cap);
        let mut pos = at + skip;
        let mut rest = &data[usize::try_from(skip).unwrap_or(usize::MAX)..];
        while !rest.is_empty() {
            let off = pos % cap;
            let room = usize::try_from(cap - off).unwrap_or(usize::MAX);
            let n = room.min(rest.len());
            file.write_all_at(&rest[..n], off)?;
            self.spilled += n as u64;
            pos += n as u64;
            rest = &rest[n..];
        }
        Ok(())
    }

    /// The newest `max` bytes of a file ring (best effort).
    fn read_tail(&self, max: usize) -> Vec<u8> {
        let len = self.len();
        let want = len.min(max as u64);
        let mut reader = self.reader();
        let mut skip = io::sink();
        let _ = io::copy(&mut (&mut reader).take(len - want), &mut skip);
        let mut out = Vec::new();
        let _ = reader.read_to_end(&mut out);
        out
    }

    fn fall_back(&mut self, held: &[u8], err: &io::Error) {
        self.problem = Some(format!(
            "no spill space in {} ({err}): kept at most the last {} bytes",
            self.spill_dir.display(),
            FALLBACK_CAP
        ));
        let mut buf = VecDeque::new();
        push_ring(&mut buf, FALLBACK_CAP, held);
        self.store = Store::Memory(buf, FALLBACK_CAP);
    }

    /// A private file nobody else can open: created exclusively and unlinked
    /// at once, so it disappears with the process whatever happens.
    fn open_spill(&self) -> io::Result<File> {
        match create_unlinked(&self.spill_dir) {
            Ok(file) => Ok(file),
            // The state directory may be missing or read-only on a broken
            // host; the usual temporary directory is the second choice.
            Err(first) => match &self.fallback_dir {
                Some(tmp) => create_unlinked(tmp).map_err(|_| first),
                None => Err(first),
            },
        }
    }

    /// The kept bytes, oldest first.
    pub fn reader(&self) -> SpoolReader<'_> {
        SpoolReader {
            spool: self,
            pos: 0,
        }
    }
}

fn create_unlinked(dir: &Path) -> io::Result<File> {
    for _ in 0..8 {
        let name = format!(
            ".assisted-boot-reporter-spill-{}-{:016x}",
            std::process::id(),
            fastrand::u64(..)
        );
        let path = dir.join(name);
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                std::fs::remove_file(&path)?;
                return Ok(file);
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
    }
    Err(io::Error::other("no unused spill file name"))
}

fn push_ring(buf: &mut VecDeque<u8>, cap: usize, data: &[u8]) {
    if data.len() >= cap {
        buf.clear();
        buf.extend(&data[data.len() - cap..]);
        return;
    }
    let overflow = (buf.len() + data.len()).saturating_sub(cap);
    buf.drain(..overflow);
    let needed = buf.len() + data.len();
    if needed > buf.capacity() {
        // Grow geometrically but never past the cap.
        let target = needed.max(buf.len() * 2).min(cap);
        buf.reserve_exact(target - buf.len());
    }
    buf.extend(data);
}

/// Reads a spool's kept bytes in order.
pub struct SpoolReader<'a> {
    spool: &'a Spool,
    pos: u64,
}

impl Read for SpoolReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let len = self.spool.len();
        if self.pos >= len || out.is_empty() {
            return Ok(0);
        }
        match &self.spool.store {
            Store::Memory(buf, _) => {
                let (a, b) = buf.as_slices();
                let pos = usize::try_from(self.pos).unwrap_or(usize::MAX);
                let src = if pos < a.len() {
                    &a[pos..]
                } else {
                    &b[pos - a.len()..]
                };
                let n = src.len().min(out.len());
                out[..n].copy_from_slice(&src[..n]);
                self.pos += n as u64;
                Ok(n)
            }
            Store::File(file) => {
                let cap = self.spool.cap;
                // Logical start of the kept window.
                let first = self.spool.seen - len;
                let logical = first + self.pos;
                let off = logical % cap;
                let contiguous = (cap - off).min(len - self.pos);
                let n = usize::try_from(contiguous)
                    .unwrap_or(usize::MAX)
                    .min(out.len());
                let n = file.read_at(&mut out[..n], off)?;
                if n == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "spill file shorter than written",
                    ));
                }
                self.pos += n as u64;
                Ok(n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(spool: &Spool) -> Vec<u8> {
        let mut out = Vec::new();
        spool.reader().read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn small_content_stays_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::new(1 << 20, dir.path());
        spool.write(b"hello ");
        spool.write(b"world");
        assert_eq!(contents(&spool), b"hello world");
        assert_eq!(spool.spilled(), 0);
        assert!(!spool.truncated());
    }

    #[test]
    fn memory_ring_keeps_the_newest_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::new(5, dir.path());
        spool.write(b"abc");
        spool.write(b"defg");
        spool.write(b"0123456789");
        spool.write(b"xy");
        assert_eq!(contents(&spool), b"789xy");
        assert_eq!(spool.seen(), 19);
        assert!(spool.truncated());
    }

    #[test]
    fn file_ring_keeps_the_newest_cap_bytes_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let cap = MEMORY_LIMIT as u64 * 3 + 17;
        let mut spool = Spool::new(cap, dir.path());
        let mut all = Vec::new();
        let mut n = 0u32;
        // Odd chunk sizes so writes wrap at every possible offset.
        let cap_usize = usize::try_from(cap).unwrap();
        while all.len() < cap_usize * 4 {
            let chunk: Vec<u8> = (0..(1000 + n % 70_000))
                .map(|i| u8::try_from((i * 7 + n) % 251).unwrap())
                .collect();
            spool.write(&chunk);
            all.extend_from_slice(&chunk);
            n += 1;
        }
        let kept = contents(&spool);
        assert_eq!(kept.len() as u64, cap);
        assert_eq!(kept, all[all.len() - cap_usize..]);
        assert!(spool.spilled() >= all.len() as u64 - MEMORY_LIMIT as u64);
        // The spill file is unlinked: nothing is left in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn unusable_spill_dir_falls_back_to_tmpdir() {
        let mut spool = Spool::new(8 << 20, Path::new("/nonexistent/spill"));
        spool.write(&vec![b'x'; 1 << 20]);
        assert_eq!(spool.problem(), None);
        assert!(spool.spilled() > 0);
        assert_eq!(spool.len(), 1 << 20);
    }

    #[test]
    fn no_spill_space_at_all_falls_back_to_a_small_memory_ring() {
        let mut spool = Spool::new(64 << 20, Path::new("/nonexistent/spill"));
        spool.fallback_dir = None;
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..6 {
            spool.write(&chunk);
        }
        spool.write(b"END");
        let kept = contents(&spool);
        assert_eq!(kept.len(), FALLBACK_CAP);
        assert!(kept.ends_with(b"xxEND"));
        assert!(spool.problem().unwrap().contains("/nonexistent/spill"));
        assert_eq!(spool.seen(), 6 * (1 << 20) + 3);
    }
}
