//! Host file rules: members read whole, not line by line, because what
//! they say is in how they relate (a nameserver and the routes, an address
//! and its flags), the host-side evidence of the assisted team's triage
//! signatures that read the same files from their log bundles:
//! NameserverInClusterNetwork (`network/resolv.conf` against the cluster
//! network, which the host knows from ovn-kubernetes' routes), DuplicateVIP
//! (`ip addr`'s `dadfailed`), SNOHostnameHasEtcd (`network/hostname`),
//! OSTreeCommitMismatch and MissingOSTreePivot (`rpm-ostree status --json`).
//! Each member is small; they are kept whole up to [`MAX_HOST_FILE`] and
//! read once, when the engine correlates.

use std::net::IpAddr;

use super::signal::{Category, Nature, Signal};

/// Largest host file kept (resolv.conf and hostname are bytes, a route
/// table or `ip addr` a few KiB; rpm-ostree's JSON lists each package
/// layered, tens of KiB; `ip addr` on a node with many pods as much):
/// bounded so that the engine's own memory stays small.
pub(super) const MAX_HOST_FILE: usize = 128 * 1024;

pub(super) const RESOLV: &str = "network/resolv.conf";
pub(super) const HOSTNAME: &str = "network/hostname";
pub(super) const ROUTES: &str = "network/ip-route.txt";
pub(super) const ROUTES6: &str = "network/ip6-route.txt";
pub(super) const ADDRS: &str = "network/ip-addr.txt";
pub(super) const RPM_OSTREE: &str = "system/rpm-ostree-status.json";

/// Whether `path` is a host file read whole.
pub(super) fn is_host_file(path: &str) -> bool {
    [RESOLV, HOSTNAME, ROUTES, ROUTES6, ADDRS, RPM_OSTREE].contains(&path)
}

/// What a host file says: the signal and its lines (member, 1-based line,
/// text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    pub(super) signal: Signal,
    pub(super) lines: Vec<(&'static str, u64, String)>,
}

/// ovn-kubernetes routes every cluster subnet (and in some releases the
/// service network) to its management port, `ovn-k8s-mp0`
/// (go-controller/pkg/node/management-port_linux.go, `for _, subnet :=
/// range cfg.allSubnets` … `LinkRoutesAdd`): the host's own view of the
/// cluster network once ovnkube-node ran.
const CLUSTER_PORT: &str = "ovn-k8s-mp0";

