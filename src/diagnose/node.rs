//! Node rules: kubelet waiting for its certificate signing requests to be
//! approved, SELinux denials, a container kubelet keeps restarting, kubelet
//! without a CNI configuration, someone logging in during the installation,
//! and systemd's word on the installation's units (which failed, which
//! finished).

use super::line::{after, after_lit, has, token_until};
use super::signal::{Category, Nature, Signal};

/// kubelet's certificate manager waiting on an unapproved CSR.
pub(super) fn csr(msg: &str) -> Option<Signal> {
    if has!(msg, "Certificate request was not signed")
        || has!(msg, "certificate request was not signed")
    {
        return Some(Signal::new(
            Category::CsrPending,
            "kubelet client certificate",
            "kubelet's certificate signing request was not approved (Certificate request was not signed)".into(),
            Nature::Transient,
        ));
    }
    // The kubelet's serving certificate not approved: the API cannot reach
    // it (`oc logs` answers `remote error: tls: internal error`).
    if has!(msg, "no serving certificate available for the kubelet")
        || (has!(msg, ":10250") && has!(msg, "tls: internal error"))
    {
        return Some(Signal::new(
            Category::CsrPending,
            "kubelet serving certificate",
            "kubelet has no serving certificate: its CSR is not approved (tls: internal error on :10250)".into(),
            Nature::Transient,
        ));
    }
    // cluster-machine-approver leaving a CSR pending, every reason it
    // gives (pkg/controller csr_check.go, controller.go: `CSR %s not
    // authorized: %v` (no target machine, a missing or extra SAN, a
    // node name that does not match), older `CSR %s not valid: %v`).
    let about_a_csr = has!(msg, "CSR ") || has!(msg, "csr-");
    if let Some(reason) = ["not authorized: ", "not valid: "]
        .into_iter()
        .find_map(|w| after(msg, w).filter(|_| about_a_csr))
    {
        let reason = super::line::shorten(reason.trim().trim_end_matches('"'), 120);
        return Some(Signal::new(
            Category::CsrPending,
            "kubelet client certificate",
            format!(
                "the machine approver leaves the node's CSR pending ({reason}): approve it by hand"
            ),
            Nature::Transient,
        ));
    }
    if let Some(rest) = after_lit!(msg, "csr-") {
        if has!(msg, "Pending") {
            let name = format!("csr-{}", token_until(rest, &[' ', '"', ',']));
            return Some(Signal::new(
                Category::CsrPending,
                "kubelet client certificate",
                format!("certificate signing request {name} is Pending"),
                Nature::Transient,
            ));
        }
    }
    None
}

/// `avc:  denied  { read } for  pid=1 comm="crio" … tclass=file permissive=0`.
pub(super) fn selinux(msg: &str) -> Option<Signal> {
    // The loader's mprotect refused by SELinux's execmod/execmem checks.
    if has!(msg, "RELRO protection failed: Permission denied") {
        return Some(Signal::new(
            Category::Selinux,
            "RELRO",
            "SELinux refused a program's memory protection (RELRO protection failed: Permission denied)".into(),
            Nature::Transient,
        ));
    }
    let rest = after_lit!(msg, "avc:  denied").or_else(|| after_lit!(msg, "avc: denied"))?;
    let perms = after_lit!(rest, "{ ").map_or("", |r| token_until(r, &['}']).trim());
    // The kernel's AVC record (security/selinux/avc.c, avc_audit_post_callback
    // and the lsm_audit fields): `comm="C"` (cut by the kernel at 15
    // characters), `name="N"` or `path="P"`, `scontext=` and `tcontext=`
    // as user:role:type:level, `tclass=`. `ausearch -i` prints them
    // unquoted; a report may have lost the end of the record. Only the
    // fields present are said, never a placeholder.
    let field = |name: &str| -> Option<&str> {
        let start = rest
            .find(name)
            .filter(|&i| i == 0 || matches!(rest.as_bytes()[i - 1], b' ' | b'\t'))?;
        let value = &rest[start + name.len()..];
        let value = value.strip_prefix('"').map_or_else(
            || token_until(value, &[' ', '\t']),
            |v| token_until(v, &['"']),
        );
        (!value.is_empty() && value != "?").then_some(value)
    };
    let context_type = |name: &str| field(name).and_then(|c| c.split(':').nth(2));
    let comm = field("comm=");
    let subject = match (field("exe="), comm) {
        (Some(exe), _) => Some(exe.rsplit('/').next().unwrap_or(exe)),
        // Cut by the kernel: the domain says more than a clipped name.
        (None, Some(c)) if c.chars().count() >= 15 => context_type("scontext=").or(Some(c)),
        (None, c) => c.or_else(|| context_type("scontext=")),
    }
    .unwrap_or("a process");
    let ttype = context_type("tcontext=");
    let tclass = field("tclass=");
    let target_name = field("path=").or_else(|| field("name="));
    let mut target = String::new();
    for part in [tclass, target_name].into_iter().flatten() {
        if !target.is_empty() {
            target.push(' ');
        }
        target.push_str(part);
    }
    if let Some(t) = ttype {
        target = if target.is_empty() {
            t.to_owned()
        } else {
            format!("{target} ({t})")
        };
    }
    let perms_said = if perms.is_empty() { "access" } else { perms };
    let summary = if target.is_empty() {
        format!("{subject} was denied {perms_said} by SELinux")
    } else {
        format!("{subject} was denied {perms_said} on {target} by SELinux")
    };
    let permissive = has!(rest, "permissive=1");
    Some(Signal::new(
        Category::Selinux,
        format!(
            "{} {perms} {}:{}",
            comm.unwrap_or(subject),
            ttype.unwrap_or("-"),
            tclass.unwrap_or("-")
        ),
        if permissive {
            format!("{summary} (permissive: allowed)")
        } else {
            summary
        },
        // A permissive denial was allowed, so it caused nothing here; it is
        // what an enforcing host refuses: worth a note, never a cause.
        if permissive {
            Nature::Note
        } else {
            Nature::Transient
        },
    ))
}

