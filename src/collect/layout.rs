//! Where a root keeps `/etc` and `/var`: a plain root (`ROOT/etc`,
//! `ROOT/var`), or the root partition of an ostree system such as RHCOS,
//! mounted from a live ISO or a rescue boot, whose `/` is a deployment
//! (`ROOT/ostree/deploy/STATEROOT/deploy/CHECKSUM.SERIAL`, with its own
//! `/etc`) and whose `/var` is the stateroot's
//! (`ROOT/ostree/deploy/STATEROOT/var`), as ostree's docs/deployment.md lays
//! them out.
//!
//! Of several deployments the one read is chosen so that the same disk
//! always gives the same one: the default boot loader entry's when the boot
//! partition is mounted at `ROOT/boot` (ostree gives the default entry the
//! highest `version` and points its `ostree=` argument at the deployment
//! through `/ostree/boot.N/…`), otherwise the newest by the time of its
//! `.origin` file (ostree writes it when it deploys), names breaking ties.
//! The manifest's `root` says which and why.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use bundle_format::RootReport;

/// Boot loader entries looked at; ostree writes one per deployment.
const MAX_ENTRIES: usize = 64;
/// Bytes read of one boot loader entry or `.origin` file.
const SMALL_FILE_BYTES: u64 = 64 * 1024;
/// Entries of a stateroot's `deploy` looked at (a deployment and its
/// `.origin` file are two).
const MAX_DEPLOY_ENTRIES: usize = 64;
/// A read of the disk that takes longer is given up.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

const DEPLOY_DIR: &str = "/ostree/deploy";
const ENTRIES_DIR: &str = "/boot/loader/entries";
const ALEPH: &str = "/.coreos-aleph-version.json";

/// How a root is laid out, as found on disk.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    /// The directory `/` is read under (the deployment on an ostree disk).
    pub(crate) files: PathBuf,
    /// The directory `/var` is read under when it is not `files/var`.
    pub(crate) var: Option<PathBuf>,
    /// For the manifest.
    pub(crate) report: RootReport,
    /// What was found and weighed, for a member of its own
    /// (`system/ostree-deployments.txt`); empty for a plain root.
    pub(crate) account: String,
}

/// One deployment found on the disk.
#[derive(Debug, Clone)]
struct Deployment {
    stateroot: String,
    /// `CHECKSUM.SERIAL`.
    name: String,
    /// The `.origin` file's time, or the directory's when there is none.
    time: Option<SystemTime>,
    origin_text: Option<String>,
}

impl Deployment {
    fn id(&self) -> String {
        format!("{}/{}", self.stateroot, self.name)
    }

    fn host_dir(&self) -> String {
        format!("{DEPLOY_DIR}/{}/deploy/{}", self.stateroot, self.name)
    }
}

/// Finds how `root` is laid out. `/` (the running machine) and any root
/// with an `/etc` of its own are plain; a root with `ostree/deploy` and no
/// `/etc` is a disk's ostree root partition.
pub(crate) fn find(root: &Path, running_machine: bool) -> Layout {
    let plain = |note: String| Layout {
        files: root.to_path_buf(),
        var: None,
        report: RootReport {
            path: root.display().to_string(),
            running_machine,
            layout: "plain".into(),
            files: root.display().to_string(),
            var: root.join("var").display().to_string(),
            deployment: None,
            chosen_by: None,
            deployments: Vec::new(),
        },
        account: note,
    };
    let is_dir = |host: &str| {
        crate::rootfs::metadata(root, Path::new(host)).is_ok_and(|m| m.metadata.is_dir())
    };
    if running_machine || is_dir("/etc") || !is_dir(DEPLOY_DIR) {
        return plain(String::new());
    }
    let deployments = deployments(root);
    let Some((chosen, chosen_by)) = choose(root, &deployments) else {
        return plain(format!(
            "{} has no deployment: read as a plain root\n",
            root.join(DEPLOY_DIR.trim_start_matches('/')).display()
        ));
    };
    // Both through their links resolved inside the root: a disk's link must
    // not lead the reads to the rescue system's own directories.
    let inside = |host: &str| {
        crate::rootfs::resolve_path(root, Path::new(host))
            .map(|p| crate::rootfs::under_root(root, &p.to_string_lossy()))
    };
    let var_host = format!("{DEPLOY_DIR}/{}/var", chosen.stateroot);
    let (Some(files), Some(var)) = (inside(&chosen.host_dir()), inside(&var_host)) else {
        return plain(format!(
            "{} or {var_host} does not resolve inside {}: read as a plain root\n",
            chosen.host_dir(),
            root.display()
        ));
    };
    let mut account = String::new();
    let _ = writeln!(account, "root: {} (ostree layout)", root.display());
    let _ = writeln!(account, "read: {} ({chosen_by})", chosen.id());
    let _ = writeln!(account, "/ under {}", files.display());
    let _ = writeln!(account, "/var under {}", var.display());
    // coreos-installer's record of the image it wrote, on the partition.
    if let Ok(aleph) =
        crate::rootfs::read_limited(root, Path::new(ALEPH), SMALL_FILE_BYTES, READ_TIMEOUT)
    {
        let _ = writeln!(
            account,
            "\n{ALEPH}:\n{}",
            String::from_utf8_lossy(&aleph).trim_end()
        );
    }
    for d in &deployments {
        let when = d.time.map_or_else(
            || "time unknown".into(),
            |t| humantime::format_rfc3339_seconds(t).to_string(),
        );
        let _ = writeln!(account, "\ndeployment {} ({when})", d.id());
        match &d.origin_text {
            Some(text) => {
                let _ = writeln!(account, "{}.origin:\n{}", d.name, text.trim_end());
            }
            None => {
                let _ = writeln!(account, "no {}.origin", d.name);
            }
        }
    }
    Layout {
        report: RootReport {
            path: root.display().to_string(),
            running_machine,
            layout: "ostree".into(),
            files: files.display().to_string(),
            var: var.display().to_string(),
            deployment: Some(chosen.id()),
            chosen_by: Some(chosen_by),
            deployments: deployments.iter().map(Deployment::id).collect(),
        },
        files,
        var: Some(var),
        account,
    }
}

