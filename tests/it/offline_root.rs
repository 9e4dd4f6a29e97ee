//! `collect --root` on a disk that never came up, end to end: a disk image
//! with RHCOS's root partition layout (two ostree deployments, the
//! stateroot's `/var` beside them) whose persistent journal, written by
//! systemd's own `systemd-journal-remote`, holds three boots in which
//! Ignition could not resolve the Machine Config Server's name. The image
//! is built from a directory (`mkfs.ext4 -d`, no mount needed), then
//! loop-mounted read-only as a support engineer would from a live ISO, and
//! the real binary collects it with the real `journalctl`. Every command
//! that describes the machine it runs on is a trap on PATH that records
//! being run: none may be.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{agent_bin, member, member_names, open_bundle};

const JOURNAL_REMOTE: &str = "/usr/lib/systemd/systemd-journal-remote";
const INSTALL: &str = "scripts/test-deps (apt-get install systemd-journal-remote e2fsprogs mount)";
const MACHINE_ID: &str = "5a1f0c3e9b7d4e2f8a6c1b0d9e8f7a6b";
const BOOTS: [&str; 3] = [
    "0b5c2a8e6d4f4a1b9c3e7f2d1a0b8c6e",
    "1c6d3b9f7e5a4b2c8d4f0e3a2b1c9d7f",
    "2d7e4c0a8f6b4c3d9e5a1f4b3c2d0e8a",
];
/// The deployment the disk's newest `.origin` names; the other is older.
const NEWEST: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0.0";
const OLDER: &str = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809.0";
const DNS_FAILURE: &str = "GET error: Get \"https://api-int.ocp.example.com:22623/config/master\": dial tcp: lookup api-int.ocp.example.com on 192.168.122.1:53: no such host";
/// Commands that describe the running machine: traps on PATH.
const TRAPS: [&str; 12] = [
    "ip",
    "ss",
    "nmcli",
    "df",
    "lsblk",
    "findmnt",
    "uname",
    "timedatectl",
    "chronyc",
    "rpm-ostree",
    "systemctl",
    "crictl",
];

fn need(path: &str, what: &str) {
    assert!(
        Path::new(path).exists(),
        "{what} ({path}) is missing: install it with {INSTALL}"
    );
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}; install with {INSTALL}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// One journal entry in journald's export format.
fn entry(boot: &str, usec: u64, mono: u64, ident: &str, pid: u32, message: &str) -> String {
    format!(
        "__REALTIME_TIMESTAMP={usec}\n__MONOTONIC_TIMESTAMP={mono}\n_BOOT_ID={boot}\n\
         _MACHINE_ID={MACHINE_ID}\n_HOSTNAME=localhost\n_TRANSPORT=journal\nPRIORITY=3\n\
         SYSLOG_IDENTIFIER={ident}\n_PID={pid}\nMESSAGE={message}\n\n"
    )
}

/// Three boots, an hour apart, each stuck in the initramfs: Ignition
/// cannot fetch its config because the MCS name does not resolve.
fn export_journal() -> String {
    let mut text = String::new();
    for (i, boot) in BOOTS.iter().enumerate() {
        let start = 1_795_680_000_000_000 + i as u64 * 3_600_000_000;
        let lines: [(&str, u32, String); 5] = [
            ("kernel", 0, "Linux version 5.14.0-427.el9.x86_64".into()),
            ("systemd", 1, "Starting Ignition (fetch)...".into()),
            (
                "ignition",
                812,
                "GET https://api-int.ocp.example.com:22623/config/master: attempt #1".into(),
            ),
            ("ignition", 812, DNS_FAILURE.into()),
            (
                "systemd",
                1,
                format!(
                    "ignition-fetch.service: Failed with result 'exit-code'. (boot {})",
                    i + 1
                ),
            ),
        ];
        for (k, (ident, pid, message)) in lines.iter().enumerate() {
            let k = k as u64;
            text.push_str(&entry(
                boot,
                start + k * 1_000_000,
                (k + 1) * 1_000_000,
                ident,
                *pid,
                message,
            ));
        }
    }
    text
}

