//! Container runtime rules: CRI-O refusing its configuration (cri-o
//! internal/config: `validating runtime config: %w` and its siblings, TOML
//! decode errors, `update config from drop-in file`), and image pulls that
//! failed with no more specific cause printed (release-image-download.sh's
//! `Pull failed. Retrying`, kubelet's `ErrImagePull`/`Back-off pulling
//! image`, containers/image's `initializing source`, registry rate limits).

use super::line::{after, has, registry_host, shorten, words_at};
use super::signal::{Category, Nature, Signal};

/// What CRI-O says when it refuses its configuration; [`crio_config`]'s
/// anchors too.
pub(super) const INVALID: &[&str] = &[
    "alidating runtime config",
    "alidating root config",
    "alidating image config",
    "alidating network config",
    "alidating api config",
    "unable to decode configuration",
    "update config from drop-in file",
    "no runtime entry table",
    "cri-o configured with systemd cgroup manager",
    "conmon cgroup should be",
];

/// The TOML decoder's words; [`crio_toml`]'s anchors.
pub(super) const TOML: &[&str] = &["toml:", "Near line", "(last key parsed"];

/// CRI-O refuses its configuration.
pub(super) fn crio_config(msg: &str) -> Option<Signal> {
    let what = INVALID.iter().find(|w| msg.contains(*w))?;
    let detail = after(msg, what).map_or("", |r| r.trim_start_matches([':', ' ']));
    Some(Signal::new(
        Category::CrioConfig,
        "crio.conf",
        format!(
            "CRI-O refuses its configuration ({}{}{})",
            words_at(msg, what).unwrap_or(what),
            if detail.is_empty() { "" } else { ": " },
            shorten(detail.trim_end_matches('"'), 100)
        ),
        Nature::Fatal,
    ))
}

/// CRI-O's configuration file does not parse as TOML.
pub(super) fn crio_toml(msg: &str) -> Option<Signal> {
    let crio = has!(msg, "crio") || has!(msg, "cri-o") || has!(msg, "CRI-O");
    if crio && TOML.iter().any(|w| msg.contains(w)) {
        // BurntSushi/toml's parse error: `Near line N (last key parsed
        // 'K'): WHAT`; its decode error: `toml: WHAT`. The place and the
        // reason, not the line around them.
        let line = after(msg, "Near line ").map(|r| super::line::token_until(r, &[' ', ':']));
        let key = after(msg, "(last key parsed '").map(|r| super::line::token_until(r, &['\'']));
        let why = after(msg, "): ")
            .or_else(|| after(msg, "toml: "))
            .map(|r| r.trim().trim_end_matches(['"', '\\']))
            .filter(|r| !r.is_empty());
        let place = [
            line.map(|l| format!("line {l}")),
            key.map(|k| format!("after key {k}")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        let summary = match (place.is_empty(), why) {
            (false, Some(why)) => format!(
                "CRI-O's configuration file does not parse at {place}: {}",
                shorten(why, 100)
            ),
            (false, None) => format!("CRI-O's configuration file does not parse at {place}"),
            (true, Some(why)) => format!(
                "CRI-O's configuration file does not parse: {}",
                shorten(why, 100)
            ),
            (true, None) => "CRI-O's configuration file does not parse".to_owned(),
        };
        return Some(Signal::new(
            Category::CrioConfig,
            "crio.conf",
            summary,
            Nature::Fatal,
        ));
    }
    None
}

/// A pull that failed, when nothing more specific is printed.
pub(super) fn image_pull(msg: &str) -> Option<Signal> {
    const FAILED: &[&str] = &[
        "Pull failed. Retrying",
        "Failed to fetch release image",
        "Failed to query release image",
        "toomanyrequests",
        "too many requests",
        "rate limit",
        "ErrImagePull",
        "ImagePullBackOff",
        "Back-off pulling image",
        "Failed to pull image",
        "failed to pull image",
        "rror pulling image",
        "failed pulling image",
        "for image pull progress",
        "RegistryUnavailable",
        "initializing source",
        "digest mismatch",
        "blob unknown",
        "received unexpected HTTP status: 5",
    ];
    let what = FAILED.iter().find(|w| msg.contains(*w))?;
    let rate = has!(what, "rate") || has!(what, "many");
    // Docker Hub's refusal ends with a help link
    // (`https://www.docker.com/increase-rate-limit`), not the registry.
    let about = match msg.find("https://www.docker.com/") {
        Some(at) if rate => &msg[..at],
        _ => msg,
    };
    let registry = registry_host(about).unwrap_or(if about.len() < msg.len() {
        "docker.io"
    } else {
        "the registry"
    });
    let summary = if rate {
        format!("{registry} refused pulls: rate limit reached")
    } else {
        format!(
            "image pull from {registry} failed ({})",
            words_at(msg, what).unwrap_or(what)
        )
    };
    Some(Signal::new(
        Category::ImagePull,
        registry,
        summary,
        Nature::Transient,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_and_pulls() {
        let s = crio_config(r#"level=fatal msg="Validating runtime config: conmon cgroup should be 'pod' or a systemd slice""#).unwrap();
        assert_eq!(s.category, Category::CrioConfig);
        let s = image_pull("release-image-download.sh[1016]: Pull failed. Retrying quay.io/openshift-release-dev/ocp-release@sha256:1...").unwrap();
        assert_eq!(s.key, "quay.io");
    }
}
