//! The collect context: the host a bundle describes (its root, the live
//! system or a sysroot), the limits and the redactor every collector shares,
//! and host paths resolved and listed inside that root.
//!
//! `CollectContext` is shared with the agent; the rest belongs to the
//! collectors.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::journal_cache;
use crate::redact::Redactor;

/// Everything a collector needs to know about the host it reads.
#[derive(Debug, Clone)]
pub(crate) struct CollectContext {
    /// Sysroot prefix for host files (`/` on a real host).
    pub(crate) root: PathBuf,
    /// Longest a single external command may run before it is killed.
    pub(crate) command_timeout: Duration,
    /// Scrubs secrets from every collected byte.
    pub(crate) redactor: Redactor,
    /// PATH used to find external commands; `None` = inherit the agent's.
    /// Tests point it at fixture scripts without touching the process-wide
    /// environment, which parallel tests share.
    pub(crate) path_env: Option<OsString>,
    /// kubelet's health endpoint, asked once per bundle; `None` = not asked.
    pub(crate) kubelet_healthz_url: Option<String>,
    /// The journal streams read by earlier bundles of this run, continued
    /// from their cursors (`journal_cache::Cache`); `None` = every bundle reads
    /// the journal from its start (`collect`, a one-off bundle).
    pub(crate) journal_cache: Option<Arc<Mutex<journal_cache::Cache>>>,
}

impl CollectContext {
    /// A context with no kubelet probe.
    pub(crate) fn new(root: PathBuf, command_timeout: Duration, redactor: Redactor) -> Self {
        Self {
            root,
            command_timeout,
            redactor,
            path_env: None,
            kubelet_healthz_url: None,
            journal_cache: None,
        }
    }

    /// Whether `root` is the running system's own root, so that commands
    /// which only see the live system (ip, crictl, df) describe the same host
    /// as the files.
    pub(crate) fn is_live_root(&self) -> bool {
        self.root.has_root()
            && self
                .root
                .components()
                .all(|c| matches!(c, Component::RootDir | Component::CurDir))
    }

    /// Where an absolute host path lives under `root`, for display: every
    /// symlink on the way resolved inside `root` ([`crate::rootfs`]; a
    /// sysroot's `/etc/resolv.conf` usually points at an absolute `/run/...`
    /// path that must not escape to the live system). A path that does not
    /// resolve is joined as written, `..` never climbing out.
    pub(crate) fn host_path(&self, host: &Path) -> PathBuf {
        let resolved =
            crate::rootfs::resolve_path(&self.root, host).unwrap_or_else(|| normalize(host));
        if self.is_live_root() {
            return resolved;
        }
        join_root(&self.root, &resolved)
    }

    /// The regular files (and symlinks to them inside the root) directly in
    /// host directory `dir`, sorted by name.
    pub(crate) fn list_files(&self, dir: &str) -> io::Result<Vec<HostFile>> {
        let mut files = Vec::new();
        for name in crate::rootfs::read_dir(&self.root, Path::new(dir))? {
            let name = name.to_string_lossy().into_owned();
            let host = format!("{}/{name}", dir.trim_end_matches('/'));
            let Ok(meta) = crate::rootfs::metadata(&self.root, Path::new(&host)) else {
                continue;
            };
            if !meta.metadata.is_file() {
                continue;
            }
            files.push(HostFile {
                host,
                name,
                bytes: meta.metadata.len(),
                mtime: meta.metadata.modified().ok(),
            });
        }
        Ok(files)
    }

    /// The subdirectories (and symlinks to directories inside the root) of
    /// host directory `dir`, sorted by name.
    pub(crate) fn list_dirs(&self, dir: &str) -> io::Result<Vec<String>> {
        let mut dirs = Vec::new();
        for name in crate::rootfs::read_dir(&self.root, Path::new(dir))? {
            let name = name.to_string_lossy().into_owned();
            let host = format!("{}/{name}", dir.trim_end_matches('/'));
            if crate::rootfs::metadata(&self.root, Path::new(&host))
                .is_ok_and(|meta| meta.metadata.is_dir())
            {
                dirs.push(name);
            }
        }
        Ok(dirs)
    }

    /// Reads at most `limit` bytes of host file `host` inside the root,
    /// giving up after `timeout` ([`crate::rootfs::read_limited`]).
    pub(crate) fn read_host_file(
        &self,
        host: &str,
        limit: u64,
        timeout: Duration,
    ) -> io::Result<Vec<u8>> {
        crate::rootfs::read_limited(&self.root, Path::new(host), limit, timeout)
    }
}

/// A file found by [`CollectContext::list_files`].
#[derive(Debug, Clone)]
pub(crate) struct HostFile {
    pub(crate) name: String,
    /// Absolute host path (without the root prefix).
    pub(crate) host: String,
    pub(crate) bytes: u64,
    pub(crate) mtime: Option<SystemTime>,
}

/// Lexically resolves `.` and `..` so that a path can never climb above `/`
/// (and therefore never out of a sysroot once joined to it).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn join_root(root: &Path, host: &Path) -> PathBuf {
    root.join(host.strip_prefix("/").unwrap_or(host))
}

#[cfg(test)]
mod tests {
    use super::super::testing::context;
    use super::*;

    #[test]
    fn live_root_detection() {
        let mut ctx = context(Path::new("/"), None);
        assert!(ctx.is_live_root());
        ctx.root = PathBuf::from("/./");
        assert!(ctx.is_live_root());
        ctx.root = PathBuf::from("/sysroot");
        assert!(!ctx.is_live_root());
        assert_eq!(
            ctx.host_path(Path::new("/etc/x")),
            PathBuf::from("/sysroot/etc/x")
        );
    }
}
