//! `inspect` on a cluster's bundles and on hostile text, through the real
//! binary: three bundles `collect` made from fixture roots of one cluster
//! (as files, and as the service stores them in a directory), and a bundle
//! whose host logs, records and diagnosis carry terminal control codes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{agent_bin, copy_tree, fake_bin, fixture_root, CLUSTER_ID};

fn run(args: &[&std::ffi::OsStr]) -> Output {
    let path = std::env::join_paths([fake_bin(), PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .unwrap();
    Command::new(agent_bin())
        .args(args)
        .env_clear()
        .env("PATH", path)
        .output()
        .expect("run the agent binary")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// A copy of the fixture root as the host `host_id` of the test's cluster.
fn host_root(base: &Path, host_id: &str) -> PathBuf {
    let root = base.join(format!("root-{host_id}"));
    copy_tree(&fixture_root(), &root);
    let contract = root.join("etc/assisted-boot-reporter");
    std::fs::create_dir_all(&contract).unwrap();
    std::fs::write(contract.join("host-id"), format!("{host_id}\n")).unwrap();
    std::fs::write(contract.join("cluster-id"), format!("{CLUSTER_ID}\n")).unwrap();
    root
}

fn append(path: &Path, line: &str) {
    let mut text = std::fs::read_to_string(path).unwrap();
    text.push_str(line);
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// `collect -o bundle --root root` with the fixture tools.
fn collect(root: &Path, bundle: &Path) {
    std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
    let out = run(&[
        "collect".as_ref(),
        "-o".as_ref(),
        bundle.as_os_str(),
        "--root".as_ref(),
        root.as_os_str(),
        "--kubelet-healthz-url".as_ref(),
        "http://127.0.0.1:1/healthz".as_ref(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn inspect_ok(args: &[&std::ffi::OsStr]) -> String {
    let mut all: Vec<&std::ffi::OsStr> = vec!["inspect".as_ref()];
    all.extend_from_slice(args);
    let out = run(&all);
    assert_eq!(
        out.status.code(),
        Some(0),
        "inspect failed: {}{}",
        text(&out.stderr),
        text(&out.stdout)
    );
    text(&out.stdout)
}

const HOSTS: [&str; 3] = [
    "0a6f3c1e-7d2b-4e59-8c14-3b9e5f2d7a01",
    "0a6f3c1e-7d2b-4e59-8c14-3b9e5f2d7a02",
    "0a6f3c1e-7d2b-4e59-8c14-3b9e5f2d7a03",
];

/// A disk-full line only the third host logs: an error, so that host
/// ranks it above the cluster's shared DNS warning.
const DISK_FULL: &str = "2025-02-03T09:59:00.000000+0000 master-0 kubelet[2102]: E0203 09:59:00.000000    2102 kuberuntime_manager.go:1] write /var/lib/containers/storage/overlay/l/x: no space left on device";

#[test]
fn inspect_reads_a_cluster_and_puts_the_shared_cause_first() {
    let tmp = tempfile::tempdir().unwrap();
    // The service's layout: bundles/CLUSTER/HOST/host_boot.tar.gz, its
    // controller logs beside them, a partial upload (hidden).
    let data = tmp.path().join("mock-data");
    let cluster_dir = data.join("bundles").join(CLUSTER_ID);
    let mut bundles = Vec::new();
    for host in HOSTS {
        let root = host_root(tmp.path(), host);
        if host == HOSTS[2] {
            append(&root.join("fake-journal/kubelet.log"), DISK_FULL);
        }
        let bundle = cluster_dir.join(host).join("host_boot.tar.gz");
        collect(&root, &bundle);
        bundles.push(bundle);
    }
    std::fs::create_dir_all(cluster_dir.join("cluster")).unwrap();
    std::fs::write(
        cluster_dir.join("cluster/controller.tar.gz"),
        crate::common::gzip(b"not a tar"),
    )
    .unwrap();
    std::fs::write(
        cluster_dir.join(HOSTS[0]).join(".host_boot.tar.gz.1.part"),
        b"half",
    )
    .unwrap();

    let from_files = inspect_ok(&bundles.iter().map(|b| b.as_os_str()).collect::<Vec<_>>());
    let from_dir = inspect_ok(&[data.as_os_str()]);
    eprintln!("{from_dir}");
    for report in [&from_files, &from_dir] {
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(
            lines[0],
            format!("cluster {CLUSTER_ID} (3 hosts)"),
            "{report}"
        );
        assert!(lines[1].starts_with("host ") && lines[1].ends_with("headline"));
        // One line per host, in order: host, role, stage, headline.
        for (i, host) in HOSTS.iter().enumerate() {
            let row = lines[2 + i];
            assert!(row.starts_with(host), "{report}");
            assert!(row.contains(" bootstrap "), "{row}");
            assert!(row.contains("did not resolve") || i == 2, "{row}");
        }
        assert!(
            lines[4].contains("no space left on device"),
            "the third host's headline is its own error: {report}"
        );
        // The shared causes come before any host's section, the DNS
        // failure all three logged first of them ...
        let shared_at = report.find("shared causes (on several hosts").unwrap();
        let first_host_at = report.find("\n== host ").unwrap();
        assert!(shared_at < first_host_at, "{report}");
        let shared = &report[shared_at..first_host_at];
        let first = shared.lines().nth(1).unwrap();
        assert!(
            first.starts_with("  S1. warning dns_resolution: quay.io did not resolve"),
            "{report}"
        );
        assert_eq!(
            shared.lines().nth(2).unwrap().trim(),
            format!("on 3 of 3 hosts: {}", HOSTS.join(", "))
        );
        // ... and the one host's disk is not among them: it is under that
        // host, first, with its hint.
        assert!(!shared.contains("disk_full"), "{report}");
        let third = &report[report.find(&format!("== host {}", HOSTS[2])).unwrap()..];
        let third_first = third.lines().nth(1).unwrap();
        assert!(
            third_first.starts_with("  1. error   disk_full: no space left on device"),
            "{report}"
        );
        assert!(third.lines().nth(2).unwrap().contains("hint: "), "{report}");
        assert!(
            third.contains("     shared cause S1 (above)"),
            "a shared finding is named, not repeated: {report}"
        );
        assert!(!report.contains("disk_full") || report.matches("disk_full").count() == 1);
    }
    // The directory walk says what it left out; the files name no such thing.
    assert!(
        from_dir.contains("skipped ") && from_dir.contains("controller.tar.gz"),
        "{from_dir}"
    );
    assert!(!from_dir.contains(".part"), "{from_dir}");
    assert!(!from_files.contains("skipped "), "{from_files}");

    // A named bundle that cannot be read is a row of its own, and an exit 1
    // after the report.
    let broken = tmp.path().join("broken.tar.gz");
    std::fs::write(&broken, b"not a bundle").unwrap();
    let out = run(&[
        "inspect".as_ref(),
        bundles[0].as_os_str(),
        broken.as_os_str(),
    ]);
    let report = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        text(&out.stderr).contains("1 bundle(s) could not be read"),
        "{}",
        text(&out.stderr)
    );
    assert!(report.contains(HOSTS[0]), "{report}");
    assert!(
        report.contains(&format!(
            "== host unknown (-, stage -) {}",
            broken.display()
        )),
        "{report}"
    );

    // --json: the same, as one object.
    let json: serde_json::Value =
        serde_json::from_str(&inspect_ok(&["--json".as_ref(), data.as_os_str()])).unwrap();
    assert_eq!(json["inspect_version"], 1);
    let clusters = json["clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 1, "{json:#}");
    let cluster = &clusters[0];
    assert_eq!(cluster["cluster_id"], CLUSTER_ID);
    let hosts = cluster["hosts"].as_array().unwrap();
    let ids: Vec<&str> = hosts
        .iter()
        .map(|h| h["host_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, HOSTS);
    for host in hosts {
        assert_eq!(host["role"], "bootstrap");
        assert!(!host["findings"].as_array().unwrap().is_empty(), "{host:#}");
        assert!(host["headline"].is_string(), "{host:#}");
    }
    assert_eq!(hosts[2]["findings"][0]["category"], "disk_full");
    let shared = &cluster["shared"][0];
    assert_eq!(shared["category"], "dns_resolution", "{json:#}");
    assert_eq!(shared["key"], "quay.io");
    assert_eq!(shared["hosts"].as_array().unwrap().len(), 3);
    assert!(cluster["shared"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["category"] != "disk_full"));
    assert_eq!(json["skipped"].as_array().unwrap().len(), 1, "{json:#}");

    // One bundle keeps its own report and its own JSON shape.
    let single: serde_json::Value =
        serde_json::from_str(&inspect_ok(&["--json".as_ref(), bundles[0].as_os_str()])).unwrap();
    assert_eq!(single["inspect_version"], 1);
    assert!(single["findings"].is_array() && single["manifest"].is_object());
    assert!(single.get("clusters").is_none());
    let report = inspect_ok(&[bundles[0].as_os_str()]);
    assert!(
        report.starts_with("findings (most likely cause first):"),
        "{report}"
    );
}

/// Terminal control codes a host process can log: OSC title and
/// hyperlink, clear-screen, BEL, backspace, CR, a C1 CSI, bidi overrides.
const CONTROLS: &str = "\u{1b}]0;pwned\u{7}\u{1b}]8;;http://evil/\u{1b}\\link\u{1b}]8;;\u{1b}\\\u{1b}[2J\u{8}\r\u{9b}31m\u{202e}\u{2066}";

fn is_raw_control(c: char) -> bool {
    (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn assert_no_raw_control(what: &str, text: &str) {
    if let Some(c) = text.chars().find(|&c| is_raw_control(c)) {
        panic!("raw {c:?} in {what}:\n{text}");
    }
}

#[test]
fn inspect_never_prints_a_raw_control_code() {
    let tmp = tempfile::tempdir().unwrap();
    let root = host_root(tmp.path(), HOSTS[0]);
    // In a journal line that makes a finding (its summary, key, evidence,
    // the headline) ...
    append(
        &root.join("fake-journal/kubelet.log"),
        &format!(
            "2025-02-03T09:59:00.000000+0000 master-0 kubelet[2102]: E0203 {CONTROLS} write /var/lib/{CONTROLS}x: no space left on device"
        ),
    );
    // ... and in a failed run's excerpt of the bootstrap records.
    let records = root.join("var/log/openshift/bootkube.json");
    let escaped_in_json = serde_json::to_string(CONTROLS).unwrap();
    let escaped_in_json = &escaped_in_json[1..escaped_in_json.len() - 1];
    let text_records = std::fs::read_to_string(&records).unwrap();
    assert!(text_records.contains("server misbehaving"));
    std::fs::write(
        &records,
        text_records.replace(
            "server misbehaving",
            &format!("server {escaped_in_json} misbehaving"),
        ),
    )
    .unwrap();
    let bundle = tmp.path().join("hostile.tar.gz");
    collect(&root, &bundle);
    // The bundle carries them raw (it is the host's text) ...
    let members = crate::common::open_bundle(&bundle);
    let diagnosis = crate::common::member(&members, "diagnosis.json").unwrap();
    let diagnosis: serde_json::Value = serde_json::from_slice(&diagnosis.data).unwrap();
    assert!(
        diagnosis.to_string().contains("\u{202e}"),
        "the test's codes must reach the diagnosis: {diagnosis:#}"
    );

    // ... inspect never prints them raw: plain, JSON, one bundle or several.
    let plain = inspect_ok(&[bundle.as_os_str()]);
    assert_no_raw_control("inspect", &plain);
    assert!(plain.contains(r"\x1b]0;pwned\x07"), "{plain}");
    assert!(plain.contains(r"\u{202e}"), "{plain}");
    let disk = plain
        .lines()
        .find(|l| l.contains("disk_full: no space left on device writing"))
        .unwrap_or_else(|| panic!("no disk_full finding:\n{plain}"));
    assert!(disk.contains(r"\x1b[2J\x08\x0d\u{9b}31m"), "{disk}");
    // The excerpt keeps its lines, the codes escaped inside them.
    let excerpt: Vec<&str> = plain.lines().filter(|l| l.starts_with("    | ")).collect();
    assert!(
        excerpt
            .iter()
            .any(|l| l.contains(r"server \x1b]0;pwned\x07") && l.ends_with("misbehaving")),
        "{plain}"
    );
    assert!(!plain.contains(r"\x0aFeb 03"), "{plain}");

    let json = inspect_ok(&["--json".as_ref(), bundle.as_os_str()]);
    assert_no_raw_control("inspect --json", &json);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_no_raw_control("inspect --json's strings", &value.to_string());
    let mut strings = Vec::new();
    collect_strings(&value, &mut strings);
    for s in &strings {
        assert_no_raw_control("a string of inspect --json", s);
    }
    assert!(
        strings.iter().any(|s| s.contains(r"\u{202e}")),
        "escaped, not dropped"
    );

    let other = tmp.path().join("other.tar.gz");
    collect(&host_root(tmp.path(), HOSTS[1]), &other);
    let cluster = inspect_ok(&[bundle.as_os_str(), other.as_os_str()]);
    assert_no_raw_control("inspect of two bundles", &cluster);
    assert!(cluster.contains(r"\x1b]0;pwned\x07"), "{cluster}");
    let cluster_json = inspect_ok(&["--json".as_ref(), bundle.as_os_str(), other.as_os_str()]);
    assert_no_raw_control("inspect --json of two bundles", &cluster_json);
    let mut strings = Vec::new();
    collect_strings(&serde_json::from_str(&cluster_json).unwrap(), &mut strings);
    for s in &strings {
        assert_no_raw_control("a string of inspect --json of two bundles", s);
    }
}

fn collect_strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                collect_strings(v, out);
            }
        }
        _ => {}
    }
}

#[test]
fn inspect_names_a_host_without_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    copy_tree(&fixture_root(), &root);
    let bundle = tmp.path().join("anonymous.tar.gz");
    collect(&root, &bundle);
    let report = inspect_ok(&[bundle.as_os_str()]);
    assert!(
        report.contains(", host unknown (no configuration), boot "),
        "{report}"
    );
    assert!(!report.contains("host ?"), "{report}");
    // Evidence lines are cut at a word, with an ellipsis.
    let members = crate::common::open_bundle(&bundle);
    let diagnosis = crate::common::member(&members, "diagnosis.json").unwrap();
    let diagnosis: serde_json::Value = serde_json::from_slice(&diagnosis.data).unwrap();
    let mut cut = 0;
    for finding in diagnosis["findings"].as_array().unwrap() {
        for e in finding["evidence"].as_array().unwrap().iter().take(3) {
            let full = e["text"].as_str().unwrap();
            let line = e["line"]
                .as_u64()
                .map_or_else(|| "cut".to_owned(), |l| l.to_string());
            let head = format!("     {}:{line}: ", e["path"].as_str().unwrap());
            let shown = report
                .lines()
                .find_map(|l| l.strip_prefix(head.as_str()))
                .unwrap_or_else(|| panic!("no evidence line {head:?} in:\n{report}"));
            if shown == full {
                continue;
            }
            cut += 1;
            let kept = shown.strip_suffix('…').expect("a cut line ends with …");
            assert!(kept.chars().count() < 160, "{shown}");
            assert!(full.starts_with(kept), "{shown}\n{full}");
            assert!(
                full[kept.len()..].starts_with(char::is_whitespace),
                "cut inside a word: {shown}\n{full}"
            );
        }
    }
    assert!(cut > 0, "no evidence line long enough to be cut:\n{report}");
}
