//! The engine: streaming in odd chunks, placement of cut members,
//! correlation across members and records, severities and ordering.

use std::fmt::Write as _;

use super::anchors::AnchorFinder;
use super::*;

fn engine_with(members: &[(&str, &str)]) -> Diagnosis {
    let mut engine = Engine::new();
    for (path, text) in members {
        let scanner = scan_text(path, text.as_bytes()).expect(path);
        let placement = whole(&scanner);
        engine.absorb(scanner, placement);
    }
    engine.finish()
}

const DNS_LINE: &str = r#"2026-11-22T10:00:00.000000+0000 m bootkube.sh[1]: Error: pinging container registry quay.io: Get "https://quay.io/v2/": dial tcp: lookup quay.io on 10.0.0.1:53: server misbehaving"#;

#[test]
fn chunking_does_not_change_what_is_found() {
    let mut text = String::new();
    for i in 0..200 {
        let _ = writeln!(
            text,
            "2026-11-22T10:00:{:02}.000000+0000 m kubelet[1]: I1122 filler line {i}",
            i % 60
        );
        if i == 150 {
            text.push_str(DNS_LINE);
            text.push('\n');
        }
    }
    let whole_scan = scan_text("journal/units/bootkube.log", text.as_bytes()).unwrap();
    for chunk in [1, 7, 64, 4096] {
        let mut s = Scanner::for_member("journal/units/bootkube.log").unwrap();
        for piece in text.as_bytes().chunks(chunk) {
            s.feed(piece);
        }
        s.finish();
        assert_eq!(s.lines, 201, "chunk {chunk}");
        assert_eq!(s.hits.len(), 1, "chunk {chunk}");
        assert_eq!(s.hits[0].evidence[0].line, 152, "chunk {chunk}");
        assert_eq!(
            s.hits[0].evidence[0].line,
            whole_scan.hits[0].evidence[0].line
        );
    }
}

#[test]
fn long_lines_are_bounded_and_still_read() {
    let mut text = "x".repeat(3 * MAX_LINE);
    text.push_str(" lookup quay.io on 10.0.0.1:53: no such host ");
    text.push_str(&"y".repeat(3 * MAX_LINE));
    text.push('\n');
    for chunk in [100, 1 << 20] {
        let mut s = Scanner::for_member("journal/this-boot.log").unwrap();
        for piece in text.as_bytes().chunks(chunk) {
            s.feed(piece);
        }
        s.finish();
        assert!(s.partial.len() <= MAX_LINE);
        let ev = &s.hits.first().expect("found deep in the line").evidence[0];
        assert_eq!(ev.line, 1);
        assert!(ev.text.chars().count() <= MAX_EVIDENCE_CHARS);
    }
}

#[test]
fn memory_stays_bounded_with_many_distinct_signals() {
    let mut s = Scanner::for_member("journal/this-boot.log").unwrap();
    for i in 0..10_000 {
        let line = format!("lookup host{i}.example on 10.0.0.1:53: no such host\n");
        s.feed(line.as_bytes());
    }
    s.finish();
    assert_eq!(s.hits.len(), MAX_KEYS_PER_MEMBER);
    assert!(s.hits.iter().all(|h| h.evidence.len() <= EVIDENCE_PER_KEY));
}

#[test]
fn cut_members_renumber_evidence_from_the_kept_part() {
    let text = format!("a\nb\nc\n{DNS_LINE}\nd\n");
    let mut s = Scanner::for_member("journal/units/bootkube.log").unwrap();
    s.feed(text.as_bytes());
    // Keep from the middle of line "b": kept content is "\nc\nDNS\nd\n" ->
    // lines: "" (rest of b), "c", DNS, "d".
    let mut engine = Engine::new();
    engine.absorb(
        s,
        Placement {
            archived: true,
            dropped_bytes: 3,
            member_lines: 4,
        },
    );
    let d = engine.finish();
    assert_eq!(d.findings[0].evidence[0].line, Some(3));

    // The line itself cut away: seen, but not in the member.
    let mut s = Scanner::for_member("journal/units/bootkube.log").unwrap();
    s.feed(text.as_bytes());
    let mut engine = Engine::new();
    engine.absorb(
        s,
        Placement {
            archived: true,
            dropped_bytes: text.len() as u64 - 2,
            member_lines: 1,
        },
    );
    assert_eq!(engine.finish().findings[0].evidence[0].line, None);
}