/// A `nameserver` of resolv.conf inside the cluster network: once
/// ovn-kubernetes routes that network to its pods, the host's DNS queries
/// go there and no name resolves (triage signature
/// NameserverInClusterNetwork, which compares with the cluster's
/// `cluster_networks`; the host reads them from its routes).
pub(super) fn nameserver_in_cluster_network(
    resolv: &str,
    routes: &[(&'static str, &str)],
) -> Vec<Found> {
    let networks: Vec<(&'static str, u64, &str, (IpAddr, u8))> = routes
        .iter()
        .flat_map(|(member, text)| {
            text.lines().enumerate().filter_map(move |(i, row)| {
                let (dest, dev) = route_row(row)?;
                (dev == CLUSTER_PORT).then_some(())?;
                Some((*member, i as u64 + 1, row, cidr(dest)?))
            })
        })
        .collect();
    let mut found = Vec::new();
    for (i, line) in resolv.lines().enumerate() {
        let mut words = line.split_whitespace();
        let (Some("nameserver"), Some(server)) = (words.next(), words.next()) else {
            continue;
        };
        // A link-local server carries its zone (`fe80::1%ens3`).
        let Ok(ip) = server.split('%').next().unwrap_or(server).parse::<IpAddr>() else {
            continue;
        };
        let Some((member, number, row, (net, len))) = networks
            .iter()
            .find(|(_, _, _, (net, len))| contains(*net, *len, ip))
        else {
            continue;
        };
        found.push(Found {
            signal: Signal::new(
                Category::DnsConfig,
                ip.to_string(),
                format!("nameserver {ip} is inside the cluster network {net}/{len}: DNS queries go to the pod network ({CLUSTER_PORT}), not to the server"),
                Nature::Fatal,
            ),
            lines: vec![
                (RESOLV, i as u64 + 1, line.trim_end().to_owned()),
                (member, *number, row.trim_end().to_owned()),
            ],
        });
    }
    found
}

/// An `ip route` row's destination and device (`10.128.0.0/14 via
/// 10.128.0.1 dev ovn-k8s-mp0`), the route type (`local`, `broadcast` …)
/// skipped.
fn route_row(row: &str) -> Option<(&str, &str)> {
    const TYPES: &[&str] = &[
        "unicast",
        "local",
        "broadcast",
        "multicast",
        "anycast",
        "blackhole",
        "unreachable",
        "prohibit",
        "throw",
        "nat",
    ];
    let mut words = row.split_whitespace().peekable();
    if words.peek().is_some_and(|w| TYPES.contains(w)) {
        words.next();
    }
    let dest = words.next()?;
    let mut dev = None;
    while let Some(word) = words.next() {
        if word == "dev" {
            dev = words.next();
            break;
        }
    }
    Some((dest, dev?))
}

/// `A/N` as an address and a prefix length.
fn cidr(text: &str) -> Option<(IpAddr, u8)> {
    let (addr, len) = text.split_once('/')?;
    let addr: IpAddr = addr.parse().ok()?;
    let len: u8 = len.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (len <= max).then_some((addr, len))
}

/// Whether `ip` is in `net/len` (both of one family).
fn contains(net: IpAddr, len: u8, ip: IpAddr) -> bool {
    match (net, ip) {
        (IpAddr::V4(n), IpAddr::V4(a)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            u32::from(n) & mask == u32::from(a) & mask
        }
        (IpAddr::V6(n), IpAddr::V6(a)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            u128::from(n) & mask == u128::from(a) & mask
        }
        _ => false,
    }
}

/// Addresses `ip addr` marks `dadfailed`: the kernel's duplicate address
/// detection found another machine holding them (iproute2 ip/ipaddress.c
/// prints the IFA_F_DADFAILED flag as `dadfailed`). The host's own side of
/// the triage signature DuplicateVIP, which looks for the VIP in two
/// hosts' `ip addr`.
pub(super) fn dad_failed(addrs: &str) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    let mut iface = "";
    for (i, line) in addrs.lines().enumerate() {
        if !line.starts_with(char::is_whitespace) {
            // `2: ens3: <BROADCAST,…>` or `5: vlan10@ens3: …`.
            if let Some(name) = line.split(": ").nth(1) {
                iface = name.split('@').next().unwrap_or(name);
            }
            continue;
        }
        let mut words = line.split_whitespace();
        if !matches!(words.next(), Some("inet" | "inet6")) || !line.contains(" dadfailed") {
            continue;
        }
        let Some(address) = words.next().map(|a| a.split('/').next().unwrap_or(a)) else {
            continue;
        };
        if found.iter().any(|f| f.signal.key == address) {
            continue;
        }
        found.push(Found {
            signal: Signal::new(
                Category::DuplicateIp,
                address,
                format!("{address} on {iface} failed duplicate address detection (ip addr: dadfailed): another machine holds it"),
                Nature::Fatal,
            ),
            lines: vec![(ADDRS, i as u64 + 1, line.trim().to_owned())],
        });
    }
    found
}

/// A hostname with `etcd` in it: a single-node cluster on such a host does
/// not install (OCPBUGS-15852; triage signature SNOHostnameHasEtcd, which
/// checks single-node clusters only). The host does not know whether its
/// cluster is a single node, so this is a warning.
pub(super) fn hostname_has_etcd(hostname: &str) -> Option<Found> {
    let (i, line) = hostname
        .lines()
        .enumerate()
        .find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))?;
    let name = line.trim();
    if !name.contains("etcd") {
        return None;
    }
    Some(Found {
        signal: Signal::new(
            Category::Hostname,
            name,
            format!("hostname {name} contains \"etcd\": a single-node cluster does not install on such a host (OCPBUGS-15852)"),
            Nature::Transient,
        ),
        lines: vec![(HOSTNAME, i as u64 + 1, name.to_owned())],
    })
}

