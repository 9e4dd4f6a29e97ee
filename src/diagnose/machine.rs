//! Machine config rules: the OS the host runs against the release's (the
//! pivot / rebase of machine-config-daemon and its firstboot service,
//! rpm-ostree and ostree; the image it rebases to and says it booted, facts
//! the engine compares), the daemon failing to apply a config for other
//! reasons (a rendered config that does not exist among them), and
//! manifests the installer or cluster-bootstrap cannot read.
//! Texts: machine-config-operator pkg/daemon (update.go `failed to update
//! OS to %s after retries`, `Failed to update OS to %s (will retry)`,
//! daemon.go `Marking Degraded due to: %q`, `unexpected on-disk state
//! validating against %s`, `content mismatch for file %q`, `expected target
//! osImageURL %q, have %q`), rpm-ostree's `error: …`, ostree-finalize-staged's
//! `possible root cause:`, openshift/cluster-bootstrap (`failed to load some
//! manifests`, `unable to decode asset`), openshift-install's
//! `failed to load asset "Install Config"`, Ignition's config version check.

use super::line::{after, after_lit, has, shorten, token_until};
use super::signal::{Category, Nature, Signal};

/// The host's OS cannot become the release's.
pub(super) fn os_image(msg: &str) -> Option<Signal> {
    const TOO_OLD: &[&str] = &[
        "not new enough",
        "Invalid refspec",
        "unknown option",
        "Unknown option",
        "unrecognized option",
        "failed to deploy container image",
        "ostree-prepare-root",
        "composefs",
        // An rpm-ostree without container support reads the container
        // refspec `ostree-unverified-registry:IMAGE` as `REMOTE:REF`:
        // ostree then refuses the image as a ref (src/libostree/ostree-core.c,
        // `Invalid ref name %s`) or the transport as a remote
        // (ostree-repo.c, `Remote "%s" not found`, read for the
        // `ostree-…` transports only).
        "Invalid ref name",
        "Remote \"ostree-",
    ];
    if let Some(rest) = after_lit!(msg, "expected target osImageURL ") {
        let want = token_until(rest.trim_start_matches(['"', '\\']), &['"', '\\', ',']);
        return Some(Signal::new(
            Category::OsImageMismatch,
            "os image",
            format!(
                "the host booted another OS image than the release's {}",
                shorten(want, 80)
            ),
            Nature::Fatal,
        ));
    }
    // A boot image too old for what the release asks of it.
    let rebase = [
        "rpm-ostree",
        "ostree",
        "rebase",
        "pivot",
        "osImage",
        "deploy container image",
    ]
    .iter()
    .any(|w| msg.contains(w));
    // rpm-ostree too old for layering falls back to an update via the
    // container, which is fine when that works: not a failure by itself.
    let forced = has!(msg, "forcing an update");
    if let Some(what) = TOO_OLD
        .iter()
        .find(|w| msg.contains(*w))
        .filter(|_| !forced)
    {
        let failed = [
            "fail",
            "error",
            "Error",
            "not new enough",
            "Invalid",
            "not found",
        ]
        .iter()
        .any(|w| msg.contains(w));
        if rebase && failed {
            return Some(Signal::new(
                Category::OsImageMismatch,
                "os image",
                format!("the boot image's OS is too old to move to the release's ({what}): boot from the release's image"),
                Nature::Fatal,
            ));
        }
    }
    // Ignition older than the config it is given: the boot image predates
    // the release.
    if has!(msg, "unsupported config version") || has!(msg, "config version not supported") {
        return Some(Signal::new(
            Category::OsImageMismatch,
            "boot image",
            "the boot image's Ignition does not know the config's version: the boot image is older than the release".into(),
            Nature::Fatal,
        ));
    }
    None
}

