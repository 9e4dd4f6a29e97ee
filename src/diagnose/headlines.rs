//! Tests of what the diagnosis says to a person: headlines fit to show
//! (no control character, no markdown, no clipped word, at most
//! [`HEADLINE_MAX_CHARS`]), the decisive value first in the wordings that
//! were flawed, consequences never silent when alone, and something true
//! said when no rule matches a failure (issue 35, points 4 and 5).

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

fn headline_of(line: &str) -> String {
    let text = format!("2026-11-22T10:00:00.000000+0000 m host[1]: {line}\n");
    engine_with(&[("journal/this-boot.log", &text)])
        .headline()
        .unwrap_or_else(|| panic!("no headline for {line}"))
}

/// Every character the agent must never say raw: C0 but none spared, DEL,
/// C1, the bidirectional overrides and isolates.
fn forbidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[test]
fn nothing_shown_carries_a_control_character() {
    let mut hostile = String::from("cause ");
    for c in (0u32..0x20).chain([0x7f]).chain(0x80..0xa0) {
        hostile.push(char::from_u32(c).unwrap());
    }
    for c in ['\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}'] {
        hostile.push(c);
    }
    for c in ['\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}'] {
        hostile.push(c);
    }
    hostile.push_str("\x1b]0;title\x07 \x1b[2J end");
    let shown = fit_to_show(&hostile, usize::MAX);
    assert!(!shown.chars().any(forbidden), "{shown:?}");
    assert!(
        shown.contains("\\x1b") && shown.contains("\\u{202e}"),
        "{shown}"
    );
    assert!(
        shown.starts_with("cause ") && shown.ends_with(" end"),
        "{shown}"
    );
    // progress_info either way: the headline, or the records' digest.
    for info in [
        progress_info(Some(&hostile), None),
        progress_info(None, Some(hostile.clone())),
    ] {
        let info = info.unwrap();
        assert!(!info.chars().any(forbidden), "{info:?}");
    }
    assert!(progress_info(Some(&hostile), None).unwrap().chars().count() <= HEADLINE_MAX_CHARS);
    // And a line that reaches a headline through a rule.
    let headline =
        headline_of("Error: initializing source docker://quay.io/x\u{202e}\x1b[31m: unauthorized: authentication required");
    assert!(!headline.chars().any(forbidden), "{headline:?}");
}

#[test]
fn headlines_drop_markdown_and_cut_between_words() {
    assert_eq!(fit_to_show("**disk** `full`  now", 100), "disk full now");
    let long = "word ".repeat(60);
    let cut = fit_to_show(&long, HEADLINE_MAX_CHARS);
    assert!(cut.chars().count() <= HEADLINE_MAX_CHARS);
    assert!(cut.ends_with("word…"), "{cut}");
    // A single long token is cut where it must be.
    let token = "x".repeat(300);
    assert_eq!(fit_to_show(&token, 10).chars().count(), 10);
}

#[test]
fn an_avc_denial_names_only_what_it_holds() {
    // The record as `ausearch -i` prints it: fields unquoted.
    let h = headline_of("type=AVC msg=audit(11/22/2026 10:00:00.123:456) : avc:  denied  { execute } for  pid=4045 comm=runc:[2:INIT] name=sh dev=\"overlay\" ino=1 scontext=system_u:system_r:container_t:s0:c1,c2 tcontext=system_u:object_r:container_file_t:s0:c3,c4 tclass=file permissive=0");
    assert_eq!(
        h,
        "runc:[2:INIT] was denied execute on file sh (container_file_t) by SELinux"
    );
    // A record a report cut before its contexts: no `?` placeholders.
    let h = headline_of(
        r#"kernel: audit: type=1400 audit(1763805601.123:456): avc:  denied  { execute } for  pid=4045 comm="coredns" path="/coredns""#,
    );
    assert_eq!(h, "coredns was denied execute on /coredns by SELinux");
    assert!(!h.contains('?'));
}

#[test]
fn a_process_name_the_kernel_cut_is_not_shown_clipped() {
    // TASK_COMM_LEN: the kernel keeps 15 characters of `pool-rpm-ostreed`.
    let h = headline_of(
        r#"audit: type=1400 audit(1.2:3): avc:  denied  { mac_admin } for  pid=1 comm="pool-rpm-ostree" capability=33  scontext=system_u:system_r:spc_t:s0 tcontext=system_u:system_r:spc_t:s0 tclass=capability2 permissive=0"#,
    );
    assert!(
        h.starts_with("spc_t was denied mac_admin on capability2"),
        "{h}"
    );
    assert!(!h.contains("pool-rpm-ostree"), "{h}");
}

