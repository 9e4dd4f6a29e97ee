//! Every bundle the reporter makes must open with the readers support
//! engineers and assisted-service really use, not only with the tar and
//! flate2 crates it was written with: gzip and GNU tar, whole and member by
//! member, and Python's tarfile (what the official client's users script
//! with). A bundle made by `collect` and one the agent shipped to the mock
//! during a boot are both read all three ways and must agree byte for byte.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{
    admin_state, agent_bin, bundle_of, copy_tree, fake_bin, fixture_root, host_of, open_bundle,
    AgentOpts, HostSeed, Scenario, SecretForm, HOST_ID,
};

/// Runs a tool and returns its stdout; the test fails with its stderr otherwise.
fn output(cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Python's view: member name -> its bytes (regular files) or None (others).
const PYTHON_READER: &str = r#"
import json, sys, tarfile
out = []
with tarfile.open(sys.argv[1], mode="r:gz") as tar:
    for m in tar:
        f = tar.extractfile(m) if m.isfile() else None
        out.append([m.name, f.read().hex() if f is not None else None])
json.dump(out, sys.stdout)
"#;

/// Splits a file of concatenated gzip members into the members.
fn gzip_members(data: &[u8]) -> Vec<&[u8]> {
    let mut members = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let mut dec = flate2::bufread::GzDecoder::new(rest);
        std::io::copy(&mut dec, &mut std::io::sink()).expect("a valid gzip member");
        let left = dec.into_inner();
        let used = rest.len() - left.len();
        assert!(used > 0, "a gzip member of no bytes");
        members.push(&rest[..used]);
        rest = left;
    }
    members
}

/// The bundle is a row of gzip members (docs/bundle.md): each one is
/// complete for gzip on its own, and together they are the tar stream.
fn read_gzip_members(bundle: &Path) -> usize {
    let data = std::fs::read(bundle).unwrap();
    let members = gzip_members(&data);
    let dir = tempfile::tempdir().unwrap();
    let mut joined = Vec::new();
    for (i, member) in members.iter().enumerate() {
        let path = dir.path().join(format!("member-{i}.gz"));
        std::fs::write(&path, member).unwrap();
        joined.extend(output(Command::new("gzip").arg("-dc").arg(&path)));
    }
    let whole = output(Command::new("gzip").arg("-dc").arg(bundle));
    assert_eq!(
        joined, whole,
        "the gzip members one by one differ from the whole stream"
    );
    assert_eq!(whole.len() % 512, 0, "the tar stream is not whole blocks");
    members.len()
}

fn read_everywhere(bundle: &Path) -> usize {
    // gzip: the whole stream (every member, if several) checks out.
    output(Command::new("gzip").arg("-t").arg(bundle));
    let gzip_members = read_gzip_members(bundle);

    // The crates' view, as every other test reads bundles.
    let ours: BTreeMap<String, Vec<u8>> = open_bundle(bundle)
        .into_iter()
        .map(|m| (m.name, m.data))
        .collect();
    assert!(
        ours.keys()
            .any(|n| n == "manifest.json" || n.ends_with("/manifest.json")),
        "no manifest.json in {}: {:?}",
        bundle.display(),
        ours.keys().collect::<Vec<_>>()
    );

    // Python's tarfile: the same names, the same bytes.
    let py: Vec<(String, Option<String>)> = serde_json::from_slice(&output(
        Command::new("python3")
            .arg("-c")
            .arg(PYTHON_READER)
            .arg(bundle),
    ))
    .expect("python reader prints JSON");
    let py_names: Vec<&str> = py.iter().map(|(n, _)| n.as_str()).collect();
    for (name, hex) in &py {
        let Some(hex) = hex else { continue };
        let ours = ours
            .get(name)
            .unwrap_or_else(|| panic!("python sees {name}, the tar crate does not"));
        assert_eq!(
            &hex_of(ours),
            hex,
            "member {name} differs between Python's tarfile and the tar crate"
        );
    }

    // GNU tar: the listing, in order, is Python's.
    let listing = output(
        Command::new("tar")
            .args(["--quoting-style=literal", "-tzf"])
            .arg(bundle),
    );
    let gnu_names: Vec<&str> = std::str::from_utf8(&listing)
        .expect("member names are UTF-8")
        .lines()
        // tarfile reports directories without their trailing slash.
        .map(|n| n.trim_end_matches('/'))
        .collect();
    assert_eq!(
        gnu_names, py_names,
        "GNU tar and Python list different members"
    );

    // GNU tar, whole: extracts every regular member to the same bytes.
    let dir = tempfile::tempdir().unwrap();
    output(
        Command::new("tar")
            .args(["-xzf"])
            .arg(bundle)
            .arg("-C")
            .arg(dir.path()),
    );
    for (name, data) in &ours {
        let path = dir.path().join(name);
        if path.is_file() {
            assert_eq!(
                &std::fs::read(&path).unwrap(),
                data,
                "member {name} differs once extracted by GNU tar"
            );
        }
    }

    // GNU tar, member by member, to stdout.
    for (name, hex) in &py {
        if hex.is_none() {
            continue;
        }
        let one = output(
            Command::new("tar")
                .args(["--no-wildcards", "-xzOf"])
                .arg(bundle)
                .arg("--")
                .arg(name),
        );
        assert_eq!(
            Some(&one),
            ours.get(name),
            "member {name} differs when GNU tar extracts it alone"
        );
    }
    gzip_members
}

fn hex_of(data: &[u8]) -> String {
    use std::fmt::Write;
    data.iter()
        .fold(String::with_capacity(data.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[test]
fn a_collected_bundle_reads_the_same_with_gzip_gnu_tar_and_python() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    copy_tree(&fixture_root(), &root);
    let bundle = tmp.path().join("host_boot.tar.gz");
    let path = std::env::join_paths([fake_bin(), "/usr/bin".into(), "/bin".into()]).unwrap();
    let out = Command::new(agent_bin())
        .arg("collect")
        .arg("-o")
        .arg(&bundle)
        .arg("--root")
        .arg(&root)
        .args(["--kubelet-healthz-url", "http://127.0.0.1:1/healthz"])
        .env_clear()
        .env("PATH", path)
        // A journal of several compressed chunks, cut by the member cap
        // inside one of them.
        .env("FAKE_JOURNAL_BYTES", "5000000")
        .env("FAKE_JOURNAL_BYTES_SCOPE", "this-boot")
        .args(["--member-max-bytes", "3500000"])
        .output()
        .expect("run collect");
    assert_eq!(
        out.status.code(),
        Some(0),
        "collect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let members = read_everywhere(&bundle);
    assert!(members >= 4, "{members} gzip members");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shipped_bundle_reads_the_same_with_gzip_gnu_tar_and_python() {
    let sc = Scenario::new("readers");
    let mock = sc.start_mock(&HostSeed::rebooting_master()).await;
    let base = mock.base_url();
    sc.write_config(&base, SecretForm::PullSecretJson, true);
    sc.run_agent(
        "first boot",
        &AgentOpts {
            timeout: Some("2s"),
            ..AgentOpts::default()
        },
    )
    .await
    .assert_code(0);
    let state = admin_state(&base).await;
    let stored = bundle_of(host_of(&state, HOST_ID), "host_boot")
        .expect("the agent shipped a bundle")["path"]
        .as_str()
        .expect("stored bundle path")
        .to_owned();
    assert!(read_everywhere(Path::new(&stored)) >= 1);
    sc.final_checks(Some(&base)).await;
}
