//! Certificate and clock rules: Go's `crypto/x509` verification errors
//! (`certificate signed by unknown authority`, `certificate has expired or
//! is not yet valid: current time … is before …`), OpenSSL/curl's wording,
//! and chrony's view of the clock (`System clock wrong by …`, `chronyc
//! tracking`'s offset).

use super::line::{after_lit, has, registry_host, token_until, url_host};
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
    if let Some(rest) = after_lit!(msg, "certificate has expired or is not yet valid") {
        let host = endpoint(msg);
        let (now, relation, bound) = validity(rest);
        // `is after`: the certificate's end passed: expired_certificate's.
        if relation == "after" {
            return None;
        }
        if relation == "at" {
            // Older Go prints no times: the clock is the likelier cause
            // and the one to check first.
            return Some(Signal::new(
                Category::ClockSkew,
                host,
                format!("{host}'s certificate is expired or not yet valid against the host clock: check the clock first"),
                Nature::Fatal,
            ));
        }
        return Some(Signal::new(
            Category::ClockSkew,
            host,
            format!("host clock {now} is before the validity start {bound} of {host}'s certificate (host clock behind?)"),
            Nature::Fatal,
        ));
    }
    // etcd: `prober found high clock drift` (zap) and capnslog's `the clock
    // difference against peer P is too high [1.2s > 1s]`.
    if has!(msg, "high clock drift") || has!(msg, "clock difference against peer") {
        let drift = after_lit!(msg, "\"clock-drift\":\"")
            .map(|r| token_until(r, &['"']))
            .or_else(|| after_lit!(msg, "is too high [").map(|r| token_until(r, &[' ', ']'])));
        return Some(Signal::new(
            Category::ClockSkew,
            "system clock",
            match drift {
                Some(d) => format!("clocks of the etcd members differ by {d} (over etcd's 1s)"),
                None => "clocks of the etcd members differ by over etcd's 1s".into(),
            },
            Nature::Transient,
        ));
    }
    if let Some(rest) = after_lit!(msg, "System clock wrong by ") {
        let secs = token_until(rest, &[' ']);
        if secs.parse::<f64>().is_ok_and(|s| s.abs() < SKEW_LIMIT_SECS) {
            return None;
        }
        return Some(Signal::new(
            Category::ClockSkew,
            "system clock",
            format!("chronyd: system clock wrong by {secs} seconds"),
            Nature::Transient,
        ));
    }
    // chronyc tracking: `System time     : 3600.000118 seconds slow of NTP time`
    if has!(msg, "of NTP time") && msg.trim_start().starts_with("System time") {
        let value = after_lit!(msg, ": ").map(|r| token_until(r.trim_start(), &[' ']))?;
        let secs: f64 = value.parse().ok()?;
        if secs.abs() < SKEW_LIMIT_SECS {
            return None;
        }
        let dir = if has!(msg, "slow") {
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
    for (what, summary) in [
        (
            "exceeds the allowed maximum",
            "chronyd refused to correct the clock: the offset exceeds its maxchange",
        ),
        (
            "Could not step system clock",
            "chronyd could not step the system clock",
        ),
        (
            "Can't synchronise: no sources",
            "chronyd has no NTP sources configured",
        ),
        (
            "Leap status     : Not synchronised",
            "the clock is not synchronised to NTP (chronyc tracking)",
        ),
    ] {
        if msg.contains(what) {
            return Some(Signal::new(
                Category::ClockSkew,
                "ntp sources",
                summary.into(),
                Nature::Transient,
            ));
        }
    }
    if has!(msg, "Can't synchronise: no selectable sources") {
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
        "unknown certificate authority",
        "failed to load system roots",
        "certificate relies on legacy Common Name field",
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
    if let Some(rest) = after_lit!(msg, "x509: certificate is valid for ") {
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

/// `current time A is before|after B` of Go's x509 error: (A, relation, B).
fn validity(rest: &str) -> (&str, &str, &str) {
    let Some(r) = after_lit!(rest, "current time ") else {
        return ("?", "at", "?");
    };
    let now = token_until(r, &[' ']);
    let tail = &r[now.len()..];
    if let Some(b) = after_lit!(tail, " is before ") {
        return (now, "before", token_until(b, &[' ', '"', ',', ')', '\\']));
    }
    if let Some(b) = after_lit!(tail, " is after ") {
        return (now, "after", token_until(b, &[' ', '"', ',', ')', '\\']));
    }
    (now, "at", "?")
}

/// A certificate past its end while the clock is right: install assets
/// reused from an older attempt, an expired serving certificate, or
/// certificates of another installation's CA.
pub(super) fn expired(msg: &str) -> Option<Signal> {
    const EXPIRED: &[&str] = &[
        "tls: expired certificate",
        "certificate is expired",
        "Certificate is expired",
        "is expired: ",
        "certificate has expired",
        "certificate expired",
        "crypto/rsa: verification error",
    ];
    let host = endpoint(msg);
    if let Some(rest) = after_lit!(msg, "certificate has expired or is not yet valid") {
        let (now, relation, bound) = validity(rest);
        let summary = if relation == "after" {
            format!("{host}'s certificate expired at {bound} (host clock {now}): reused install assets or a stale certificate")
        } else {
            format!("{host}'s certificate is expired or not yet valid against the host clock")
        };
        return Some(Signal::new(
            Category::ExpiredCertificate,
            host,
            summary,
            Nature::Fatal,
        ));
    }
    if let Some(rest) = after_lit!(msg, " expired at ") {
        if has!(msg, "ertificate") {
            let name = after_lit!(msg, "Certificate ")
                .map(|r| token_until(r, &[' ']))
                .filter(|n| n.contains('.'))
                .unwrap_or(host);
            let when = token_until(rest, &[' ', '.']).trim_end_matches('.');
            return Some(Signal::new(
                Category::ExpiredCertificate,
                "install assets",
                format!("{name} expired at {when}: these install assets are from an older attempt; create them anew"),
                Nature::Fatal,
            ));
        }
    }
    let what = EXPIRED.iter().find(|w| msg.contains(*w))?;
    let summary = if has!(what, "rsa") {
        format!("{host}'s certificate is signed by another CA than this cluster's (crypto/rsa: verification error): assets of an older install?")
    } else {
        format!("{host}'s certificate expired ({what})")
    };
    Some(Signal::new(
        Category::ExpiredCertificate,
        host,
        summary,
        Nature::Fatal,
    ))
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
            s.summary.starts_with(
                "host clock 2024-01-01T10:00:00Z is before the validity start 2026-11-22T09:00:00Z"
            ),
            "{}",
            s.summary
        );
        let after_end = "x509: certificate has expired or is not yet valid: current time 2027-01-01T00:00:00Z is after 2026-12-01T00:00:00Z";
        assert!(clock(after_end).is_none());
        let s = expired(after_end).unwrap();
        assert_eq!(s.category, Category::ExpiredCertificate);
        assert!(
            s.summary.contains("expired at 2026-12-01T00:00:00Z"),
            "{}",
            s.summary
        );
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
