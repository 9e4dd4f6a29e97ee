//! Running the agent by hand, as a newcomer does: README's "Running it by
//! hand" block, taken from README.md and run as written, must get a bundle
//! to the mock; and what the agent says when a run cannot do its job
//! fully — no configuration, or the collectors' programs not on PATH — is
//! one warning line naming what is missing.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::*;

/// README's block builds, waits for a 30 s budget and its last bundle, and
/// inspects it; the bound is for a build under load, never a wait.
const BY_HAND_BOUND: Duration = Duration::from_secs(600);

/// The demo seed's first host, which the block's contract names.
const DEMO_HOST_ID: &str = "c4f2a8d1-6b3e-4a9c-8d17-5e0b9f3a2c86";

/// The first `sh` block after README's "Running it by hand" heading.
fn by_hand_block(readme: &str) -> String {
    let section = readme
        .split_once("\n## Running it by hand\n")
        .expect("README.md has no \"## Running it by hand\" section")
        .1;
    let block = section
        .split_once("```sh\n")
        .expect("no ```sh block in README's \"Running it by hand\"")
        .1;
    block
        .split_once("```")
        .expect("README's by-hand block is not closed")
        .0
        .to_owned()
}

/// Whether cargo sets `name` for the test processes it runs (on top of the
/// environment it was started in).
fn from_cargo_test(name: &str) -> bool {
    [
        "CARGO",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
        "LD_LIBRARY_PATH",
        "RUST_RECURSION_COUNT",
    ]
    .contains(&name)
        || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

/// The one directory `mktemp -d` made under `tmpdir`.
fn made_dir(tmpdir: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(tmpdir)
        .expect("read TMPDIR")
        .map(|e| e.expect("dir entry").path())
        .collect();
    assert_eq!(dirs.len(), 1, "the block made {dirs:?} in its TMPDIR");
    dirs.into_iter().next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readmes_by_hand_block_runs_as_written_and_a_bundle_reaches_the_mock() {
    let repo = repo_dir();
    let readme = std::fs::read_to_string(repo.join("README.md")).expect("read README.md");
    let block = by_hand_block(&readme);
    // The block names `target/debug/…` as a fresh clone has it.
    assert_eq!(
        agent_bin(),
        repo.join("target/debug/assisted-boot-reporter"),
        "README's by-hand block runs target/debug/: run this test with the default \
         target directory and profile (no CARGO_TARGET_DIR, no --release)"
    );

    let tmp = tempfile::tempdir().expect("tempdir");
    let tmpdir = tmp.path().join("tmp");
    std::fs::create_dir(&tmpdir).expect("mkdir TMPDIR");
    let script = tmp.path().join("by-hand.sh");
    std::fs::write(&script, &block).expect("write the block");
    let out_path = tmp.path().join("output.txt");
    let out = std::fs::File::create(&out_path).expect("create output file");
    // The cargo that runs this test builds what the block builds.
    let cargo_dir = Path::new(env!("CARGO"))
        .parent()
        .expect("cargo's directory");
    let path = format!(
        "{}:{}",
        cargo_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // `bash -e`: any line of the block that fails fails the test. Its own
    // process group, so whatever it started is killed with it.
    let mut bash = tokio::process::Command::new("bash");
    bash.args(["-e", "-u", "-o", "pipefail"])
        .arg(&script)
        .current_dir(&repo);
    // A shell's environment, not a test's: cargo gives tests its package's
    // variables, and build scripts that watch them (ring watches
    // CARGO_MANIFEST_DIR and CARGO_PKG_*) would make the block's `cargo
    // build` rebuild them and all that depends on them, twice.
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if from_cargo_test(&name) {
            bash.env_remove(&*name);
        }
    }
    let mut child = bash
        .env("TMPDIR", &tmpdir)
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("dup output file"))
        .stderr(out)
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .expect("run bash");
    let pgid = child.id().expect("bash's pid");
    let waited = tokio::time::timeout(BY_HAND_BOUND, child.wait()).await;
    // Nothing the block started outlives it (the mock, if a line failed
    // before `kill "$mock"`).
    let _ = std::process::Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
    let output = std::fs::read_to_string(&out_path).unwrap_or_default();
    let Ok(status) = waited else {
        panic!("README's by-hand block ran past {BY_HAND_BOUND:?}:\n{output}");
    };
    let status = status.expect("wait for bash");
    assert!(
        status.success(),
        "README's by-hand block failed ({status}):\n{output}"
    );

    let dir = made_dir(&tmpdir);
    let stored: Vec<PathBuf> = std::fs::read_dir(dir.join("mock/bundles"))
        .expect("the mock stored no bundle under $dir/mock/bundles")
        .flat_map(|cluster| std::fs::read_dir(cluster.expect("entry").path()).expect("cluster dir"))
        .map(|host| host.expect("entry").path().join("host_boot.tar.gz"))
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}\n{output}");
    let bundle = &stored[0];
    assert!(
        bundle.ends_with(format!("{DEMO_HOST_ID}/host_boot.tar.gz")),
        "{}",
        bundle.display()
    );
    let members = open_bundle(bundle);
    let manifest: serde_json::Value = serde_json::from_slice(
        &member(&members, "manifest.json")
            .expect("no manifest.json in the stored bundle")
            .data,
    )
    .expect("manifest.json is JSON");
    assert_eq!(manifest["meta"]["host_id"], DEMO_HOST_ID);
    // The budget spent, the last bundle went up and the agent cleaned up as
    // README says.
    assert_eq!(manifest["meta"]["reason"], "final", "{}", manifest["meta"]);
    assert!(
        !dir.join("config").exists() && !dir.join("state").exists(),
        "README says the agent removes $dir/config and $dir/state:\n{output}"
    );
    // The fakes were first on PATH: the fixture's journal is in the bundle.
    assert!(
        member(&members, "journal/units/bootkube.log").is_some(),
        "{:?}",
        member_names(&members)
    );
}