/// machine-config-daemon could not apply its config.
pub(super) fn daemon(msg: &str) -> Option<Signal> {
    const FAILURES: &[&str] = &[
        "failed to update OS to",
        "Failed to update OS to",
        "error running rpm-ostree",
        "Failed to pivot",
        "failed to pivot",
        "nothing provides",
        "pool is degraded",
        "is degraded",
        "Marking Degraded due to",
        "unexpected on-disk state",
        "content mismatch for file",
        "mode mismatch for file",
        "must be empty, pass --confirm to overwrite",
        "error extracting",
        "failed to extract",
        "Failed to extract",
    ];
    // The rendered config a pool or node names does not exist (triage
    // signature MissingMC): a lister's or the API's NotFound, apimachinery
    // `pkg/api/errors/errors.go` `%s %q not found`, e.g.
    // `machineconfig.machineconfiguration.openshift.io "rendered-master-…" not found`.
    if let Some(rest) = after_lit!(msg, ".machineconfiguration.openshift.io ") {
        let name = token_until(rest.trim_start_matches(['"', '\\']), &['"', '\\', ' ']);
        if name.starts_with("rendered-") && after(rest, name).is_some_and(|r| has!(r, "not found"))
        {
            return Some(Signal::new(
                Category::MachineConfig,
                name,
                format!("rendered config {name} not found: the pool names a MachineConfig that does not exist"),
                Nature::Fatal,
            ));
        }
    }
    let what = FAILURES.iter().find(|w| msg.contains(*w))?;
    let detail = after(msg, what).map_or(String::new(), |r| {
        let r = r.trim_start_matches([':', ' ', '"', '\\']);
        if r.is_empty() {
            String::new()
        } else {
            format!(": {}", shorten(r, 100))
        }
    });
    Some(Signal::new(
        Category::MachineConfig,
        "machine-config-daemon",
        format!("machine-config-daemon could not apply the config ({what}{detail})"),
        Nature::Fatal,
    ))
}

/// The OS image machine-config-daemon rebases to, or says it booted
/// (pkg/daemon/rpm-ostree.go `Executing rebase to %s` and `Executing local
/// container storage rebase to %s`, which follow update.go's `Updating OS
/// to layered image %q`; daemon.go `Booted osImageURL: %s (%s) %s`,
/// where an empty URL is an OS that was never pivoted). A fact: the engine
/// compares the target with what booted after it (triage signatures
/// OSTreeCommitMismatch and MissingOSTreePivot). Key: `target URL` or
/// `booted URL` (`booted -` for none).
pub(super) fn os_target(msg: &str) -> Option<Signal> {
    let (role, rest) = if let Some(rest) = after_lit!(msg, "Booted osImageURL: ") {
        ("booted", rest)
    } else if has!(msg, "Executing ") {
        ("target", after_lit!(msg, "rebase to ")?)
    } else {
        return None;
    };
    let url = token_until(rest.trim_start_matches(['"', '\\']), &['"', '\\', ' ']);
    if role == "target" && url.is_empty() {
        return None;
    }
    let url = if url.is_empty() { "-" } else { url };
    Some(Signal::new(
        Category::OsImageMismatch,
        format!("{role} {url}"),
        format!("machine-config-daemon: {role} OS image {url}"),
        Nature::Observed,
    ))
}

/// A manifest the installer or cluster-bootstrap cannot parse or apply.
pub(super) fn manifest(msg: &str) -> Option<Signal> {
    const PARSE: &[&str] = &[
        "Can't process manifest file",
        "Invalid value: ",
        "failed to load some manifests",
        "unable to decode asset",
        "unable to convert asset",
        "error converting YAML to JSON",
        "error parsing",
        "could not find expected ':'",
        "did not find expected key",
        "mapping values are not allowed",
        "failed to load asset \"Install Config\"",
        "invalid \"install-config.yaml\" file",
        "failed to parse",
        "unknown field",
        "cannot unmarshal",
    ];
    let what = PARSE.iter().find(|w| msg.contains(*w))?;
    // Only about manifests and install files: `error parsing` alone is any
    // parser's.
    let about_manifests = [
        "manifest",
        "yaml",
        "YAML",
        "install-config",
        "asset",
        "json: ",
        "unmarshal",
        ".spec",
        "Invalid value",
    ]
    .iter()
    .any(|w| msg.contains(w));
    if !about_manifests {
        return None;
    }
    let file = yaml_file(msg).unwrap_or("a manifest");
    Some(Signal::new(
        Category::BadManifest,
        file,
        format!(
            "{file} cannot be read or applied ({})",
            shorten(
                after(msg, what)
                    // The parser's words after the anchor, without the
                    // separator before them or the quote that closes the
                    // logged message.
                    .map(|r| {
                        r.trim()
                            .trim_start_matches([':', ' '])
                            .trim_end_matches(['"', '\\', ' '])
                    })
                    .filter(|r| !r.is_empty())
                    .unwrap_or(what),
                110
            )
        ),
        Nature::Fatal,
    ))
}

