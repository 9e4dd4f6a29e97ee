//! Collection in depth, through the real binary's `collect -o FILE` on a copy
//! of the fixture root with the fake tools: a multi-hundred-MiB journal
//! (newest part kept, memory flat), a hanging command, non-UTF-8 output,
//! secrets in NetworkManager keyfiles and in the journal, broken and partial
//! records, and a host without `/var/log/openshift`.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{
    agent_bin, contains, copy_tree, fake_bin, fixture_root, member, open_bundle, Member,
};
use serde_json::Value;

struct Collected {
    manifest: Value,
    members: Vec<Member>,
    stderr: String,
}

impl Collected {
    fn file(&self, path: &str) -> &Value {
        self.manifest["collectors"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|c| c["files"].as_array().unwrap())
            .find(|f| f["path"] == path)
            .unwrap_or_else(|| panic!("no {path} in the manifest"))
    }

    fn collector(&self, name: &str) -> &Value {
        self.manifest["collectors"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no collector {name}"))
    }

    fn data(&self, path: &str) -> &[u8] {
        &member(&self.members, path)
            .unwrap_or_else(|| panic!("no member {path}"))
            .data
    }
}

/// A temp dir with a copy of the fixture root and a bin dir for wrappers.
struct Host {
    tmp: tempfile::TempDir,
}

impl Host {
    fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("abr-collect-")
            .tempdir()
            .unwrap();
        copy_tree(&fixture_root(), &tmp.path().join("root"));
        std::fs::create_dir_all(tmp.path().join("bin")).unwrap();
        Self { tmp }
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    /// An executable shell script on the front of PATH.
    fn tool(&self, name: &str, body: &str) {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.tmp.path().join("bin").join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    fn collect(&self, extra_args: &[&str], env: &[(&str, OsString)]) -> Collected {
        let out = self.tmp.path().join("bundle.tar.gz");
        let path = std::env::join_paths([
            self.tmp.path().join("bin"),
            fake_bin(),
            PathBuf::from("/usr/bin"),
            PathBuf::from("/bin"),
        ])
        .unwrap();
        let mut cmd = Command::new(agent_bin());
        cmd.arg("collect")
            .arg("-o")
            .arg(&out)
            .arg("--root")
            .arg(self.root())
            .args(["--kubelet-healthz-url", "http://127.0.0.1:1/healthz"])
            // The fake tools stand for this machine's: the fixture root is
            // this host seen from elsewhere, so its commands run too.
            .arg("--same-machine")
            .args(extra_args)
            .env_clear()
            .env("PATH", path);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let output = cmd.output().expect("run collect");
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "collect failed:\n{stderr}");
        let members = open_bundle(&out);
        let manifest: Value =
            serde_json::from_slice(&member(&members, "manifest.json").expect("manifest").data)
                .unwrap();
        assert_eq!(
            members.last().unwrap().name,
            "host_boot/manifest.json",
            "manifest is not the last member"
        );
        Collected {
            manifest,
            members,
            stderr,
        }
    }
}

fn os(s: &str) -> OsString {
    OsString::from(s)
}

/// `peak RSS N KiB` from collect's account of itself (the kernel's VmHWM).
fn peak_rss_kib(stderr: &str) -> u64 {
    let after = stderr
        .split("peak RSS ")
        .nth(1)
        .expect("peak RSS in output");
    after
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .expect("a number of KiB")
}

#[test]
fn giant_journal_keeps_its_newest_part_with_flat_memory() {
    let host = Host::new();
    let journal_bytes: u64 = 320 << 20;
    let member_cap: u64 = 16 << 20;
    let got = host.collect(
        &["--member-max-bytes", "16MiB"],
        &[
            ("FAKE_JOURNAL_BYTES", os(&journal_bytes.to_string())),
            ("FAKE_JOURNAL_BYTES_SCOPE", os("this-boot")),
            ("FAKE_JOURNAL_LAST", os("the very last line of the boot")),
        ],
    );
    let this_boot = got.file("journal/this-boot.log");
    assert_eq!(this_boot["truncated"], true, "{this_boot}");
    assert_eq!(this_boot["bytes"], member_cap, "{this_boot}");
    // journalctl is asked for the newest entries the cap keeps (a probe,
    // then 1.25x the cap's worth of lines), not for all 320 MiB.
    let read = this_boot["original_bytes"].as_u64().unwrap();
    assert!(read > member_cap && read < member_cap * 2, "{this_boot}");
    let reason = this_boot["reason"].as_str().unwrap();
    assert!(
        reason.contains("older entries not read: journalctl was asked for the newest")
            && reason.contains("member size cap: kept the last 16777216 of"),
        "{this_boot}"
    );
    // Nothing went through a temporary file (members wait compressed in
    // memory): the manifest says so and no file was left behind.
    assert!(this_boot.get("spilled_bytes").is_none(), "{this_boot}");
    assert_eq!(got.manifest["spill_bytes"], 0);
    assert!(got
        .data("journal/this-boot.log")
        .ends_with(b"filler[1]: xxxxxxxxxxxxxxx\nthe very last line of the boot\n"));
    assert!(got.manifest["truncated"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["path"] == "journal/this-boot.log"));
    let leftovers: Vec<_> = std::fs::read_dir(host.tmp.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("spill"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Memory stays flat, far below the journal: members wait as bounded
    // compressed chunks. The bound is the 32 MiB memory budget of a bundle
    // (docs/benchmarks.md) less a margin; the redaction automaton and the
    // diagnosis engine's tables are part of what it holds.
    let peak = peak_rss_kib(&got.stderr);
    eprintln!(
        "peak RSS {peak} KiB for a {} MiB journal",
        journal_bytes >> 20
    );
    assert!(
        peak < 24 << 10,
        "peak RSS {peak} KiB is not below 24 MiB for a {} MiB journal: {}",
        journal_bytes >> 20,
        got.stderr
    );
}

#[test]
fn hanging_command_is_killed_and_the_bundle_still_ships() {
    let host = Host::new();
    host.tool("crictl", "echo \"partial $1\"; exec sleep 60");
    let got = host.collect(&["--command-timeout", "1s"], &[]);
    let crio = got.collector("crio");
    assert_eq!(crio["status"], "timed_out", "{crio}");
    for path in [
        "crio/crictl-ps-a.txt",
        "crio/crictl-pods.txt",
        "crio/crictl-info.txt",
    ] {
        let f = got.file(path);
        assert_eq!(f["status"], "timed_out", "{f}");
        assert_eq!(f["reason"], "killed after the 1s command timeout", "{f}");
    }
    // What it printed before hanging is kept.
    assert_eq!(got.data("crio/crictl-ps-a.txt"), b"partial ps\n");
    // And every collector after it still ran.
    assert_eq!(got.collector("journal")["status"], "ok");
    assert!(member(&got.members, "journal/this-boot.log").is_some());
}

#[test]
fn non_utf8_output_is_shipped_byte_for_byte() {
    let host = Host::new();
    let mut line = b"kernel: weird bytes \xff\xfe\x80 end".to_vec();
    let extra = OsString::from_vec(std::mem::take(&mut line));
    let got = host.collect(&[], &[("FAKE_JOURNAL_EXTRA", extra)]);
    assert!(contains(
        got.data("journal/this-boot.log"),
        b"kernel: weird bytes \xff\xfe\x80 end\n"
    ));
    assert!(contains(
        got.data("network/nmcli-device.txt"),
        b"connected  caf\xe9-\xff\xfe\n"
    ));
}

#[test]
fn secrets_in_keyfiles_and_the_journal_are_scrubbed_and_counted() {
    let host = Host::new();
    let journal_secrets = [
        "bearer-token-0f9e8d7c6b5a",
        "journal-proxy-pw-3344",
        "journal-psk-value-7788",
    ];
    let extra = format!(
        "curl[7]: > Authorization: Bearer {}\ncrio[9]: using proxy http://user:{}@proxy.example.com:3128\nNetworkManager[5]: psk={} applied",
        journal_secrets[0], journal_secrets[1], journal_secrets[2]
    );
    let got = host.collect(&[], &[("FAKE_JOURNAL_EXTRA", os(&extra))]);

    let keyfile = "network/nm-connections/etc/corp-wifi.nmconnection";
    let text = String::from_utf8_lossy(got.data(keyfile)).into_owned();
    assert!(text.contains("psk=[REDACTED]\n"), "{text}");
    assert!(
        text.contains("pac-url=http://proxyuser:[REDACTED]@proxy.example.com:3128/proxy.pac\n"),
        "{text}"
    );
    assert!(text.contains("ssid=corp-wifi\n"));
    assert_eq!(got.file(keyfile)["redactions"], 2);

    let journal = String::from_utf8_lossy(got.data("journal/this-boot.log")).into_owned();
    assert!(
        journal.contains("> Authorization: [REDACTED]\n"),
        "{journal}"
    );
    assert!(journal.contains("http://user:[REDACTED]@proxy.example.com:3128\n"));
    assert!(journal.contains("psk=[REDACTED] applied\n"), "{journal}");
    assert_eq!(got.file("journal/this-boot.log")["redactions"], 3);
    assert!(got.manifest["redactions"].as_u64().unwrap() >= 5);

    for secret in journal_secrets
        .iter()
        .chain(&["fixture-wifi-passphrase-8271", "fixture-proxy-pw-5519"])
    {
        for m in &got.members {
            assert!(
                !contains(&m.data, secret.as_bytes()),
                "{secret} leaked in {}",
                m.name
            );
        }
    }
}

#[test]
fn broken_and_partial_records_still_make_a_summary_naming_each_problem() {
    let host = Host::new();
    let dir = host.root().join("var/log/openshift");
    std::fs::write(dir.join("approve-csr.json"), b"").unwrap();
    std::fs::write(dir.join("progress.json"), b"{\"broken\": \xff").unwrap();
    let bootkube = std::fs::read(dir.join("bootkube.json")).unwrap();
    // A reboot cut the file in the middle of an entry.
    std::fs::write(dir.join("crio-configure.json"), &bootkube[..700]).unwrap();
    std::fs::write(dir.join("bootkube.json.tmp"), &bootkube[..100]).unwrap();

    let got = host.collect(&[], &[]);
    let summary: Value = serde_json::from_slice(got.data("records/summary.json")).unwrap();
    let problems: Vec<&str> = summary["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let named = |prefix: &str| problems.iter().any(|p| p.starts_with(prefix));
    assert!(named("approve-csr.json: empty file"), "{problems:?}");
    assert!(named("progress.json: not a JSON array"), "{problems:?}");
    assert!(named("crio-configure.json: truncated JSON"), "{problems:?}");
    assert!(named("stale temporary record(s) ignored"), "{problems:?}");
    let services: Vec<&str> = summary["services"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["service"].as_str().unwrap())
        .collect();
    // The truncated file's complete entries are a service of their own.
    assert_eq!(
        services,
        ["bootkube", "crio-configure", "kubelet", "release-image"]
    );
    // Raw copies are shipped as they are, broken or not.
    assert_eq!(got.data("records/progress.json"), b"{\"broken\": \xff");
    assert_eq!(got.collector("records")["status"], "ok");
    assert_eq!(got.manifest["records_digest"], summary["digest"]);
    assert!(summary["digest"].as_str().is_some());
}

#[test]
fn absent_var_log_openshift_is_skipped_not_failed() {
    let host = Host::new();
    std::fs::remove_dir_all(host.root().join("var/log/openshift")).unwrap();
    let got = host.collect(&[], &[]);
    let records = got.collector("records");
    assert_ne!(records["status"], "failed", "{records}");
    assert!(records["reason"]
        .as_str()
        .unwrap()
        .contains("no /var/log/openshift"));
    let raw = got.file("records/*.json");
    assert_eq!(raw["status"], "skipped");
    let summary: Value = serde_json::from_slice(got.data("records/summary.json")).unwrap();
    assert_eq!(summary["records_dir_present"], false);
    assert!(got.manifest.get("records_digest").is_none());
    // The .done markers are still there to read.
    assert!(!got.data("records/done-markers.txt").is_empty());
    assert!(!Path::new(&host.root().join("var/log/openshift")).exists());
}