#[test]
fn one_cause_across_units_and_records_is_one_finding() {
    let release = r#"2026-11-22T09:57:12.000000+0000 m release-image-download.sh[1]: Error: initializing source docker://quay.io/x: pinging container registry quay.io: Get "https://quay.io/v2/": dial tcp: lookup quay.io on 10.0.0.1:53: server misbehaving
2026-11-22T09:57:13.000000+0000 m systemd[1]: release-image.service: Failed with result 'exit-code'.
"#;
    let summary = serde_json::json!({
        "records_dir_present": true,
        "services": [{
            "service": "bootkube", "file": "bootkube.json", "status": "failure", "entries": 4,
            "runs": [{"start": null, "end": null, "duration_secs": null, "result": "failure", "steps": []}],
            "failures": [{"run": 1, "what": "stage mco-bootstrap", "at": "2026-11-22T10:00:01Z",
                "error_line": "147 main", "error_message": "Feb 03 10:04:01 m bootkube.sh[2]: dial tcp: lookup quay.io on 10.0.0.1:53: server misbehaving"}]
        }],
        "problems": [], "done_markers": [], "digest": null
    })
    .to_string();
    let d = engine_with(&[
        ("journal/units/release-image.log", release),
        ("journal/units/bootkube.log", &format!("{DNS_LINE}\n")),
        ("records/summary.json", &summary),
        ("journal/this-boot.log", &format!("{release}{DNS_LINE}\n")),
    ]);
    assert_eq!(d.findings.len(), 1, "{d:#?}");
    let f = &d.findings[0];
    assert_eq!(f.category, Category::DnsResolution);
    assert_eq!(f.severity, Severity::Error);
    assert!(
        f.summary.contains("bootkube (stage mco-bootstrap) failed"),
        "{}",
        f.summary
    );
    assert!(f.summary.contains("release-image failed"), "{}", f.summary);
    // The whole journal repeats the unit lines: counted once, cited by unit.
    assert_eq!(f.occurrences, 2);
    assert!(
        f.evidence.iter().all(|e| e.path != "journal/this-boot.log"),
        "{:#?}",
        f.evidence
    );
}

#[test]
fn a_recovered_failure_is_a_warning_and_a_lone_retry_info() {
    let recovered = r"2026-11-22T09:57:12.000000+0000 m release-image-download.sh[1]: Error: reading manifest x in quay.io/ocp/release: unauthorized: authentication required
2026-11-22T09:57:13.000000+0000 m systemd[1]: release-image.service: Failed with result 'exit-code'.
2026-11-22T09:58:13.000000+0000 m systemd[1]: release-image.service: Deactivated successfully.
";
    let d = engine_with(&[("journal/units/release-image.log", recovered)]);
    assert_eq!(d.findings[0].category, Category::RegistryAuth);
    assert_eq!(d.findings[0].severity, Severity::Warning, "{d:#?}");

    let retry = "2026-11-22T09:55:01.000000+0000 m ignition[1]: GET error: Get \"https://api-int.c:22623/config/master\": dial tcp 1.2.3.4:22623: connect: connection refused\n2026-11-22T09:55:06.000000+0000 m ignition[1]: GET result: OK\n";
    let d = engine_with(&[("journal/units/ignition.log", retry)]);
    assert_eq!(d.findings[0].severity, Severity::Info);
    assert_eq!(d.headline(), None);
}

#[test]
fn errors_first_then_the_earliest_cause() {
    let text = "\
2026-11-22T10:00:00.000000+0000 m kernel: audit: avc:  denied  { read } for pid=1 comm=\"x\" tcontext=a:b:c_t:s0 tclass=file permissive=0
2026-11-22T10:05:00.000000+0000 m crio[1]: error=\"write /var/lib/containers/x: no space left on device\"
2026-11-22T10:01:00.000000+0000 m kubelet[1]: x509: certificate signed by unknown authority
";
    let d = engine_with(&[("journal/this-boot.log", text)]);
    let order: Vec<Category> = d.findings.iter().map(|f| f.category).collect();
    assert_eq!(
        order,
        [Category::UntrustedCa, Category::DiskFull, Category::Selinux]
    );
    let headline = d.headline().unwrap();
    assert!(
        headline.starts_with("TLS to an endpoint failed"),
        "{headline}"
    );
    assert!(headline.chars().count() <= HEADLINE_MAX_CHARS);
}