/// Every `STATEROOT/CHECKSUM.SERIAL` directory, by stateroot and name.
fn deployments(root: &Path) -> Vec<Deployment> {
    let mut found = Vec::new();
    let stateroots = crate::rootfs::read_dir(root, Path::new(DEPLOY_DIR)).unwrap_or_default();
    for stateroot in stateroots {
        let stateroot = stateroot.to_string_lossy().into_owned();
        let dir = format!("{DEPLOY_DIR}/{stateroot}/deploy");
        let names = crate::rootfs::read_dir(root, Path::new(&dir)).unwrap_or_default();
        for name in names.iter().take(MAX_DEPLOY_ENTRIES) {
            let name = name.to_string_lossy().into_owned();
            let host = format!("{dir}/{name}");
            let Ok(meta) = crate::rootfs::metadata(root, Path::new(&host)) else {
                continue;
            };
            if !meta.metadata.is_dir() {
                continue;
            }
            let origin = format!("{host}.origin");
            let origin_meta = crate::rootfs::metadata(root, Path::new(&origin)).ok();
            let time = origin_meta
                .as_ref()
                .filter(|m| m.metadata.is_file())
                .unwrap_or(&meta)
                .metadata
                .modified()
                .ok();
            let origin_text = crate::rootfs::read_limited(
                root,
                Path::new(&origin),
                SMALL_FILE_BYTES,
                READ_TIMEOUT,
            )
            .ok()
            .map(|data| String::from_utf8_lossy(&data).into_owned());
            found.push(Deployment {
                stateroot: stateroot.clone(),
                name,
                time,
                origin_text,
            });
        }
    }
    found
}

/// The deployment to read and why.
fn choose<'d>(root: &Path, deployments: &'d [Deployment]) -> Option<(&'d Deployment, String)> {
    if let Some((entry, version, target)) = default_entry(root) {
        if let Some(d) = deployments.iter().find(|d| d.host_dir() == target) {
            return Some((
                d,
                format!("the default boot loader entry: {ENTRIES_DIR}/{entry}, version {version}"),
            ));
        }
    }
    let newest = deployments
        .iter()
        .max_by(|a, b| a.time.cmp(&b.time).then_with(|| a.id().cmp(&b.id())))?;
    let why = if deployments.len() == 1 {
        "the only deployment".to_owned()
    } else {
        format!(
            "the newest of {} by its .origin file's time; no boot loader entry under {ENTRIES_DIR} \
             names one: mount the boot partition there to read the default",
            deployments.len()
        )
    };
    Some((newest, why))
}

