//! `collect -o FILE` and `inspect FILE`, through the real binary: inspect on
//! a bundle `collect` made from the fixture root, on a bundle the agent
//! shipped to the mock service during a boot, and the exit codes of both
//! tools when something is wrong (1 at run time, 2 for usage).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{
    admin_state, agent_bin, check_host_boot_bundle, copy_tree, fake_bin, fixture_root, host_of,
    AgentOpts, HostSeed, Scenario, SecretForm, HOST_ID,
};

fn path_env(extra: &Path) -> std::ffi::OsString {
    std::env::join_paths([extra, &fake_bin(), Path::new("/usr/bin"), Path::new("/bin")]).unwrap()
}

fn run(args: &[&std::ffi::OsStr], env: &[(&str, &str)], bin: &Path) -> Output {
    let mut cmd = Command::new(agent_bin());
    cmd.args(args).env_clear().env("PATH", path_env(bin));
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run the agent binary")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn inspect(bundle: &Path) -> String {
    let out = run(
        &["inspect".as_ref(), bundle.as_os_str()],
        &[],
        Path::new("/nonexistent"),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "inspect failed: {}",
        text(&out.stderr)
    );
    text(&out.stdout)
}

#[test]
fn inspect_prints_the_story_of_a_collected_bundle() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    copy_tree(&fixture_root(), &root);
    // A contract with the host's IDs and a pull secret whose token shows up
    // in a host file: the manifest names the host, the token is scrubbed.
    let contract = root.join("etc/assisted-boot-reporter");
    std::fs::create_dir_all(&contract).unwrap();
    std::fs::write(contract.join("host-id"), format!("{HOST_ID}\n")).unwrap();
    std::fs::write(contract.join("pull-secret"), "offline-token-5e4d3c2b1a\n").unwrap();
    let hosts = root.join("etc/hosts");
    let mut text_hosts = std::fs::read_to_string(&hosts).unwrap();
    text_hosts.push_str("# offline-token-5e4d3c2b1a\n");
    std::fs::write(&hosts, text_hosts).unwrap();

    let bundle = tmp.path().join("out/host_boot.tar.gz");
    std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
    let out = run(
        &[
            "collect".as_ref(),
            "-o".as_ref(),
            bundle.as_os_str(),
            "--root".as_ref(),
            root.as_os_str(),
            "--kubelet-healthz-url".as_ref(),
            "http://127.0.0.1:1/healthz".as_ref(),
        ],
        &[("FAKE_SYSTEMCTL_FAILED", "release-image.service")],
        tmp.path(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("wrote "), "{stderr}");
    assert!(
        stderr.contains("records: bootkube: recovered after 1 failed run(s)"),
        "{stderr}"
    );
    // Nothing but the bundle is left beside it.
    let names: Vec<_> = std::fs::read_dir(bundle.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["host_boot.tar.gz"]);

    let report = inspect(&bundle);
    eprintln!("{report}");
    for expected in [
        &format!("host {HOST_ID}") as &str,
        "records: bootkube: recovered after 1 failed run(s); first: stage mco-bootstrap failed at 147 main /usr/local/bin/bootkube.sh",
        "== collectors",
        "collector  status",
        "records    ok",
        "journal    ok",
        "== failed units",
        "release-image.service loaded failed failed",
        "== bootstrap service records",
        "bootkube (bootkube.json): success, 2 run(s)",
        "  FAILED run 1: stage mco-bootstrap at 2025-02-03T10:04:02Z, line 147 main /usr/local/bin/bootkube.sh",
        "    stage        cvo-bootstrap",
        "release-image (release-image.json): success, 2 run(s)",
        "kubelet (kubelet.json): running, 1 run(s)",
        "bootkube .done markers:",
        "== redactions:",
        "network/nm-connections/etc/corp-wifi.nmconnection",
        "network/hosts",
    ] {
        assert!(report.contains(expected), "missing {expected:?} in:\n{report}");
    }
    assert!(!report.contains("offline-token-5e4d3c2b1a"));
    let members = common::open_bundle(&bundle);
    for m in &members {
        assert!(
            !common::contains(&m.data, b"offline-token-5e4d3c2b1a"),
            "{}",
            m.name
        );
    }

    // --json is one object: the findings, and the manifest under a key.
    let out = run(
        &["inspect".as_ref(), "--json".as_ref(), bundle.as_os_str()],
        &[],
        tmp.path(),
    );
    let object: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(object["findings"].is_array(), "{object}");
    let manifest = &object["manifest"];
    assert_eq!(manifest["meta"]["reason"], "offline");
    assert_eq!(manifest["meta"]["host_id"], HOST_ID);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inspect_reads_a_bundle_the_agent_shipped() {
    let sc = Scenario::new("inspect");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    let run_ = sc
        .run_agent(
            "first boot",
            &AgentOpts {
                timeout: Some("2s"),
                ..AgentOpts::default()
            },
        )
        .await;
    run_.assert_code(0);
    let state = admin_state(&base).await;
    let host = host_of(&state, HOST_ID);
    let bundle = check_host_boot_bundle(host);
    let path = common::bundle_of(host, "host_boot").unwrap()["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let report = inspect(Path::new(&path));
    eprintln!("{report}");
    assert!(report.contains(&format!("host {HOST_ID}")), "{report}");
    assert!(report.contains("(#1 from disk)"), "{report}");
    assert!(
        report.contains("bootkube (bootkube.json): success, 2 run(s)"),
        "{report}"
    );
    assert!(report.contains("records: bootkube: recovered"), "{report}");
    assert!(
        !report.contains(&sc.token),
        "the token leaked into the report"
    );
    // The agent's manifest carries the digest it would report.
    assert_eq!(
        bundle.manifest["records_digest"]
            .as_str()
            .map(|d| d.starts_with("bootkube: recovered")),
        Some(true),
        "{}",
        bundle.manifest
    );
    sc.final_checks(Some(&base)).await;
}

#[test]
fn tools_exit_1_on_runtime_errors_and_2_on_usage_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path();
    let missing = tmp.path().join("missing.tar.gz");
    let out = run(&["inspect".as_ref(), missing.as_os_str()], &[], bin);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: opening "),
        "{}",
        text(&out.stderr)
    );

    let garbage = tmp.path().join("garbage.tar.gz");
    std::fs::write(&garbage, b"not a bundle").unwrap();
    let out = run(&["inspect".as_ref(), garbage.as_os_str()], &[], bin);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));

    // A tar.gz cut short has no manifest: named as incomplete.
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let whole = tmp.path().join("whole.tar.gz");
    let out = run(
        &[
            "collect".as_ref(),
            "-o".as_ref(),
            whole.as_os_str(),
            "--root".as_ref(),
            root.as_os_str(),
        ],
        &[],
        bin,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let data = std::fs::read(&whole).unwrap();
    let cut = tmp.path().join("cut.tar.gz");
    std::fs::write(&cut, &data[..data.len() / 2]).unwrap();
    let out = run(&["inspect".as_ref(), cut.as_os_str()], &[], bin);
    assert_eq!(out.status.code(), Some(1));

    // Unwritable output: exit 1 with the chain, no partial file left.
    let out = run(
        &[
            "collect".as_ref(),
            "-o".as_ref(),
            "/nonexistent/dir/b.tar.gz".as_ref(),
            "--root".as_ref(),
            root.as_os_str(),
        ],
        &[],
        bin,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("error: creating /nonexistent/dir/b.tar.gz.partial-"));

    // Usage: no -o, or a bad size.
    let out = run(&["collect".as_ref()], &[], bin);
    assert_eq!(out.status.code(), Some(2));
    let out = run(
        &[
            "collect".as_ref(),
            "-o".as_ref(),
            "x".as_ref(),
            "--max-bytes".as_ref(),
            "lots".as_ref(),
        ],
        &[],
        bin,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("is not a size"),
        "{}",
        text(&out.stderr)
    );
}