#[test]
fn api_refusals_while_the_api_starts_are_info() {
    let mut text = String::new();
    for m in 0..10 {
        let _ = writeln!(text, "2026-11-22T10:{m:02}:00.000000+0000 m kubelet[1]: Get \"https://api-int.c:6443/api\": dial tcp 1.2.3.4:6443: connect: connection refused");
    }
    let d = engine_with(&[("journal/units/kubelet.log", &text)]);
    assert_eq!(d.findings[0].severity, Severity::Info);
    // Past 20 minutes with nothing working it is an error.
    for m in 10..30 {
        let _ = writeln!(text, "2026-11-22T10:{m:02}:00.000000+0000 m kubelet[1]: Get \"https://api-int.c:6443/api\": dial tcp 1.2.3.4:6443: connect: connection refused");
    }
    let d = engine_with(&[("journal/units/kubelet.log", &text)]);
    assert_eq!(d.findings[0].severity, Severity::Error);
}

#[test]
fn df_rows_and_config_files() {
    let df = "Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda4        40G   40G     0 100% /sysroot\ntmpfs  1G 0 1G 0% /run\n";
    let d = engine_with(&[("mounts/df-h.txt", df)]);
    assert_eq!(d.findings[0].category, Category::DiskFull);
    assert_eq!(d.findings[0].evidence[0].line, Some(2));
    // Configuration is not an event; the network members are read whole
    // (`files.rs`), not for their words.
    assert!(Scanner::for_member("crio/registries.conf").is_none());
    let d = engine_with(&[(
        "network/resolv.conf",
        "# proxy mirror failed: no such host\nnameserver 10.0.0.1\n",
    )]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
}

#[test]
fn a_nameserver_in_the_cluster_network_is_a_resolver_error() {
    let routes = "default via 192.168.122.1 dev br-ex proto dhcp src 192.168.122.10 metric 48\n10.128.0.0/14 via 10.128.0.1 dev ovn-k8s-mp0\n";
    let d = engine_with(&[
        (
            "network/resolv.conf",
            "search c.example.com\nnameserver 10.128.4.1\n",
        ),
        ("network/ip-route.txt", routes),
    ]);
    let f = &d.findings[0];
    assert_eq!(
        (f.category, f.severity),
        (Category::DnsConfig, Severity::Error)
    );
    assert_eq!(f.key, "10.128.4.1");
    assert_eq!(f.evidence[0].path, "network/resolv.conf");
    assert_eq!(f.evidence[0].line, Some(2));
    assert_eq!(f.evidence[1].line, Some(2));
    // The same nameserver on a host whose cluster network is elsewhere.
    let d = engine_with(&[
        ("network/resolv.conf", "nameserver 10.128.4.1\n"),
        (
            "network/ip-route.txt",
            "10.132.0.0/14 via 10.132.0.1 dev ovn-k8s-mp0\n",
        ),
    ]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
}

#[test]
fn a_host_file_past_its_cap_is_not_read() {
    // Half a route table would lie about the cluster network.
    let mut routes = String::from("10.128.0.0/14 via 10.128.0.1 dev ovn-k8s-mp0\n");
    while routes.len() <= 128 * 1024 {
        routes.push_str("local 192.168.122.10 dev br-ex table local proto kernel scope host src 192.168.122.10\n");
    }
    let d = engine_with(&[
        ("network/resolv.conf", "nameserver 10.128.4.1\n"),
        ("network/ip-route.txt", &routes),
    ]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
}

#[test]
fn a_lease_that_changes_across_the_reboot_is_an_ip_change() {
    let before = "2026-11-22T09:00:00.000000+0000 m NetworkManager[900]: <info>  [1763802000.1] dhcp4 (ens3): state changed new lease, address=192.168.122.10\n";
    let after = "2026-11-22T10:00:00.000000+0000 m NetworkManager[901]: <info>  [1763805600.1] dhcp4 (ens3): state changed new lease, address=192.168.122.57\n";
    let d = engine_with(&[
        ("journal/previous-boot.log", before),
        ("journal/this-boot.log", after),
    ]);
    assert_eq!(d.findings.len(), 1, "{:?}", d.findings);
    let f = &d.findings[0];
    assert_eq!((f.category, f.key.as_str()), (Category::IpChanged, "ens3"));
    assert_eq!(f.severity, Severity::Warning);
    assert!(
        f.summary
            .starts_with("ens3's DHCP address changed from 192.168.122.10 to 192.168.122.57"),
        "{}",
        f.summary
    );
    assert_eq!(f.evidence.len(), 2);
    // The same address again (a renewal, the next boot) is no finding.
    let d = engine_with(&[
        ("journal/previous-boot.log", before),
        ("journal/this-boot.log", &before.replace("09:00", "10:00")),
    ]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
}

const REBASE: &str = "2026-11-22T09:10:00.000000+0000 m machine-config-daemon[2100]: I1122 09:10:00.000000    2100 rpm-ostree.go:201] Executing rebase to quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bb22\n";

#[test]
fn an_os_image_that_did_not_boot_after_the_rebase_is_a_mismatch() {
    // rpm-ostree says the boot image's OS is still booted, nothing staged.
    let status = r#"{"deployments":[{"booted":true,"container-image-reference":"ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa11","checksum":"c1","version":"414.92.202307070025-0"}]}"#;
    let d = engine_with(&[
        ("journal/previous-boot.log", REBASE),
        ("system/rpm-ostree-status.json", status),
    ]);
    let f = &d.findings[0];
    assert_eq!(
        (f.category, f.severity),
        (Category::OsImageMismatch, Severity::Error)
    );
    assert!(
        f.summary.contains("sha256:aa11") && f.summary.contains("sha256:bb22"),
        "{}",
        f.summary
    );
    assert_eq!(f.evidence[1].path, "system/rpm-ostree-status.json");
    // Booted into the target: nothing to say.
    let good = status.replace("aa11", "bb22");
    let d = engine_with(&[
        ("journal/previous-boot.log", REBASE),
        ("system/rpm-ostree-status.json", &good),
    ]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
    // Rebased in this boot, the reboot still to come: nothing either.
    let d = engine_with(&[
        ("journal/this-boot.log", REBASE),
        ("system/rpm-ostree-status.json", status),
    ]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
}

#[test]
fn the_daemon_booting_another_image_after_its_rebase_is_a_mismatch() {
    let booted = "2026-11-22T09:30:00.000000+0000 m machine-config-daemon[3100]: I1122 09:30:00.000000    3100 daemon.go:330] Booted osImageURL:  (414.92.202307070025-0) 9d2e\n";
    let d = engine_with(&[
        ("journal/previous-boot.log", REBASE),
        ("journal/this-boot.log", booted),
    ]);
    let f = &d.findings[0];
    assert_eq!(f.category, Category::OsImageMismatch);
    assert!(f.summary.contains("never pivoted"), "{}", f.summary);
    // A daemon that restarted before the reboot, the target staged.
    let staged = r#"{"deployments":[{"staged":true,"container-image-reference":"ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bb22"},{"booted":true,"checksum":"9d2e"}]}"#;
    let d = engine_with(&[
        ("journal/this-boot.log", &format!("{REBASE}{booted}")),
        ("system/rpm-ostree-status.json", staged),
    ]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
    let fine = booted.replace(
        "osImageURL:  (",
        "osImageURL: quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bb22 (",
    );
    let d = engine_with(&[
        ("journal/previous-boot.log", REBASE),
        ("journal/this-boot.log", &fine),
    ]);
    assert!(d.findings.is_empty(), "{:?}", d.findings);
}

#[test]
fn a_login_is_info_and_never_the_headline() {
    let text = format!(
        "2026-11-22T09:00:00.000000+0000 m sshd[4242]: pam_unix(sshd:session): session opened for user core(uid=1000) by (uid=0)\n{DNS_LINE}\n"
    );
    let d = engine_with(&[("journal/this-boot.log", &text)]);
    let login = d.findings.iter().find(|f| f.key == "login core").unwrap();
    assert_eq!(login.severity, Severity::Info);
    assert!(!d.headline().unwrap_or_default().contains("logged in"));
}

#[test]
fn every_category_has_a_stable_name_and_hint() {
    for c in Category::ALL {
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(json, format!("\"{}\"", c.as_str()));
        assert!(!c.hint().is_empty());
    }
}

#[test]
fn progress_info_prefers_the_diagnosis() {
    assert_eq!(
        progress_info(Some("error dns_resolution: x"), Some("records".into())).as_deref(),
        Some("error dns_resolution: x")
    );
    assert_eq!(
        progress_info(None, Some("records".into())).as_deref(),
        Some("records")
    );
    let long = "y".repeat(500);
    assert_eq!(
        progress_info(Some(&long), None).unwrap().chars().count(),
        HEADLINE_MAX_CHARS
    );
}

#[test]
fn the_anchor_finder_agrees_with_the_automaton() {
    finds_every_anchor(AnchorFinder::get());
}

#[test]
fn anchors_outside_the_needle_table_are_still_found() {
    // Anchors added since `needles.rs` was written take needles of their
    // own: with no table at all, and with a part of it.
    finds_every_anchor(&AnchorFinder::built_with(&[]));
    let part: Vec<&str> = super::needles::NEEDLES[0]
        .iter()
        .take(20)
        .copied()
        .collect();
    finds_every_anchor(&AnchorFinder::built_with(&[&part]));
}

#[test]
fn a_search_going_on_through_a_block_finds_what_a_fresh_one_does() {
    // The memo of each searcher's last find must not change any result:
    // every start in a block of many anchors (both searchers', repeated,
    // overlapping), asked in order with one memo and with none.
    let mut text = String::new();
    for (i, anchor) in ANCHORS.iter().enumerate() {
        let filler = "kubelet I1122 prober.go:107] Probe failed net conn ";
        text.push_str(&filler[..i % filler.len()]);
        text.push_str(anchor);
        text.push_str(if i % 3 == 0 { "\n" } else { " " });
    }
    let bytes = text.repeat(2).into_bytes();
    let finder = AnchorFinder::get();
    let mut memo = super::anchors::Memo::default();
    let mut from = 0;
    while from < bytes.len() {
        let fresh = finder.find_with(&bytes, from);
        assert_eq!(
            finder.find_memo(&bytes, from, &mut memo),
            fresh,
            "from {from}"
        );
        // Steps of every size, as the scan makes them: past a find, to the
        // next line, a few bytes on.
        from = match fresh {
            Some(f) if from % 2 == 0 => f.start + 1,
            _ => from + 1 + from % 7,
        };
    }
}

/// Every anchor at every offset of a block long enough for the vector
/// search, with near misses (a needle without its anchor) around it.
fn finds_every_anchor(finder: &AnchorFinder) {
    let filler =
        "kubelet I1122 prober.go:107] Probe failed probeType=Readiness net conn 10.0.0.1:53 ";
    for anchor in ANCHORS.iter() {
        for lead in 0..40 {
            let needle_only: String = anchor.chars().skip(1).collect();
            let text = format!("{needle_only} {}{anchor} tail\n", &filler[..lead]);
            let bytes = text.as_bytes();
            // Anchors overlap (`expired certificate`, `certificate has
            // expired`): the plain search, not the automaton's
            // non-overlapping walk, says where this one is.
            let want = text.find(anchor);
            let line_of = |at: usize| memchr::memrchr(b'\n', &bytes[..at]).map_or(0, |i| i + 1);
            let got = finder.find(bytes, 0);
            assert_eq!(
                got.map(line_of),
                want.map(line_of),
                "{anchor:?} after {lead}"
            );
            assert!(got.is_some(), "{anchor:?} after {lead}");
            let at = got.unwrap();
            assert!(
                ANCHORS.iter().any(|a| text[at..].starts_with(a)),
                "{anchor:?}: {}",
                &text[at..]
            );
        }
    }
    // A long block of ordinary lines holds none.
    let block = format!("{filler}\n").repeat(100);
    assert_eq!(finder.find(block.as_bytes(), 0), None);
}

#[test]
fn a_systemctl_status_block_names_its_failed_unit() {
    let text = "$ systemctl status node-valid-hostname\n\u{25cf} node-valid-hostname.service - Wait for a non-localhost hostname\n   Loaded: loaded (/usr/lib/systemd/system/node-valid-hostname.service; enabled)\n   Active: failed (Result: timeout) since Fri 2022-04-15 11:35:50 UTC; 1h ago\n";
    let s = super::scan_text("journal/excerpt.log", text.as_bytes()).unwrap();
    let placement = super::whole(&s);
    let mut engine = Engine::new();
    engine.absorb(s, placement);
    let d = engine.finish();
    let first = d.findings.first().expect("the failed unit is a finding");
    assert_eq!(first.category, Category::Hostname, "{first:?}");
    assert_eq!(first.consequences[0].unit, "node-valid-hostname");
}

#[test]
fn took_too_long_is_etcd_only_in_etcd_wordings() {
    assert!(classify("kubelet: image pull took too long, retrying").is_none());
    let s = classify(r#"{"level":"warn","msg":"leader failed to send out heartbeat on time; took too long, leader is overloaded likely from slow disk","expected-duration":"200ms","exceeded-duration":"1.2s"}"#).unwrap();
    assert!(s.summary.contains("heartbeat late"), "{}", s.summary);
}
#[test]
fn a_flood_is_read_within_budget_and_rarer_causes_still_are() {
    // 30,000 lines of one etcd warning (about 4 MiB), then a full disk and
    // a DNS failure: the flood is read up to the budget, the rest counted
    // as unread; the two later causes are read all the same.
    let mut text = String::new();
    for i in 0..30_000u32 {
        let _ = writeln!(
            text,
            "2026-11-22T10:{:02}:{:02}.000000+0000 m etcd[1]: {{\"level\":\"warn\",\"msg\":\"apply request took too long\",\"took\":\"{}.5ms\",\"expected-duration\":\"100ms\"}}",
            (i / 60) % 60,
            i % 60,
            200 + i % 700
        );
    }
    text.push_str("2026-11-22T11:00:00.000000+0000 m crio[1]: Error: writing blob: storing blob to file: write /var/tmp/storage: no space left on device\n");
    text.push_str(DNS_LINE);
    text.push('\n');
    let scanner = scan_text("journal/this-boot.log", text.as_bytes()).unwrap();
    let unread = scanner.unread_lines();
    let read = 30_002 - unread;
    let budget = super::scanner::read_budget_bound(text.len());
    assert!(unread > 0 && read <= budget, "read {read}, bound {budget}");
    let placement = whole(&scanner);
    let mut engine = Engine::new();
    engine.absorb(scanner, placement);
    let d = engine.finish();
    assert_eq!(d.lines_unread, unread);
    let categories: Vec<&str> = d.findings.iter().map(|f| f.category.as_str()).collect();
    for want in ["etcd_slow_disk", "disk_full", "dns_resolution"] {
        assert!(categories.contains(&want), "{want} in {categories:?}");
    }
}

#[test]
fn repeats_of_a_crash_loop_or_a_renewal_are_not_read_and_a_change_still_is() {
    // A healthy first boot logs the same back-off at every pod sync and the
    // same DHCP renewal over and over, each with its own stamps: read once,
    // they leave the read budget whole, and a new address is still read.
    let mut text = String::new();
    for i in 0..20_000u32 {
        let (m, s) = ((i / 60) % 60, i % 60);
        let _ = writeln!(
            text,
            "2026-11-22T10:{m:02}:{s:02}.000000+0000 m kubenswrapper[2345]: E1122 10:{m:02}:{s:02}.{i:06} 2345 pod_workers.go:1301] \"Error syncing pod, skipping\" err=\"failed to \\\"StartContainer\\\" for \\\"tuned\\\" with CrashLoopBackOff: \\\"back-off 20s restarting failed container=tuned pod=tuned-x_openshift-cluster-node-tuning-operator(8edecadb-951c-4901-ae9d-42259c63b982)\\\"\""
        );
        let _ = writeln!(
            text,
            "2026-11-22T10:{m:02}:{s:02}.500000+0000 m NetworkManager[1203]: <info>  [1795341600.{i:04}] dhcp4 (ens3): state changed new lease, address=192.168.122.10"
        );
    }
    text.push_str("2026-11-22T11:00:00.000000+0000 m NetworkManager[1203]: <info>  [1795345200.0001] dhcp4 (ens3): state changed new lease, address=192.168.122.57\n");
    let scanner = scan_text("journal/this-boot.log", text.as_bytes()).unwrap();
    assert_eq!(scanner.unread_lines(), 0);
    let placement = whole(&scanner);
    let mut engine = Engine::new();
    engine.absorb(scanner, placement);
    let d = engine.finish();
    let found: Vec<(&str, &str)> = d
        .findings
        .iter()
        .map(|f| (f.category.as_str(), f.key.as_str()))
        .collect();
    assert!(found.contains(&("ip_changed", "ens3")), "{found:?}");
    assert!(
        d.findings.iter().any(|f| f.summary.contains("tuned")),
        "{:?}",
        d.findings
    );
}

#[test]
fn a_unit_that_ends_well_after_a_flood_is_recovered() {
    // bootkube fails, a flood spends the read budget, other units end well
    // (spending that anchor's free reads), then bootkube ends well: the
    // failure is recovered, not left standing.
    let mut text = String::from(
        "2026-11-22T10:00:00.000000+0000 m systemd[1]: bootkube.service: Failed with result 'exit-code'.\n",
    );
    for i in 0..30_000u32 {
        let _ = writeln!(
            text,
            "2026-11-22T10:{:02}:{:02}.000000+0000 m etcd[1]: {{\"level\":\"warn\",\"msg\":\"apply request took too long\",\"took\":\"{}.5ms\",\"expected-duration\":\"100ms\"}}",
            (i / 60) % 60,
            i % 60,
            200 + i % 700
        );
        if i % 1000 == 0 {
            let _ = writeln!(
                text,
                "2026-11-22T10:{:02}:{:02}.000000+0000 m systemd[1]: unit{i}.service: Deactivated successfully.",
                (i / 60) % 60,
                i % 60
            );
        }
    }
    text.push_str("2026-11-22T11:00:00.000000+0000 m systemd[1]: bootkube.service: Deactivated successfully.\n");
    let d = engine_with(&[("journal/this-boot.log", &text)]);
    assert!(d.lines_unread > 0);
    let standing: Vec<&Finding> = d
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error && f.summary.contains("bootkube"))
        .collect();
    assert!(standing.is_empty(), "{standing:#?}");
}

#[test]
fn every_anchor_holds_a_needle_of_the_table() {
    // An anchor added since `needles.rs` was written, a rule's or a
    // signature's, is still found (needles chosen at start-up), but costs
    // a pass over every byte: write the table again (bench/tools
    // `needle-groups`, docs/diagnosis.md).
    assert_eq!(
        AnchorFinder::anchors_without_a_table_needle(),
        Vec::<&str>::new()
    );
}

#[test]
fn an_unreachable_api_ranks_below_the_slow_etcd_that_explains_it() {
    // The API refusing for 25 minutes (an error) and etcd's disk too slow
    // a few times (a warning on its own): the cause comes first, and is an
    // error beside the error it explains.
    let mut text = String::new();
    for minute in 0..26 {
        let _ = writeln!(
            text,
            "2026-11-22T10:{minute:02}:00.000000+0000 m kubelet[1]: E1122 10:{minute:02}:00.000000 1 kubelet.go:1] \"Error updating node status, will retry\" err=\"Get \\\"https://api-int.c.example:6443/api/v1/nodes/m\\\": dial tcp 10.0.0.5:6443: connect: connection refused\""
        );
        if minute == 5 {
            text.push_str("2026-11-22T10:05:30.000000+0000 m etcd[2]: {\"level\":\"warn\",\"ts\":\"2026-11-22T10:05:30.000Z\",\"msg\":\"slow fdatasync\",\"took\":\"2.5s\",\"expected-duration\":\"1s\"}\n");
        }
    }
    let d = engine_with(&[("journal/this-boot.log", &text)]);
    let first = &d.findings[0];
    assert_eq!(first.category, Category::EtcdSlowDisk, "{:#?}", d.findings);
    assert_eq!(first.severity, Severity::Error);
    assert_eq!(d.findings[1].category, Category::ApiUnreachable);
}
