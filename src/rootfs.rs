//! Host files under a sysroot, opened so that nothing the host put on disk
//! can lead a reader outside the root or hang it. Every reader of host files
//! (the collectors, the records summary, `collect`'s boot ID) goes through
//! here; the reporter's own files (the contract, its ledger) are
//! `bounded_read`'s.
//!
//! A path is walked one component at a time from a handle on the root, each
//! component opened with `O_PATH | O_NOFOLLOW`: a symlink met on the way is
//! read and its target walked in turn, from the root when it is absolute
//! (as the host sees it once booted into that root), `..` never climbs above
//! the root, and at most [`MAX_LINKS`] links are followed. Because the walk
//! holds a descriptor for each directory, a host process renaming things
//! while we walk cannot redirect it either. By hand rather than `openat2`'s
//! `RESOLVE_IN_ROOT`: the walk also yields the host path it ended at (the
//! manifest names it), and a fallback walk would be needed anyway on
//! kernels before 5.6 and in sandboxes that filter `openat2`.
//!
//! A disk's ostree root keeps `/var` apart from the deployment (the
//! stateroot's `var`, bind-mounted over the deployment's empty one at
//! boot): a [`Sysroot`] may name that directory, and the walk then enters
//! it wherever it reaches the root's `var`, through symlinks (RHCOS's
//! `/opt -> var/opt`) as much as by name.
//!
//! Only directories and regular files are opened for reading, and only
//! after the type of that very inode was checked through its `O_PATH`
//! handle; the read open adds `O_NONBLOCK | O_NOFOLLOW` and the identity is
//! checked again, so that a FIFO or a device swapped in meanwhile can
//! neither block the open nor be read. Reads themselves can still block on a
//! stuck filesystem: [`read_limited`] does them on a thread of their own and
//! gives up at a deadline.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io::{self, Read};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use rustix::fs::{Mode, OFlags, CWD};

/// Symlinks followed in one walk, as the kernel's own limit (`ELOOP`).
pub(crate) const MAX_LINKS: usize = 40;
/// Names returned by one [`read_dir`]; a directory with more is not one any
/// collector expects, and listing it must stay bounded.
pub(crate) const MAX_DIR_ENTRIES: usize = 65_536;

/// A root to read host paths under: the directory of `/`, and the one
/// `/var` is read under when it is not that root's own `var`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sysroot<'a> {
    pub(crate) root: &'a Path,
    pub(crate) var: Option<&'a Path>,
}

impl<'a> From<&'a Path> for Sysroot<'a> {
    fn from(root: &'a Path) -> Self {
        Self { root, var: None }
    }
}

impl<'a> From<&'a PathBuf> for Sysroot<'a> {
    fn from(root: &'a PathBuf) -> Self {
        Self { root, var: None }
    }
}

/// [`Sysroot`] owned, for a reading thread.
struct SysrootBuf {
    root: PathBuf,
    var: Option<PathBuf>,
}

impl SysrootBuf {
    fn new(sysroot: Sysroot<'_>) -> Self {
        Self {
            root: sysroot.root.to_path_buf(),
            var: sysroot.var.map(Path::to_path_buf),
        }
    }

    fn borrow(&self) -> Sysroot<'_> {
        Sysroot {
            root: &self.root,
            var: self.var.as_deref(),
        }
    }
}

/// A walk's end: the resolved path and a handle on what is there.
struct Resolved {
    /// Directories from the root's child down to the parent of `name`.
    dirs: Vec<(OwnedFd, OsString)>,
    root: OwnedFd,
    /// The last component and its `O_PATH` handle; `None` when the path
    /// resolves to a directory (then the last of `dirs`, or the root).
    leaf: Option<(OwnedFd, OsString)>,
}

impl Resolved {
    fn parent(&self) -> &OwnedFd {
        self.dirs.last().map_or(&self.root, |(fd, _)| fd)
    }

    /// The absolute host path the walk ended at.
    fn host_path(&self) -> PathBuf {
        let mut path = PathBuf::from("/");
        for (_, name) in &self.dirs {
            path.push(name);
        }
        if let Some((_, name)) = &self.leaf {
            path.push(name);
        }
        path
    }

    fn handle(&self) -> &OwnedFd {
        match &self.leaf {
            Some((fd, _)) => fd,
            None => self.parent(),
        }
    }
}

fn components(path: &Path) -> impl Iterator<Item = OsString> + '_ {
    path.components().filter_map(|c| match c {
        Component::Normal(part) => Some(part.to_owned()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
    })
}