/// The first `*.yaml` / `*.yml` / `*.json` name in `text` (as the
/// installer prints it: lower case).
#[allow(clippy::case_sensitive_file_extension_comparisons)]
fn yaml_file(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | ')' | ',' | '\\'))
        .map(|t| t.trim_end_matches(':'))
        .find(|t| {
            (t.ends_with(".yaml") || t.ends_with(".yml") || t.ends_with(".json")) && t.len() > 5
        })
        .map(|t| t.rsplit('/').next().unwrap_or(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebase_degraded_and_manifests() {
        // A rebase that failed is the daemon's; one the boot image cannot
        // even express is the boot image's.
        let rebase = "Error: failed to update OS to quay.io/x@sha256:1 after retries: error running rpm-ostree rebase";
        assert!(os_image(rebase).is_none());
        assert_eq!(daemon(rebase).unwrap().category, Category::MachineConfig);
        let s = os_image("error: Invalid refspec ostree-unverified-registry:quay.io/openshift/okd-content@sha256:ae04").unwrap();
        assert_eq!(s.category, Category::OsImageMismatch);
        let s = daemon(r#"Marking Degraded due to: "unexpected on-disk state validating against rendered-master-1""#).unwrap();
        assert_eq!(s.category, Category::MachineConfig);
        let s = manifest("failed to create cluster-config.yaml: error converting YAML to JSON: yaml: line 4: mapping values are not allowed in this context").unwrap();
        assert_eq!(s.key, "cluster-config.yaml");
        assert!(manifest("error parsing the date").is_none());
    }

    #[test]
    fn ostree_refusing_a_container_refspec_is_an_old_boot_image() {
        for line in [
            "error running rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa11: error: Invalid ref name quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa11",
            r#"failed to update OS to quay.io/x@sha256:aa11 : error running rpm-ostree rebase --experimental ostree-unverified-registry:quay.io/x@sha256:aa11: error: Remote "ostree-unverified-registry" not found"#,
        ] {
            let s = os_image(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(s.category, Category::OsImageMismatch);
        }
        assert!(os_image(r#"error: Remote "origin" not found"#).is_none());
    }

    #[test]
    fn a_missing_rendered_config_is_named() {
        // A lister's NotFound (machineconfig) and the API's (machineconfigs),
        // the latter as kubelet-style escaped quotes.
        for line in [
            r#"Marking Degraded due to: machineconfig.machineconfiguration.openshift.io "rendered-master-0a1b2c3d4e5f60718293a4b5c6d7e8f9" not found"#,
            r#"err="machineconfigs.machineconfiguration.openshift.io \"rendered-master-0a1b2c3d4e5f60718293a4b5c6d7e8f9\" not found""#,
        ] {
            let s = daemon(line).unwrap();
            assert_eq!(
                s.key, "rendered-master-0a1b2c3d4e5f60718293a4b5c6d7e8f9",
                "{line}"
            );
            assert_eq!(s.nature, Nature::Fatal);
        }
        // Other NotFound errors of the group keep the generic reading.
        let s = daemon(r#"Marking Degraded due to: machineconfigpool.machineconfiguration.openshift.io "infra" not found"#).unwrap();
        assert_eq!(s.key, "machine-config-daemon");
    }

    #[test]
    fn rebase_targets_and_booted_images_are_facts() {
        let s = os_target("I0101 00:00:00.000000    2345 rpm-ostree.go:201] Executing rebase to quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa11").unwrap();
        assert_eq!(
            s.key,
            "target quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa11"
        );
        assert_eq!(s.nature, Nature::Observed);
        let s = os_target(
            "rpm-ostree.go:228] Executing local container storage rebase to quay.io/x@sha256:bb22",
        )
        .unwrap();
        assert_eq!(s.key, "target quay.io/x@sha256:bb22");
        // Someone else's words about a rebase are no target.
        assert!(os_target("error: failed to rebase to quay.io/x@sha256:bb22").is_none());
        let s = os_target(
            "daemon.go:330] Booted osImageURL: quay.io/x@sha256:bb22 (415.92.202402201450-0) 3c1f",
        )
        .unwrap();
        assert_eq!(s.key, "booted quay.io/x@sha256:bb22");
        // Never pivoted: the URL is empty.
        let s =
            os_target("daemon.go:330] Booted osImageURL:  (414.92.202307070025-0) 9d2e").unwrap();
        assert_eq!(s.key, "booted -");
        assert!(os_target("Executing rebase to ").is_none());
    }
}
