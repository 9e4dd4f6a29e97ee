//! Debian's real Ignition (package `ignition`, 2.14) for the tests:
//! `ignition-validate`, and the engine the package puts in its dracut module,
//! run on a directory the way the initramfs runs it on `/sysroot`.
//!
//! The engine is run as the dracut units run it: `-platform file` (the
//! config from `IGNITION_CONFIG_FILE`), stage `fetch-offline`, then `fetch`
//! when `fetch-offline` flagged that the config needs the network (a remote
//! `ignition.config.merge` source does), then `files`, each with `-root DIR`.
//! Its cache, state and need-network files go to a per-run directory (the
//! defaults are under `/run`, shared by every test).
//!
//! What it needs, found by running it:
//! - The `files` stage ends by relabelling what it wrote (Debian builds it
//!   with SELinux support, as RHCOS needs): it reads `etc/selinux/config`
//!   under the root and runs `setfiles` (package `policycoreutils`) with that
//!   policy's `contexts/files/file_contexts`. [`prepare_root`] writes a
//!   policy of one context there; the kernel does not need SELinux.
//! - It creates files owned by root (`chown` to uid 0). As root it runs
//!   directly; otherwise under `unshare --user --map-root-user`, where uid 0
//!   is the caller, so the files end up owned by the caller.

#![allow(dead_code)]

use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where Debian's package installs the engine.
pub const ENGINE: &str = "/usr/lib/dracut/modules.d/30ignition/ignition";
pub const VALIDATE: &str = "/usr/bin/ignition-validate";

/// Bounds one engine stage; a `fetch` retrying forever is a test bug.
const STAGE_TIMEOUT_SECS: &str = "120";

/// Fails the test, with the line that installs them, unless Debian's
/// `ignition` package and the `setfiles` it runs are installed: a test that
/// did not run never counts as passed. `scripts/test` installs them.
pub fn require(test: &str) {
    let present = Path::new(ENGINE).is_file() && Path::new(VALIDATE).is_file();
    assert!(
        present,
        "{test}: Debian's ignition package is not installed ({ENGINE}, {VALIDATE}): \
         apt-get install ignition policycoreutils (or run scripts/test, which installs them)"
    );
    // Not a dependency of the package, but its files stage cannot finish
    // without it (see the module doc): a clear failure, not a skip.
    let setfiles = ["/usr/sbin/setfiles", "/sbin/setfiles"]
        .iter()
        .any(|p| Path::new(p).is_file());
    assert!(
        setfiles,
        "{test}: Ignition is installed but setfiles is not, which its files \
         stage runs: apt-get install policycoreutils"
    );
}

/// `ignition-validate FILE`: Ok when Ignition accepts the config without a
/// warning, Err with its report otherwise.
pub fn validate(config: &Path) -> Result<(), String> {
    let out = Command::new(VALIDATE)
        .arg(config)
        .output()
        .expect("running ignition-validate");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && report.trim().is_empty() {
        Ok(())
    } else {
        Err(format!("exit {:?}: {}", out.status.code(), report.trim()))
    }
}

/// What `etc/selinux/config` and the policy's file contexts must say for
/// the `files` stage's relabelling to run (see the module doc).
pub fn prepare_root(root: &Path) {
    let contexts = root.join("etc/selinux/stand-in/contexts/files");
    std::fs::create_dir_all(&contexts).expect("mkdir selinux policy");
    std::fs::write(
        root.join("etc/selinux/config"),
        "SELINUX=disabled\nSELINUXTYPE=stand-in\n",
    )
    .expect("write selinux config");
    std::fs::write(
        contexts.join("file_contexts"),
        "/.*\tsystem_u:object_r:default_t:s0\n",
    )
    .expect("write file_contexts");
}

/// One stage's run.
pub struct Stage {
    pub name: &'static str,
    pub success: bool,
    pub log: String,
}

/// The stages run, in order; the run stops at the first failure, as the
/// initramfs does (each stage's unit has `OnFailure=emergency.target`).
pub struct Run {
    pub stages: Vec<Stage>,
}

impl Run {
    pub fn success(&self) -> bool {
        self.stages.iter().all(|s| s.success)
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.stages.iter().map(|s| s.name).collect()
    }

    pub fn log(&self) -> String {
        let mut out = String::new();
        for s in &self.stages {
            let _ = write!(out, "=== stage {} ({}):\n{}", s.name, s.success, s.log);
        }
        out
    }
}

/// The uid files the engine creates as "root" end up with.
pub fn root_uid_outside(work: &Path) -> u32 {
    let probe = work.join(".uid-probe");
    std::fs::write(&probe, b"").expect("write probe");
    let uid = std::fs::metadata(&probe).expect("stat probe").uid();
    std::fs::remove_file(&probe).expect("remove probe");
    uid
}

/// Runs the engine on `config` against `root`; `work` holds its cache and
/// state files.
pub fn apply(config: &Path, root: &Path, work: &Path) -> Run {
    run_stages(config, root, work, &["fetch-offline", "fetch", "files"])
}

/// Only the `files` stage, whatever came before.
pub fn files_only(config: &Path, root: &Path, work: &Path) -> Run {
    run_stages(config, root, work, &["files"])
}

fn run_stages(config: &Path, root: &Path, work: &Path, names: &[&'static str]) -> Run {
    let as_root = root_uid_outside(work) == 0;
    let mut stages = Vec::new();
    let neednet = work.join("neednet");
    for &name in names {
        if name == "fetch" && !neednet.exists() {
            // What ignition-fetch.service's ConditionPathExists= says.
            continue;
        }
        let mut cmd = if as_root {
            Command::new("timeout")
        } else {
            let mut c = Command::new("unshare");
            c.args(["--user", "--map-root-user", "timeout"]);
            c
        };
        cmd.args([
            STAGE_TIMEOUT_SECS,
            ENGINE,
            "-platform",
            "file",
            "-stage",
            name,
        ])
        .arg("-root")
        .arg(root)
        .arg("-config-cache")
        .arg(work.join("config-cache.json"))
        .arg("-state-file")
        .arg(work.join("state.json"))
        .arg("-neednet")
        .arg(&neednet)
        .arg("-log-to-stdout")
        .env("IGNITION_CONFIG_FILE", config)
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY");
        let out: Output = cmd.output().expect("running the Ignition engine");
        let success = out.status.success();
        stages.push(Stage {
            name,
            success,
            log: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        });
        if !success {
            break;
        }
    }
    Run { stages }
}

/// Every path under `root`, relative, sorted (directories included).
pub fn tree(root: &Path) -> Vec<PathBuf> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries {
            let path = entry.expect("dir entry").path();
            out.push(path.strip_prefix(base).expect("under root").to_path_buf());
            if path.is_dir() && !path.is_symlink() {
                walk(base, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}
