//! Host identity rules: the host's name (localhost, invalid or taken), its
//! address changed under a cluster that remembers the old one, and an
//! address some other machine answers for. Texts: MCO's `mco-hostname`
//! (`waiting for non-localhost hostname to be assigned`), kubelet's node
//! authorizer (`is not allowed to modify node`), etcd's membership checks
//! (server/etcdserver, server/embed: `member count is unequal`, `request
//! cluster ID mismatch`, `--initial-cluster has … but missing from
//! --initial-advertise-peer-urls`), Go's `bind: cannot assign requested
//! address`, NetworkManager's address conflict detection (src/core/
//! nm-l3-ipv4ll.c, nm-device.c: `conflict detected for IP address`,
//! `already in use in the network by host`) and the kernel's IPv6 DAD; and
//! the address each DHCP lease gave (a fact the engine compares).

use super::line::{after, after_lit, has, token_until};
use super::signal::{Category, Nature, Signal};

/// Node names no cluster accepts.
const LOCAL_NAMES: &[&str] = &["localhost", "localhost.localdomain", "localhost6"];

/// `waiting for non-localhost hostname to be assigned`, a node called
/// localhost, a node name that is taken.
pub(super) fn hostname(msg: &str) -> Option<Signal> {
    if has!(msg, "non-localhost hostname") {
        return Some(Signal::new(
            Category::Hostname,
            "localhost",
            "hostname is still localhost: no name came from DHCP, DNS or the config (waiting for non-localhost hostname)".into(),
            Nature::Transient,
        ));
    }
    if has!(msg, "duplicate node name")
        || (has!(msg, "a Node with name") && has!(msg, "already exists"))
    {
        let name =
            after_lit!(msg, "a Node with name \"").map_or("this node", |r| token_until(r, &['"']));
        return Some(Signal::new(
            Category::Hostname,
            name,
            format!("node name {name} is already taken by another host: hostnames must be unique"),
            Nature::Fatal,
        ));
    }
    if has!(msg, "is not allowed to modify node") {
        let node = after_lit!(msg, "not allowed to modify node \"")
            .or_else(|| after_lit!(msg, "not allowed to modify node "))
            .map_or("this node", |r| token_until(r, &['"', ' ', '\\']));
        return Some(Signal::new(
            Category::Hostname,
            node,
            format!("kubelet's name does not match node {node} (hostname changed after its certificate was issued)"),
            Nature::Fatal,
        ));
    }
    if let Some(rest) = after_lit!(msg, "Hostname [") {
        let name = token_until(rest, &[']']);
        return Some(Signal::new(
            Category::Hostname,
            name,
            format!("hostname {name} is invalid: a random one was generated"),
            Nature::Transient,
        ));
    }
    // kubelet registering or looking up a node called localhost.
    for lead in [
        "Attempting to register node",
        "node=\"",
        "node=",
        "node \"",
        "nodes \\\"",
        "Unable to register node",
    ] {
        if let Some(rest) = after(msg, lead) {
            let name = token_until(rest.trim_start_matches([' ', '"', '\\']), &['"', ' ', '\\']);
            if LOCAL_NAMES.contains(&name) {
                return Some(Signal::new(
                    Category::Hostname,
                    "localhost",
                    format!("the node registers as {name}: the host has no real hostname"),
                    Nature::Fatal,
                ));
            }
        }
    }
    None
}

/// The host's address is not the one the cluster knows: etcd's membership
/// checks, a listener on an address the host no longer has, a serving
/// certificate for other IPs than the one asked.
pub(super) fn ip_changed(msg: &str) -> Option<Signal> {
    const ETCD_MEMBERSHIP: &[&str] = &[
        "but missing from --initial-advertise-peer-urls",
        "to match --initial-cluster",
        "member count is unequal",
        "request cluster ID mismatch",
        "not a member of the etcd cluster",
        "has already been bootstrapped",
        "does not match local member",
        "--initial-advertise-peer-urls has",
        "failed to find local ID in cluster members",
        "unmatched member while checking PeerURLs",
    ];
    if let Some(rest) = after_lit!(msg, "listen tcp ") {
        if has!(msg, "cannot assign requested address") {
            let addr = token_until(rest, &[':', ' ']);
            let addr = addr.trim_start_matches('[').trim_end_matches(']');
            return Some(Signal::new(
                Category::IpChanged,
                addr,
                format!("{addr} is no longer an address of this host (bind: cannot assign requested address): its IP changed"),
                Nature::Fatal,
            ));
        }
    }
    if let Some(what) = ETCD_MEMBERSHIP.iter().find(|w| msg.contains(*w)) {
        return Some(Signal::new(
            Category::IpChanged,
            "etcd member",
            format!(
                "etcd's member address does not match this host's ({what}): the host's IP changed?"
            ),
            Nature::Fatal,
        ));
    }
    // x509: certificate is valid for 10.96.0.1, 10.4.36.13, not 10.4.20.67
    if let Some(rest) = after_lit!(msg, "certificate is valid for ") {
        let (names, asked) = rest.split_once(", not ")?;
        let asked = token_until(asked, &['"', ' ', ',', ')']);
        let all_ips = |t: &str| !t.is_empty() && t.parse::<std::net::IpAddr>().is_ok();
        if all_ips(asked) && names.split(", ").all(all_ips) {
            return Some(Signal::new(
                Category::IpChanged,
                asked,
                format!("certificate names {names} but the host is reached at {asked}: the IP changed after it was issued"),
                Nature::Fatal,
            ));
        }
    }
    None
}

