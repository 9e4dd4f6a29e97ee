//! Node rules: kubelet waiting for its certificate signing requests to be
//! approved, SELinux denials, and systemd's word on the installation's units
//! (which failed, which finished).

use super::line::{after, token_until};
use super::signal::{Category, Nature, Signal};

/// kubelet's certificate manager waiting on an unapproved CSR.
pub(super) fn csr(msg: &str) -> Option<Signal> {
    if msg.contains("Certificate request was not signed")
        || msg.contains("certificate request was not signed")
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
    if msg.contains("no serving certificate available for the kubelet")
        || (msg.contains(":10250") && msg.contains("tls: internal error"))
    {
        return Some(Signal::new(
            Category::CsrPending,
            "kubelet serving certificate",
            "kubelet has no serving certificate: its CSR is not approved (tls: internal error on :10250)".into(),
            Nature::Transient,
        ));
    }
    if msg.contains("not authorized: No target machine") {
        return Some(Signal::new(
            Category::CsrPending,
            "kubelet client certificate",
            "the machine approver refuses the node's CSR (no target machine): approve it by hand"
                .into(),
            Nature::Transient,
        ));
    }
    if let Some(rest) = after(msg, "csr-") {
        if msg.contains("Pending") {
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
    if msg.contains("RELRO protection failed: Permission denied") {
        return Some(Signal::new(
            Category::Selinux,
            "RELRO",
            "SELinux refused a program's memory protection (RELRO protection failed: Permission denied)".into(),
            Nature::Transient,
        ));
    }
    let rest = after(msg, "avc:  denied").or_else(|| after(msg, "avc: denied"))?;
    let perms = after(rest, "{ ").map_or("", |r| token_until(r, &['}']).trim());
    let comm = after(rest, "comm=\"").map_or("?", |r| token_until(r, &['"']));
    let tclass = after(rest, "tclass=").map_or("?", |r| token_until(r, &[' ']));
    let ttype = after(rest, "tcontext=")
        .map(|r| token_until(r, &[' ']))
        .and_then(|c| c.split(':').nth(2))
        .unwrap_or("?");
    let permissive = rest.contains("permissive=1");
    Some(Signal::new(
        Category::Selinux,
        format!("{comm} {perms} {ttype}:{tclass}"),
        format!(
            "SELinux denied {comm} {{ {perms} }} on {ttype} {tclass}{}",
            if permissive {
                " (permissive: allowed)"
            } else {
                ""
            }
        ),
        if permissive {
            Nature::Recovery
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