/// What systemd says about a unit: `X.service: Failed with result 'exit-code'.`
/// (false) or `X.service: Deactivated successfully.` / `Succeeded.` (true).
pub(crate) fn unit_event(msg: &str) -> Option<(&str, bool)> {
    let (unit, rest) = msg.split_once(".service: ")?;
    if unit.is_empty() || unit.contains(' ') {
        return None;
    }
    if rest.starts_with("Failed with result") {
        Some((unit, false))
    } else if rest.starts_with("Deactivated successfully") || rest.starts_with("Succeeded") {
        Some((unit, true))
    } else {
        None
    }
}

/// A container kubelet keeps restarting (triage signature
/// ContainerCrashAnalysis, which reads the same kubelet line): pod_workers.go's
/// `Error syncing pod, skipping` with kuberuntime_manager.go's `failed to
/// "StartContainer" for "C" with CrashLoopBackOff: "back-off 5m0s
/// restarting failed container=C pod=P"`. A symptom: its cause is in the
/// container's own log (crio/pods, read by the rules like any member), so
/// alone it is a warning. Key: the container.
pub(super) fn crash_loop(msg: &str) -> Option<Signal> {
    let head = &msg[..msg.find(" with CrashLoopBackOff")?];
    let name = if let Some(rest) = after_lit!(msg, "restarting failed container=") {
        token_until(rest, &[' ', '"', '\\'])
    } else {
        let quoted = head.trim_end_matches(['"', '\\']);
        let start = quoted.rfind(['"', ' '])? + 1;
        &quoted[start..]
    };
    if name.is_empty() {
        return None;
    }
    let pod = after_lit!(msg, " pod=")
        .map(|r| token_until(r.trim_start_matches(['"', '\\']), &['(', ' ', '"', '\\']))
        .filter(|p| !p.is_empty());
    let summary = match pod {
        Some(pod) => format!("container {name} keeps crashing (CrashLoopBackOff, pod {pod}): its own log holds the cause"),
        None => format!("container {name} keeps crashing (CrashLoopBackOff): its own log holds the cause"),
    };
    Some(Signal::new(
        Category::Other,
        name,
        summary,
        Nature::Transient,
    ))
}

/// Someone logged in during the installation (triage signature
/// UserHasLoggedIntoCluster: `pam_unix\((sshd|login):session\): session
/// opened for user .+ by`), from Linux-PAM modules/pam_unix/pam_unix_sess.c
/// (`session opened for user %s(uid=%lu) by %s(uid=%lu)`, older `… for user
/// %s by %s(uid=%lu)`). Not a cause: manual changes may explain what
/// follows, so it is listed as `info`. Key: `login USER`.
pub(super) fn login(msg: &str) -> Option<Signal> {
    let rest = after_lit!(msg, "pam_unix(sshd:session): session opened for user ")
        .map(|r| (r, "ssh"))
        .or_else(|| {
            after_lit!(msg, "pam_unix(login:session): session opened for user ")
                .map(|r| (r, "console"))
        });
    let (rest, how) = rest?;
    let user = token_until(rest, &['(', ' ']);
    if user.is_empty() || !has!(rest, " by ") {
        return None;
    }
    Some(Signal::new(
        Category::Other,
        format!("login {user}"),
        format!("{user} logged in ({how}) during the installation: manual changes may explain what follows"),
        Nature::Note,
    ))
}

