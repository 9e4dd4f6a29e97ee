//! The collect context: the host a bundle describes (its root, the live
//! system or a sysroot, and where that root keeps `/var`), whether members
//! describing the running machine may be collected, the limits and the
//! redactor every collector shares, and host paths resolved and listed
//! inside that root.
//!
//! `CollectContext` is shared with the agent; the rest belongs to the
//! collectors.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::journal_cache;
use super::layout::Layout;
use crate::redact::Redactor;
use crate::rootfs::Sysroot;

/// Everything a collector needs to know about the host it reads.
#[derive(Debug, Clone)]
pub(crate) struct CollectContext {
    /// Sysroot prefix for host files (`/` on a real host; an ostree disk's
    /// deployment, [`Layout`]).
    pub(crate) root: PathBuf,
    /// Where host `/var` is read when it is not `root/var` (an ostree
    /// disk's stateroot).
    pub(crate) var: Option<PathBuf>,
    /// Whether members that describe the machine the collectors run on
    /// (commands such as `ip`, `df`, `crictl`, `systemctl`, the live
    /// `/proc` summary, kubelet's loopback probe) are collected. The agent
    /// does; `collect` only when its root is `/`, so that a bundle of a
    /// mounted disk holds that disk and nothing of the rescue machine.
    pub(crate) running_machine: bool,
    /// How the root given was laid out (`collect`); `None` = a plain root.
    pub(crate) layout: Option<Layout>,
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
            var: None,
            running_machine: true,
            layout: None,
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
        is_live_root(&self.root)
    }

    /// The root with its `/var`, for [`crate::rootfs`].
    pub(crate) fn sysroot(&self) -> Sysroot<'_> {
        Sysroot {
            root: &self.root,
            var: self.var.as_deref(),
        }
    }

    /// What the manifest says of the root.
    pub(crate) fn root_report(&self) -> bundle_format::RootReport {
        match &self.layout {
            Some(layout) => layout.report.clone(),
            None => bundle_format::RootReport {
                path: self.root.display().to_string(),
                running_machine: self.is_live_root(),
                layout: "plain".into(),
                files: self.root.display().to_string(),
                var: self
                    .var
                    .clone()
                    .unwrap_or_else(|| self.root.join("var"))
                    .display()
                    .to_string(),
                deployment: None,
                chosen_by: None,
                deployments: Vec::new(),
            },
        }
    }

    /// Where an absolute host path lives under `root`, for display: every
    /// symlink on the way resolved inside `root` ([`crate::rootfs`]; a
    /// sysroot's `/etc/resolv.conf` usually points at an absolute `/run/...`
    /// path that must not escape to the live system). A path that does not
    /// resolve is joined as written, `..` never climbing out.
    pub(crate) fn host_path(&self, host: &Path) -> PathBuf {
        let resolved =
            crate::rootfs::resolve_path(self.sysroot(), host).unwrap_or_else(|| normalize(host));
        if self.is_live_root() {
            return resolved;
        }
        if let Some(var) = &self.var {
            if let Ok(rest) = resolved.strip_prefix("/var") {
                return var.join(rest);
            }
        }
        join_root(&self.root, &resolved)
    }

    /// The regular files (and symlinks to them inside the root) directly in
    /// host directory `dir`, sorted by name.
    pub(crate) fn list_files(&self, dir: &str) -> io::Result<Vec<HostFile>> {
        let mut files = Vec::new();
        for name in crate::rootfs::read_dir(self.sysroot(), Path::new(dir))? {
            let name = name.to_string_lossy().into_owned();
            let host = format!("{}/{name}", dir.trim_end_matches('/'));
            let Ok(meta) = crate::rootfs::metadata(self.sysroot(), Path::new(&host)) else {
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
        for name in crate::rootfs::read_dir(self.sysroot(), Path::new(dir))? {
            let name = name.to_string_lossy().into_owned();
            let host = format!("{}/{name}", dir.trim_end_matches('/'));
            if crate::rootfs::metadata(self.sysroot(), Path::new(&host))
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
        crate::rootfs::read_limited(self.sysroot(), Path::new(host), limit, timeout)
    }
}

/// Whether `root` is the running system's own `/`.
pub(crate) fn is_live_root(root: &Path) -> bool {
    root.has_root()
        && root
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::CurDir))
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