/// The warning lines of an agent's log that hold `text`.
fn warnings_with(run: &AgentRun, text: &str) -> Vec<String> {
    run.stderr_text()
        .lines()
        .filter(|l| l.contains(text))
        .map(str::to_owned)
        .collect()
}

fn assert_one_warning(run: &AgentRun, text: &str) -> String {
    let lines = warnings_with(run, text);
    assert_eq!(
        lines.len(),
        1,
        "expected one line with {text:?}:\n{}",
        run.stderr_text()
    );
    let line = lines.into_iter().next().unwrap();
    assert!(line.contains(" WARN "), "not a warning: {line}");
    line
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_configuration_is_one_warning_naming_every_missing_value() {
    let sc = Scenario::new("by-hand-unconfigured");
    let run = sc
        .run_agent("empty contract dir", &AgentOpts::default())
        .await;
    run.assert_code(0);
    let line = assert_one_warning(&run, "missing configuration");
    for what in [
        "assisted-service URL",
        "host ID",
        "infra-env ID (or a cluster ID",
        "service-url",
        "host-id",
        "infra-env-id",
        "cluster-id",
    ] {
        assert!(line.contains(what), "{what:?} not named: {line}");
    }
    assert!(!line.contains("does not exist"), "{line}");
    assert!(
        !run.stderr_text().contains(" ERROR "),
        "{}",
        run.stderr_text()
    );

    // As after a cleanup: the directory itself is gone.
    std::fs::remove_dir(&sc.config_dir).expect("remove the empty config dir");
    let run = sc.run_agent("no contract dir", &AgentOpts::default()).await;
    run.assert_code(0);
    let line = assert_one_warning(&run, "missing configuration");
    assert!(
        line.contains(&format!("{} does not exist", sc.config_dir.display())),
        "{line}"
    );
    sc.final_checks(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collectors_programs_missing_from_path_are_one_warning_naming_them() {
    let sc = Scenario::new("by-hand-no-tools");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    // Only the fake journalctl and systemctl are on PATH (never the host's
    // systemctl: the cleanup disables the unit).
    let bin = tempfile::tempdir().expect("tempdir");
    for program in ["journalctl", "systemctl"] {
        std::os::unix::fs::symlink(fake_bin().join(program), bin.path().join(program))
            .expect("symlink a fake");
    }
    let run = sc
        .run_agent(
            "fakes of journalctl and systemctl only",
            &AgentOpts {
                timeout: Some("3s"),
                upload_interval: Some("1s"),
                env: vec![("PATH".into(), bin.path().display().to_string())],
                ..AgentOpts::default()
            },
        )
        .await;
    run.assert_code(0);
    let state = admin_state(&base).await;
    let uploads = uploads_of(host_of(&state, HOST_ID), "host_boot");
    assert!(uploads >= 2, "{uploads} bundles:\n{}", run.stderr_text());
    // Said once for the run, not once a bundle.
    let line = assert_one_warning(&run, "not found on PATH (");
    let Some((_, rest)) = line.rsplit_once("): ") else {
        panic!("no list of programs: {line}");
    };
    let named: Vec<&str> = rest
        .split(';')
        .next()
        .unwrap_or_default()
        .split(", ")
        .collect();
    for program in ["crictl", "ip", "nmcli", "rpm-ostree"] {
        assert!(named.contains(&program), "{program} not named: {line}");
    }
    for program in ["journalctl", "systemctl"] {
        assert!(!named.contains(&program), "{program} is on PATH: {line}");
    }
    sc.final_checks(Some(&base)).await;
}
