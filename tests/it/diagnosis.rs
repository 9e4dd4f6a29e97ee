//! Diagnosis end to end, one fixture host per category: `collect` on the
//! fixture root (its journal is `fake-journal/<unit>.log`, printed by the
//! fake journalctl), then `inspect --json`, whose first finding must name
//! the category, with evidence lines that are really at those line numbers
//! of those members in the bundle. A healthy host's usual noise (API
//! refusals while it starts, a pull retried successfully, Ignition's first
//! attempt) must produce no error. The demo's bundle names the DNS failure
//! first.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{agent_bin, fake_bin, fixture_root, open_bundle};

fn diagnosis_root(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/diagnosis")
        .join(name)
}

/// Collects `root` and returns `inspect --json`'s object and the bundle path.
fn collect_and_inspect(root: &Path, tmp: &Path) -> (serde_json::Value, PathBuf) {
    let bundle = tmp.join("bundle.tar.gz");
    let path = std::env::join_paths([fake_bin(), PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .unwrap();
    let out = Command::new(agent_bin())
        .args(["collect", "-o"])
        .arg(&bundle)
        .arg("--root")
        .arg(root)
        .args(["--config-dir", "/nonexistent", "--command-timeout", "20s"])
        .env_clear()
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "collect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(agent_bin())
        .args(["inspect", "--json"])
        .arg(&bundle)
        .env_clear()
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "inspect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (serde_json::from_slice(&out.stdout).unwrap(), bundle)
}

/// Every evidence line is at its line number in its member.
fn check_evidence(object: &serde_json::Value, bundle: &Path) {
    let members = open_bundle(bundle);
    for finding in object["findings"].as_array().unwrap() {
        for ev in finding["evidence"].as_array().unwrap() {
            let path = ev["path"].as_str().unwrap();
            let Some(line) = ev["line"].as_u64() else {
                continue;
            };
            let member = members
                .iter()
                .find(|m| m.name == format!("host_boot/{path}"))
                .unwrap_or_else(|| panic!("no member {path}"));
            let text = String::from_utf8_lossy(&member.data);
            let at = text
                .split('\n')
                .nth(usize::try_from(line).unwrap() - 1)
                .unwrap_or_else(|| panic!("{path} has no line {line}"));
            let expected = ev["text"].as_str().unwrap().trim_end_matches('…');
            assert!(
                at.starts_with(expected),
                "{path}:{line} is {at:?}, evidence {expected:?}"
            );
        }
    }
}

fn first_finding(category: &str, severity: &str, summary_has: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let (object, bundle) = collect_and_inspect(&diagnosis_root(category), tmp.path());
    let findings = object["findings"].as_array().unwrap();
    let first = findings
        .first()
        .unwrap_or_else(|| panic!("no findings: {object:#}"));
    assert_eq!(first["category"], category, "{:#}", object["findings"]);
    assert_eq!(first["severity"], severity, "{first:#}");
    let summary = first["summary"].as_str().unwrap();
    assert!(summary.contains(summary_has), "{summary}");
    assert!(!first["hint"].as_str().unwrap().is_empty());
    assert!(
        !first["evidence"].as_array().unwrap().is_empty(),
        "{first:#}"
    );
    assert!(object["manifest"]["diagnosis"]["path"] == "diagnosis.json");
    check_evidence(&object, &bundle);
}

#[test]
fn dns_resolution() {
    first_finding(
        "dns_resolution",
        "error",
        "lookup quay.io on 192.168.122.1:53: no such host",
    );
}

#[test]
fn proxy() {
    first_finding("proxy", "error", "10.0.0.9:3128");
}

#[test]
fn registry_auth() {
    first_finding(
        "registry_auth",
        "error",
        "registry quay.io refused the pull secret",
    );
}

#[test]
fn untrusted_ca() {
    first_finding("untrusted_ca", "error", "mirror.corp.example:5000");
}

#[test]
fn clock_skew() {
    first_finding(
        "clock_skew",
        "error",
        "host clock 2024-01-01T10:04:00Z is before the validity start 2026-11-22T09:00:00Z",
    );
}

#[test]
fn mcs_unreachable() {
    first_finding("mcs_unreachable", "error", "api-int.c.example.com:22623");
}

#[test]
fn api_unreachable() {
    first_finding("api_unreachable", "error", "api-int.c.example.com:6443");
}

#[test]
fn disk_full() {
    first_finding("disk_full", "error", "/var/lib/containers/storage/overlay");
}

#[test]
fn etcd_slow_disk() {
    first_finding("etcd_slow_disk", "error", "took 1.52s");
}

#[test]
fn network_link() {
    first_finding("network_link", "warning", "ens3: link down");
}

#[test]
fn mirror_config() {
    first_finding("mirror_config", "error", "mirror mirror.corp did not serve");
}

#[test]
fn release_mismatch() {
    first_finding("release_mismatch", "error", "arm64");
}

#[test]
fn csr_pending() {
    first_finding("csr_pending", "error", "not approved");
}

#[test]
fn crio_storage() {
    first_finding("crio_storage", "error", "layer not known");
}

#[test]
fn selinux() {
    first_finding(
        "selinux",
        "warning",
        "crio was denied read write on file x (var_lib_t) by SELinux",
    );
}

#[test]
fn other() {
    first_finding("other", "error", "bootkube.service failed");
}

#[test]
fn a_healthy_installs_noise_is_no_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (object, bundle) = collect_and_inspect(&diagnosis_root("healthy"), tmp.path());
    let findings = object["findings"].as_array().unwrap();
    assert!(
        findings.iter().all(|f| f["severity"] != "error"),
        "{findings:#?}"
    );
    // The refusals and the retried pull are still listed, as info.
    assert!(findings.iter().any(|f| f["category"] == "api_unreachable"));
    check_evidence(&object, &bundle);
}

#[test]
fn the_demo_bundle_names_the_dns_failure_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (object, bundle) = collect_and_inspect(&fixture_root(), tmp.path());
    let first = &object["findings"][0];
    assert_eq!(
        first["category"], "dns_resolution",
        "{:#}",
        object["findings"]
    );
    let summary = first["summary"].as_str().unwrap();
    assert!(
        summary.contains("lookup quay.io on 192.168.122.1:53: server misbehaving"),
        "{summary}"
    );
    // One finding, evidence from release-image, bootkube and its record.
    let paths: Vec<&str> = first["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    for p in [
        "journal/units/release-image.log",
        "journal/units/bootkube.log",
        "records/bootkube.json",
    ] {
        assert!(paths.contains(&p), "{paths:?}");
    }
    assert_eq!(
        object["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["category"] == "dns_resolution")
            .count(),
        1
    );
    check_evidence(&object, &bundle);
}
