//! Network configuration rules: configure-ovs.sh building br-ex (its
//! `ERROR:` echoes and nmcli's `Error: Connection activation failed`, in
//! machine-config-operator's templates), ovnkube's default gateway lookup,
//! the resolver configuration (Go falling back to a loopback nameserver
//! when resolv.conf has none: `lookup H on [::1]:53`), routes, the path MTU,
//! and traffic a firewall drops (Go's `dial tcp A:443: i/o timeout` to a
//! public address, resets) when no proxy is in between.

use super::host::ip_in;
use super::line::{after, after_lit, has, shorten, token_until, url_host};
use super::signal::{Category, Nature, Signal};

/// configure-ovs.sh and OVS failing to set up br-ex.
pub(super) fn ovs(msg: &str) -> Option<Signal> {
    const FAILURES: &[&str] = &[
        "configure-ovs exited with error",
        "configure-ovs failed",
        "Cannot bring up connection",
        "Cannot bring up any slave interface",
        "ovs-vsctl: ",
        "ovsdb-server",
        "no port named br-ex",
        "no bridge named br-ex",
        "reason 'ovsdb-failed'",
        "of local ovs-interface",
    ];
    let ovs_context = has!(msg, "configure-ovs") || has!(msg, "ovs-if-");
    if let Some(what) = FAILURES.iter().find(|w| msg.contains(*w)) {
        let failed = !what.starts_with("ovs")
            || [
                "error",
                "failed",
                "Error",
                "not connect",
                "no port named",
                "no bridge named",
            ]
            .iter()
            .any(|w| msg.contains(w));
        if failed {
            return Some(Signal::new(
                Category::OvsConfig,
                "br-ex",
                format!(
                    "configure-ovs could not set up br-ex ({})",
                    shorten(
                        after(msg, what).map_or(*what, |r| if r.trim().len() > 3 {
                            r.trim()
                        } else {
                            what
                        }),
                        110
                    )
                ),
                Nature::Fatal,
            ));
        }
    }
    if ovs_context {
        if let Some(rest) = after_lit!(msg, "Error: ") {
            return Some(Signal::new(
                Category::OvsConfig,
                "br-ex",
                format!(
                    "configure-ovs could not set up br-ex ({})",
                    shorten(rest.trim(), 110)
                ),
                Nature::Fatal,
            ));
        }
    }
    None
}

/// No default route: configure-ovs, ovnkube, or Go's `network is unreachable`.
pub(super) fn route(msg: &str) -> Option<Signal> {
    const NO_GATEWAY: &[&str] = &[
        "Unable to find default gateway",
        "unable to find default gateway",
        "failed to get default gateway",
        "no default route",
        "No default route",
        "unable to configure IPv4 route",
        "unable to configure IPv6 route",
        // Kubernetes' ChooseHostInterface (apimachinery
        // pkg/util/net/interface.go), which kubelet, kube-proxy and
        // kube-apiserver use to pick the node's address from the default
        // route: `unable to select an IP from default routes.`, before
        // 2017 `Unable to select an IP.`; kube-apiserver wraps it as
        // `Unable to find suitable network address.error='…'`.
        "nable to select an IP",
        "find suitable network address",
    ];
    // kube-apiserver on a dual-stack host whose first address is of the
    // other family (triage signature DualstackrDNSBug).
    if has!(msg, "must match public address family") {
        return Some(Signal::new(
            Category::RouteConfig,
            "address family",
            "the host's primary address is of the other IP family than the API's (must match public address family)".into(),
            Nature::Fatal,
        ));
    }
    if let Some(what) = NO_GATEWAY.iter().find(|w| msg.contains(*w)) {
        return Some(Signal::new(
            Category::RouteConfig,
            "default route",
            format!("the host has no usable default route ({what})"),
            Nature::Fatal,
        ));
    }
    None
}

/// Resolver configuration: no nameserver (Go then asks the loopback), a
/// loopback stub that does not answer.
pub(super) fn dns_config(msg: &str) -> Option<Signal> {
    // systemd-resolved's stub (127.0.0.53) not answering.
    if has!(msg, "127.0.0.53") && (has!(msg, "refused") || has!(msg, "no servers could be reached"))
    {
        return Some(Signal::new(
            Category::DnsConfig,
            "resolv.conf",
            "resolv.conf points at systemd-resolved's stub 127.0.0.53, which does not answer"
                .into(),
            Nature::Fatal,
        ));
    }
    // CoreDNS's loop plugin (plugin/loop/loop.go): its upstream (the
    // node's resolv.conf) sends its own probe back to it: `[FATAL]
    // plugin/loop: Loop (127.0.0.1:59214 -> :53) detected for zone ".", …`.
    // The upstream is a local address (a stub resolver, itself): a DNS
    // configuration problem, and CoreDNS exits on it.
    // (Read when the loop is through a loopback address, `Loop (127.`,
    // the usual stub resolver: the anchor finder's table has a needle in it.)
    if let Some(rest) = after_lit!(msg, "Loop (127.") {
        if has!(msg, ") detected for zone") {
            let pair = format!("127.{}", token_until(rest, &[')']));
            return Some(Signal::new(
                Category::DnsConfig,
                "resolv.conf",
                format!("CoreDNS forwards to itself (loop {pair}): the node's resolv.conf names a local resolver"),
                Nature::Fatal,
            ));
        }
    }
    if has!(msg, "no DNS servers") {
        return Some(Signal::new(
            Category::DnsConfig,
            "resolv.conf",
            "no nameserver is configured (resolv.conf has none)".into(),
            Nature::Fatal,
        ));
    }
    let rest = after_lit!(msg, "lookup ")?;
    let host = token_until(rest, &[' ', ':', '"', ',']);
    let server = after_lit!(rest, " on ").map(|s| token_until(s, &[' ']).trim_end_matches(':'))?;
    let loopback = server.starts_with("[::1]:") || server.starts_with("127.");
    if loopback && (has!(msg, "connection refused") || has!(msg, "i/o timeout")) {
        return Some(Signal::new(
            Category::DnsConfig,
            "resolv.conf",
            format!("{host} is looked up on {server}, where no nameserver answers: resolv.conf names none, or a stub that is down"),
            Nature::Fatal,
        ));
    }
    None
}

