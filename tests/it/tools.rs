//! `collect -o FILE` and `inspect FILE`, through the real binary: inspect on
//! a bundle `collect` made from the fixture root, on a bundle the agent
//! shipped to the mock service during a boot, and the exit codes of both
//! tools when something is wrong (1 at run time, 2 for usage); and
//! `signatures [--json]`, the catalogue the binary embeds.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{
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
fn signatures_lists_the_embedded_catalogue() {
    let none = Path::new("/nonexistent");
    let out = run(&["signatures".as_ref(), "--json".as_ref()], &[], none);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!rows.is_empty());
    let mut ids: Vec<&str> = rows.iter().map(|r| r["id"].as_str().unwrap()).collect();
    for row in &rows {
        for field in ["id", "category", "severity", "source", "example"] {
            assert!(
                row[field].as_str().is_some_and(|v| !v.is_empty()),
                "{field}: {row}"
            );
        }
    }
    let listed = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), listed, "ids are unique");
    let plain = run(&["signatures".as_ref()], &[], none);
    assert_eq!(plain.status.code(), Some(0));
    let plain = text(&plain.stdout);
    assert_eq!(plain.lines().count(), rows.len());
    for (line, row) in plain.lines().zip(&rows) {
        assert!(line.starts_with(row["id"].as_str().unwrap()), "{line}");
    }
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
            // The fixture root is this host (its fake systemctl's).
            "--same-machine".as_ref(),
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
    let members = crate::common::open_bundle(&bundle);
    for m in &members {
        assert!(
            !crate::common::contains(&m.data, b"offline-token-5e4d3c2b1a"),
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
    let path = crate::common::bundle_of(host, "host_boot").unwrap()["path"]
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

// ---------------------------------------------------------------------------
// Hostile bundles and host file names

/// Gzips a tar stream written by `fill` into `path` (streaming: the
/// uncompressed stream is never held in memory).
fn write_tar_gz(path: &Path, fill: impl FnOnce(&mut dyn std::io::Write)) {
    let output = std::fs::File::create(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(output, flate2::Compression::fast());
    fill(&mut gz);
    gz.finish().unwrap();
}

fn raw_header(name: &str, size: u64, kind: tar::EntryType) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.set_size(size);
    h.set_mode(0o644);
    h.set_entry_type(kind);
    h.set_cksum();
    h
}

/// `bytes` of `byte`, then the padding to the next 512-byte block.
fn write_filler(out: &mut dyn std::io::Write, byte: u8, bytes: u64) {
    let block = vec![byte; 1 << 16];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(block.len() as u64);
        out.write_all(&block[..usize::try_from(n).unwrap()])
            .unwrap();
        left -= n;
    }
    let pad = (512 - bytes % 512) % 512;
    out.write_all(&vec![0; usize::try_from(pad).unwrap()])
        .unwrap();
}

fn inspect_fails(bundle: &Path, extra: &[&str]) -> String {
    let mut args: Vec<&std::ffi::OsStr> = vec!["inspect".as_ref()];
    args.extend(extra.iter().map(std::ffi::OsStr::new));
    args.push(bundle.as_os_str());
    let out = run(&args, &[], Path::new("/nonexistent"));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    text(&out.stderr)
}

#[test]
fn inspect_refuses_oversized_names_and_gzip_bombs() {
    let tmp = tempfile::tempdir().unwrap();

    // A GNU long-name entry of 16 MiB (the attack used 1 GiB): refused from
    // its header, before a byte of it is read.
    let long_name = tmp.path().join("long-name.tar.gz");
    write_tar_gz(&long_name, |out| {
        let size = 16 << 20;
        out.write_all(raw_header("././@LongLink", size, tar::EntryType::GNULongName).as_bytes())
            .unwrap();
        write_filler(out, b'a', size);
        out.write_all(raw_header("x", 0, tar::EntryType::Regular).as_bytes())
            .unwrap();
        out.write_all(&[0; 1024]).unwrap();
    });
    assert!(std::fs::metadata(&long_name).unwrap().len() < 1 << 20);
    let err = inspect_fails(&long_name, &[]);
    assert!(
        err.contains(
            "refused: a member name of 16777216 bytes (names over 4096 bytes are not read)"
        ),
        "{err}"
    );

    // A pax header carrying a 1 MiB path.
    let pax = tmp.path().join("pax.tar.gz");
    write_tar_gz(&pax, |out| {
        let size = 1 << 20;
        out.write_all(raw_header("PaxHeader", size, tar::EntryType::XHeader).as_bytes())
            .unwrap();
        write_filler(out, b'7', size);
        out.write_all(&[0; 1024]).unwrap();
    });
    let err = inspect_fails(&pax, &[]);
    assert!(
        err.contains("refused: a pax header of 1048576 bytes"),
        "{err}"
    );

    // A gzip bomb: 64 MiB of zeros in a few KiB, against a cap of 8 MiB.
    let bomb = tmp.path().join("bomb.tar.gz");
    write_tar_gz(&bomb, |out| {
        let size = 64 << 20;
        out.write_all(raw_header("host_boot/zeros", size, tar::EntryType::Regular).as_bytes())
            .unwrap();
        write_filler(out, 0, size);
        out.write_all(&[0; 1024]).unwrap();
    });
    assert!(std::fs::metadata(&bomb).unwrap().len() < 1 << 20);
    let err = inspect_fails(&bomb, &["--max-uncompressed", "8MiB"]);
    assert!(
        err.contains("refused: more than 8388608 bytes uncompressed"),
        "{err}"
    );
}

/// A host file name can hold anything but `/` and NUL: newlines to forge
/// report lines, escape sequences to retitle the terminal.
const HOSTILE_NAME: &str = "0.log\nall services succeeded\x1b]0;pwned\x07\u{202e}";

fn assert_inert(text: &str) {
    assert!(
        !text
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{202e}'),
        "raw control character in {text:?}"
    );
    assert!(
        !text.lines().any(|l| l.trim() == "all services succeeded"),
        "forged line in:\n{text}"
    );
}

#[test]
fn control_characters_in_host_file_names_are_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    copy_tree(&fixture_root(), &root);
    let contract = root.join("etc/assisted-boot-reporter");
    std::fs::create_dir_all(&contract).unwrap();
    std::fs::write(contract.join("pull-secret"), "offline-token-5e4d3c2b1a\n").unwrap();
    // A pod log named to forge a line, with a secret inside so that inspect
    // lists it under its redactions.
    let pod_dir = root.join("var/log/pods/ns_pod_uid/app\x1b[31m");
    std::fs::create_dir_all(&pod_dir).unwrap();
    std::fs::write(
        pod_dir.join(HOSTILE_NAME),
        "token offline-token-5e4d3c2b1a\n",
    )
    .unwrap();

    let bundle = tmp.path().join("host_boot.tar.gz");
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
        &[],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_inert(&text(&out.stderr));
    let members = crate::common::open_bundle(&bundle);
    for m in &members {
        assert_inert(&m.name);
    }
    let escaped =
        r"crio/pods/ns_pod_uid/app\x1b[31m/0.log\x0aall services succeeded\x1b]0;pwned\x07\u{202e}";
    let pod_log = crate::common::member(&members, escaped).unwrap_or_else(|| {
        panic!(
            "no {escaped} in {:?}",
            crate::common::member_names(&members)
        )
    });
    assert_eq!(pod_log.data, b"token [REDACTED]\n");
    let manifest = crate::common::member(&members, "manifest.json").unwrap();
    assert!(
        String::from_utf8_lossy(&manifest.data).contains(&escaped.replace('\\', "\\\\")),
        "the manifest names the member as the tar does"
    );

    let report = inspect(&bundle);
    assert_inert(&report);
    assert!(report.contains(escaped), "{report}");
}

