//! Registry rules, from containers/image (podman, crio, `oc`): the pull
//! secret refused, mirrors that do not serve the release, and images or
//! binaries for another architecture or release.

use super::line::{after, after_lit, has, registry_host, token_until};
use super::signal::{Category, Nature, Signal};

/// `unauthorized: authentication required`, `reading manifest … in
/// quay.io/…: unauthorized`, `denied: requested access to the resource is
/// denied`, `invalid username/password`, `401 (Unauthorized)`.
pub(super) fn auth(msg: &str) -> Option<Signal> {
    const REFUSALS: &[&str] = &[
        "unauthorized: authentication required",
        "unauthorized: access to the requested resource is not authorized",
        "requested access to the resource is denied",
        "invalid username/password",
        "401 (Unauthorized)",
        "401 Unauthorized",
        ": unauthorized",
        "no basic auth credentials",
        "authentication failure",
        "authentication required",
        "pull access denied",
        "unable to retrieve auth token",
    ];
    let what = REFUSALS.iter().find(|r| msg.contains(*r)).or_else(|| {
        // A registry refusing its token endpoint: the credentials.
        (has!(msg, "403 Forbidden") && has!(msg, "token")).then_some(&"403 Forbidden")
    })?;
    let registry = registry_host(msg).unwrap_or("the registry");
    Some(Signal::new(
        Category::RegistryAuth,
        registry,
        format!(
            "registry {registry} refused the pull secret ({})",
            what.trim_start_matches(": ")
        ),
        Nature::Fatal,
    ))
}

/// `(Mirrors also failed: [mirror:5000/ocp4/release@sha256:…: reading
/// manifest … manifest unknown])`, `manifest unknown` by digest, and a
/// registries.conf that does not load.
pub(super) fn mirror(msg: &str) -> Option<Signal> {
    if let Some(rest) = after_lit!(msg, "Mirrors also failed: [") {
        let mirror = token_until(rest, &['/', ':', ' ', ']']);
        let why = token_until(rest, &[']']);
        let reason = why.rsplit(": ").next().unwrap_or(why);
        // The mirror answered, but refused the credentials.
        if ["unauthorized", "authentication required", "denied"]
            .iter()
            .any(|w| reason.contains(w))
        {
            return Some(Signal::new(
                Category::RegistryAuth,
                mirror,
                format!("mirror {mirror} refused the pull secret ({reason})"),
                Nature::Fatal,
            ));
        }
        return Some(Signal::new(
            Category::MirrorConfig,
            mirror,
            format!("mirror {mirror} did not serve the image ({reason})"),
            Nature::Fatal,
        ));
    }
    if has!(msg, "registries.conf")
        && ["error", "invalid", "loading"]
            .iter()
            .any(|w| msg.to_ascii_lowercase().contains(w))
    {
        return Some(Signal::new(
            Category::MirrorConfig,
            "registries.conf",
            "registries.conf does not load (mirror configuration broken)".into(),
            Nature::Fatal,
        ));
    }
    for (what, why) in [
        (
            "repository name not known to registry",
            "the repository is not on it",
        ),
        // The same NAME_UNKNOWN code with a registry's own message:
        // distribution's `errcode.Error` prints the code's value in lower
        // case, then the message (registry/api/errcode/errors.go:
        // `name unknown: repository not found`, Quay's, Harbor's, Nexus's
        // wordings), and containers/image passes it through.
        ("name unknown: ", "the repository is not on it"),
        ("is blocked in", "registries.conf blocks it"),
        (
            "server gave HTTP response to HTTPS client",
            "it serves plain HTTP: mark it insecure or give it TLS",
        ),
    ] {
        if msg.contains(what) {
            let registry = registry_host(msg).unwrap_or("the registry");
            return Some(Signal::new(
                Category::MirrorConfig,
                registry,
                format!("registry {registry} cannot serve the image: {why} ({what})"),
                Nature::Fatal,
            ));
        }
    }
    if has!(msg, "manifest unknown") {
        let registry = registry_host(msg).unwrap_or("the registry");
        return Some(Signal::new(
            Category::MirrorConfig,
            registry,
            format!("{registry} does not have the requested manifest (manifest unknown: mirror incomplete?)"),
            Nature::Fatal,
        ));
    }
    None
}

