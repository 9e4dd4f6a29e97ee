//! Test helpers of the collectors: a sink that keeps members in memory,
//! contexts on fixture scripts, and one collector run over them.

use super::context::CollectContext;
use super::members::Sink;
use super::report::{Budget, CollectorReport, BUNDLE_CAP_REASON, MEMBER_CAP_REASON};
use super::{run_collector, CollectFn};
use crate::redact::Redactor;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) struct MemorySink {
    pub(crate) members: Vec<(String, Vec<u8>)>,
    pub(crate) member_cap: u64,
    pub(crate) total_cap: u64,
    pub(crate) used: u64,
}

impl MemorySink {
    pub(crate) fn new(member_cap: u64, total_cap: u64) -> Self {
        Self {
            members: Vec::new(),
            member_cap,
            total_cap,
            used: 0,
        }
    }

    pub(crate) fn get(&self, path: &str) -> Option<&[u8]> {
        self.members
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, d)| d.as_slice())
    }
}

impl Sink for MemorySink {
    fn budget(&self) -> Budget {
        let remaining = self.total_cap - self.used;
        if remaining < self.member_cap {
            Budget {
                bytes: remaining,
                reason: BUNDLE_CAP_REASON,
            }
        } else {
            Budget {
                bytes: self.member_cap,
                reason: MEMBER_CAP_REASON,
            }
        }
    }

    fn append(&mut self, path: &str, size: u64, data: &mut dyn Read) -> io::Result<()> {
        let mut buf = Vec::new();
        data.read_to_end(&mut buf)?;
        assert_eq!(
            buf.len() as u64,
            size,
            "{path}: size announced != bytes read"
        );
        self.used += size;
        self.members.push((path.to_owned(), buf));
        Ok(())
    }
}

pub(crate) fn fixtures_bin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bin")
}

/// PATH with `extra` first (for wrappers that set fixture env), then the
/// fixtures, then the system's tools the fixture scripts use.
pub(crate) fn fixture_path(extra: Option<&Path>) -> OsString {
    let mut dirs: Vec<PathBuf> = extra.into_iter().map(Path::to_path_buf).collect();
    dirs.push(fixtures_bin());
    dirs.push("/usr/bin".into());
    dirs.push("/bin".into());
    std::env::join_paths(dirs).expect("joinable PATH")
}

pub(crate) fn context(root: &Path, path_env: Option<OsString>) -> CollectContext {
    let mut ctx = CollectContext::new(
        root.to_path_buf(),
        Duration::from_secs(20),
        Redactor::new(["sekrit-token-1234567890"]),
    );
    ctx.path_env = path_env;
    ctx
}

/// Writes an executable `sh` script named `name` into `dir`.
pub(crate) fn script(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// Runs `f` as a collector with no limits of its own.
pub(crate) fn run(ctx: &CollectContext, sink: &mut MemorySink, f: CollectFn) -> CollectorReport {
    run_collector("test", f, ctx, sink).expect("memory sink never fails")
}