/// RHCOS's `root` partition: `ostree/deploy/rhcos/deploy/<csum>.<serial>`
/// (with its `/etc`, its `/var` empty) and the stateroot's `var`.
fn build_root(dir: &Path) {
    let deploy = dir.join("ostree/deploy/rhcos/deploy");
    for (name, hostname, age) in [
        (NEWEST, "master-0", 60),
        (OLDER, "stale-deployment", 86_400),
    ] {
        let d = deploy.join(name);
        std::fs::create_dir_all(d.join("var")).unwrap();
        write(
            &d.join("usr/lib/os-release"),
            "NAME=\"Red Hat Enterprise Linux CoreOS\"\nVERSION_ID=\"4.18\"\nID=\"rhcos\"\n",
        );
        std::fs::create_dir_all(d.join("etc")).unwrap();
        std::os::unix::fs::symlink("../usr/lib/os-release", d.join("etc/os-release")).unwrap();
        std::os::unix::fs::symlink("var/opt", d.join("opt")).unwrap();
        write(&d.join("etc/hostname"), &format!("{hostname}\n"));
        write(&d.join("etc/resolv.conf"), "nameserver 192.168.122.1\n");
        write(
            &d.join("etc/NetworkManager/system-connections/enp1s0.nmconnection"),
            "[connection]\nid=enp1s0\ntype=ethernet\n[802-1x]\npassword=disk-secret-8c1f\n",
        );
        let origin = deploy.join(format!("{name}.origin"));
        write(
            &origin,
            &format!("[origin]\ncontainer-image-reference=ostree-unverified-registry:quay.io/rhcos@{name}\n"),
        );
        let when = std::time::SystemTime::now() - std::time::Duration::from_secs(age);
        std::fs::File::options()
            .write(true)
            .open(&origin)
            .unwrap()
            .set_modified(when)
            .unwrap();
    }
    let var = dir.join("ostree/deploy/rhcos/var");
    write(
        &var.join("log/openshift/bootkube.json"),
        r#"[{"timestamp":"2026-11-26T08:00:00Z","phase":"service start"}]"#,
    );
    write(
        &var.join("log/pods/openshift-etcd_etcd-master-0_5e1f/etcd/0.log"),
        "2026-11-26T08:59:00.000000000+00:00 stderr F an older install's pod log\n",
    );
    write(
        &var.join("opt/openshift/.keep"),
        "the deployment's /opt is var/opt\n",
    );
    std::fs::create_dir_all(dir.join("boot")).unwrap();
    write(
        &dir.join(".coreos-aleph-version.json"),
        "{\"build\":\"418.94.202411260000-0\"}\n",
    );
    let journal = var.join(format!("log/journal/{MACHINE_ID}"));
    std::fs::create_dir_all(&journal).unwrap();
    let export = dir.parent().unwrap().join("journal.export");
    std::fs::write(&export, export_journal()).unwrap();
    run(Command::new(JOURNAL_REMOTE)
        .arg(format!(
            "--output={}",
            journal.join("system.journal").display()
        ))
        .arg(&export));
}

/// A read-only loop mount, undone when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let done = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !done {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