/// kubelet has no CNI configuration: the pod network never came up
/// (triage signature CNIConfigurationError, which counts more than 1,000).
/// ocicni (pkg/ocicni/ocicni.go, in cri-o) `no CNI configuration file in %s.
/// Has your network provider started?` (`No …` in older releases), through
/// kubelet's `Container runtime network not ready`. Every node logs it
/// until ovnkube writes its configuration, so it is normal while it lasts
/// minutes (`engine.rs`, `persistence`). Key: the configuration directory.
pub(super) fn cni(msg: &str) -> Option<Signal> {
    let rest = after_lit!(msg, "CNI configuration file in ")?;
    let dir = token_until(rest, &[' ', '"', '\\']).trim_end_matches('.');
    let dir = if dir.is_empty() {
        "CNI configuration"
    } else {
        dir
    };
    Some(Signal::new(
        Category::PodNetwork,
        dir,
        format!("no CNI configuration in {dir}: the network provider (ovnkube) has not started on this node"),
        Nature::Transient,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_the_approver_gives_leaves_the_csr_pending() {
        for line in [
            "I0307 15:17:49.020369 1 main.go:123] CSR csr-fvcvt not authorized: Missing SAN in DNSNames",
            "CSR csr-8b2br not authorized: No target machine for node \"worker-0\"",
            "CSR csr-x1 not valid: CSR Common Name does not match",
        ] {
            let s = csr(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(s.category, Category::CsrPending, "{line}");
        }
        assert!(csr("user not authorized: token expired").is_none());
    }

    #[test]
    fn csr_and_avc() {
        let s = csr("E1122 10:30:00 certificate_manager.go:562] kubernetes.io/kube-apiserver-client-kubelet: Failed while requesting a signed certificate from the control plane: cannot create certificate signing request: Certificate request was not signed: timed out waiting for the condition").unwrap();
        assert_eq!(s.category, Category::CsrPending);
        assert!(csr(
            "csr-8x7lq   12m   kubernetes.io/kubelet-serving   system:node:master-1   Pending"
        )
        .is_some());
        assert!(csr("csr-8x7lq approved").is_none());
        let s = selinux(r#"audit: type=1400 audit(1763805601.123:456): avc:  denied  { read write } for  pid=1234 comm="crio" name="x" dev="vda4" ino=1 scontext=system_u:system_r:container_runtime_t:s0 tcontext=system_u:object_r:var_lib_t:s0 tclass=file permissive=0"#).unwrap();
        assert_eq!(s.key, "crio read write var_lib_t:file");
        assert_eq!(s.nature, Nature::Transient);
    }

    #[test]
    fn unit_events() {
        assert_eq!(
            unit_event("bootkube.service: Failed with result 'exit-code'."),
            Some(("bootkube", false))
        );
        assert_eq!(
            unit_event("release-image.service: Deactivated successfully."),
            Some(("release-image", true))
        );
        assert_eq!(unit_event("Started bootkube.service: x"), None);
    }

    #[test]
    fn crash_loops_name_the_container() {
        // kubelet's journal line (escaped quotes).
        let line = r#"E0312 09:01:02.345678    2345 pod_workers.go:1298] "Error syncing pod, skipping" err="failed to \"StartContainer\" for \"etcd\" with CrashLoopBackOff: \"back-off 5m0s restarting failed container=etcd pod=etcd-master-0_openshift-etcd(5c1e)\"" pod="openshift-etcd/etcd-master-0""#;
        let s = crash_loop(line).unwrap();
        assert_eq!((s.category, s.key.as_str()), (Category::Other, "etcd"));
        assert!(
            s.summary.contains("etcd-master-0_openshift-etcd"),
            "{}",
            s.summary
        );
        // The event alone is not read (its anchor would cost more than it
        // adds: the kubelet line comes with it).
        assert!(crash_loop("Back-off restarting failed container kube-apiserver in pod kube-apiserver-master-1_openshift-kube-apiserver(9d)").is_none());
        // Older wording without `container=`.
        let s = crash_loop(r#"failed to "StartContainer" for "ovnkube-node" with CrashLoopBackOff: "Back-off 10s restarting failed""#).unwrap();
        assert_eq!(s.key, "ovnkube-node");
    }

    #[test]
    fn logins_are_notes() {
        let s = login(
            "sshd[4242]: pam_unix(sshd:session): session opened for user core(uid=1000) by (uid=0)",
        )
        .unwrap();
        assert_eq!((s.key.as_str(), s.nature), ("login core", Nature::Note));
        let s = login(
            "login[1900]: pam_unix(login:session): session opened for user root by LOGIN(uid=0)",
        )
        .unwrap();
        assert_eq!(s.key, "login root");
        // sudo and systemd's user manager are not a login.
        assert!(login("sudo[1]: pam_unix(sudo:session): session opened for user root(uid=0) by core(uid=1000)").is_none());
        assert!(login("systemd[1]: pam_unix(systemd-user:session): session opened for user core(uid=1000) by (uid=0)").is_none());
    }

    #[test]
    fn no_cni_configuration_names_the_directory() {
        for line in [
            r#"E0312 09:01:02.345678    2345 kubelet.go:2902] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: no CNI configuration file in /etc/kubernetes/cni/net.d/. Has your network provider started?""#,
            "Network plugin returns error: No CNI configuration file in /etc/kubernetes/cni/net.d/. Has your network provider started?",
        ] {
            let s = cni(line).unwrap();
            assert_eq!((s.category, s.key.as_str()), (Category::PodNetwork, "/etc/kubernetes/cni/net.d/"), "{line}");
        }
    }
}
