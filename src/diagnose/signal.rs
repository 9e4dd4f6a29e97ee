//! The vocabulary of the diagnosis: what went wrong (a stable category
//! name), how bad it is, and what one rule says about one line. Its own
//! module so that the rules (one file per family) and the engine that
//! correlates their signals both depend on it, and not on each other.

use serde::{Deserialize, Serialize};

/// What went wrong, in stable names (`docs/diagnosis.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    DnsResolution,
    Proxy,
    RegistryAuth,
    UntrustedCa,
    ClockSkew,
    McsUnreachable,
    ApiUnreachable,
    DiskFull,
    EtcdSlowDisk,
    NetworkLink,
    MirrorConfig,
    ReleaseMismatch,
    CsrPending,
    CrioStorage,
    Selinux,
    OsImageMismatch,
    MachineConfig,
    EgressBlocked,
    ExpiredCertificate,
    OvsConfig,
    CrioConfig,
    BadManifest,
    DuplicateIp,
    IpChanged,
    MtuMismatch,
    Hostname,
    DnsConfig,
    RouteConfig,
    ImagePull,
    DiskIo,
    PodNetwork,
    Other,
}

impl Category {
    pub(crate) const ALL: [Category; 32] = [
        Category::DnsResolution,
        Category::Proxy,
        Category::RegistryAuth,
        Category::UntrustedCa,
        Category::ClockSkew,
        Category::McsUnreachable,
        Category::ApiUnreachable,
        Category::DiskFull,
        Category::EtcdSlowDisk,
        Category::NetworkLink,
        Category::MirrorConfig,
        Category::ReleaseMismatch,
        Category::CsrPending,
        Category::CrioStorage,
        Category::Selinux,
        Category::OsImageMismatch,
        Category::MachineConfig,
        Category::EgressBlocked,
        Category::ExpiredCertificate,
        Category::OvsConfig,
        Category::CrioConfig,
        Category::BadManifest,
        Category::DuplicateIp,
        Category::IpChanged,
        Category::MtuMismatch,
        Category::Hostname,
        Category::DnsConfig,
        Category::RouteConfig,
        Category::ImagePull,
        Category::DiskIo,
        Category::PodNetwork,
        Category::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::DnsResolution => "dns_resolution",
            Category::Proxy => "proxy",
            Category::RegistryAuth => "registry_auth",
            Category::UntrustedCa => "untrusted_ca",
            Category::ClockSkew => "clock_skew",
            Category::McsUnreachable => "mcs_unreachable",
            Category::ApiUnreachable => "api_unreachable",
            Category::DiskFull => "disk_full",
            Category::EtcdSlowDisk => "etcd_slow_disk",
            Category::NetworkLink => "network_link",
            Category::MirrorConfig => "mirror_config",
            Category::ReleaseMismatch => "release_mismatch",
            Category::CsrPending => "csr_pending",
            Category::CrioStorage => "crio_storage",
            Category::Selinux => "selinux",
            Category::OsImageMismatch => "os_image_mismatch",
            Category::MachineConfig => "machine_config",
            Category::EgressBlocked => "egress_blocked",
            Category::ExpiredCertificate => "expired_certificate",
            Category::OvsConfig => "ovs_config",
            Category::CrioConfig => "crio_config",
            Category::BadManifest => "bad_manifest",
            Category::DuplicateIp => "duplicate_ip",
            Category::IpChanged => "ip_changed",
            Category::MtuMismatch => "mtu_mismatch",
            Category::Hostname => "hostname",
            Category::DnsConfig => "dns_config",
            Category::RouteConfig => "route_config",
            Category::ImagePull => "image_pull",
            Category::DiskIo => "disk_io",
            Category::PodNetwork => "pod_network",
            Category::Other => "other",
        }
    }

    /// The category of a stable name (the catalogue's `category:`).
    pub(crate) fn from_name(name: &str) -> Option<Category> {
        Category::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// What to check, shown with every finding of the category.
    pub(crate) fn hint(self) -> &'static str {
        match self {
            Category::DnsResolution => "Check the nameservers in resolv.conf answer for this name (dig NAME @SERVER), and the DHCP/static DNS settings",
            Category::Proxy => "Check the proxy address, its credentials, and that noProxy covers the cluster's own names",
            Category::RegistryAuth => "Check that the pull secret has a valid auth for this registry (podman login --authfile)",
            Category::UntrustedCa => "Add the registry's or proxy's CA to additionalTrustBundle, or fix the certificate's names",
            Category::ClockSkew => "Check the host clock against NTP (chronyc tracking, BIOS time); certificates are checked against it",
            Category::McsUnreachable => "Check that api-int resolves and port 22623 on the bootstrap/control plane is reachable through load balancer and firewall",
            Category::ApiUnreachable => "Check api-int resolution and port 6443 through the load balancer; normal for a few minutes while the API starts",
            Category::DiskFull => "Free space or use a bigger disk; check what fills it (du -x), container images and journals",
            Category::EtcdSlowDisk => "etcd needs fdatasync under 10 ms at p99: use SSD/NVMe storage, not shared or throttled disks",
            Category::NetworkLink => "Check cabling, switch port, VLAN and NIC driver; nmcli device status shows the carrier",
            Category::MirrorConfig => "Check ImageContentSourcePolicy/registries.conf mirrors hold the release (oc adm release mirror) and load",
            Category::ReleaseMismatch => "Check the release image matches the host's architecture and the cluster's version",
            Category::CsrPending => "Approve pending CSRs (oc get csr; oc adm certificate approve) or check the approver can reach the API",
            Category::CrioStorage => "Reset container storage (crio wipe, or remove /var/lib/containers/storage) and restart crio",
            Category::Selinux => "Check file labels (restorecon -Rv PATH) of what the process accessed",
            Category::OsImageMismatch => "The boot image's OS does not match the release: install from a boot image of the release's RHCOS version, or check the rebase error above",
            Category::MachineConfig => "machine-config-daemon could not apply the rendered config: read its error (journalctl -u machine-config-daemon-firstboot) and the files it names",
            Category::EgressBlocked => "A firewall drops traffic to this endpoint: allow the registries and services the install needs (or configure the cluster proxy)",
            Category::ExpiredCertificate => "The certificate is past its validity: regenerate install assets (never reuse an old installation's), or renew the serving certificate",
            Category::OvsConfig => "configure-ovs could not build br-ex: check the NetworkManager profiles of the default-route interface (bond, VLAN, static IP) and journalctl -u ovs-configuration",
            Category::CrioConfig => "CRI-O refuses its configuration: fix the named option in /etc/crio/crio.conf or its drop-ins (crio config shows the result)",
            Category::BadManifest => "A manifest cannot be parsed or applied: fix the named file (YAML syntax, kind, API version) in the install manifests",
            Category::DuplicateIp => "Another machine answers for this address: find it (arping -D -I IFACE ADDR) and give each host and VIP a unique address",
            Category::IpChanged => "The host's address changed since the cluster was set up: give the host a fixed address (DHCP reservation or static IP)",
            Category::MtuMismatch => "Large packets are lost on the path: set the interface MTU to the path's (ip link set dev IFACE mtu N) and the cluster network MTU below it",
            Category::Hostname => "Give the host a unique, valid hostname (not localhost) by DHCP or hostnamectl before the install",
            Category::DnsConfig => "The resolver configuration is wrong: check the nameserver lines of /etc/resolv.conf (not a loopback stub, not inside the cluster or service network)",
            Category::RouteConfig => "The host has no usable route: check the default route (ip route, ip -6 route) on the interface the cluster uses",
            Category::ImagePull => "An image pull failed: check the registry's reachability and speed from the host (podman pull IMAGE) and the pull secret",
            Category::DiskIo => "The disk returns I/O errors: check the device (smartctl -a, the controller and cabling, the virtual disk's backing store) or install to another disk",
            Category::PodNetwork => "The pod network never came up: read the ovnkube-node / multus pod logs and ovs-configuration.service, which write the CNI configuration",
            Category::Other => "Read the evidence lines and the unit's journal around them",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

/// How a signal weighs before correlation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nature {
    /// Stops an installation by itself (refused pull secret, full disk).
    Fatal,
    /// Normal in small doses (retries): an error only when it lasts or a
    /// service failed on it.
    Transient,
    /// The same (category, key) working again; key `*` clears every key.
    Recovery,
    /// A fact, not a problem (a DHCP lease's address, the OS image a
    /// rebase targets): the engine compares facts across lines and members
    /// (`engine.rs`, `judge_observations`) and never shows one alone.
    Observed,
    /// Worth knowing, never a cause (someone logged in during the
    /// installation): always `info`.
    Note,
}

/// What one rule says about one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub(crate) category: Category,
    /// The decisive value: the host that did not resolve, the registry, the
    /// full mount.
    pub(crate) key: String,
    pub summary: String,
    pub(crate) nature: Nature,
    /// The catalogue entry that spoke (its index), `None` for a rule's.
    pub(crate) signature: Option<u32>,
}

impl Signal {
    pub(super) fn new(
        category: Category,
        key: impl Into<String>,
        summary: String,
        nature: Nature,
    ) -> Self {
        Self {
            category,
            key: key.into(),
            summary,
            nature,
            signature: None,
        }
    }
}