/// Something built for another architecture or release: `exec format
/// error`, `no image found in manifest list for architecture …`, release
/// checks that say `does not match`.
pub(super) fn release(msg: &str) -> Option<Signal> {
    if has!(msg, "exec format error") {
        return Some(Signal::new(
            Category::ReleaseMismatch,
            "exec format error",
            "a binary or image is built for another architecture (exec format error)".into(),
            Nature::Fatal,
        ));
    }
    if let Some(rest) = after_lit!(msg, "no image found in manifest list for architecture ") {
        let arch = token_until(rest, &[',', ' ']);
        return Some(Signal::new(
            Category::ReleaseMismatch,
            format!("arch {arch}"),
            format!("the release has no image for this host's architecture {arch}"),
            Nature::Fatal,
        ));
    }
    // A program refusing a flag it does not know: bootkube.sh runs the
    // release's operators (`cluster-etcd-operator render`, `… render` of
    // each) with the flags of the installer's version, so the installer
    // and the release it installs differ. The wordings of the Go flag
    // parsers: spf13/pflag flag.go (`unknown flag: --%s`, `unknown
    // shorthand flag: %q in -%s`, printed by cobra as `Error: …`) and the
    // standard library's flag/flag.go (`flag provided but not defined: -%s`).
    if let Some(what) = [
        "unknown flag: ",
        "unknown shorthand flag",
        "flag provided but not defined",
    ]
    .into_iter()
    .find(|w| msg.contains(w))
    {
        let flag = after(msg, what).map_or("", |r| {
            token_until(r.trim_start_matches(": "), &[' ', '"', '\''])
        });
        return Some(Signal::new(
            Category::ReleaseMismatch,
            format!("flag {flag}"),
            format!("a program does not know the flag {flag} it was given: the caller (installer, bootkube) and the release's program are from different versions ({what})"),
            Nature::Fatal,
        ));
    }
    // machine-config-operator's bootstrap render (cmd/machine-config-operator
    // bootstrap.go: `error rendering bootstrap manifests: %v`) missing a
    // file the installer should have written under /assets: the
    // installer's assets are of another release than the operator.
    if has!(msg, "rendering bootstrap manifests") && has!(msg, "no such file or directory") {
        let file = after_lit!(msg, "open ").map_or("an asset", |r| token_until(r, &[':', ' ']));
        return Some(Signal::new(
            Category::ReleaseMismatch,
            "bootstrap assets",
            format!("the release's machine-config-operator needs {file}, which the installer did not write: installer and release differ"),
            Nature::Fatal,
        ));
    }
    let lower = msg.to_ascii_lowercase();
    // Only the wording of a check, not any line that says both words (a
    // path can hold "mismatch").
    if (has!(&lower, "release image") || has!(&lower, "arch")) && has!(&lower, "does not match") {
        let what = after_lit!(msg, "Error: ").unwrap_or(msg);
        return Some(Signal::new(
            Category::ReleaseMismatch,
            "release",
            super::line::shorten(what.trim(), 160),
            Nature::Fatal,
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flag_or_asset_of_another_version_is_a_release_mismatch() {
        let s = release("Error: unknown flag: --etcd-discovery-domain").unwrap();
        assert_eq!(s.category, Category::ReleaseMismatch);
        assert_eq!(s.key, "flag --etcd-discovery-domain");
        let s = release("Error: unknown shorthand flag: 'x' in -x").unwrap();
        assert_eq!(s.category, Category::ReleaseMismatch);
        let s = release("flag provided but not defined: -cert-dir").unwrap();
        assert_eq!(s.key, "flag -cert-dir");
        let s = release("F0403 18:16:28.456056 1 bootstrap.go:104] error rendering bootstrap manifests: open /assets/tls/etcd-metric-ca-bundle.crt: no such file or directory").unwrap();
        assert!(
            s.summary.contains("/assets/tls/etcd-metric-ca-bundle.crt"),
            "{}",
            s.summary
        );
        assert!(release("error rendering bootstrap manifests: invalid character").is_none());
    }

    #[test]
    fn refused_pull_secret_names_the_registry() {
        let s = auth("Error: initializing source docker://quay.io/openshift-release-dev/ocp-release@sha256:1e5c: reading manifest sha256:1e5c in quay.io/openshift-release-dev/ocp-release: unauthorized: authentication required").unwrap();
        assert_eq!(s.key, "quay.io");
        assert!(
            s.summary.contains(
                "registry quay.io refused the pull secret (unauthorized: authentication required)"
            ),
            "{}",
            s.summary
        );
        let s = auth(r#"level=error msg="pull failed" error="reading manifest latest in registry.redhat.io/ubi9: unauthorized""#).unwrap();
        assert_eq!(s.key, "registry.redhat.io");
        let s = auth("Error: initializing source docker://registry.ci.example:5000/x:y: Requesting bearer token: invalid status code from registry 401 (Unauthorized)").unwrap();
        assert_eq!(s.key, "registry.ci.example");
        assert!(auth("Authorization: [REDACTED]").is_none());
    }

    #[test]
    fn mirrors_and_registries_conf() {
        let s = mirror("Error: initializing source docker://quay.io/ocp/release@sha256:1: (Mirrors also failed: [mirror.corp:5000/ocp4/release@sha256:1: reading manifest sha256:1 in mirror.corp:5000/ocp4/release: manifest unknown]): quay.io/ocp/release@sha256:1: pinging container registry quay.io: dial tcp: lookup quay.io: no such host").unwrap();
        assert_eq!(
            (s.category, s.key.as_str()),
            (Category::MirrorConfig, "mirror.corp")
        );
        assert!(s.summary.contains("manifest unknown"), "{}", s.summary);
        assert!(mirror(r#"error loading registries configuration "/etc/containers/registries.conf": toml: line 3"#).is_some());
        let s = mirror("Error: initializing source docker://mirror.corp:5000/ocp4/release@sha256:1: reading manifest sha256:1 in mirror.corp:5000/ocp4/release: name unknown: repository not found").unwrap();
        assert_eq!(
            (s.category, s.key.as_str()),
            (Category::MirrorConfig, "mirror.corp")
        );
    }

    #[test]
    fn other_architectures() {
        assert_eq!(
            release("exec /usr/bin/pod: exec format error")
                .unwrap()
                .category,
            Category::ReleaseMismatch
        );
        let s = release(r#"Error: choosing an image from manifest list docker://quay.io/x: no image found in manifest list for architecture arm64, variant "v8", OS linux"#).unwrap();
        assert_eq!(s.key, "arch arm64");
        assert!(release("Release image arch amd64 does not match host arch arm64").is_some());
        assert!(release("Pulling release image").is_none());
    }
}
