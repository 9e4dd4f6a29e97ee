//! The shipped unit: valid for systemd, and true to the rules the agent relies
//! on (never blocks boot, no secrets in the environment, gated on credentials).

use std::path::Path;
use std::process::Command;

const UNIT: &str = include_str!("../../systemd/assisted-boot-reporter.service");

fn directives(key: &str) -> Vec<&'static str> {
    UNIT.lines()
        .filter_map(|line| line.trim().strip_prefix(key)?.strip_prefix('='))
        .collect()
}

#[test]
fn unit_passes_systemd_analyze_verify() {
    let dir = tempfile::tempdir().unwrap();
    // verify insists the ExecStart binary exists: point it at the one under test.
    let unit = UNIT.replace(
        "/usr/local/bin/assisted-boot-reporter",
        env!("CARGO_BIN_EXE_assisted-boot-reporter"),
    );
    let path = dir.path().join("assisted-boot-reporter.service");
    std::fs::write(&path, unit).unwrap();
    let output = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .expect("systemd-analyze must be installed (scripts/test installs systemd)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "verify failed: {stderr}");
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("assisted-boot-reporter"))
        .collect();
    assert!(ours.is_empty(), "verify warned about the unit: {ours:?}");
}

#[test]
fn unit_never_blocks_boot_and_holds_no_secret() {
    assert_eq!(
        directives("Type"),
        ["exec"],
        "a oneshot would hold boot targets for an hour"
    );
    assert!(
        directives("Environment").is_empty(),
        "credentials never go in Environment="
    );
    assert!(directives("EnvironmentFile").is_empty());
    for dep in ["Requires", "BindsTo", "Requisite"] {
        assert!(
            directives(dep).is_empty(),
            "{dep}= would tie the unit to others"
        );
    }
    assert_eq!(directives("Before"), ["shutdown.target"]);
    // Otherwise multi-user.target is ordered after the unit and waits for
    // network-online.target (seen in tests/vm).
    assert_eq!(directives("DefaultDependencies"), ["no"]);
    let after = directives("After").join(" ");
    assert!(after.contains("network-online.target"));
    assert!(
        !after.contains("crio") && !after.contains("kubelet"),
        "no dependency on crio or kubelet"
    );
    assert_eq!(
        directives("ConditionPathExists"),
        ["/etc/assisted-boot-reporter/host-id"]
    );
    assert_eq!(directives("WantedBy"), ["multi-user.target"]);
    assert_eq!(
        directives("ExecStart"),
        ["/usr/local/bin/assisted-boot-reporter run"]
    );
}

#[test]
fn unit_runs_with_low_priority_and_hardening() {
    for (key, value) in [
        ("Nice", "19"),
        ("IOSchedulingClass", "idle"),
        ("CPUSchedulingPolicy", "idle"),
        ("ProtectSystem", "strict"),
        ("NoNewPrivileges", "yes"),
        ("PrivateTmp", "yes"),
        ("ProtectHome", "yes"),
    ] {
        assert_eq!(directives(key), [value], "{key}");
    }
    assert!(Path::new("systemd/assisted-boot-reporter.service").exists());
}

/// `systemd-analyze security` scores the shipped unit's exposure (0 safe,
/// 10 unsafe; the upstream reporter's unit scores 9.5). 4.5 is the ceiling;
/// docs/security.md explains each directive it still flags.
const MAX_EXPOSURE: f64 = 4.5;

#[test]
fn unit_exposure_is_at_most_4_5() {
    let output = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg("systemd/assisted-boot-reporter.service")
        .output()
        .expect("systemd-analyze must be installed (scripts/test installs systemd)");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stdout
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_else(|| panic!("no overall exposure in:\n{stdout}\n{stderr}"));
    let score: f64 = line
        .rsplit(':')
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the score in {line:?}"));
    eprintln!("{line}");
    assert!(
        score <= MAX_EXPOSURE,
        "exposure {score} > {MAX_EXPOSURE}:\n{stdout}"
    );
}