/// What `rpm-ostree status --json` says the host booted and has staged:
/// each deployment's OS image as machine-config-daemon reads it
/// (pkg/daemon/rpm-ostree.go `GetBootedOSImageURL`: the
/// `container-image-reference` without its transport, else a `pivot://`
/// custom origin, else none: an OS that was never pivoted).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) struct Deployments {
    /// The booted deployment's image (`None`: booted, but no image).
    pub(super) booted: Option<String>,
    pub(super) staged: Option<String>,
    /// The booted deployment's line-ish description for evidence.
    pub(super) booted_text: String,
}

/// Parses `rpm-ostree status --json`; `None` when it is not that.
pub(super) fn deployments(json: &str) -> Option<Deployments> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let list = value.get("deployments")?.as_array()?;
    let mut out = Deployments::default();
    let mut any_booted = false;
    for d in list {
        let flag = |name: &str| d.get(name).and_then(serde_json::Value::as_bool) == Some(true);
        let image = d
            .get("container-image-reference")
            .and_then(serde_json::Value::as_str)
            .filter(|s| !s.is_empty())
            .map(strip_transport)
            .or_else(|| {
                d.get("custom-origin")
                    .and_then(|o| o.get(0))
                    .and_then(serde_json::Value::as_str)
                    .and_then(|o| o.strip_prefix("pivot://"))
            })
            .map(str::to_owned);
        if flag("booted") {
            any_booted = true;
            let checksum = d
                .get("checksum")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?");
            let version = d
                .get("version")
                .and_then(serde_json::Value::as_str)
                .unwrap_or("?");
            out.booted_text = format!(
                "booted: {} (version {version}, checksum {checksum})",
                image.as_deref().unwrap_or("no container image")
            );
            out.booted = image;
        } else if flag("staged") {
            out.staged = image;
        }
    }
    any_booted.then_some(out)
}

/// An image reference without rpm-ostree's transport
/// (`ostree-unverified-registry:`, `ostree-remote-registry:REMOTE:`,
/// `ostree-image-signed:docker://`).
fn strip_transport(reference: &str) -> &str {
    if let Some(rest) = reference.split_once("docker://").map(|(_, r)| r) {
        return rest;
    }
    if let Some(rest) = reference.strip_prefix("ostree-remote-registry:") {
        return rest.split_once(':').map_or(rest, |(_, r)| r);
    }
    if reference.starts_with("ostree-") {
        return reference.split_once(':').map_or(reference, |(_, r)| r);
    }
    reference
}