fn stat(fd: &OwnedFd) -> io::Result<Metadata> {
    File::from(fd.try_clone()?).metadata()
}

fn open_dir_path(dir: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        CWD,
        dir,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Walks `host` (absolute, as seen from inside the root) under `sysroot`.
fn resolve(sysroot: Sysroot<'_>, host: &Path) -> io::Result<Resolved> {
    let root_fd = open_dir_path(sysroot.root)?;
    let mut walk = Resolved {
        dirs: Vec::new(),
        root: root_fd,
        leaf: None,
    };
    let mut pending: VecDeque<OsString> = components(host).collect();
    let mut links = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            walk.dirs.pop();
            continue;
        }
        if let (Some(var), true) = (sysroot.var, walk.dirs.is_empty() && part == "var") {
            walk.dirs.push((open_dir_path(var)?, part));
            continue;
        }
        let fd = rustix::fs::openat(
            walk.parent(),
            part.as_os_str(),
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let file_type = stat(&fd)?.file_type();
        if file_type.is_symlink() {
            links += 1;
            if links > MAX_LINKS {
                return Err(io::Error::other(format!(
                    "more than {MAX_LINKS} symbolic links"
                )));
            }
            let target = rustix::fs::readlinkat(walk.parent(), part.as_os_str(), Vec::new())?;
            let target = Path::new(OsStr::from_bytes(target.to_bytes()));
            if target.has_root() {
                walk.dirs.clear();
            }
            for (i, part) in components(target).enumerate() {
                pending.insert(i, part);
            }
        } else if file_type.is_dir() {
            walk.dirs.push((fd, part));
        } else if pending.is_empty() {
            walk.leaf = Some((fd, part));
        } else {
            return Err(io::Error::from(io::ErrorKind::NotADirectory));
        }
    }
    Ok(walk)
}

/// What a path leads to, following symlinks inside the root.
#[derive(Debug, Clone)]
pub struct Meta {
    pub(crate) metadata: Metadata,
}

/// Names what an inode is when it is not one we read.
pub(crate) fn kind_name(metadata: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = metadata.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    }
}

/// An error of kind `Unsupported` naming what the inode is; readers report
/// such a member as skipped.
fn not_readable(metadata: &Metadata) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "{} (only regular files and directories are read)",
            kind_name(metadata)
        ),
    )
}

/// Where `host` leads under `root` and what is there, without opening it
/// for reading.
pub(crate) fn metadata<'a>(root: impl Into<Sysroot<'a>>, host: &Path) -> io::Result<Meta> {
    let walk = resolve(root.into(), host)?;
    Ok(Meta {
        metadata: stat(walk.handle())?,
    })
}

/// The absolute host path `host` resolves to inside the root (its
/// symlinks followed), or `None` when it does not resolve.
pub(crate) fn resolve_path<'a>(root: impl Into<Sysroot<'a>>, host: &Path) -> Option<PathBuf> {
    resolve(root.into(), host).ok().map(|walk| walk.host_path())
}

/// A regular file opened for reading, or a directory.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    pub metadata: Metadata,
}

/// Opens `host` under `root` for reading. A FIFO, socket or device is an
/// `Unsupported` error and is never opened for reading.
pub(crate) fn open<'a>(root: impl Into<Sysroot<'a>>, host: &Path) -> io::Result<Opened> {
    let walk = resolve(root.into(), host)?;
    let before = stat(walk.handle())?;
    let fd = if before.is_dir() {
        rustix::fs::openat(
            walk.handle(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?
    } else if before.is_file() {
        let (_, name) = walk.leaf.as_ref().expect("only a leaf is not a directory");
        rustix::fs::openat(
            walk.parent(),
            name.as_os_str(),
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?
    } else {
        return Err(not_readable(&before));
    };
    let file = File::from(fd);
    let metadata = file.metadata()?;
    if metadata.dev() != before.dev() || metadata.ino() != before.ino() {
        return Err(io::Error::other("replaced while being opened"));
    }
    Ok(Opened { file, metadata })
}

/// The names in directory `host` (symlinks to a directory followed inside
/// the root), sorted, at most [`MAX_DIR_ENTRIES`].
pub(crate) fn read_dir<'a>(root: impl Into<Sysroot<'a>>, host: &Path) -> io::Result<Vec<OsString>> {
    let opened = open(root, host)?;
    if !opened.metadata.is_dir() {
        return Err(io::Error::from(io::ErrorKind::NotADirectory));
    }
    let mut dir = rustix::fs::Dir::new(OwnedFd::from(opened.file))?;
    let mut names = Vec::new();
    while let Some(entry) = dir.read() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name == b"." || name == b".." {
            continue;
        }
        if names.len() == MAX_DIR_ENTRIES {
            break;
        }
        names.push(OsStr::from_bytes(&name).to_owned());
    }
    names.sort();
    Ok(names)
}

/// Reads at most `limit` bytes from the start of regular file `host`, on a
/// thread of its own: a read stuck longer than `timeout` is abandoned (its
/// thread left blocked in the kernel) with a `TimedOut` error.
pub(crate) fn read_limited<'a>(
    root: impl Into<Sysroot<'a>>,
    host: &Path,
    limit: u64,
    timeout: Duration,
) -> io::Result<Vec<u8>> {
    read_with(root, host, timeout, move |file| {
        let mut data = Vec::new();
        file.take(limit).read_to_end(&mut data)?;
        Ok(data)
    })?
}

