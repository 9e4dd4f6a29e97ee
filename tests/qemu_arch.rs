//! "Runs everywhere": each release binary in `dist/` (packaging/build-all),
//! installed on a fixture host the way the pointer ignition installs it,
//! goes through a whole first boot from disk against the mock service on
//! loopback: the foreign ones under `qemu-<arch>-static`, x86_64 natively.
//!
//! The path is the one a real host takes: `assisted-boot-reporter ignition`
//! (the test build, as on the service side) makes the fragment for the
//! arch's binary, Debian's real Ignition engine writes it onto the fixture
//! root (`ignition_engine`), and the binary it carries runs from there with
//! the contract it wrote. The boot
//! passes when the host is at `Booted with local ignition` and a valid
//! `host_boot` bundle with the fixture host's content is stored, with no
//! secret in any bundle or in the agent's output.
//!
//! A plain `cargo test` does not run them (`test = false` in Cargo.toml):
//! they need the cross builds (minutes each). `packaging/build-all` runs
//! them (`cargo test --test qemu_arch`), as does `.ci/run` for x86_64 and
//! aarch64. `ABR_DIST_DIR` points at another dist directory.

mod common;
mod ignition_engine;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::*;
use serde_json::Value;

/// A first boot under TCG emulation does in seconds what takes milliseconds
/// natively; these bound a stuck run, they are not expectations.
const BOOT_WITHIN: Duration = Duration::from_secs(240);
const RUN_DEADLINE: Duration = Duration::from_secs(300);

fn dist_dir() -> PathBuf {
    std::env::var_os("ABR_DIST_DIR").map_or_else(|| repo_dir().join("dist"), PathBuf::from)
}

/// The fragment for `binary`, made by the test build of the agent, with the
/// pull secret piped in as assisted-service would.
async fn make_fragment(sc: &Scenario, arch: &str, binary: &Path, base: &str) -> Value {
    let out_path = sc.tmp.path().join("fragment.ign");
    let mut child = tokio::process::Command::new(agent_bin())
        .args(["ignition", "--arch", arch, "--binary"])
        .arg(binary)
        .args(["--service-url", base, "--infra-env-id", INFRA_ENV_ID])
        .args(["--host-id", HOST_ID, "--cluster-id", CLUSTER_ID])
        .args(["--pull-secret-file", "-", "--output"])
        .arg(&out_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn ignition");
    let mut stdin = child.stdin.take().expect("stdin");
    tokio::io::AsyncWriteExt::write_all(&mut stdin, sc.pull_secret_json().as_bytes())
        .await
        .expect("pipe the pull secret");
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("ignition finishes")
        .expect("ignition runs");
    assert!(
        out.status.success(),
        "ignition failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_path).expect("fragment written");
    serde_json::from_str(&text).expect("fragment is JSON")
}

async fn first_boot(arch: &str, emulator: Option<&str>) {
    let binary = dist_dir().join(format!("assisted-boot-reporter-{arch}"));
    assert!(
        binary.is_file(),
        "{} is missing: run packaging/build-all --arch {arch} first",
        binary.display()
    );
    let emulator = emulator.map(|name| {
        let path = ["/usr/bin", "/usr/local/bin"]
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file());
        path.unwrap_or_else(|| panic!("{name} not found: apt-get install qemu-user-static"))
    });

    let sc = Scenario::new(&format!("qemu-{arch}"));
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    // Marks the whole pull secret (both registries' auths) as handed to the
    // agent for the secret scans; the files themselves are replaced by the
    // fragment's just below.
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    for entry in std::fs::read_dir(&sc.config_dir).expect("config dir") {
        std::fs::remove_file(entry.expect("entry").path()).expect("clear config dir");
    }

    let fragment = make_fragment(&sc, arch, &binary, &base).await;
    ignition_engine::require(&format!("first_boot_{arch}"));
    let fragment_path = sc.tmp.path().join("fragment.ign");
    let work = sc.tmp.path().join("ignition");
    std::fs::create_dir_all(&work).expect("engine work dir");
    ignition_engine::prepare_root(&sc.root);
    let run = ignition_engine::apply(&fragment_path, &sc.root, &work);
    assert!(run.success(), "{}", run.log());
    // The agent reads its contract from the scenario's directory.
    let written_contract = sc.root.join("etc/assisted-boot-reporter");
    for entry in std::fs::read_dir(&written_contract).expect("contract written") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), sc.config_dir.join(entry.file_name()))
            .expect("copy contract file");
    }
    std::fs::remove_dir_all(&written_contract).expect("remove written contract");
    let installed = sc.root.join("usr/local/bin/assisted-boot-reporter");
    assert_eq!(
        std::fs::read(&installed).expect("installed binary"),
        std::fs::read(&binary).expect("dist binary"),
        "the fragment changed the binary"
    );
    eprintln!(
        "{arch}: {} bytes of fragment for a {} byte binary",
        serde_json::to_string(&fragment).map_or(0, |s| s.len()),
        std::fs::metadata(&binary).map_or(0, |m| m.len())
    );

    let mut program: Vec<PathBuf> = emulator.into_iter().collect();
    program.push(installed);
    let opts = AgentOpts {
        // One bundle at the start; the boot's hour is far away.
        upload_interval: Some("10m"),
        timeout: Some("10m"),
        deadline: RUN_DEADLINE,
        program: Some(program),
        ..AgentOpts::default()
    };
    let running = sc.spawn_agent(&format!("first boot on {arch}"), &opts);
    let pid = running.pid().expect("agent pid");

    let state = wait_for_state(&base, BOOT_WITHIN, |state| {
        let host = host_of(state, HOST_ID);
        host["current_stage"] == LOCAL_IGNITION
            && bundle_of(host, "host_boot").is_some_and(|b| b["valid"] == true)
    })
    .await;
    // As on shutdown: the reporter stops promptly and exits 0.
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill(1)");
    assert!(killed.success(), "could not signal the agent");
    let run = sc.wait_agent(running).await;
    run.assert_code(0);

    let host = host_of(&state, HOST_ID);
    assert_eq!(
        stage_history(host),
        ["Rebooting", LOCAL_IGNITION],
        "{arch}: {host}"
    );
    let bundle = check_host_boot_bundle(host);
    assert_eq!(bundle.boot_number(), Some(1), "{}", bundle.manifest["meta"]);
    assert!(
        sc.state_dir.join("ledger.json").is_file(),
        "no boot ledger written"
    );
    sc.final_checks(Some(&base)).await;
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_boot_x86_64() {
    first_boot("x86_64", None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_boot_aarch64() {
    first_boot("aarch64", Some("qemu-aarch64-static")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_boot_ppc64le() {
    first_boot("ppc64le", Some("qemu-ppc64le-static")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_boot_s390x() {
    first_boot("s390x", Some("qemu-s390x-static")).await;
}