/// Two references to one image: the same digest when both have one, else
/// the same text.
pub(super) fn same_image(a: &str, b: &str) -> bool {
    let a = strip_transport(a);
    let b = strip_transport(b);
    match (a.split_once('@'), b.split_once('@')) {
        (Some((_, x)), Some((_, y))) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES_OVN: &str =
        "default via 192.168.122.1 dev br-ex proto dhcp src 192.168.122.10 metric 48\n\
        10.128.0.0/14 via 10.128.0.1 dev ovn-k8s-mp0\n\
        169.254.169.0/29 dev br-ex proto kernel scope link src 169.254.169.2\n\
        172.30.0.0/16 via 169.254.169.4 dev br-ex mtu 1400\n\
        local 192.168.122.10 dev br-ex table local proto kernel scope host src 192.168.122.10\n";

    #[test]
    fn a_nameserver_inside_the_cluster_network_is_named() {
        let resolv = "# Generated by NetworkManager\nsearch example.com\nnameserver 10.130.0.10 # from DHCP\nnameserver 192.168.122.1\n";
        let found = nameserver_in_cluster_network(resolv, &[(ROUTES, ROUTES_OVN)]);
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(
            (f.signal.category, f.signal.key.as_str()),
            (Category::DnsConfig, "10.130.0.10")
        );
        assert!(
            f.signal.summary.contains("10.128.0.0/14"),
            "{}",
            f.signal.summary
        );
        assert_eq!(
            f.lines[0],
            (RESOLV, 3, "nameserver 10.130.0.10 # from DHCP".to_owned())
        );
        assert_eq!(f.lines[1].1, 2);
        // Outside it, or before ovnkube routed anything: nothing to say.
        let fine = "nameserver 192.168.122.1\n";
        assert!(nameserver_in_cluster_network(fine, &[(ROUTES, ROUTES_OVN)]).is_empty());
        let early = "default via 192.168.122.1 dev ens3 proto dhcp\n";
        assert!(nameserver_in_cluster_network(resolv, &[(ROUTES, early)]).is_empty());
    }

    #[test]
    fn ipv6_cluster_networks_count_too() {
        let routes6 = "fd01::/48 via fd01:0:0:1::1 dev ovn-k8s-mp0 metric 1024 pref medium\n";
        let found =
            nameserver_in_cluster_network("nameserver fd01:0:0:3::a\n", &[(ROUTES6, routes6)]);
        assert_eq!(found[0].signal.key, "fd01:0:0:3::a");
        assert_eq!(found[0].lines[1].0, ROUTES6);
        assert!(contains(
            "10.0.0.0".parse().unwrap(),
            0,
            "8.8.8.8".parse().unwrap()
        ));
        assert!(!contains(
            "10.0.0.0".parse().unwrap(),
            8,
            "fd00::1".parse().unwrap()
        ));
    }

    #[test]
    fn dadfailed_addresses_are_duplicates() {
        let addrs = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN group default qlen 1000\n\
            \x20   inet 127.0.0.1/8 scope host lo\n\
            2: ens3: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc fq_codel state UP group default qlen 1000\n\
            \x20   inet 192.168.122.10/24 brd 192.168.122.255 scope global dynamic noprefixroute ens3\n\
            \x20   inet6 fd00:1::5/64 scope global tentative dadfailed \n\
            \x20      valid_lft forever preferred_lft forever\n\
            \x20   inet6 fe80::5054:ff:fe12:3456/64 scope link noprefixroute \n";
        let found = dad_failed(addrs);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].signal.key, "fd00:1::5");
        assert!(
            found[0].signal.summary.contains("on ens3"),
            "{}",
            found[0].signal.summary
        );
        assert_eq!(found[0].lines[0].1, 5);
    }

    #[test]
    fn a_hostname_with_etcd_is_a_warning() {
        let f = hostname_has_etcd("sno-etcd-01.example.com\n").unwrap();
        assert_eq!(f.signal.category, Category::Hostname);
        assert_eq!(f.signal.nature, Nature::Transient);
        assert!(hostname_has_etcd("master-0\n").is_none());
        assert!(hostname_has_etcd("").is_none());
    }

    #[test]
    fn deployments_read_as_the_daemon_reads_them() {
        // rpm-ostree's JSON: a container image booted, one staged.
        let json = r#"{"deployments":[
            {"staged":true,"booted":false,"container-image-reference":"ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bb22","checksum":"c2"},
            {"booted":true,"container-image-reference":"ostree-unverified-registry:quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa11","checksum":"c1","version":"415.92.202402201450-0"}
        ],"transaction":null}"#;
        let d = deployments(json).unwrap();
        assert_eq!(
            d.booted.as_deref(),
            Some("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:aa11")
        );
        assert_eq!(
            d.staged.as_deref(),
            Some("quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:bb22")
        );
        assert!(d.booted_text.contains("415.92"), "{}", d.booted_text);
        // An older pivot origin, and a boot image never pivoted.
        let d = deployments(r#"{"deployments":[{"booted":true,"custom-origin":["pivot://quay.io/x@sha256:cc33","Managed by machine-config-operator"]}]}"#).unwrap();
        assert_eq!(d.booted.as_deref(), Some("quay.io/x@sha256:cc33"));
        let d = deployments(
            r#"{"deployments":[{"booted":true,"origin":"rhcos:eeee","checksum":"eeee"}]}"#,
        )
        .unwrap();
        assert_eq!(d.booted, None);
        assert!(deployments("error: not an rpm-ostree system").is_none());
        assert!(same_image(
            "ostree-unverified-registry:quay.io/a@sha256:1",
            "quay.io/b@sha256:1"
        ));
        assert!(!same_image("quay.io/a@sha256:1", "quay.io/a@sha256:2"));
        assert!(same_image(
            "ostree-image-signed:docker://quay.io/a:4.15",
            "quay.io/a:4.15"
        ));
    }
}