/// Opens regular file `host` and hands it to `read` on a thread of its
/// own: a read stuck longer than `timeout` is abandoned (its thread left
/// blocked in the kernel, or finishing its work unheard) with a `TimedOut`
/// error.
fn read_with<'a, T: Send + 'static>(
    root: impl Into<Sysroot<'a>>,
    host: &Path,
    timeout: Duration,
    read: impl FnOnce(File) -> T + Send + 'static,
) -> io::Result<T> {
    let (root, host) = (SysrootBuf::new(root.into()), host.to_path_buf());
    let (done, result) = mpsc::channel();
    std::thread::Builder::new()
        .name("read-host-file".into())
        .spawn(move || {
            let opened = open(root.borrow(), &host).and_then(|opened| {
                if opened.metadata.is_file() {
                    Ok(opened.file)
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "a directory, not a file",
                    ))
                }
            });
            let _ = done.send(opened.map(read));
        })?;
    match result.recv_timeout(timeout) {
        Ok(read) => read,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "still reading after {}",
                humantime::format_duration(timeout)
            ),
        )),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(io::Error::other("the reading thread died"))
        }
    }
}

/// Bytes handed over per chunk by [`open_streamed`].
const STREAM_CHUNK: usize = 64 * 1024;

/// Opens regular file `host` on a thread of its own and hands its bytes
/// over in chunks as they are read: the caller streams (and allocates what
/// it builds from them on its own thread), the reading thread only fills
/// the two buffers the caller lends it. Opening, and every read after it,
/// must end before `timeout` from now: past it, `open_streamed` or the
/// read fails with `TimedOut` and the reading thread, stuck in the kernel,
/// is abandoned.
pub(crate) fn open_streamed<'a>(
    root: impl Into<Sysroot<'a>>,
    host: &Path,
    timeout: Duration,
) -> io::Result<Streamed> {
    open_streamed_with(root, host, timeout, |_, _| Ok(())).map(|(streamed, ())| streamed)
}

/// [`open_streamed`], with `prepare` run on the reading thread once the file
/// is open and before it streams: it may look at the file (`read_at`) and
/// seek where the stream should start; what it returns comes back with the
/// stream.
pub(crate) fn open_streamed_with<'a, T: Send + 'static>(
    root: impl Into<Sysroot<'a>>,
    host: &Path,
    timeout: Duration,
    prepare: impl FnOnce(&mut File, &Metadata) -> io::Result<T> + Send + 'static,
) -> io::Result<(Streamed, T)> {
    let deadline = std::time::Instant::now() + timeout;
    let (root, host) = (SysrootBuf::new(root.into()), host.to_path_buf());
    let (full_tx, full) = mpsc::channel();
    let (free, free_rx) = mpsc::channel::<Vec<u8>>();
    let (opened_tx, opened_rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("read-host-file".into())
        .spawn(move || {
            let prepared = open(root.borrow(), &host).and_then(|opened| {
                if !opened.metadata.is_file() {
                    return Err(io::Error::new(
                        io::ErrorKind::Unsupported,
                        "a directory (only regular files are read here)",
                    ));
                }
                let mut file = opened.file;
                let prepared = prepare(&mut file, &opened.metadata)?;
                Ok((file, prepared))
            });
            let mut file = match prepared {
                Ok((file, prepared)) => {
                    if opened_tx.send(Ok(prepared)).is_err() {
                        return;
                    }
                    file
                }
                Err(err) => {
                    let _ = opened_tx.send(Err(err));
                    return;
                }
            };
            // Until the caller drops its end.
            while let Ok(mut buf) = free_rx.recv() {
                let read = loop {
                    match file.read(&mut buf) {
                        Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                        read => break read,
                    }
                };
                let (chunk, last) = match read {
                    Ok(n) => (Chunk::Data(buf, n), n == 0),
                    Err(err) => (Chunk::Failed(err), true),
                };
                if full_tx.send(chunk).is_err() || last {
                    return;
                }
            }
        })?;
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    let prepared = match opened_rx.recv_timeout(left) {
        Ok(prepared) => prepared?,
        Err(mpsc::RecvTimeoutError::Timeout) => return Err(still_reading(timeout)),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            return Err(io::Error::other("the reading thread died"))
        }
    };
    for _ in 0..2 {
        let _ = free.send(vec![0; STREAM_CHUNK]);
    }
    let streamed = Streamed {
        full,
        free,
        current: Vec::new(),
        pos: 0,
        len: 0,
        deadline,
        timeout,
        done: false,
        timed_out: false,
    };
    Ok((streamed, prepared))
}