/// Another machine answers for an address of this host or a VIP.
pub(super) fn duplicate_ip(msg: &str) -> Option<Signal> {
    const CONFLICT: &[&str] = &[
        "already in use in the network by host",
        "onflict detected for IP",
        "onflict detected for IPv6",
        "ip-address-duplicate",
        "acd conflict",
        "duplicate address detected",
        "Duplicate address detected",
        "Unexpected mac address for arping",
        "address conflict",
        "Address conflict",
        "IP conflict",
        "DAD failed",
        "duplicate address check failed",
        "IPv6 duplicate address",
        "because of DAD conflicts",
        // NetworkManager 1.14 to 1.30 (src/devices/nm-acd-manager.c):
        // `conflict for address A detected with host M on interface 'I'`.
        "conflict for address",
    ];
    if let Some(what) = VRRP_FOREIGN.iter().find(|w| msg.contains(*w)) {
        return Some(vrrp_collision(msg, what));
    }
    let what = CONFLICT.iter().find(|w| msg.contains(*w))?;
    let addr = ip_in(msg).unwrap_or("an address");
    Some(Signal::new(
        Category::DuplicateIp,
        addr,
        format!("{addr} is used by another machine on the network ({what})"),
        Nature::Fatal,
    ))
}

/// keepalived receiving another router's adverts for its own virtual
/// router (keepalived `keepalived/vrrp/vrrp.c`, `vrrp_check_packet`): a
/// different password (`(VI_1) received an invalid passwd!`, older
/// `(VI_1): received …`), a VIP list that is not its own (`ip address
/// associated with VRID N not present in MASTER advert`), another advert
/// interval. (The drop that follows each, `bogus VRRP packet received on
/// ens3 !!!`, is not read: it follows any malformed packet too, and the
/// line before it says why.) Two clusters (or a cluster and another keepalived) on one
/// segment with the same virtual router id: the VIPs (API, ingress) are
/// claimed twice and flap (the baremetal and vSphere IPI VRRP-id collision).
const VRRP_FOREIGN: &[&str] = &[
    "received an invalid passwd",
    "not present in MASTER advert",
    "advertisement interval mismatch",
];

fn vrrp_collision(msg: &str, what: &str) -> Signal {
    // `(VI_1) …` / `VRRP_Instance(VI_1) …` names the instance; the drop
    // line does not, so one key for all: they are one collision.
    let instance = after_lit!(msg, "(")
        .map(|r| token_until(r, &[')']))
        .filter(|i| !i.is_empty() && !i.contains(' '))
        .map_or_else(String::new, |i| format!(" {i}"));
    Signal::new(
        Category::DuplicateIp,
        "virtual router id",
        format!("another keepalived on the network uses the virtual router id of{instance}: the VIPs are claimed twice ({what})"),
        Nature::Fatal,
    )
}