/// The words of [`mtu`]'s messages; its anchors too.
pub(super) const MTU: &[&str] = &[
    "message too long",
    "frag needed",
    "packet too big",
    "Packet too big",
    "MTU mismatch",
    "mtu mismatch",
    "MTU of",
    "MTU (",
];

/// Large packets lost: the MTU checks and errors that say so.
pub(super) fn mtu(msg: &str) -> Option<Signal> {
    let what = MTU.iter().find(|w| msg.contains(*w))?;
    if what.starts_with("MTU")
        && !["small", "large", "mismatch", "exceed", "bigger"]
            .iter()
            .any(|w| msg.contains(w))
    {
        return None;
    }
    Some(Signal::new(
        Category::MtuMismatch,
        "mtu",
        format!(
            "packets larger than the path's MTU are lost ({})",
            shorten(msg.trim(), 100)
        ),
        Nature::Fatal,
    ))
}

/// A connection to an outside endpoint timed out or was reset, with no
/// proxy in between: a firewall drops it. (Names as Go prints them: lower
/// case.)
#[allow(clippy::case_sensitive_file_extension_comparisons)]
pub(super) fn egress(msg: &str) -> Option<Signal> {
    const DROPPED: &[&str] = &[
        "i/o timeout",
        "connect: connection timed out",
        "Connection timed out",
        "connection reset by peer",
        "TLS handshake timeout",
        "timed out",
    ];
    let what = DROPPED.iter().find(|w| msg.contains(*w))?;
    if has!(msg, "lookup ") || has!(msg, "proxyconnect") {
        return None;
    }
    let target = after_lit!(msg, "dial tcp ")
        .map(|r| token_until(r, &[' ', '"']).trim_end_matches(':'))
        .or_else(|| after_lit!(msg, "connect to ").map(|r| token_until(r, &[' '])))
        .or_else(|| url_host(msg))?;
    let host = target
        .rsplit_once(':')
        .map_or(target, |(h, _)| h)
        .trim_matches(['[', ']']);
    let ip = ip_in(host).and_then(|a| a.parse::<std::net::IpAddr>().ok());
    let outside = match ip {
        Some(std::net::IpAddr::V4(v4)) => {
            !(v4.is_private() || v4.is_loopback() || v4.is_link_local())
        }
        Some(std::net::IpAddr::V6(v6)) => {
            !(v6.is_loopback()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80)
        }
        // A name: registries and the like are outside.
        None => {
            host.contains('.')
                && !host.ends_with(".local")
                && !host.starts_with("api")
                && !has!(host, ".svc")
        }
    };
    if !outside {
        // TCP connects but the handshake's large packets never arrive:
        // inside the network that is the path MTU.
        if *what == "TLS handshake timeout" && ip.is_some_and(|a| !a.is_loopback()) {
            return Some(Signal::new(
                Category::MtuMismatch,
                host,
                format!("TLS handshakes with {target} time out while TCP connects: large packets are lost (path MTU?)"),
                Nature::Transient,
            ));
        }
        return None;
    }
    Some(Signal::new(
        Category::EgressBlocked,
        url_host(msg).map_or(host, |h| token_until(h, &[':'])),
        format!(
            "connections to {target} {} (a firewall drops them?)",
            what.trim_start_matches("connect: ")
        ),
        Nature::Transient,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coredns_forwarding_to_itself_is_the_dns_configuration() {
        let s = dns_config(r#"[FATAL] plugin/loop: Loop (127.0.0.1:59214 -> :53) detected for zone ".", see https://coredns.io/plugins/loop#troubleshooting. Query: "HINFO 4547991504243258144.3688648895315093531.""#).unwrap();
        assert_eq!(s.category, Category::DnsConfig);
        assert!(
            s.summary.contains("127.0.0.1:59214 -> :53"),
            "{}",
            s.summary
        );
    }

    #[test]
    fn ovs_routes_resolver_mtu_egress() {
        let s = ovs("configure-ovs.sh[1280]: Error: Connection activation failed: A dependency of the connection failed").unwrap();
        assert_eq!(s.category, Category::OvsConfig);
        let s = route("F0730 ovnkube.go:130] failed to get default gateway interface").unwrap();
        assert_eq!(s.category, Category::RouteConfig);
        for line in [
            "level=fatal msg=\"unable to select an IP from default routes.\"",
            "failed to select a host interface: Unable to select an IP.",
            "Error: Unable to find suitable network address.error='no default routes found in \"/proc/net/route\" or \"/proc/net/ipv6_route\"'",
        ] {
            assert_eq!(route(line).unwrap().category, Category::RouteConfig, "{line}");
        }
        let s = dns_config("dial tcp: lookup registry-1.docker.io on [::1]:53: read udp [::1]:35711->[::1]:53: read: connection refused").unwrap();
        assert_eq!(s.category, Category::DnsConfig);
        assert!(dns_config("lookup quay.io on 10.0.0.1:53: no such host").is_none());
        let s = egress("Get https://quay.io/v2/: dial tcp 54.83.191.206:443: i/o timeout").unwrap();
        assert_eq!(s.category, Category::EgressBlocked);
        assert!(egress("dial tcp 10.0.0.5:443: i/o timeout").is_none());
        assert!(mtu("write: message too long").is_some());
    }
}