fn still_reading(timeout: Duration) -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "still reading after {}",
            humantime::format_duration(timeout)
        ),
    )
}

/// What the reading thread of [`open_streamed`] hands over.
enum Chunk {
    /// A buffer and the bytes it holds (0: the end of the file).
    Data(Vec<u8>, usize),
    Failed(io::Error),
}

/// A host file read by a thread of its own ([`open_streamed`]).
pub(crate) struct Streamed {
    full: mpsc::Receiver<Chunk>,
    free: mpsc::Sender<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
    len: usize,
    deadline: std::time::Instant,
    timeout: Duration,
    done: bool,
    timed_out: bool,
}

impl Streamed {
    /// Whether reading stopped at the deadline (rather than at the end, or
    /// on an error of the file).
    pub(crate) fn timed_out(&self) -> bool {
        self.timed_out
    }
}

impl Read for Streamed {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.pos < self.len {
                let n = out.len().min(self.len - self.pos);
                out[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            if self.done {
                return Ok(0);
            }
            if !self.current.is_empty() {
                let _ = self.free.send(std::mem::take(&mut self.current));
            }
            // The deadline bounds what the caller does with the bytes too:
            // past it, no more come, ready or not.
            let now = std::time::Instant::now();
            let received = if now >= self.deadline {
                Err(mpsc::RecvTimeoutError::Timeout)
            } else {
                self.full.recv_timeout(self.deadline - now)
            };
            match received {
                Ok(Chunk::Data(buf, 0)) => {
                    self.current = buf;
                    self.done = true;
                }
                Ok(Chunk::Data(buf, n)) => {
                    self.current = buf;
                    self.pos = 0;
                    self.len = n;
                }
                Ok(Chunk::Failed(err)) => {
                    self.done = true;
                    return Err(err);
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    self.done = true;
                    self.timed_out = true;
                    return Err(still_reading(self.timeout));
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    self.done = true;
                    return Err(io::Error::other("the reading thread died"));
                }
            }
        }
    }
}