/// The first IPv4 or IPv6 address in `text`.
/// A DHCP lease's address, as NetworkManager logs it
/// (src/core/dhcp/nm-dhcp-client.c, 1.36 and later:
/// `dhcp4 (ens3): state changed new lease, address=192.168.122.10`). A
/// fact, not a problem: the engine compares the addresses an interface was
/// given (triage signature IpChangedAfterReboot, which compares the
/// discovery inventory's address with the same NetworkManager line).
/// Key: `dhcp4 ens3 192.168.122.10`.
pub(super) fn lease(msg: &str) -> Option<Signal> {
    let rest = after_lit!(msg, "new lease, address=")?;
    let address = token_until(rest, &[',', ' ', '"', '\\']);
    address.parse::<std::net::IpAddr>().ok()?;
    let head = &msg[..msg.find("state changed new lease")?];
    let at = head.rfind("dhcp")?;
    let family = token_until(&head[at..], &[' ', '(']);
    let iface = after(&head[at..], "(").map_or("", |r| token_until(r, &[')']));
    if family.is_empty() || iface.is_empty() {
        return None;
    }
    Some(Signal::new(
        Category::IpChanged,
        format!("{family} {iface} {address}"),
        format!("{iface} leased {address} ({family})"),
        Nature::Observed,
    ))
}

pub(super) fn ip_in(text: &str) -> Option<&str> {
    text.split(|c: char| !(c.is_ascii_hexdigit() || c == '.' || c == ':'))
        .map(|t| t.trim_matches(':'))
        .find(|t| t.len() >= 7 && t.parse::<std::net::IpAddr>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_vrrp_router_on_the_segment_is_a_duplicate_vip() {
        for line in [
            "(rna1_API): received an invalid passwd!",
            "Keepalived_vrrp[5277]: (VI_1) received an invalid passwd!",
            "(VI_1) ip address associated with VRID 51 not present in MASTER advert : 10.0.0.5",
        ] {
            let s = duplicate_ip(line).unwrap_or_else(|| panic!("{line}"));
            assert_eq!(s.category, Category::DuplicateIp, "{line}");
            assert_eq!(s.key, "virtual router id");
        }
        // A normal election is not a collision.
        assert!(duplicate_ip("(VI_1) Entering BACKUP STATE").is_none());
        assert!(duplicate_ip(
            "(VI_1) received lower priority (90) advert from 10.0.0.2 - discarding"
        )
        .is_none());
    }

    #[test]
    fn networkmanager_s_older_acd_wording() {
        let s = duplicate_ip("<warn>  [1600000000.1234] acd: conflict for address 192.168.1.20 detected with host 52:54:00:aa:bb:cc on interface 'ens3'").unwrap();
        assert_eq!(
            (s.category, s.key.as_str()),
            (Category::DuplicateIp, "192.168.1.20")
        );
    }

    #[test]
    fn names_addresses_and_conflicts() {
        let s = hostname("mco-hostname[1142]: waiting for non-localhost hostname to be assigned")
            .unwrap();
        assert_eq!(s.category, Category::Hostname);
        let s = hostname(
            r#"Unable to register node with API server" err="nodes \"localhost\" is forbidden" node="localhost""#,
        );
        assert!(s.is_some());
        let s = ip_changed("listen tcp 192.168.255.10:2380: bind: cannot assign requested address")
            .unwrap();
        assert_eq!(s.key, "192.168.255.10");
        let s = ip_changed("x509: certificate is valid for 10.96.0.1, 10.4.36.13, not 10.4.20.67")
            .unwrap();
        assert_eq!(s.key, "10.4.20.67");
        assert!(ip_changed("x509: certificate is valid for api.a.com, not api.b.com").is_none());
        let s = duplicate_ip("<warn> [1] device (eth0): IPv4: conflict detected for IP address 10.0.0.5 with host 52:54:00:aa:bb:cc").unwrap_or_else(|| duplicate_ip("IPv4: Conflict detected for IP address 10.0.0.5").unwrap());
        assert_eq!(s.key, "10.0.0.5");
        assert_eq!(ip_in("fe80::1 dup"), Some("fe80::1"));
    }

    #[test]
    fn a_lease_is_a_fact_keyed_by_interface_and_address() {
        // NetworkManager 1.42's wording, with and without ACD's suffix.
        let s = lease("<info>  [1700000000.1234] dhcp4 (ens3): state changed new lease, address=192.168.122.10").unwrap();
        assert_eq!(s.category, Category::IpChanged);
        assert_eq!(s.nature, Nature::Observed);
        assert_eq!(s.key, "dhcp4 ens3 192.168.122.10");
        let s = lease(
            "<info>  [1.2] dhcp6 (br-ex): state changed new lease, address=fd00::15, acd pending",
        )
        .unwrap();
        assert_eq!(s.key, "dhcp6 br-ex fd00::15");
        // `no lease` and a lease without an address say nothing.
        assert!(lease("dhcp4 (ens3): state changed no lease").is_none());
        assert!(lease("dhcp4 (ens3): state changed new lease, address=").is_none());
    }
}