#[test]
fn a_release_mismatch_has_no_category_prefix() {
    let h = headline_of("Error: Release image arch amd64 does not match host arch arm64");
    assert_eq!(h, "Release image arch amd64 does not match host arch arm64");
}

#[test]
fn an_anchor_that_skips_a_letter_shows_the_whole_word() {
    let h = headline_of("E1122 10:00:00.000000 1 eviction_manager.go:350] eviction manager: attempting to reclaim ephemeral-storage");
    assert!(
        h.contains("(eviction manager: attempting to reclaim)"),
        "{h}"
    );
    let h = headline_of(
        r#"level=fatal msg="validating runtime config: conmon cgroup should be 'pod' or a systemd slice""#,
    );
    assert!(
        h.contains("(validating runtime config: conmon cgroup"),
        "{h}"
    );
    let h = headline_of(r#"level=fatal msg="unable to select an IP from default routes.""#);
    assert!(h.ends_with("(unable to select an IP)"), "{h}");
}

#[test]
fn a_rate_limit_names_the_registry_not_the_help_link() {
    let h = headline_of("Error response from daemon: toomanyrequests: You have reached your pull rate limit. You may increase the limit by authenticating and upgrading: https://www.docker.com/increase-rate-limit");
    assert_eq!(h, "docker.io refused pulls: rate limit reached");
}

#[test]
fn an_mtu_headline_leads_with_the_sizes() {
    let h = headline_of("F1122 10:00:00.000000 1 ovnkube.go:137] MTU (1500) of network interface br-ex is too small for specified overlay MTU (1558)");
    assert!(h.starts_with("MTU 1500 against 1558: "), "{h}");
}

#[test]
fn a_pending_csr_alone_is_not_silent() {
    let h = headline_of("E1122 10:30:00 certificate_manager.go:562] kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: Certificate request was not signed: timed out waiting for the condition");
    assert!(
        h.starts_with("kubelet's certificate signing request was not approved"),
        "{h}"
    );
    // Below its cause when there is one.
    let text = "\
2026-11-22T10:00:00.000000+0000 m kubelet[1]: E1122 certificate_manager.go:562] Certificate request was not signed: timed out waiting for the condition
2026-11-22T10:00:01.000000+0000 m kubelet[1]: x509: certificate has expired or is not yet valid: current time 2026-11-22T10:00:01Z is before 2026-11-23T10:00:00Z
";
    let d = engine_with(&[("journal/this-boot.log", text)]);
    assert_eq!(
        d.findings.last().unwrap().category,
        Category::CsrPending,
        "{d:#?}"
    );
}

#[test]
fn a_failed_record_no_rule_reads_says_its_stage_and_last_error() {
    let summary = serde_json::json!({
        "records_dir_present": true,
        "services": [{
            "service": "bootkube", "file": "bootkube.json", "status": "failure", "entries": 4,
            "runs": [{"start": null, "end": null, "duration_secs": null, "result": "failure", "steps": []}],
            "failures": [{"run": 1, "what": "stage cvo-bootstrap", "at": "2026-11-22T10:00:01Z",
                "error_line": "147 main",
                "error_message": "Feb 03 10:04:00 m bootkube.sh[2]: Rendering CVO manifests\nFeb 03 10:04:01 m bootkube.sh[2]: F0203 render.go:88] frobnicator says: widget\u{1b}[31m count is wrong\nFeb 03 10:04:02 m systemd[1]: bootkube.service: Main process exited, code=exited, status=1/FAILURE"}]
        }],
        "problems": [], "done_markers": [], "digest": null
    })
    .to_string();
    let d = engine_with(&[("records/summary.json", &summary)]);
    assert_eq!(d.findings.len(), 1, "{d:#?}");
    assert_eq!(d.findings[0].category, Category::Other);
    assert_eq!(d.findings[0].severity, Severity::Error);
    let h = d.headline().unwrap();
    assert_eq!(
        h,
        "bootkube stage cvo-bootstrap failed: F0203 render.go:88] frobnicator says: widget\\x1b[31m count is wrong"
    );
}

#[test]
fn a_failed_unit_no_rule_reads_is_named_and_a_stop_by_signal_is_quiet() {
    let text = "\
2026-11-22T10:00:00.000000+0000 m systemd[1]: frobnicate.service: Main process exited, code=exited, status=1/FAILURE
2026-11-22T10:00:00.000000+0000 m systemd[1]: frobnicate.service: Failed with result 'exit-code'.
";
    let d = engine_with(&[("journal/this-boot.log", text)]);
    assert_eq!(d.findings[0].category, Category::Other);
    assert_eq!(
        d.headline().as_deref(),
        Some("frobnicate.service failed: its process exited with an error")
    );
    let stopped = "\
2026-11-22T10:00:00.000000+0000 m systemd[1]: Stopping Frobnicator...
2026-11-22T10:00:30.000000+0000 m systemd[1]: frobnicate.service: Main process exited, code=killed, status=9/KILL
2026-11-22T10:00:30.000000+0000 m systemd[1]: frobnicate.service: Failed with result 'signal'.
";
    let d = engine_with(&[("journal/this-boot.log", stopped)]);
    assert!(
        d.findings.iter().all(|f| f.severity == Severity::Info),
        "{d:#?}"
    );
    assert_eq!(d.headline(), None);
}

#[test]
fn healthy_noise_says_nothing() {
    // A pod's veth losing its carrier as the pod stops.
    let veth = "\
2026-11-22T10:00:00.000000+0000 m NetworkManager[1]: <info>  [1.1] device (veth5f3a9c1): state change: activated -> unavailable (reason 'carrier-changed', sys-iface-state: 'external')
2026-11-22T10:00:01.000000+0000 m NetworkManager[1]: <info>  [1.2] device (a1b2c3d4e5f6a7b): state change: activated -> unavailable (reason 'carrier-changed', sys-iface-state: 'external')
";
    // NetworkManager's carrier coming back is no loss.
    let carrier_back = "2026-11-22T10:00:00.000000+0000 m NetworkManager[1]: <info>  [1.1] device (ens33): state change: unavailable -> disconnected (reason 'carrier-changed', sys-iface-state: 'managed')\n";
    // Ignition's first fetch before DHCP answered.
    let early_fetch = "2026-11-22T10:00:00.000000+0000 m ignition[242]: op(1): op(2): [failed]   GET \"http://169.254.169.254/2009-04-04/user-data\": Get http://169.254.169.254/2009-04-04/user-data: dial tcp 169.254.169.254:80: connect: network is unreachable\n";
    // A release image pull retried until it came.
    let pull_retried = "\
2026-11-22T10:00:00.000000+0000 m release-image-download.sh[848]: Pull failed. Retrying quay.io/openshift-release-dev/ocp-release@sha256:eafd...
2026-11-22T10:00:10.000000+0000 m release-image-download.sh[848]: Pull failed. Retrying quay.io/openshift-release-dev/ocp-release@sha256:eafd...
2026-11-22T10:00:20.000000+0000 m release-image-download.sh[848]: Pull failed. Retrying quay.io/openshift-release-dev/ocp-release@sha256:eafd...
2026-11-22T10:01:00.000000+0000 m systemd[1]: release-image.service: Deactivated successfully.
";
    for text in [veth, carrier_back, early_fetch, pull_retried] {
        let d = engine_with(&[("journal/this-boot.log", text)]);
        assert_eq!(d.headline(), None, "{text}\n{d:#?}");
    }
    // The same pull failing for good still speaks.
    let pull_failing = pull_retried.replace(
        "2026-11-22T10:01:00.000000+0000 m systemd[1]: release-image.service: Deactivated successfully.\n",
        "",
    );
    let d = engine_with(&[("journal/this-boot.log", &pull_failing)]);
    assert!(d.headline().is_some(), "{d:#?}");
    // A daemon stopping cleanly at a reboot did not retry its way out.
    let kubelet = "\
2026-11-22T10:00:00.000000+0000 m kubelet[1]: E1122 Get \"https://quay.io/v2/\": dial tcp: lookup quay.io on 10.0.0.1:53: no such host
2026-11-22T10:30:00.000000+0000 m systemd[1]: kubelet.service: Deactivated successfully.
";
    let d = engine_with(&[("journal/this-boot.log", kubelet)]);
    assert!(d.headline().is_some(), "{d:#?}");
}

#[test]
fn parse_errors_say_where_not_the_whole_line() {
    let h = headline_of(
        r#"level=fatal msg="failed to fetch Master Machines: failed to load asset \"Install Config\": invalid \"install-config.yaml\" file: compute[0].replicas: Invalid value: -1: number of replicas must not be negative""#,
    );
    assert!(!h.contains("(:") && !h.ends_with("\")"), "{h}");
    let h = headline_of("crio[1]: time=\"2020-01-01\" level=fatal msg=\"Near line 112 (last key parsed 'crio.image'): Expected key separator '=', but got '\\n' instead.\"");
    assert!(
        h.starts_with("CRI-O's configuration file does not parse at line 112, after key crio.image: Expected key separator"),
        "{h}"
    );
    let h = headline_of("NetworkManager[1022]: <warn>  [1700000000.1234] dns-mgr: could not commit DNS changes: Error writing /etc/resolv.conf: Read-only file system");
    assert_eq!(
        h,
        "NetworkManager could not write the resolver configuration: Error writing /etc/resolv.conf: Read-only file system"
    );
}