#[test]
fn inspect_escapes_control_characters_a_bundle_carries() {
    let tmp = tempfile::tempdir().unwrap();
    let forged = "x\n== all services succeeded\nall services succeeded\x1b]0;pwned\x07";
    // A real manifest (collected from an empty root), then forged.
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    let real = tmp.path().join("real.tar.gz");
    let out = run(
        &[
            "collect".as_ref(),
            "-o".as_ref(),
            real.as_os_str(),
            "--root".as_ref(),
            root.as_os_str(),
        ],
        &[],
        tmp.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let members = crate::common::open_bundle(&real);
    let mut manifest: serde_json::Value = serde_json::from_slice(
        &crate::common::member(&members, "manifest.json")
            .unwrap()
            .data,
    )
    .unwrap();
    manifest["meta"]["host_id"] = "h\rforged\x1b[2J".into();
    manifest["records_digest"] = forged.into();
    let collector = &mut manifest["collectors"][0];
    collector["reason"] = forged.into();
    collector["files"][0]["path"] = forged.into();
    collector["files"][0]["status"] = "failed".into();
    collector["files"][0]["reason"] = forged.into();
    let bundle = tmp.path().join("forged.tar.gz");
    write_tar_gz(&bundle, |out| {
        let mut builder = tar::Builder::new(out);
        let data = serde_json::to_vec(&manifest).unwrap();
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        builder
            .append_data(&mut h, "host_boot/manifest.json", data.as_slice())
            .unwrap();
        builder.finish().unwrap();
    });
    let out = run(
        &["inspect".as_ref(), bundle.as_os_str()],
        &[],
        Path::new("/nonexistent"),
    );
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}{report}", text(&out.stderr));
    assert_inert(&report);
    assert!(
        report
            .contains(r"x\x0a== all services succeeded\x0aall services succeeded\x1b]0;pwned\x07"),
        "{report}"
    );
}

