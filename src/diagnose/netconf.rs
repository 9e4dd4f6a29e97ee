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
        // configure-ovs.sh's own refusals (configure-ovs-network.yaml):
        // no NetworkManager profile for the default interface, no Open
        // vSwitch on the host.
        "cannot find connection for interface",
        "Openvswitch package is not installed",
        // Open vSwitch: ovs-vswitchd cannot open a port's device
        // (vswitchd/bridge.c, `could not open network device %s (%s)`),
        // ovs-vsctl cannot reach ovsdb-server (utilities/ovs-vsctl.c,
        // `%s: database connection failed (%s)`).
        "could not open network device",
        "database connection failed",
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
        // configure-ovs.sh's `echo "ERROR: …"` lines (cannot determine the
        // VLAN of a profile, the cloned profile missing, an empty user
        // bridge file, …), and nmcli's `Error: …` inside them. Not its
        // `ERROR: Unable to find default gateway interface`: the missing
        // route is the cause (`route`).
        if let Some(rest) = after_lit!(msg, "Error: ")
            .or_else(|| after_lit!(msg, "ERROR: ").filter(|r| !r.contains("default gateway")))
        {
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
            format!(
                "the host has no usable default route ({})",
                super::line::words_at(msg, what).unwrap_or(what)
            ),
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
    // kubelet reading the resolver file it gives pods
    // (pkg/kubelet/network/dns/dns.go, `getHostDNSConfig`): `"Could not open
    // resolv conf file." err="open /run/systemd/resolve/resolv.conf: no
    // such file or directory"`, `Could not parse resolv conf file.`; no pod
    // sandbox is created until it reads (older kubelets printed the same
    // words through glog).
    if let Some(rest) = after_lit!(msg, "Could not open resolv conf")
        .or_else(|| after_lit!(msg, "Could not parse resolv conf"))
    {
        let path = after(rest, "open ")
            .map(|p| token_until(p, &[':', ' ', '"']))
            .filter(|p| p.contains("resolv"))
            .unwrap_or("resolv.conf");
        return Some(Signal::new(
            Category::DnsConfig,
            "resolv.conf",
            format!("kubelet cannot read {path}, the resolver file it gives pods: no pod starts"),
            Nature::Fatal,
        ));
    }
    // NetworkManager failing to write the resolver configuration
    // (src/core/dns/nm-dns-manager.c: `could not commit DNS changes: %s`,
    // `update-dns: plugin %s update failed: %s` for its dnsmasq or
    // systemd-resolved plugin): resolv.conf keeps what it had, or nothing.
    if has!(msg, "could not commit DNS changes")
        || (has!(msg, "update-dns: plugin") && has!(msg, "update failed"))
    {
        return Some(Signal::new(
            Category::DnsConfig,
            "resolv.conf",
            // NetworkManager's reason (`could not commit DNS changes:
            // REASON`, `update-dns: plugin P update failed: REASON`), not
            // the line around it.
            match after(msg, "could not commit DNS changes: ")
                .or_else(|| after(msg, "update failed: "))
                .map(str::trim)
                .filter(|r| !r.is_empty())
            {
                Some(why) => format!(
                    "NetworkManager could not write the resolver configuration: {}",
                    shorten(why, 100)
                ),
                None => "NetworkManager could not write the resolver configuration".to_owned(),
            },
            Nature::Fatal,
        ));
    }
    // kubelet's DNSConfigForming warning (dns.go, `formDNSNameserversFitsLimits`:
    // `Nameserver limits were exceeded, some nameservers have been omitted,
    // the applied nameserver line is: …`): more than three nameservers; the
    // ones cut are never asked. A note, not a cause on its own.
    if has!(msg, "nameservers have been omitted") {
        return Some(Signal::new(
            Category::DnsConfig,
            "resolv.conf nameservers",
            "resolv.conf names more than 3 nameservers: kubelet gives pods only the first 3".into(),
            Nature::Note,
        ));
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
    // strerror(EMSGSIZE) in glibc's wording: iputils `ping: sendmsg:
    // Message too long`, `ping: local error: Message too long, mtu=1450`.
    "Message too long",
    "frag needed",
    // iputils ping (ping/ping.c, pr_icmph) printing the ICMP answer of a
    // router: `Frag needed and DF set (mtu = 1400)`.
    "Frag needed",
    "packet too big",
    "Packet too big",
    "MTU mismatch",
    "mtu mismatch",
    "MTU of",
    "MTU (",
    // The kernel refusing an MTU the device cannot carry (net/core/dev.c,
    // `dev_validate_mtu`: the extack `mtu greater than device maximum`
    // that `ip link set … mtu N` prints as `Error: …`; older kernels
    // `Invalid MTU %d requested, hw max %d`).
    "mtu greater than device maximum",
    "Invalid MTU",
    // NetworkManager failing to set the MTU a profile asks for
    // (src/core/devices/nm-device.c, `_commit_mtu`: `mtu: failure to
    // force-set MTU to %u`); read through `MTU to`, with `failure to`. Its
    // siblings `mtu: failure to set MTU. %s` and `… set IPv6 MTU` hold no
    // needle of the anchor finder's table and are not read.
    "MTU to",
];

/// Large packets lost: the MTU checks and errors that say so.
pub(super) fn mtu(msg: &str) -> Option<Signal> {
    let what = MTU.iter().find(|w| msg.contains(*w))?;
    if *what == "MTU to" {
        if !has!(msg, "failure to") {
            return None;
        }
    } else if what.starts_with("MTU")
        && !["small", "large", "mismatch", "exceed", "bigger"]
            .iter()
            .any(|w| msg.contains(w))
    {
        return None;
    }
    if *what == "Invalid MTU" && !has!(msg, "requested") {
        return None;
    }
    let refused = ["mtu greater than device maximum", "Invalid MTU", "MTU to"].contains(what);
    // The sizes are what a person acts on (1500 against 1558): first.
    let sizes = mtu_sizes(msg);
    let head = match sizes.as_slice() {
        [] => String::new(),
        [one] => format!("MTU {one}: "),
        [a, b, ..] => format!("MTU {a} against {b}: "),
    };
    let words = super::line::words_at(msg, what).unwrap_or(what);
    Some(Signal::new(
        Category::MtuMismatch,
        "mtu",
        if refused {
            format!("{head}an MTU the device cannot take was asked for ({words})")
        } else {
            format!("{head}packets larger than the path's MTU are lost ({words})")
        },
        Nature::Fatal,
    ))
}

/// The packet sizes a line about the MTU names (`MTU (1500) … overlay MTU
/// (1558)`, `mtu = 1400`, `Invalid MTU 9000 requested, hw max 1500`): the
/// first two distinct numbers from 68 (IPv4's least) to 65535, not part
/// of an address, a version or a time.
fn mtu_sizes(msg: &str) -> Vec<&str> {
    let bytes = msg.as_bytes();
    let mut sizes: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < bytes.len() && sizes.len() < 2 {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let glued = |b: Option<&u8>| {
            b.is_some_and(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b'/' | b'_' | b'-')
            })
        };
        if glued(start.checked_sub(1).and_then(|p| bytes.get(p))) || glued(bytes.get(i)) {
            continue;
        }
        let number = &msg[start..i];
        if number
            .parse::<u32>()
            .is_ok_and(|n| (68..=65535).contains(&n))
            && !sizes.contains(&number)
        {
            sizes.push(number);
        }
    }
    sizes
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

    #[test]
    fn configure_ovs_and_open_vswitch_refusals() {
        for line in [
            "configure-ovs.sh[1299]: ERROR: cannot find connection for interface: ens3",
            "configure-ovs.sh[1299]: ERROR: unable to determine vlan_id for vlan connection: bond0.100",
            "configure-ovs.sh[1299]: WARNING: Openvswitch package is not installed!",
            "ovs-vswitchd[1022]: ovs|00061|bridge|WARN|could not open network device ens3 (No such device)",
            "ovs-vsctl: unix:/var/run/openvswitch/db.sock: database connection failed (No such file or directory)",
        ] {
            assert_eq!(
                ovs(line).map(|s| s.category),
                Some(Category::OvsConfig),
                "{line}"
            );
        }
        assert!(
            ovs("configure-ovs.sh[1299]: ERROR: Unable to find default gateway interface")
                .is_none()
        );
    }

    #[test]
    fn the_mtu_family() {
        for line in [
            "ping: sendmsg: Message too long",
            "From 10.0.0.1 icmp_seq=1 Frag needed and DF set (mtu = 1400)",
            "Error: mtu greater than device maximum.",
            "eth0: Invalid MTU 9000 requested, hw max 1500",
            "<warn>  [1700000000.1234] device (br-ex): mtu: failure to force-set MTU to 8999",
            "F1122 node.go:1508] MTU (1400) of network interface br-ex is too small for specified overlay MTU (1500)",
        ] {
            assert_eq!(
                mtu(line).map(|s| s.category),
                Some(Category::MtuMismatch),
                "{line}"
            );
        }
        for line in [
            "device (br-ex): mtu: force-set MTU to 8999",
            "Invalid MTU '9000x'",
            "set MTU of eth0 to 9000",
        ] {
            assert!(mtu(line).is_none(), "{line}");
        }
    }

    #[test]
    fn kubelet_reading_the_resolver_file() {
        let s = dns_config(r#"E1021 22:03:22.826020  122472 dns.go:292] "Could not open resolv conf file." err="open /run/systemd/resolve/resolv.conf: no such file or directory""#).unwrap();
        assert_eq!((s.category, s.nature), (Category::DnsConfig, Nature::Fatal));
        assert!(
            s.summary.contains("/run/systemd/resolve/resolv.conf"),
            "{}",
            s.summary
        );
        let s = dns_config(r#"W1122 dns.go:206] "Nameserver limits exceeded" err="Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.0.0.1 10.0.0.2 10.0.0.3""#).unwrap();
        assert_eq!(s.nature, Nature::Note);
        for line in [
            "NetworkManager[1022]: <warn>  [1700000000.1234] dns-mgr: could not commit DNS changes: Error writing /etc/resolv.conf: Read-only file system",
            "NetworkManager[1022]: <warn>  [1700000000.1234] dns-mgr: update-dns: plugin systemd-resolved update failed: Failed to connect",
        ] {
            assert_eq!(dns_config(line).map(|s| s.category), Some(Category::DnsConfig), "{line}");
        }
    }
}