/// Where an absolute host path lies under a sysroot, as a plain path (for
/// the reporter's own files and for naming; host files are read through
/// [`open`] and its siblings, which confine the walk).
pub(crate) fn under_root(root: &Path, absolute: &str) -> PathBuf {
    root.join(absolute.trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn streamed_files_arrive_whole_in_chunks_from_where_prepare_put_them() {
        let root = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(root.path().join("big"), &data).unwrap();
        let mut got = Vec::new();
        open_streamed(root.path(), Path::new("/big"), Duration::from_secs(30))
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, data);
        let (mut streamed, len) = open_streamed_with(
            root.path(),
            Path::new("/big"),
            Duration::from_secs(30),
            |file, meta| {
                use std::io::Seek as _;
                file.seek(io::SeekFrom::Start(meta.len() - 10))?;
                Ok(meta.len())
            },
        )
        .unwrap();
        let mut tail = Vec::new();
        streamed.read_to_end(&mut tail).unwrap();
        assert_eq!((len, tail.as_slice()), (300_000, &data[300_000 - 10..]));
        assert!(!streamed.timed_out());
        let missing = open_streamed(root.path(), Path::new("/nope"), Duration::from_secs(30));
        assert_eq!(missing.err().unwrap().kind(), io::ErrorKind::NotFound);
        let dir = open_streamed(root.path(), Path::new("/"), Duration::from_secs(30));
        assert_eq!(dir.err().unwrap().kind(), io::ErrorKind::Unsupported);
    }
    fn tree() -> (tempfile::TempDir, tempfile::TempDir) {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("hostname"), b"outside\n").unwrap();
        std::fs::create_dir_all(root.path().join("run/real")).unwrap();
        std::fs::write(root.path().join("run/real/hostname"), b"inside\n").unwrap();
        (root, outside)
    }

    fn read(root: &Path, host: &str) -> io::Result<Vec<u8>> {
        read_limited(root, Path::new(host), 1 << 20, Duration::from_secs(10))
    }

    #[test]
    fn symlinked_directory_resolves_inside_the_root() {
        let (root, outside) = tree();
        // An absolute link to a directory outside, as the host would see it:
        // inside the root it names the root's own /run/real.
        std::fs::create_dir_all(root.path().join("run")).unwrap();
        symlink(outside.path(), root.path().join("etc")).unwrap();
        assert!(read(root.path(), "/etc/hostname").is_err());
        std::fs::remove_file(root.path().join("etc")).unwrap();
        symlink("/run/real", root.path().join("etc")).unwrap();
        assert_eq!(read(root.path(), "/etc/hostname").unwrap(), b"inside\n");
        assert_eq!(
            resolve_path(root.path(), Path::new("/etc/hostname")).unwrap(),
            Path::new("/run/real/hostname")
        );
        // Relative links and `..` stop at the root.
        symlink("../../../../../../..", root.path().join("up")).unwrap();
        assert_eq!(
            read(root.path(), "/up/run/real/hostname").unwrap(),
            b"inside\n"
        );
        let outside_rel = format!("../../../../../../..{}", outside.path().display());
        symlink(&outside_rel, root.path().join("rel")).unwrap();
        assert!(read(root.path(), "/rel/hostname").is_err());
    }

    #[test]
    fn var_elsewhere_is_entered_by_name_and_through_links() {
        let (root, outside) = tree();
        let var = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(var.path().join("opt/openshift")).unwrap();
        std::fs::write(var.path().join("opt/openshift/x.done"), b"var\n").unwrap();
        // The deployment's own var is empty, as on an ostree disk.
        std::fs::create_dir_all(root.path().join("var")).unwrap();
        symlink("var/opt", root.path().join("opt")).unwrap();
        symlink("/var/opt", root.path().join("run/opt")).unwrap();
        let sysroot = Sysroot {
            root: root.path(),
            var: Some(var.path()),
        };
        let read =
            |host: &str| read_limited(sysroot, Path::new(host), 1 << 20, Duration::from_secs(10));
        assert_eq!(read("/var/opt/openshift/x.done").unwrap(), b"var\n");
        assert_eq!(read("/opt/openshift/x.done").unwrap(), b"var\n");
        assert_eq!(read("/run/opt/openshift/x.done").unwrap(), b"var\n");
        // `..` from there climbs back to the root, never above it.
        assert_eq!(read("/var/../run/real/hostname").unwrap(), b"inside\n");
        assert_eq!(
            read("/var/../../../run/real/hostname").unwrap(),
            b"inside\n"
        );
        assert_eq!(
            resolve_path(sysroot, Path::new("/opt/openshift/x.done")).unwrap(),
            Path::new("/var/opt/openshift/x.done")
        );
        assert_eq!(
            read_dir(sysroot, Path::new("/var/opt")).unwrap(),
            ["openshift"]
        );
        // Without it, the root's own (empty) var.
        assert!(read_limited(
            root.path(),
            Path::new("/opt/openshift/x.done"),
            10,
            Duration::from_secs(10)
        )
        .is_err());
        drop(outside);
    }

    #[test]
    fn link_loops_are_bounded_and_fifos_refused() {
        let (root, _outside) = tree();
        symlink("/b", root.path().join("a")).unwrap();
        symlink("/a", root.path().join("b")).unwrap();
        let err = read(root.path(), "/a").unwrap_err();
        assert!(err.to_string().contains("symbolic links"), "{err}");
        let fifo = root.path().join("run/fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let err = read(root.path(), "/run/fifo").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        assert!(err.to_string().contains("a FIFO"), "{err}");
        assert_eq!(
            read_dir(root.path(), Path::new("/run")).unwrap(),
            ["fifo", "real"]
        );
    }
}