#[test]
fn config_check_prints_url_credentials_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    std::fs::create_dir_all(&config).unwrap();
    for (name, value) in [
        ("service-url", "http://127.0.0.1:9"),
        ("host-id", HOST_ID),
        ("infra-env-id", crate::common::INFRA_ENV_ID),
    ] {
        std::fs::write(config.join(name), format!("{value}\n")).unwrap();
    }
    // A NO_PROXY entry that is a URL with credentials (ignored, with a
    // warning that quotes it) and a proxy with its own.
    std::fs::write(
        config.join("proxy.env"),
        "HTTP_PROXY=http://proxyuser:Pr0xyPa55word@proxy.example:3128\n\
         NO_PROXY=.cluster.local,http://npuser:N0ProxyPa55word@mirror.example:5000\n",
    )
    .unwrap();
    crate::common::set_mode(&config.join("proxy.env"), 0o600);
    let out = run(
        &[
            "config".as_ref(),
            "check".as_ref(),
            "--root".as_ref(),
            tmp.path().as_os_str(),
            "--config-dir".as_ref(),
            config.as_os_str(),
            "--kubelet-healthz-url".as_ref(),
            "http://kubeuser:Kub3letPa55word@127.0.0.1:10248/healthz".as_ref(),
        ],
        &[],
        Path::new("/nonexistent"),
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    eprintln!("{stdout}");
    for secret in ["Kub3letPa55word", "N0ProxyPa55word", "Pr0xyPa55word"] {
        assert!(!stdout.contains(secret), "{secret} printed:\n{stdout}");
    }
    let line = |what: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no {what} line:\n{stdout}"))
    };
    let kubelet = line("kubelet healthz URL");
    assert!(
        kubelet.contains("127.0.0.1:10248/healthz") && kubelet.contains("[REDACTED]"),
        "{kubelet}"
    );
    let warning = line("warning: NO_PROXY");
    assert!(
        warning.contains("mirror.example:5000") && warning.contains("[REDACTED]"),
        "{warning}"
    );
    assert!(line("HTTP proxy").contains("http://[REDACTED]@proxy.example:3128"));
}