/// The boot loader entry with the highest `version` (ostree's default),
/// its version and the deployment directory its `ostree=` argument leads
/// to inside the root.
fn default_entry(root: &Path) -> Option<(String, u64, String)> {
    let names = crate::rootfs::read_dir(root, Path::new(ENTRIES_DIR)).ok()?;
    let mut best: Option<(u64, String, String)> = None;
    for name in names.iter().take(MAX_ENTRIES) {
        let name = name.to_string_lossy().into_owned();
        // The Boot Loader Specification names entries `*.conf`, in lower case.
        if Path::new(&name).extension().is_none_or(|e| e != "conf") {
            continue;
        }
        let host = format!("{ENTRIES_DIR}/{name}");
        let Ok(data) =
            crate::rootfs::read_limited(root, Path::new(&host), SMALL_FILE_BYTES, READ_TIMEOUT)
        else {
            continue;
        };
        let text = String::from_utf8_lossy(&data);
        let field = |key: &str| {
            text.lines().find_map(|l| {
                let (k, v) = l.trim().split_once(char::is_whitespace)?;
                (k == key).then(|| v.trim().to_owned())
            })
        };
        let Some(version) = field("version").and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        let Some(target) = field("options").and_then(|o| {
            o.split_whitespace()
                .find_map(|arg| arg.strip_prefix("ostree=").map(str::to_owned))
        }) else {
            continue;
        };
        if best
            .as_ref()
            .is_none_or(|(v, n, _)| (version, &name) > (*v, n))
        {
            best = Some((version, name, target));
        }
    }
    let (version, name, target) = best?;
    // `/ostree/boot.N/STATEROOT/BOOTCSUM/SERIAL` is a symlink to the
    // deployment, followed inside the root.
    let dir = crate::rootfs::resolve_path(root, Path::new(&target))?;
    Some((name, version, dir.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn deployment(root: &Path, stateroot: &str, name: &str, age_secs: u64) {
        let dir = root.join(format!("ostree/deploy/{stateroot}/deploy/{name}"));
        fs::create_dir_all(dir.join("etc")).unwrap();
        fs::create_dir_all(dir.join("var")).unwrap();
        fs::create_dir_all(root.join(format!("ostree/deploy/{stateroot}/var/log"))).unwrap();
        let origin = root.join(format!("ostree/deploy/{stateroot}/deploy/{name}.origin"));
        fs::write(
            &origin,
            format!("[origin]\ncontainer-image-reference={name}\n"),
        )
        .unwrap();
        let file = fs::File::options().write(true).open(&origin).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000 - age_secs))
            .unwrap();
    }

    #[test]
    fn links_of_the_disk_stay_on_the_disk() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir_all(outside.path().join("etc")).unwrap();
        deployment(root.path(), "rhcos", "aaa.0", 0);
        // The stateroot's var an absolute link: it is the disk's /srv/var,
        // not the rescue system's.
        let var = root.path().join("ostree/deploy/rhcos/var");
        fs::remove_dir_all(&var).unwrap();
        fs::create_dir_all(root.path().join("srv/var")).unwrap();
        std::os::unix::fs::symlink("/srv/var", &var).unwrap();
        let layout = find(root.path(), false);
        assert_eq!(
            layout.var.as_deref(),
            Some(root.path().join("srv/var").as_path())
        );
        // A link to a directory that does not exist on the disk: not read.
        fs::remove_file(&var).unwrap();
        std::os::unix::fs::symlink(outside.path(), &var).unwrap();
        let layout = find(root.path(), false);
        assert_eq!(layout.report.layout, "plain", "{:?}", layout.report);
        assert!(
            layout.account.contains("does not resolve inside"),
            "{}",
            layout.account
        );
    }

    #[test]
    fn plain_roots_and_the_running_machine_stay_plain() {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("etc")).unwrap();
        deployment(root.path(), "rhcos", "aaa.0", 0);
        let layout = find(root.path(), false);
        assert_eq!(layout.report.layout, "plain");
        assert_eq!(layout.files, root.path());
        assert!(layout.var.is_none());
        assert_eq!(find(Path::new("/"), true).report.layout, "plain");
    }

    #[test]
    fn newest_deployment_unless_the_default_boot_entry_names_one() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        deployment(r, "rhcos", "bbb.0", 3600);
        deployment(r, "rhcos", "aaa.0", 60);
        let layout = find(r, false);
        assert_eq!(layout.report.layout, "ostree");
        assert_eq!(layout.report.deployment.as_deref(), Some("rhcos/aaa.0"));
        assert!(
            layout
                .report
                .chosen_by
                .as_deref()
                .unwrap()
                .starts_with("the newest of 2"),
            "{:?}",
            layout.report
        );
        assert_eq!(layout.files, r.join("ostree/deploy/rhcos/deploy/aaa.0"));
        assert_eq!(
            layout.var.as_deref(),
            Some(r.join("ostree/deploy/rhcos/var").as_path())
        );
        assert!(
            layout.account.contains("container-image-reference=bbb.0"),
            "{}",
            layout.account
        );

        // The boot partition mounted at ROOT/boot: its default entry (the
        // highest version) wins over the newest, through ostree's links.
        let entries = r.join("boot/loader/entries");
        fs::create_dir_all(&entries).unwrap();
        fs::create_dir_all(r.join("ostree/boot.1.1/rhcos/c5")).unwrap();
        std::os::unix::fs::symlink("boot.1.1", r.join("ostree/boot.1")).unwrap();
        std::os::unix::fs::symlink(
            "../../../deploy/rhcos/deploy/bbb.0",
            r.join("ostree/boot.1.1/rhcos/c5/0"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../../deploy/rhcos/deploy/aaa.0",
            r.join("ostree/boot.1.1/rhcos/c5/1"),
        )
        .unwrap();
        fs::write(
            entries.join("ostree-2-rhcos.conf"),
            "title RHCOS (ostree:0)\nversion 2\noptions root=UUID=x ostree=/ostree/boot.1/rhcos/c5/0 rw\n",
        )
        .unwrap();
        fs::write(
            entries.join("ostree-1-rhcos.conf"),
            "title RHCOS (ostree:1)\nversion 1\noptions ostree=/ostree/boot.1/rhcos/c5/1\n",
        )
        .unwrap();
        let layout = find(r, false);
        assert_eq!(layout.report.deployment.as_deref(), Some("rhcos/bbb.0"));
        assert_eq!(
            layout.report.chosen_by.as_deref(),
            Some("the default boot loader entry: /boot/loader/entries/ostree-2-rhcos.conf, version 2")
        );
    }
}