fn mount_read_only(image: &Path, at: &Path) -> Mounted {
    assert!(
        rustix::process::geteuid().is_root(),
        "this test loop-mounts a disk image and must run as root (as the fault matrix does)"
    );
    std::fs::create_dir_all(at).unwrap();
    let out = Command::new("mount")
        .args(["-o", "loop,ro"])
        .arg(image)
        .arg(at)
        .output()
        .unwrap_or_else(|e| panic!("mount: {e}; install with {INSTALL}"));
    assert!(
        out.status.success(),
        "cannot loop-mount {} read-only here: {}",
        image.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Mounted(at.to_path_buf())
}

#[test]
fn a_disk_that_never_came_up_is_read_from_its_own_journal_only() {
    need(JOURNAL_REMOTE, "systemd-journal-remote");
    need("/usr/bin/journalctl", "journalctl");
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    build_root(&tree);
    // The real journalctl reads what journal-remote wrote: three boots.
    let boots = run(Command::new("journalctl")
        .arg("--directory")
        .arg(tree.join("ostree/deploy/rhcos/var/log/journal"))
        .args(["--list-boots", "--no-pager"]));
    assert_eq!(String::from_utf8_lossy(&boots.stdout).lines().count(), 4);

    let image = tmp.path().join("root.img");
    run(Command::new("mkfs.ext4")
        .args(["-q", "-L", "root", "-O", "^has_journal", "-d"])
        .arg(&tree)
        .arg(&image)
        .arg("64M"));
    let mnt = tmp.path().join("sysroot");
    let _mounted = mount_read_only(&image, &mnt);

    let traps = tmp.path().join("traps");
    let ran = tmp.path().join("ran.log");
    std::fs::create_dir_all(&traps).unwrap();
    for name in TRAPS {
        let path = traps.join(name);
        std::fs::write(
            &path,
            format!("#!/bin/sh\necho \"{name} $*\" >> '{}'\n", ran.display()),
        )
        .unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let bundle = tmp.path().join("host_boot.tar.gz");
    let out = run(Command::new(agent_bin())
        .arg("collect")
        .arg("-o")
        .arg(&bundle)
        .arg("--root")
        .arg(&mnt)
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", traps.display())));
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("{stderr}");
    assert!(
        stderr.contains(&format!(
            "root {}: ostree deployment rhcos/{NEWEST}",
            mnt.display()
        )),
        "{stderr}"
    );
    assert!(
        !ran.exists(),
        "commands about the running machine ran: {}",
        std::fs::read_to_string(&ran).unwrap_or_default()
    );

    let members = open_bundle(&bundle);
    eprintln!("members:\n{}", member_names(&members).join("\n"));
    let manifest: serde_json::Value =
        serde_json::from_slice(&member(&members, "manifest.json").unwrap().data).unwrap();
    let root = &manifest["root"];
    assert_eq!(root["layout"], "ostree", "{root:#}");
    assert_eq!(root["running_machine"], false);
    assert_eq!(root["deployment"], format!("rhcos/{NEWEST}"), "{root:#}");
    assert!(
        root["chosen_by"]
            .as_str()
            .unwrap()
            .starts_with("the newest of 2"),
        "{root:#}"
    );

    // Every member listed comes from the root, and every member in the
    // archive is listed (but the manifest and the diagnosis).
    let files: Vec<&serde_json::Value> = manifest["collectors"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["files"].as_array().unwrap())
        .collect();
    for f in &files {
        assert_eq!(f["origin"], "root", "{f:#}");
    }
    // Units with no entry in that boot are skipped, not failed.
    let journal = manifest["collectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "journal")
        .unwrap();
    assert_eq!(journal["status"], "ok", "{journal:#}");
    let kubelet = files
        .iter()
        .find(|f| f["path"] == "journal/units/kubelet.log")
        .unwrap();
    assert_eq!(
        (&kubelet["status"], &kubelet["reason"]),
        (&"skipped".into(), &"no entries".into()),
        "{kubelet:#}"
    );
    for m in &members {
        let path = m.name.strip_prefix("host_boot/").unwrap();
        if path.is_empty() || path == "manifest.json" || path == "diagnosis.json" {
            continue;
        }
        assert!(
            files
                .iter()
                .any(|f| f["path"] == path && f["archived"] == true),
            "{path} is not a listed member"
        );
    }
    for absent in [
        "network/ip-addr.txt",
        "mounts/df-h.txt",
        "system/uname.txt",
        "system/summary.json",
    ] {
        assert!(member(&members, absent).is_none(), "{absent}");
    }
    let text = |path: &str| {
        String::from_utf8_lossy(
            &member(&members, path)
                .unwrap_or_else(|| panic!("no {path} in {:?}", member_names(&members)))
                .data,
        )
        .into_owned()
    };

    // The journal's newest boot is "this boot", with the failure; the one
    // before it is the previous boot, and the first has a member of its own.
    let this_boot = text("journal/this-boot.log");
    assert!(this_boot.contains(DNS_FAILURE), "{this_boot}");
    assert!(this_boot.contains("(boot 3)"), "{this_boot}");
    assert!(text("journal/previous-boot.log").contains("(boot 2)"));
    let first = text(&format!("journal/earlier-boots/2-{}.log", BOOTS[0]));
    assert!(
        first.contains("(boot 1)") && first.contains(DNS_FAILURE),
        "{first}"
    );
    assert_eq!(
        text("journal/units/ignition.log")
            .matches(DNS_FAILURE)
            .count(),
        3
    );
    let list = text("journal/list-boots.txt");
    for boot in BOOTS {
        assert!(list.contains(boot), "{list}");
    }
    let source = files
        .iter()
        .find(|f| f["path"] == "journal/this-boot.log")
        .unwrap()["source"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        source.contains(&format!(
            "--directory={}",
            mnt.join("ostree/deploy/rhcos/var/log/journal").display()
        )),
        "{source}"
    );

    // /etc is the chosen deployment's, /var the stateroot's, secrets redacted.
    assert_eq!(text("network/hostname"), "master-0\n");
    assert!(text("system/os-release").contains("CoreOS"));
    let keyfile = text("network/nm-connections/etc/enp1s0.nmconnection");
    assert!(keyfile.contains("password=[REDACTED]"), "{keyfile}");
    assert!(text("records/bootkube.json").contains("service start"));
    assert!(text("crio/pods/openshift-etcd_etcd-master-0_5e1f/etcd/0.log").contains("pod log"));
    let deployments = text("system/ostree-deployments.txt");
    assert!(
        deployments.contains(&format!("read: rhcos/{NEWEST}")),
        "{deployments}"
    );
    assert!(deployments.contains(OLDER), "{deployments}");
    assert!(
        deployments.contains("418.94.202411260000-0"),
        "{deployments}"
    );
    // Ignition never finished a run: no record of one, and nothing else.
    let result = files
        .iter()
        .find(|f| f["path"] == "system/ignition-result.json")
        .unwrap();
    assert_eq!(result["status"], "skipped", "{result:#}");

    // The diagnosis names the cause.
    let diagnosis: serde_json::Value =
        serde_json::from_slice(&member(&members, "diagnosis.json").unwrap().data).unwrap();
    let top = &diagnosis["findings"][0];
    assert_eq!(top["category"], "dns_resolution", "{diagnosis:#}");
    assert!(
        top["summary"]
            .as_str()
            .unwrap()
            .contains("api-int.ocp.example.com"),
        "{top:#}"
    );
}
