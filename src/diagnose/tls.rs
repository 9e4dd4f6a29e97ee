//! Certificate and clock rules: Go's `crypto/x509` verification errors
//! (`certificate signed by unknown authority`, `certificate has expired or
//! is not yet valid: current time … is before …`), OpenSSL/curl's wording,
//! and chrony's view of the clock (`System clock wrong by …`, `chronyc
//! tracking`'s offset).

use super::line::{after, registry_host, token_until, url_host};
use super::signal::{Category, Nature, Signal};

/// Offset from NTP beyond which certificate checks start failing in
/// practice (kubelet and etcd certificates are minted minutes before use).
const SKEW_LIMIT_SECS: f64 = 60.0;

fn endpoint(msg: &str) -> &str {
    url_host(msg)
        .or_else(|| registry_host(msg))
        .unwrap_or("an endpoint")
}

/// `x509: certificate has expired or is not yet valid: current time A is
/// before B` (or `is after`) and chrony's clock complaints.
pub(super) fn clock(msg: &str) -> Option<Signal> {
    if let Some(rest) = after(msg, "certificate has expired or is not yet valid") {
        let host = endpoint(msg);
        let window = after(rest, "current time ").map(|r| {
            let now = token_until(r, &[' ']);
            let tail = &r[now.len()..];
            let (relation, bound) = if let Some(b) = after(tail, " is before ") {
                ("before", token_until(b, &[' ', '"', ',', ')']))
            } else if let Some(b) = after(tail, " is after ") {
                ("after", token_until(b, &[' ', '"', ',', ')']))
            } else {
                ("at", "")
            };
            (now.to_owned(), relation, bound.to_owned())
        });
        let summary = match &window {
            Some((now, "before", start)) => format!(
                "certificate of {host} not yet valid: host clock {now} is before its validity start {start} (host clock behind?)"
            ),
            Some((now, "after", end)) => format!(
                "certificate of {host} expired: host clock {now} is after its validity end {end} (clock ahead, or the certificate expired)"
            ),
            _ => format!("certificate of {host} expired or not yet valid against the host clock"),
        };
        return Some(Signal::new(
            Category::ClockSkew,
            host,
            summary,
            Nature::Fatal,
        ));
    }
    if let Some(rest) = after(msg, "System clock wrong by ") {
        let secs = token_until(rest, &[' ']);
        return Some(Signal::new(
            Category::ClockSkew,
            "system clock",
            format!("chronyd: system clock wrong by {secs} seconds"),
            Nature::Transient,
        ));
    }
    // chronyc tracking: `System time     : 3600.000118 seconds slow of NTP time`
    if msg.contains("of NTP time") && msg.trim_start().starts_with("System time") {
        let value = after(msg, ": ").map(|r| token_until(r.trim_start(), &[' ']))?;
        let secs: f64 = value.parse().ok()?;
        if secs.abs() < SKEW_LIMIT_SECS {
            return None;
        }
        let dir = if msg.contains("slow") {
            "behind"
        } else {
            "ahead of"
        };
        return Some(Signal::new(
            Category::ClockSkew,
            "system clock",
            format!("host clock {value} seconds {dir} NTP (chronyc tracking)"),
            Nature::Fatal,
        ));
    }
    if msg.contains("Can't synchronise: no selectable sources") {
        return Some(Signal::new(
            Category::ClockSkew,
            "ntp sources",
            "chronyd cannot synchronise: no selectable NTP sources".into(),
            Nature::Transient,
        ));
    }
    None
}

/// Verification failures that mean the CA is missing from the host's trust
/// (an internal registry or a TLS-intercepting proxy).
pub(super) fn trust(msg: &str) -> Option<Signal> {
    const UNKNOWN_CA: &[&str] = &[
        "certificate signed by unknown authority",
        "certificate is not trusted",
        "unable to get local issuer certificate",
        "self signed certificate in certificate chain",
        "self-signed certificate in certificate chain",
    ];
    if let Some(what) = UNKNOWN_CA.iter().find(|w| msg.contains(*w)) {
        let host = endpoint(msg);
        return Some(Signal::new(
            Category::UntrustedCa,
            host,
            format!("TLS to {host} failed: {what}"),
            Nature::Fatal,
        ));
    }
    if let Some(rest) = after(msg, "x509: certificate is valid for ") {
        let host = endpoint(msg);
        let names = token_until(rest, &['"']);
        return Some(Signal::new(
            Category::UntrustedCa,
            host,
            format!("TLS to {host} failed: certificate is valid for {names}"),
            Nature::Fatal,
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_yet_valid_names_both_times() {
        let s = clock(r#"Get "https://api-int.c.example.com:6443/api": tls: failed to verify certificate: x509: certificate has expired or is not yet valid: current time 2024-01-01T10:00:00Z is before 2026-11-22T09:00:00Z"#).unwrap();
        assert_eq!(s.category, Category::ClockSkew);
        assert_eq!(s.key, "api-int.c.example.com:6443");
        assert!(
            s.summary.contains(
                "host clock 2024-01-01T10:00:00Z is before its validity start 2026-11-22T09:00:00Z"
            ),
            "{}",
            s.summary
        );
        let s = clock("x509: certificate has expired or is not yet valid: current time 2027-01-01T00:00:00Z is after 2026-12-01T00:00:00Z").unwrap();
        assert!(s
            .summary
            .contains("is after its validity end 2026-12-01T00:00:00Z"));
    }

    #[test]
    fn chrony_offsets() {
        assert!(clock("System clock wrong by 3600.512 seconds")
            .unwrap()
            .summary
            .contains("3600.512"));
        assert!(clock("System time     : 0.000118 seconds slow of NTP time").is_none());
        let s = clock("System time     : 7200.5 seconds fast of NTP time").unwrap();
        assert!(
            s.summary.contains("7200.5 seconds ahead of NTP"),
            "{}",
            s.summary
        );
    }

    #[test]
    fn unknown_authority_names_the_endpoint() {
        let s = trust(r#"pinging container registry mirror.corp.example:5000: Get "https://mirror.corp.example:5000/v2/": tls: failed to verify certificate: x509: certificate signed by unknown authority"#).unwrap();
        assert_eq!(s.key, "mirror.corp.example:5000");
        assert_eq!(s.nature, Nature::Fatal);
        assert!(trust(
            "curl: (60) SSL certificate problem: unable to get local issuer certificate"
        )
        .is_some());
        assert!(
            trust("x509: certificate is valid for a.example, not b.example")
                .unwrap()
                .summary
                .contains("a.example, not b.example")
        );
        assert!(trust("certificate rotation done").is_none());
    }
}
